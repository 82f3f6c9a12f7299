"""Seeded hostile requests against a real ``zoo hub serve``, for tests/test_hub_fuzz.py and
benchmarks/hub_attack.py.

The server runs as a subprocess (:func:`zoo_serve`) with a token file; :func:`seed_world` gives it what a
team's server holds, through its own API (a public repo with an inline file and an LFS file, a tag and a
pull request, a private repo, another user's repo) and remembers the ids, so that hostile requests reach
the handlers' depths instead of stopping at "repo not found". Each case (:func:`make_case`) picks one of
the server's routes (:data:`ROUTES`: the Hub API, the multipart uploads, the 501s, the web pages) and fills
it from pools of hostile values: ids, paths and revisions (traversal, percent-encoded NUL and line
breaks, bidi controls, 300-character names, full and prefix commit ids), query strings, headers (tokens
good and bad, cookies, ranges, content types) and bodies (JSON of every type in every field, ndjson
commits with forged LFS lines, forms with thousands of fields, LFS batches declaring a petabyte, raw
bytes on signed and forged upload URLs). A case number fully determines its request
(``random.Random(f"hub:{number}")``), so a failure names a case that reproduces.

Each request goes whole over a new connection (``Connection: close``; a body over a limit is declared by
``Content-Length``, not sent), and its outcome is its status, ``dropped`` (the connection ended without
an HTTP answer) or ``timeout``. The server's peak RSS is its kernel high-water mark (``VmHWM``).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.client
import json
import random
import re
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote

ALICE, BOB = "alice-fuzz-token-0001", "bob-fuzz-token-0002"
HANG = 60.0  # seconds without an answer that make a request a hang: generous, for a loaded machine
DROPPED, TIMEOUT = "dropped", "timeout"


# ---------------------------------------------------------------------------------------------- server
def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answer(url: str, method: str = "GET", path: str = "/api/whoami-v2", timeout: float = HANG) -> int:
    """The status of one plain request (OSError while nothing listens)."""
    conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=timeout)
    try:
        conn.request(method, path)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


@contextlib.contextmanager
def zoo_serve(root: Path, *options: str) -> Iterator[SimpleNamespace]:
    """``zoo hub serve`` in a subprocess, answering; killed at the end if it still runs. Its stderr (the
    banner and the log) goes to ``server.log``, a file: a pipe nobody reads would fill and stall it."""
    port = _free_port()
    cmd = [sys.executable, "-m", "zoo", "hub", "serve", "--root", str(root), "--port", str(port), *options]
    log = root.with_name(f"{root.name}.serve.log")
    with log.open("wb") as stderr:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr)
    server = SimpleNamespace(url=f"http://127.0.0.1:{port}", proc=proc, root=root, log=log)
    try:
        deadline = time.monotonic() + 120  # a hang guard: Python and zoo start slowly on a loaded machine
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                answer(server.url, timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline, "zoo hub serve did not answer within 120 s"
                time.sleep(0.05)
        yield server
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(HANG)


def memory(pid: int) -> tuple[int, int]:
    """A process's resident set size now and its peak (``VmRSS``, ``VmHWM``), in bytes."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
    )
    return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024


# ---------------------------------------------------------------------------------------------- world
@dataclass
class World:
    """What :func:`seed_world` put on the server: ids the hostile requests can aim at."""

    url: str
    commit: str = ""
    lfs_oid: str = ""  # w.bin of alice/open
    lfs_size: int = 0
    secret_oid: str = ""  # w.bin of lab/secret, private
    secret_size: int = 0
    upload_href: str = ""  # a signed basic upload URL (alice/open, an object not stored), path and query
    part_href: str = ""  # a signed part URL of a multipart upload (alice/open)


def _http(url: str, method: str, path: str, body: bytes | None = None, token: str | None = ALICE) -> dict:
    conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=HANG)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
    finally:
        conn.close()
    assert response.status == 200, (method, path, response.status, data[:500])
    return json.loads(data or b"{}")


def seed_world(url: str) -> World:
    """alice/open (public: README.md, cfg/a.json, w.bin through LFS; tag v1; PR refs/pr/1), lab/secret
    (private, alice's org), bob/mine (Bob's), all through the server's own API."""
    world = World(url)
    for namespace, name, private, token in (
        ("alice", "open", False, ALICE),
        ("lab", "secret", True, ALICE),
        ("bob", "mine", False, BOB),
    ):
        _http(
            url,
            "POST",
            "/api/repos/create",
            json.dumps({"organization": namespace, "name": name, "private": private}).encode(),
            token,
        )
    weights, secret = random.Random(0).randbytes(3000), random.Random(1).randbytes(2000)
    world.lfs_oid, world.lfs_size = hashlib.sha256(weights).hexdigest(), len(weights)
    world.secret_oid, world.secret_size = hashlib.sha256(secret).hexdigest(), len(secret)
    batch = {
        "operation": "upload",
        "objects": [
            {"oid": world.lfs_oid, "size": world.lfs_size},
            {"oid": "f" * 64, "size": 1000},
            {"oid": "e" * 64, "size": (64 << 20) + 1},
        ],
    }
    objects = _http(url, "POST", "/alice/open.git/info/lfs/objects/batch", json.dumps(batch).encode())[
        "objects"
    ]
    _http(url, "PUT", objects[0]["actions"]["upload"]["href"].removeprefix(url), weights, token=None)
    world.upload_href = objects[1]["actions"]["upload"]["href"].removeprefix(url)
    world.part_href = objects[2]["actions"]["upload"]["header"]["1"].removeprefix(url)
    batch = {"operation": "upload", "objects": [{"oid": world.secret_oid, "size": world.secret_size}]}
    (obj,) = _http(url, "POST", "/lab/secret.git/info/lfs/objects/batch", json.dumps(batch).encode())[
        "objects"
    ]
    _http(url, "PUT", obj["actions"]["upload"]["href"].removeprefix(url), secret, token=None)
    lines = [
        {"key": "header", "value": {"summary": "seed"}},
        {
            "key": "file",
            "value": {
                "path": "README.md",
                "content": _b64(b"---\nlicense: mit\ntags: [CartPole-v1]\n---\n# seed\n"),
            },
        },
        {"key": "file", "value": {"path": "cfg/a.json", "content": _b64(b'{"a": 1}')}},
        {
            "key": "lfsFile",
            "value": {"path": "w.bin", "algo": "sha256", "oid": world.lfs_oid, "size": world.lfs_size},
        },
    ]
    world.commit = _http(url, "POST", "/api/models/alice/open/commit/main", _ndjson(lines))["commitOid"]
    _http(url, "POST", "/api/models/alice/open/tag/main", b'{"tag": "v1"}')
    _http(url, "POST", "/api/models/alice/open/commit/main?create_pr=1", _ndjson(lines[:1] + lines[2:3]))
    private = {
        "key": "lfsFile",
        "value": {"path": "w.bin", "algo": "sha256", "oid": world.secret_oid, "size": world.secret_size},
    }
    _http(url, "POST", "/api/models/lab/secret/commit/main", _ndjson([*lines[:2], private]))
    return world


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _ndjson(lines: list) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


# ---------------------------------------------------------------------------------------------- cases
@dataclass(frozen=True)
class Case:
    """One hostile request: what to send and what it was made from."""

    number: int
    route: str
    method: str
    target: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    declared: int | None = None  # a Content-Length declared, larger than the body sent
    chunked: bool = False  # the body sent with Transfer-Encoding: chunked, in pieces of up to 1000 bytes

    def request(self) -> bytes:
        """The bytes sent: the head and the body."""
        if self.chunked:
            framing, body = (
                "Transfer-Encoding: chunked",
                b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in _pieces(self.body))
                + b"0\r\n\r\n",
            )
        else:
            framing, body = (
                f"Content-Length: {self.declared if self.declared is not None else len(self.body)}",
                self.body,
            )
        lines = [
            f"{self.method} {self.target} HTTP/1.1",
            "Host: fuzz",
            "Connection: close",
            *(f"{k}: {v}" for k, v in self.headers),
            framing,
        ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _pieces(data: bytes) -> list[bytes]:
    return [data[i : i + 1000] for i in range(0, len(data), 1000)]


_REPO, _API = "/{ns}/{name}", "/api/models/{ns}/{name}"
#: (methods, path template, body kind): every route of the server, the web pages' included.
ROUTES: list[tuple[tuple[str, ...], str, str]] = [
    (("GET",), "/api/whoami-v2", "none"),
    (("POST",), "/api/repos/create", "json"),
    (("POST",), "/api/validate-yaml", "yaml"),
    (("DELETE",), "/api/repos/delete", "json"),
    (("POST",), "/api/repos/move", "json"),
    (("GET",), "/api/models", "none"),
    (("GET",), "/api/settings/repositories", "none"),
    (("GET",), "/api/organizations/{ns}/settings/repositories", "none"),
    (("GET",), _API, "none"),
    (("GET",), _API + "/revision/{rev}", "none"),
    (("GET",), _API + "/tree/{rev}", "none"),
    (("GET",), _API + "/tree/{rev}/{path}", "none"),
    (("GET",), _API + "/refs", "none"),
    (("POST", "DELETE"), _API + "/branch/{rev}", "json"),
    (("POST", "DELETE"), _API + "/tag/{rev}", "json"),
    (("GET",), _API + "/commits/{rev}", "none"),
    (("POST",), _API + "/paths-info/{rev}", "form"),
    (("GET",), _API + "/auth-check", "none"),
    (("PUT",), _API + "/settings", "json"),
    (("POST",), _API + "/preupload/{rev}", "json"),
    (("POST",), _API + "/commit/{rev}", "ndjson"),
    (("POST",), _API + "/lfs-files/duplicate", "json"),
    (("POST",), _REPO + ".git/info/lfs/objects/batch", "batch"),
    (("POST",), _REPO + ".git/info/lfs/objects/verify", "json"),
    (("PUT",), _REPO + ".git/info/lfs/objects/{oid}", "upload"),
    (("PUT",), _REPO + ".git/info/lfs/objects/{oid}/part/{n}", "part"),
    (("POST",), _REPO + ".git/info/lfs/objects/complete/{oid}", "json"),
    (("GET", "HEAD"), _REPO + "/resolve/{rev}/{path}", "none"),
    (("GET", "HEAD"), _REPO + "/raw/{rev}/{path}", "none"),
    (("GET",), _API + "/discussions", "none"),
    (("GET",), _API + "/xet-read-token/{rev}", "none"),
    (("GET",), "/api/datasets/{ns}/{name}", "none"),
    (("GET", "HEAD"), "/", "none"),
    (("GET",), _REPO, "none"),
    (("GET",), _REPO + "/tree/{rev}/{path}", "none"),
    (("GET",), _REPO + "/blob/{rev}/{path}", "none"),
    (("GET",), _REPO + "/commits/{rev}", "none"),
    (("GET",), _REPO + "/commit/{rev}", "none"),
    (("GET",), _REPO + "/discussions/{n}", "none"),
    (("GET",), "/leaderboard/{path}", "none"),
    (("GET",), "/static/{name}", "none"),
    (("POST",), "/login", "form"),
    (("POST",), "/logout", "none"),
    (("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"), "/{path}", "json"),
]

_HOSTILE_NAMES = [
    "",
    ".",
    "..",
    "...",
    "a" * 300,
    "%00",
    "%0A",
    "%0D%0A",
    "%2F",
    "%2e%2e",
    "%2E%2E%2F",
    "-",
    "--",
    "api",
    "models",
    "a.git",
    "%FF",
    "%C0%AE",
    "%E2%80%AE",
    "%F0%9F%90%8D",
    "a%20b",
    "con",
    "x" * 97,
    "_",
    "a--b",
    "%25",
    "%3Cscript%3E",
    "~",
    "a.",
    ".a",
]
_HOSTILE_REVS = [
    "",
    "HEAD",
    "..",
    "main%00",
    "refs%2Fpr%2F1",
    "refs%2Fpr%2F99999999999999999999",
    "refs%2Fheads%2Fmain",
    "refs%2Ftags%2Fv1",
    "0" * 40,
    "f" * 40,
    "abc12",
    "a" * 300,
    "-1",
    "%2e%2e%2F%2e%2e",
    "main%0Ax",
    "v1",
    "refs%2Fpr%2F-1",
    "%E2%80%AE",
    "~1",
    "main^",
]
_HOSTILE_PATHS = [
    "",
    "..%2F..%2Fetc%2Fpasswd",
    "../../etc/passwd",
    "%2e%2e/%2e%2e/repo.json",
    "a//b",
    ".git/config",
    "a/" * 300 + "b",
    "x" * 5000,
    "a%0Ab",
    "%E2%80%AE.bin",
    "README.md%00.png",
    "cfg",
    "cfg/",
    "cfg/a.json/x",
    "w.bin/..",
    "%C2%85",
    "CartPole-v1",
    "index.html",
    "..%5C..%5Cwin.ini",
    "%7F",
    "file%3Fq=1",
]
_QUERIES = [
    "",
    "limit=-1",
    "limit=99999999999999999999",
    "cursor=abc",
    "cursor=-5",
    "expand[]=formatted",
    "full=1&cardData=1",
    "sort=%00",
    "direction=0",
    "direction=x",
    "search=%00%0A",
    "filter=a&filter=b",
    "blobs=true",
    "create_pr=1",
    "recursive=1&expand=1",
    "author=%E2%80%AE",
    "p=99999",
    "size=1&expires=1",
    "size=-1&expires=99999999999&signature=00",
    "token=" + ALICE,
    "x=" + "y" * 20000,
]
_AUTH = [
    None,
    None,
    f"Bearer {ALICE}",
    f"Bearer {ALICE}",
    f"Bearer {ALICE}",
    f"Bearer {BOB}",
    "Bearer",
    "Bearer not-a-token",
    "Basic YTpi",
    "bearer " + ALICE,
    "Bearer " + "x" * 30000,
    "Bearer \t",
    f"Bearer {ALICE} extra",
]
_EXTRA_HEADERS = [
    ("Range", "bytes=0-0"),
    ("Range", "bytes=-0"),
    ("Range", "bytes=99999999999999999999-"),
    ("Range", "bytes=5-1"),
    ("Range", ",".join(f"{i}-{i}" for i in range(2000))),
    ("Range", "garbage"),
    ("Cookie", "zoo_session=" + "a" * 100),
    ("Cookie", "=;=;;"),
    ("Accept", "text/html"),
    ("Content-Type", "application/x-www-form-urlencoded"),
    ("Content-Type", "multipart/form-data; boundary=x"),
    ("If-None-Match", '"x"'),
    ("X-Forwarded-For", "127.0.0.1"),
    ("Expect", "100-continue"),
    ("Origin", "http://evil"),
    ("Content-Encoding", "gzip"),
    ("Host", "evil.example"),
]


def _scalar(rng: random.Random) -> object:
    return rng.choice(
        [
            None,
            True,
            False,
            -1,
            0,
            1,
            2**63,
            10**30,
            1e308,
            -0.0,
            "",
            "x" * 10_000,
            "\x00",
            "../",
            "a/b/c",
            "main",
            "alice/open",
            [],
            {},
            [[[[[]]]]],
            "\u202e",
            "model",
        ]
    )


def _value(rng: random.Random, world: World, depth: int = 0) -> object:
    roll = rng.random()
    if roll < 0.1 and depth < 3:
        return [_value(rng, world, depth + 1) for _ in range(rng.randrange(4))]
    if roll < 0.2 and depth < 3:
        return {rng.choice(["oid", "size", "path", "name"]): _value(rng, world, depth + 1) for _ in range(2)}
    if roll < 0.3:
        return rng.choice(
            [world.lfs_oid, world.secret_oid, world.commit, world.lfs_size, "lab/secret", "bob/mine"]
        )
    if roll < 0.33:
        return "[" * 2000 + "]" * 2000
    return _scalar(rng)


_JSON_KEYS = [
    "name",
    "organization",
    "type",
    "private",
    "visibility",
    "content",
    "files",
    "objects",
    "operation",
    "oid",
    "size",
    "parts",
    "tag",
    "startingPoint",
    "fromRepo",
    "toRepo",
    "target",
    "gated",
    "transfers",
    "hash_algo",
    "ref",
]


def _json_body(rng: random.Random, world: World) -> bytes:
    roll = rng.random()
    if roll < 0.05:
        return rng.choice(
            [b"", b"{", b"null", b"[]", b'"x"', b"1e99999", b"9" * 5000, b"[" * 100_000, b"\xff\xfe"]
        )
    body = {key: _value(rng, world) for key in rng.sample(_JSON_KEYS, rng.randrange(1, 6))}
    if rng.random() < 0.3:
        body["files"] = [
            {
                "path": rng.choice(_HOSTILE_PATHS + ["w.bin"]),
                "size": _value(rng, world),
                "sample": rng.choice(["", "AAAA", "%%%", _b64(b"\0" * 600)]),
                "sha256": _value(rng, world),
            }
            for _ in range(rng.randrange(1, 5))
        ]
    if rng.random() < 0.2:
        body["target"] = {
            "type": rng.choice(["model", "dataset", None]),
            "name": rng.choice(["bob/mine", "alice/open", "x", ""]),
        }
    return json.dumps(body).encode()


def _batch_body(rng: random.Random, world: World) -> bytes:
    sizes = [0, 1, world.lfs_size, -1, 2**50, 2**63, 10**30, 64 << 20, (64 << 20) + 1, "1", None, 1.5]
    count = rng.choice([1, 2, 3, 1001]) if rng.random() < 0.9 else rng.randrange(1, 300)
    objects = [
        {
            "oid": rng.choice(
                [world.lfs_oid, world.secret_oid, "a" * 64, "A" * 64, "", "../x", rng.randbytes(32).hex()]
            ),
            "size": rng.choice(sizes),
        }
        for _ in range(count)
    ]
    body = {
        "operation": rng.choice(["upload", "upload", "download", None]),
        "objects": objects,
        "transfers": ["basic", "multipart"],
        "hash_algo": rng.choice(["sha256", "md5"]),
    }
    return json.dumps(body).encode()


def _ndjson_body(rng: random.Random, world: World) -> bytes:
    lines: list[object] = [
        {
            "key": "header",
            "value": {
                "summary": rng.choice(["x", "", "a\nb", "\x00"]),
                "parentCommit": rng.choice([None, world.commit[:7], "zz", 5]),
            },
        }
    ]
    for _ in range(rng.randrange(1, 6)):
        key = rng.choice(["file", "lfsFile", "deletedFile", "deletedFolder", "bogus"])
        value = {"path": rng.choice(_HOSTILE_PATHS + ["ok.txt", "README.md"]).replace("%", "")}
        if key == "file":
            value["content"] = rng.choice([_b64(b"hi"), "%%%", _b64(b"---\na: &a [*a]\n---\n"), ""])
            value["encoding"] = rng.choice(["base64", "utf-8"])
        elif key == "lfsFile":
            value.update(
                oid=rng.choice([world.lfs_oid, world.secret_oid, "b" * 64, "", "../../repo.json"]),
                size=_value(rng, world),
                algo=rng.choice(["sha256", "md5"]),
            )
        lines.append({"key": key, "value": value} if rng.random() < 0.9 else _value(rng, world))
    data = _ndjson(lines)
    return (
        data if rng.random() < 0.9 else data + rng.choice([b"{not json}\n", b"\n\n\n", b"[" * 50_000 + b"\n"])
    )


def _form_body(rng: random.Random, world: World) -> bytes:
    roll = rng.random()
    if roll < 0.1:
        return b"&".join(b"paths=p%d" % i for i in range(20_000))  # past the 10,000 fields
    if roll < 0.2:
        return rng.choice([b"\xff\xfe", b"%", b"=&=&", b"token=" + ALICE.encode() + b"&next=//evil.example"])
    paths = "&".join(
        f"paths={quote(rng.choice(_HOSTILE_PATHS + ['cfg', 'w.bin']), safe='%')}" for _ in range(5)
    )
    return f"{paths}&expand={rng.choice(['true', 'x', ''])}&token={rng.choice(['', ALICE, 'bad'])}".encode()


#: What a case can make hostile. Most cases make one of them hostile and keep the rest valid (Alice's
#: token, an existing repo and revision), so that the request reaches the code behind the first checks.
DIMENSIONS = ("ns", "name", "rev", "path", "oid", "n", "query", "auth", "headers", "method")
_CONTROLS = ["%00", "a%00b", "%01", "%1F", "%7F", "%0D", "%09", "%0A", "%1B%5B31m", "%C2%85", "%E2%80%A8"]


def _fill(template: str, rng: random.Random, world: World, hostile: set[str]) -> str:
    def pick(what: str, valid: list[str], bad: list[str]) -> str:
        return rng.choice(bad + _CONTROLS) if what in hostile else rng.choice(valid)

    ns, name = rng.choice([("alice", "open"), ("lab", "secret"), ("bob", "mine"), ("alice", "nope")])
    values = {
        "{ns}": pick("ns", [ns], _HOSTILE_NAMES),
        "{name}": pick("name", [name], _HOSTILE_NAMES),
        "{rev}": pick("rev", ["main", world.commit, world.commit[:7], "refs%2Fpr%2F1", "v1"], _HOSTILE_REVS),
        "{path}": pick("path", ["README.md", "w.bin", "cfg/a.json", "cfg", "CartPole-v1"], _HOSTILE_PATHS),
        "{oid}": pick(
            "oid", [world.lfs_oid, "f" * 64, "e" * 64], ["", "A" * 64, "../x", "0" * 63, "%00" * 22]
        ),
        "{n}": pick("n", ["1", "2"], ["0", "-1", "01", "999999", "9" * 30, "%C2%B2", "x", ""]),
    }
    for key, value in values.items():
        template = template.replace(key, value)
    return template


def make_case(number: int, world: World) -> Case:
    """Case ``number``: always the same request for the same world."""
    rng = random.Random(f"hub:{number}")
    hostile = set(rng.sample(DIMENSIONS, 1 if rng.random() < 0.7 else rng.randrange(2, 5)))
    methods, template, kind = rng.choice(ROUTES)
    method = (
        rng.choice(["GET", "PUT", "PATCH", "OPTIONS", "DELETE"])
        if "method" in hostile
        else rng.choice(methods)
    )
    target = _fill(template, rng, world, hostile)
    if kind == "upload" and rng.random() < 0.6:
        target = (
            world.upload_href
            if rng.random() < 0.7
            else world.upload_href.replace("signature=", "signature=0")
        )
    elif kind == "part" and rng.random() < 0.6:
        target = world.part_href.replace("/part/1", f"/part/{rng.choice(['1', '2', '0', '99'])}")
    elif "query" in hostile:
        target += "?" + "&".join(rng.sample(_QUERIES, rng.randrange(1, 3)))
    headers: list[tuple[str, str]] = []
    auth = (
        rng.choice(_AUTH)
        if "auth" in hostile
        else rng.choice([f"Bearer {ALICE}"] * 6 + [f"Bearer {BOB}", None])
    )
    if auth is not None:
        headers.append(("Authorization", auth))
    if "headers" in hostile:
        headers += rng.sample(_EXTRA_HEADERS, rng.randrange(1, 3))
    makers: dict[str, Callable[[random.Random, World], bytes]] = {
        "json": _json_body,
        "yaml": _json_body,
        "batch": _batch_body,
        "ndjson": _ndjson_body,
        "form": _form_body,
    }
    body = b""
    if kind in makers:
        body = makers[kind](rng, world)
        if kind == "yaml" and rng.random() < 0.7:
            body = json.dumps(
                {
                    "content": rng.choice(
                        [
                            "---\na: 1\n---\n",
                            "---\n" + "\n" * 5000,
                            "---\na: &a [*a]\n---\n",
                            "---\n" + "- " * 3000 + "x\n---\n",
                            "\x00---",
                        ]
                    )
                }
            ).encode()
    elif kind in ("upload", "part"):
        body = rng.choice([b"", b"x" * 1000, rng.randbytes(rng.randrange(1, 70_000))])
    declared, roll = None, rng.random()
    if roll < 0.03:  # declared over every body limit, never sent: the answer must come without it
        declared = rng.choice([(512 << 20) + 1, 2**62])
        body = b""
    return Case(number, template, method, target, tuple(headers), body, declared, chunked=0.03 <= roll < 0.08)


# ---------------------------------------------------------------------------------------------- running
def send(url: str, case: Case, timeout: float = HANG) -> int | str:
    """Send ``case`` whole on a new connection and read until the server closes it: the answer's status,
    :data:`DROPPED` (closed without one) or :data:`TIMEOUT`. A reset after the answer arrived (the server
    closed with part of a refused body unread) still counts the answer: the client has it."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    received = bytearray()
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as sock:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # answered before the body
                sock.sendall(case.request())
            while data := sock.recv(1 << 16):
                received += data
    except TimeoutError:
        return TIMEOUT
    except ConnectionError:
        pass
    while (status := re.match(rb"HTTP/1\.[01] (\d{3}) ", received)) and status.group(1).startswith(b"1"):
        end = received.find(b"\r\n\r\n")  # an interim answer (100 Continue): the real one follows
        received = received[end + 4 :] if end >= 0 else bytearray()
    return int(status.group(1)) if status else DROPPED


@dataclass
class Report:
    """What one attack measured."""

    statuses: Counter = field(default_factory=Counter)
    failures: list[tuple[Case, int | str]] = field(default_factory=list)  # 5xx but 501, dropped, timeout
    rss_before: int = 0
    rss_peak: int = 0
    seconds: float = 0.0

    @property
    def tried(self) -> int:
        return sum(self.statuses.values())

    @property
    def dropped(self) -> int:
        return self.statuses[DROPPED]

    def table(self) -> str:
        answers = ", ".join(
            f"{status}: {n}" for status, n in sorted(self.statuses.items(), key=lambda kv: str(kv[0]))
        )
        return (
            f"requests tried       {self.tried} in {self.seconds:.1f} s ({self.tried / max(self.seconds, 1e-9):.0f}/s)\n"
            f"answers by status    {answers}\n"
            f"server errors (5xx)  {sum(n for s, n in self.statuses.items() if isinstance(s, int) and s >= 500 and s != 501)}\n"
            f"dropped connections  {self.dropped}\n"
            f"timeouts             {self.statuses[TIMEOUT]}\n"
            f"server RSS           {self.rss_before / 2**20:.1f} MiB before, peak {self.rss_peak / 2**20:.1f} MiB"
        )


def attack(
    server: SimpleNamespace,
    world: World,
    cases: range,
    on_case: Callable[[Case, int | str], None] | None = None,
) -> Report:
    """Send every case of ``cases`` to ``server`` (a :func:`zoo_serve`) in order; the report counts the
    answers and keeps each failure (a 5xx, a dropped connection, a timeout) with its case."""
    report = Report(rss_before=memory(server.proc.pid)[0])
    start = time.perf_counter()
    for number in cases:
        case = make_case(number, world)
        outcome = send(server.url, case)
        report.statuses[outcome] += 1
        if not isinstance(outcome, int) or (outcome >= 500 and outcome != 501):  # 501: a Hub call left out
            report.failures.append((case, outcome))
        if on_case is not None:
            on_case(case, outcome)
    report.seconds = time.perf_counter() - start
    report.rss_peak = memory(server.proc.pid)[1]
    return report


def describe(case: Case, outcome: int | str) -> str:
    """One failing case in a line: how to replay it, and what it sent."""
    head = case.request()[:300].decode("latin-1").split("\r\n")[0]
    return f"case {case.number} ({case.route}): {outcome}: {head[:200]} body {case.body[:120]!r}"
