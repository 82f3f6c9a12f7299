"""Attacks on ``zoo hub serve`` over real sockets: each is refused with a 4xx, fast, and others go on.

Protocol-level attacks run against a server in this process (a thread on 127.0.0.1, port 0), with short
timeouts so that a test waits fractions of a second. YAML attacks, the memory test and the kill -9 test
run ``zoo hub serve`` as a subprocess: a regressed parser would hold that process's GIL, the memory is
that process's, and kill -9 needs a process. After every attack another client must get its answer
within a second.
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
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_hub_server import run_client
from test_safeyaml import billion_laughs

from zoo.hub.http_limits import Limits
from zoo.hub.server import HubServer
from zoo.hub.storage import HubStorage, Put

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


def exchange(url: str, data: bytes, timeout: float = 5.0) -> tuple[int, dict[str, str], bytes]:
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


def assert_others_are_answered(url: str) -> None:
    """A fresh client gets its answer within a second."""
    start = time.monotonic()
    conn = http.client.HTTPConnection(*address(url), timeout=1)
    try:
        conn.request("GET", "/api/whoami-v2")
        response = conn.getresponse()
        response.read()
    finally:
        conn.close()
    assert response.status == 200 and time.monotonic() - start < 1.0


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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def zoo_serve(root: Path) -> Iterator[SimpleNamespace]:
    """``zoo hub serve`` in a subprocess, answering; killed at the end if it still runs."""
    port = _free_port()
    cmd = [sys.executable, "-m", "zoo", "hub", "serve", "--root", str(root), "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    server = SimpleNamespace(url=f"http://127.0.0.1:{port}", proc=proc, root=root)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            try:
                assert_others_are_answered(server.url)
                break
            except OSError:
                assert time.monotonic() < deadline, "zoo hub serve did not answer within 30 s"
                time.sleep(0.05)
        yield server
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        if proc.stderr:
            proc.stderr.close()


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


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
def test_hostile_card_yaml_is_refused_quickly_by_validate_yaml(served, metadata, reason):
    start = time.monotonic()
    status, headers, body = post(
        served.url, "/api/validate-yaml", json.dumps({"content": readme(metadata)}).encode()
    )
    assert status == 400 and time.monotonic() - start < 2.0
    assert reason in json.loads(body)["errors"][0]["message"] and reason in headers["x-error-message"]
    assert_others_are_answered(served.url)


def test_a_run_of_newlines_does_not_make_the_front_matter_pattern_backtrack(served):
    """The Hub's own front-matter regex needs minutes of CPU for 8 KB of newlines; ours is linear."""
    start = time.monotonic()
    status, _, _ = post(
        served.url, "/api/validate-yaml", json.dumps({"content": "---\n" + "\n" * 200_000}).encode()
    )
    assert status == 200 and time.monotonic() - start < 1.0


def test_yaml_bomb_in_a_committed_readme_is_refused_and_nothing_lands(served):
    create_repo(served.url, "alice/card")
    body = ndjson(
        {"key": "header", "value": {"summary": "bomb"}},
        inline("README.md", readme(billion_laughs()).encode()),
    )
    start = time.monotonic()
    status, _, reply = post(served.url, "/api/models/alice/card/commit/main", body)
    assert status == 400 and "expands to more than" in json.loads(reply)["error"]
    assert time.monotonic() - start < 2.0
    assert HubStorage(served.root).resolve("alice/card", "main").files == {}
    assert_others_are_answered(served.url)


def test_a_stored_readme_bomb_does_not_stall_model_info(served):
    """A README stored before this server checked cards (or written into ROOT by hand) is read with the
    same budget: model_info answers, without cardData."""
    storage = HubStorage(served.root)  # another process on the same ROOT, as the docs allow
    storage.create_repo("alice/old", "alice", private=False)
    entry = storage.regular_file(readme(billion_laughs()).encode())
    storage.commit("alice/old", "main", [Put("README.md", entry)], message="planted", author="alice")
    start = time.monotonic()
    status, _, body = exchange(served.url, b"GET /api/models/alice/old HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 200 and "cardData" not in json.loads(body) and time.monotonic() - start < 2.0


def test_a_cpu_heavy_request_does_not_hold_up_others(hub):
    """About a second of YAML parsing (valid, at the size cap) runs in a worker thread, not in the loop."""
    metadata = "".join(f"key{i}: [value {i}, {{a: {i}, b: text {i}}}]\n" for i in range(5200))
    results: list[int] = []
    worker = threading.Thread(target=lambda: results.append(
        post(hub.url, "/api/validate-yaml", json.dumps({"content": readme(metadata)}).encode())[0]))  # fmt: skip
    worker.start()
    time.sleep(0.2)  # the parse is under way
    assert_others_are_answered(hub.url)
    worker.join(30)
    assert results == [200]


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
    with socket.create_connection(address(hub.url), timeout=5) as sock:  # h11 stops buffering at the limit
        sock.sendall(b"GET /api/whoami-v2 HTTP/1.1\r\nHost: x\r\n" + big[:70_000])
        response = http.client.HTTPResponse(sock)
        response.begin()
        assert response.status == 400
    assert_others_are_answered(hub.url)


# ---------------------------------------------------------------------------------------------- slow clients
def _trickle_head(url: str, closed_after: list[float]) -> None:
    """Send a request head one byte every 50 ms, never finishing it; record when the server hangs up."""
    start = time.monotonic()
    with socket.create_connection(address(url), timeout=5) as sock:
        for byte in b"GET /api/whoami-v2 HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200:
            try:
                sock.sendall(bytes([byte]))
                if select.select([sock], [], [], 0.05)[0] and sock.recv(1) == b"":
                    break
            except OSError:
                break
        closed_after.append(time.monotonic() - start)


def test_slowloris_heads_and_stalled_bodies_hold_up_nobody(hub):
    closed_after: list[float] = []
    trickles = [threading.Thread(target=_trickle_head, args=(hub.url, closed_after)) for _ in range(8)]
    for thread in trickles:
        thread.start()
    stalled = []
    for _ in range(8):  # a body that never completes
        sock = socket.create_connection(address(hub.url), timeout=5)
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
        thread.join(10)
    assert len(closed_after) == 8 and all(0.4 < t < 2.0 for t in closed_after), closed_after  # head_timeout
    assert_others_are_answered(hub.url)


def test_stop_does_not_wait_for_a_stalled_client(tmp_path):
    hub = HubServer(tmp_path / "root", limits=Limits(body_idle_timeout=60, shutdown_grace=0.5)).start()
    with socket.create_connection(address(hub.url), timeout=5) as sock:
        sock.sendall(b"POST /api/validate-yaml HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        time.sleep(0.1)
        start = time.monotonic()
        hub.stop()
        assert time.monotonic() - start < 3.0


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
        run_client(server, f"""
            api.create_repo("alice/run")
            api.upload_folder(repo_id="alice/run", folder_path={str(run)!r}, commit_message="run")
        """, tmp_path)  # fmt: skip
        data = os.urandom(8 << 20)
        oid = hashlib.sha256(data).hexdigest()
        batch = {"operation": "upload", "objects": [{"oid": oid, "size": len(data)}]}
        status, _, body = post(
            server.url, "/alice/run.git/info/lfs/objects/batch", json.dumps(batch).encode()
        )
        href = json.loads(body)["objects"][0]["actions"]["upload"]["href"].removeprefix(server.url)
        with socket.create_connection(address(server.url), timeout=5) as sock:
            sock.sendall(f"PUT {href} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n\r\n".encode())
            sock.sendall(data[: 3 << 20])  # and never the rest
            deadline = time.monotonic() + 10
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
        out = run_client(server, """
            import hashlib
            folder = snapshot_download("alice/run")
            out["files"] = {n: hashlib.sha256(open(f"{folder}/{n}", "rb").read()).hexdigest()
                            for n in api.list_repo_files("alice/run")}
        """, tmp_path)  # fmt: skip
    assert out["files"] == expected


def test_a_new_process_on_the_same_root_keeps_uploads_in_flight(tmp_path):
    """Several processes may serve one ROOT: starting one must not delete another's live upload."""
    storage = HubStorage(tmp_path / "root")
    upload = storage.open_upload()
    upload.write(b"half of it")
    (storage.tmp / "upload.legacy").write_bytes(b"x" * 10)  # an older server's leftover: nobody holds it
    code = "import sys; from zoo.hub.storage import HubStorage; print(tuple(HubStorage(sys.argv[1]).removed))"
    other = subprocess.run([sys.executable, "-c", code, str(storage.root)], capture_output=True, text=True,
                           timeout=60)  # fmt: skip
    assert other.returncode == 0, other.stderr
    assert other.stdout.strip() == "(1, 10)"
    sha256, size = upload.finish()
    upload.close()
    assert storage.blob_path(sha256).read_bytes() == b"half of it" and size == 10
    assert not any(storage.tmp.iterdir())
