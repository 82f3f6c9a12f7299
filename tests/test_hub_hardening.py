"""Attacks on ``zoo hub serve`` over real sockets: each is refused with a 4xx, and others go on.

Protocol-level attacks run against a server in this process (a thread on 127.0.0.1, port 0), with short
server timeouts so that a test waits fractions of a second. YAML attacks, the memory tests and the kill -9
test run ``zoo hub serve`` as a subprocess: a regressed parser would hold that process's GIL, the memory
is that process's, and kill -9 needs a process. After every attack another client must get its answer.
No test asserts how long anything took (a loaded CI machine is slow): a regression that makes a refusal
cost minutes meets the generous socket timeouts, which guard against hangs, and the memory bounds.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from hub_fuzzing import HANG, memory, zoo_serve
from test_hub_server import hub_log, requests_in, run_client
from test_safeyaml import billion_laughs

from zoo.hub_server.http_limits import Limits
from zoo.hub_server.server import HubServer
from zoo.hub_server.storage import HubStorage
from zoo.hub_server.store_records import Put

FAST = Limits(head_timeout=0.5, body_idle_timeout=0.5, shutdown_grace=0.5)
LONG_STRING = "a: &a " + "x" * 100_000 + "\nb: [" + ", ".join(["*a"] * 50) + "]\n"  # 5 MB once expanded


def readme(metadata: str) -> str:
    return f"---\n{metadata}---\n# card\n"


@pytest.fixture
def hub(tmp_path) -> Iterator[HubServer]:
    with HubServer(tmp_path / "root", limits=FAST).start() as server:
        yield server


def address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def exchange(url: str, data: bytes, timeout: float = HANG) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes, read one response: status, headers (lower-case names), body."""
    with socket.create_connection(address(url), timeout=timeout) as sock:
        sock.sendall(data)
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()


def post(url: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
    host = url.removeprefix("http://")  # the server builds upload URLs from it
    head = f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return exchange(url, head.encode() + body)


def assert_others_are_answered(url: str, timeout: float = HANG) -> None:
    """A fresh client gets its answer (``timeout`` is a hang guard, not a speed requirement)."""
    conn = http.client.HTTPConnection(*address(url), timeout=timeout)
    try:
        conn.request("GET", "/api/whoami-v2")
        response = conn.getresponse()
        response.read()
    finally:
        conn.close()
    assert response.status == 200


def create_repo(url: str, repo_id: str) -> None:
    namespace, name = repo_id.split("/")
    status, _, body = post(
        url, "/api/repos/create", json.dumps({"organization": namespace, "name": name}).encode()
    )
    assert status == 200, body


def ndjson(*items: dict) -> bytes:
    return b"".join(json.dumps(item).encode() + b"\n" for item in items)


def inline(path: str, content: bytes) -> dict:
    import base64

    return {
        "key": "file",
        "value": {"path": path, "content": base64.b64encode(content).decode(), "encoding": "base64"},
    }


def rss_bytes(pid: int) -> int:
    return memory(pid)[0]


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[SimpleNamespace]:
    """One ``zoo hub serve`` subprocess for the YAML attacks: if a bound ever regresses, the parse holds
    the GIL of the server's process (``re`` and PyYAML never release it), not of this one, so the test
    fails on its socket timeout instead of freezing pytest."""
    with zoo_serve(tmp_path_factory.mktemp("served") / "root") as server:
        yield server


# ---------------------------------------------------------------------------------------------- YAML
@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        (billion_laughs(), "expands to more than 200000 nodes"),
        (LONG_STRING, "characters of text"),
        ("a: &a [*a]\n", "recursive alias"),
        ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
        ("a: " + "x" * (300 << 10) + "\n", "over 256 KiB of YAML"),
    ],
    ids=["billion-laughs", "long-string-aliases", "recursive-alias", "deep-nesting", "oversize"],
)
def test_hostile_card_yaml_is_refused_by_validate_yaml(served, metadata, reason):
    status, headers, body = post(
        served.url, "/api/validate-yaml", json.dumps({"content": readme(metadata)}).encode()
    )
    assert status == 400
    assert reason in json.loads(body)["errors"][0]["message"] and reason in headers["x-error-message"]
    assert_others_are_answered(served.url)


def test_a_run_of_newlines_does_not_make_the_front_matter_pattern_backtrack(served):
    """The Hub's own front-matter regex needs minutes of CPU for 8 KB of newlines (so for 200,000 of them,
    far past the hang guard); ours is linear."""
    status, _, _ = post(
        served.url, "/api/validate-yaml", json.dumps({"content": "---\n" + "\n" * 200_000}).encode()
    )
    assert status == 200


def test_yaml_bomb_in_a_committed_readme_is_refused_and_nothing_lands(served):
    create_repo(served.url, "alice/card")
    body = ndjson(
        {"key": "header", "value": {"summary": "bomb"}},
        inline("README.md", readme(billion_laughs()).encode()),
    )
    status, _, reply = post(served.url, "/api/models/alice/card/commit/main", body)
    assert status == 400 and "expands to more than" in json.loads(reply)["error"]
    assert HubStorage(served.root).resolve("alice/card", "main").files == {}
    assert_others_are_answered(served.url)


def test_a_stored_readme_bomb_does_not_stall_model_info(served):
    """A README stored before this server checked cards (or written into ROOT by hand) is read with the
    same budget: model_info answers, without cardData."""
    storage = HubStorage(served.root)  # another process on the same ROOT, as the docs allow
    storage.create_repo("alice/old", "alice", private=False)
    entry = storage.regular_file(readme(billion_laughs()).encode())
    storage.commit("alice/old", "main", [Put("README.md", entry)], message="planted", author="alice")
    status, _, body = exchange(served.url, b"GET /api/models/alice/old HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 200 and "cardData" not in json.loads(body)


def test_a_cpu_heavy_request_does_not_hold_up_others(hub):
    """Seconds of YAML parsing (valid, at the size cap, three at once) run in worker threads, not in the
    loop: another client is answered while they are still parsing. The server's own log gives the order
    in which the answers went out, whatever the machine's speed."""
    metadata = "".join(f"key{i}: [value {i}, {{a: {i}, b: text {i}}}]\n" for i in range(5200))
    results: list[int] = []
    body = json.dumps({"content": readme(metadata)}).encode()
    workers = [
        threading.Thread(target=lambda: results.append(post(hub.url, "/api/validate-yaml", body)[0]))
        for _ in range(3)
    ]
    with hub_log() as log:
        for worker in workers:
            worker.start()
        time.sleep(0.2)  # the parses are under way
        assert_others_are_answered(hub.url)
        for worker in workers:
            worker.join(HANG)
    answered = requests_in(log.getvalue())
    assert results == [200, 200, 200] and len(answered) == 4
    assert answered.index("GET /api/whoami-v2 200") < 3  # before the last parse was done: the loop was free


# ---------------------------------------------------------------------------------------------- JSON, sizes
@pytest.mark.parametrize(
    "path", ["/api/repos/create", "/api/validate-yaml", "/api/models/alice/deep/commit/main"]
)
def test_deeply_nested_json_is_a_400_not_a_500(hub, path):
    create_repo(hub.url, "alice/deep")
    nested = b"[" * 100_000 + b"]" * 100_000
    body = b'{"key": "header", "value": ' + nested + b"}\n" if "commit" in path else nested
    status, headers, reply = post(hub.url, path, body)
    assert status == 400 and "nested too deeply" in json.loads(reply)["error"]
    assert "nested too deeply" in headers["x-error-message"]
    assert_others_are_answered(hub.url)


def test_oversize_json_body_is_413_before_it_is_sent(hub):
    head = f"POST /api/validate-yaml HTTP/1.1\r\nHost: x\r\nContent-Length: {(16 << 20) + 1}\r\n\r\n"
    status, headers, body = exchange(hub.url, head.encode())  # the body never comes: the answer does
    assert status == 413 and json.loads(body) == {"error": "request body over 16777216 bytes"}
    assert (
        headers["connection"] == "close" and headers["x-error-message"] == "request body over 16777216 bytes"
    )
    assert_others_are_answered(hub.url)


def test_chunked_bodies_and_commit_lines_are_bounded_too(tmp_path):
    with HubServer(tmp_path / "root", limits=Limits(json_body=1000, commit_line=1000)).start() as hub:
        chunk = b"3e8\r\n" + b"x" * 1000 + b"\r\n"  # 1000 bytes, twice: over the limit only together
        head = b"POST /api/validate-yaml HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        status, _, body = exchange(hub.url, head + chunk + chunk + b"0\r\n\r\n")
        assert status == 413 and "over 1000 bytes" in json.loads(body)["error"]
        create_repo(hub.url, "alice/lines")
        line = ndjson({"key": "header", "value": {"summary": "s" * 2000}})
        status, _, body = post(hub.url, "/api/models/alice/lines/commit/main", line)
        assert status == 413 and "a commit line over 1000 bytes" in json.loads(body)["error"]
        assert_others_are_answered(hub.url)


def test_oversize_headers_are_refused_whole_or_in_pieces(hub):
    big = b"X-Big: " + b"a" * (100 << 10) + b"\r\n"
    status, _, body = exchange(hub.url, b"GET /api/whoami-v2 HTTP/1.1\r\nHost: x\r\n" + big + b"\r\n")
    assert status == 431 and "request headers over 65536 bytes" in json.loads(body)["error"]
    with socket.create_connection(address(hub.url), timeout=HANG) as sock:  # h11 stops buffering at the limit
        sock.sendall(b"GET /api/whoami-v2 HTTP/1.1\r\nHost: x\r\n" + big[:70_000])
        response = http.client.HTTPResponse(sock)
        response.begin()
        assert response.status == 400
    assert_others_are_answered(hub.url)


# ---------------------------------------------------------------------------------------------- LFS, headers
PETABYTE = 1 << 50


def lfs_batch(url: str, repo_id: str, objects: list[dict]) -> tuple[int, dict]:
    status, _, reply = post(
        url,
        f"/{repo_id}.git/info/lfs/objects/batch",
        json.dumps({"operation": "upload", "objects": objects}).encode(),
    )
    return status, json.loads(reply)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the server's RSS from /proc")
def test_an_lfs_batch_declaring_a_petabyte_is_refused_before_any_url_is_made(served):
    """200 bytes that made the server build 16.7 M part URLs (7.5 GB of RSS for two): now a 422 for that
    object, with the limit and how to raise it; the other objects of the batch get their URLs."""
    create_repo(served.url, "alice/huge")
    before = rss_bytes(served.proc.pid)
    for _ in range(3):
        status, reply = lfs_batch(
            served.url, "alice/huge", [{"oid": "a" * 64, "size": PETABYTE}, {"oid": "b" * 64, "size": 100}]
        )
        huge, small = reply["objects"]
        assert status == 200 and huge == {
            "oid": "a" * 64,
            "size": PETABYTE,
            "error": {
                "code": 422,
                "message": (
                    f"LFS object of {PETABYTE} bytes is over the 50 GiB this server accepts per file (its operator can "
                    "raise it: zoo hub serve --max-lfs-size)"
                ),
            },
        }
        assert set(small["actions"]) == {"upload", "verify"}
    assert rss_bytes(served.proc.pid) - before < 64 << 20
    assert_others_are_answered(served.url)


def test_max_lfs_size_is_the_servers_option_and_the_client_says_why(tmp_path):
    (tmp_path / "big.bin").write_bytes(os.urandom(3 << 20))
    with zoo_serve(tmp_path / "root", "--max-lfs-size", "2MiB") as server:
        out = run_client(
            server,
            """
            api.create_repo("anonymous/big")
            out["big"] = caught(api.upload_file, path_or_fileobj="big.bin", path_in_repo="big.bin",
                                repo_id="anonymous/big")
            out["small"] = api.upload_file(path_or_fileobj=b"w" * 1000, path_in_repo="small.bin",
                                           repo_id="anonymous/big").oid
        """,
            tmp_path,
        )
    assert (
        "LFS object of 3145728 bytes is over the 2 MiB this server accepts per file" in out["big"]["message"]
    )
    assert out["small"]


def test_part_counts_objects_and_part_urls_per_batch_are_capped(tmp_path):
    limits = Limits(lfs_part_size=1 << 20, lfs_max_parts=4, lfs_batch_objects=3, lfs_batch_parts=10)
    with HubServer(tmp_path / "root", limits=limits).start() as hub:
        create_repo(hub.url, "alice/parts")
        objects = [{"oid": f"{n:064x}", "size": 16 << 20} for n in range(3)]  # 4 parts of 4 MiB each
        status, reply = lfs_batch(hub.url, "alice/parts", objects)
        first, second, third = reply["objects"]
        for obj in (first, second):
            header = obj["actions"]["upload"]["header"]
            assert header.pop("chunk_size") == str(4 << 20) and sorted(header) == ["1", "2", "3", "4"]
        assert third["error"] == {
            "code": 422,
            "message": "this LFS batch needs over 10 upload parts in all: "
            "upload these files in several commits",
        }
        status, _ = lfs_batch(hub.url, "alice/parts", objects + objects[:1])
        assert status == 413
        assert_others_are_answered(hub.url)


@pytest.mark.parametrize("text", ["%00", "a%0Ab", "%0D%0AX-Injected:%201", "%7F", "%C2%85", "x%E2%80%AEy"])
def test_control_characters_in_a_path_get_an_answer_never_a_dropped_connection(hub, text):
    """A NUL in ``resolve/main/%00`` was echoed into X-Error-Message, h11 refused to write it, and the
    client got an empty reply; every header value is now cleaned, and the log line escaped."""
    create_repo(hub.url, "alice/ctl")
    paths = [
        f"/alice/ctl/resolve/main/{text}",
        f"/alice/ctl/resolve/{text}/x",
        f"/alice/ctl/raw/main/{text}",
        f"/api/models/alice/ctl/tree/main/{text}",
        f"/api/models/alice/ctl/revision/{text}",
        f"/alice/{text}/resolve/main/x",
        f"/api/models/alice/ctl/commits/{text}",
    ]
    with hub_log() as log:
        for path in paths:
            status, headers, body = exchange(hub.url, f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            assert status in (400, 404), (path, status, body)
            assert "x-injected" not in headers
            assert all(value.isprintable() for value in headers.values()), headers
    assert len(log.getvalue().splitlines()) == len(paths)  # one line each: nothing written a line of its own


# ---------------------------------------------------------------------------------------------- slow clients
def _trickle_head(url: str, closed: list[bool]) -> None:
    """Send a request head one byte every 50 ms, never finishing it (a minute and a half of bytes); record
    whether the server hung up before the bytes ran out."""
    with socket.create_connection(address(url), timeout=HANG) as sock:
        for byte in b"GET /api/whoami-v2 HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1800:
            try:
                sock.sendall(bytes([byte]))
                if select.select([sock], [], [], 0.05)[0] and sock.recv(1) == b"":
                    closed.append(True)
                    return
            except OSError:
                closed.append(True)
                return
        closed.append(False)


def test_slowloris_heads_and_stalled_bodies_hold_up_nobody(hub):
    closed: list[bool] = []
    trickles = [threading.Thread(target=_trickle_head, args=(hub.url, closed)) for _ in range(8)]
    for thread in trickles:
        thread.start()
    stalled = []
    for _ in range(8):  # a body that never completes
        sock = socket.create_connection(address(hub.url), timeout=HANG)
        sock.sendall(b"POST /api/validate-yaml HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        stalled.append(sock)
    try:
        for _ in range(3):
            assert_others_are_answered(hub.url)
        for sock in stalled:
            response = http.client.HTTPResponse(sock)
            response.begin()
            assert response.status == 408 and "no request body data" in json.loads(response.read())["error"]
    finally:
        for sock in stalled:
            sock.close()
    for thread in trickles:
        thread.join(2 * HANG)
    assert closed == [True] * 8  # each closed by the server (its head_timeout), not left to trickle on
    assert_others_are_answered(hub.url)


def test_stop_does_not_wait_for_a_stalled_client(tmp_path):
    """The stalled body would hold its request for 10 minutes; stop() cancels it after the grace period
    (stop's own wait for the serving thread, 10 s past the grace, would leave that thread running)."""
    hub = HubServer(tmp_path / "root", limits=Limits(body_idle_timeout=600, shutdown_grace=0.5)).start()
    serving = hub._thread
    assert serving is not None
    with socket.create_connection(address(hub.url), timeout=HANG) as sock:
        sock.sendall(b"POST /api/validate-yaml HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        time.sleep(0.1)
        hub.stop()
        assert not serving.is_alive()


# ---------------------------------------------------------------------------------------------- processes
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the server's RSS from /proc")
def test_server_memory_stays_bounded_under_yaml_bombs(tmp_path):
    """The old server grew past 1.9 GB on one billion-laughs POST and stopped answering everyone."""
    with zoo_serve(tmp_path / "root") as server:
        before = rss_bytes(server.proc.pid)
        create_repo(server.url, "alice/card")
        for metadata in (billion_laughs(), LONG_STRING) * 3:
            content = readme(metadata)
            assert post(server.url, "/api/validate-yaml", json.dumps({"content": content}).encode())[0] == 400
            commit = ndjson(
                {"key": "header", "value": {"summary": "x"}}, inline("README.md", content.encode())
            )
            assert post(server.url, "/api/models/alice/card/commit/main", commit)[0] == 400
        assert_others_are_answered(server.url)
        assert rss_bytes(server.proc.pid) - before < 64 << 20


def test_kill_9_mid_upload_leaves_a_partial_that_the_next_start_removes(tmp_path):
    root, run = tmp_path / "root", tmp_path / "run"
    run.mkdir()
    (run / "README.md").write_text("---\nlibrary_name: cleanrl\n---\n# DQN\n")
    (run / "config.json").write_text('{"lr": 0.001}')
    (run / "dqn.cleanrl_model").write_bytes(os.urandom(300_000))
    expected = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in run.iterdir()}
    with zoo_serve(root) as server:
        run_client(
            server,
            f"""
            api.create_repo("alice/run")
            api.upload_folder(repo_id="alice/run", folder_path={str(run)!r}, commit_message="run")
        """,
            tmp_path,
        )
        data = os.urandom(8 << 20)
        oid = hashlib.sha256(data).hexdigest()
        batch = {"operation": "upload", "objects": [{"oid": oid, "size": len(data)}]}
        status, _, body = post(
            server.url, "/alice/run.git/info/lfs/objects/batch", json.dumps(batch).encode()
        )
        href = json.loads(body)["objects"][0]["actions"]["upload"]["href"].removeprefix(server.url)
        with socket.create_connection(address(server.url), timeout=HANG) as sock:
            sock.sendall(f"PUT {href} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n\r\n".encode())
            sock.sendall(data[: 3 << 20])  # and never the rest
            deadline = time.monotonic() + HANG
            while not any(p.stat().st_size >= 1 << 20 for p in (root / "tmp").iterdir()):
                assert time.monotonic() < deadline, "the upload never reached tmp/"
                time.sleep(0.02)
            os.kill(server.proc.pid, signal.SIGKILL)
            server.proc.wait(10)
    partial = list((root / "tmp").iterdir())
    assert partial and all(p.stat().st_size > 0 for p in partial)
    assert not (root / "blobs" / "sha256" / oid[:2] / oid[2:]).exists()  # never half a blob
    with zoo_serve(root) as server:
        assert not any((root / "tmp").iterdir())
        out = run_client(
            server,
            """
            import hashlib
            folder = snapshot_download("alice/run")
            out["files"] = {n: hashlib.sha256(open(f"{folder}/{n}", "rb").read()).hexdigest()
                            for n in api.list_repo_files("alice/run")}
        """,
            tmp_path,
        )
    assert out["files"] == expected


def test_a_new_process_on_the_same_root_keeps_uploads_in_flight(tmp_path):
    """Several processes may serve one ROOT: starting one must not delete another's live upload."""
    storage = HubStorage(tmp_path / "root")
    upload = storage.open_upload()
    upload.write(b"half of it")
    (storage.tmp / "upload.legacy").write_bytes(b"x" * 10)  # an older server's leftover: nobody holds it
    code = "import sys; from zoo.hub_server.storage import HubStorage; print(tuple(HubStorage(sys.argv[1]).removed))"
    other = subprocess.run(
        [sys.executable, "-c", code, str(storage.root)], capture_output=True, text=True, timeout=60
    )
    assert other.returncode == 0, other.stderr
    assert other.stdout.strip() == "(1, 10)"
    sha256, size = upload.finish()
    upload.close()
    assert storage.blob_path(sha256).read_bytes() == b"half of it" and size == 10
    assert not any(storage.tmp.iterdir())
