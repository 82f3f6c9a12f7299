"""What ``zoo hub serve`` tells its operator: one line per request, per commit and per re-evaluation step.

The real ``zoo hub serve`` runs as a subprocess with a token file, its stderr in a file; clients are the
real huggingface_hub and raw sockets. Lines must carry what an operator needs (method, path, status, time,
user; repo, revision, user and files of a push), never a token or a query string, and never a line that a
client wrote (log injection): whatever a path or a file name holds, one event is one line.
"""

from __future__ import annotations

import base64
import json
import re
import signal

import pytest
from hub_fuzzing import HANG, zoo_serve
from test_hub_hardening import exchange
from test_hub_server import ALICE, BOB, hub_log, run_client

from zoo.hub_server.logs import file_list, printable
from zoo.hub_server.server import HubServer

STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
ACCESS = re.compile(
    rf"{STAMP} (INFO|ERROR) access (GET|HEAD|POST|PUT|DELETE) (/\S*) (\d{{3}}) \d+\.\d ms user=(\S+)"
)
EVIL = "evil\n2026-01-01T00:00:00Z INFO access GET /forged 200 0.1 ms user=root\u202e.bin"


@pytest.fixture
def served(tmp_path):
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"{ALICE} alice\n{BOB} bob\n")
    with zoo_serve(tmp_path / "root", "--token-file", str(tokens)) as server:
        yield server


def stop(server) -> list[str]:
    """Ctrl-C the server and return its stderr's lines after the banner."""
    server.proc.send_signal(signal.SIGINT)
    assert server.proc.wait(HANG) == 0
    lines = server.log.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("serving "))
    return lines[start + 1 :]


def raw(server, method: str, path: str, body: bytes = b"", token: str | None = None) -> int:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: {len(body)}\r\n\r\n"
    return exchange(server.url, head.encode() + body)[0]


def test_one_line_per_request_and_per_push_and_no_secret_in_any(served, tmp_path):
    up = tmp_path / "up"
    up.mkdir()
    (up / "w.bin").write_bytes(b"\0weights" * 500)  # through LFS: batch, PUT (signed URL), verify
    (up / "README.md").write_text("# hi\n")
    run_client(
        served,
        f"""
        api.create_repo("alice/logged")
        api.upload_folder(folder_path={str(up)!r}, repo_id="alice/logged", commit_message="first")
        hf_hub_download("alice/logged", "w.bin")
    """,
        tmp_path,
        ALICE,
    )
    sent = [
        ("GET", "/api/whoami-v2", None, 401),
        ("GET", "/alice/logged/resolve/main/nope?token=" + BOB, ALICE, 404),
        ("GET", "/api/models/alice/logged", BOB, 200),
        ("GET", "/alice/logged/resolve/main/%00", None, 404),
    ]
    for method, path, token, status in sent:
        assert raw(served, method, path, token=token) == status
    lines = stop(served)
    assert lines[-1] == "stopped"
    access = [ACCESS.fullmatch(line) for line in lines if " access " in line]
    assert all(access), [line for line in lines if " access " in line and not ACCESS.fullmatch(line)]
    requests = [(m[2], m[3], int(m[4]), m[5]) for m in access if m]
    assert requests[-4:] == [
        ("GET", "/api/whoami-v2", 401, "-"),
        ("GET", "/alice/logged/resolve/main/nope", 404, "alice"),
        ("GET", "/api/models/alice/logged", 200, "bob"),
        ("GET", "/alice/logged/resolve/main/%00", 404, "-"),
    ]
    assert ("POST", "/api/repos/create", 200, "alice") in requests
    assert any(
        m == "PUT" and p.startswith("/alice/logged.git/info/lfs/objects/") and u == "-"
        for m, p, _, u in requests
    )
    (push,) = [line for line in lines if " push " in line]
    assert re.fullmatch(
        rf"{STAMP} INFO push commit alice/logged main [0-9a-f]{{12}} user=alice files=2: "
        r"\+README\.md \+w\.bin",
        push,
    ), push
    everything = served.log.read_text()
    for secret in (ALICE, BOB, "signature=", "?", "Bearer"):
        assert secret not in everything, secret
    assert not [line for line in lines if not line.startswith(("20", "stopped"))]  # nothing of uvicorn's


def test_a_file_name_or_path_cannot_write_a_line_of_its_own(served):
    assert raw(served, "POST", "/api/repos/create", json.dumps({"name": "inj"}).encode(), ALICE) == 200
    lines = [
        {"key": "header", "value": {"summary": "x"}},
        {"key": "file", "value": {"path": EVIL, "content": base64.b64encode(b"x").decode()}},
    ]
    body = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    assert raw(served, "POST", "/api/models/alice/inj/commit/main", body, ALICE) == 200
    lines = stop(served)
    assert not [
        line for line in lines if line.startswith("2026-01-01") or "/forged" in line.split(" push ")[0]
    ]
    (push,) = [line for line in lines if " push " in line]
    assert push.endswith(
        r"files=1: +evil\n2026-01-01T00:00:00Z INFO access GET /forged 200 0.1 ms user=root\u202e.bin"
    )


def test_log_level_warning_keeps_only_problems(tmp_path):
    with zoo_serve(tmp_path / "root", "--log-level", "warning") as server:
        assert raw(server, "GET", "/api/whoami-v2") == 200
        assert raw(server, "GET", "/nobody/nothing/resolve/main/x") == 404
        lines = stop(server)
    assert lines == ["stopped"]


def test_reevaluation_steps_are_logged(tmp_path):
    """Queued, started, finished with the outcome; a failure is a WARNING with its reason."""
    with hub_log() as log, HubServer(tmp_path / "root", reevaluate=True).start() as hub:
        run_client(
            hub,
            """
            api.create_repo("anonymous/no-env")
            api.upload_file(path_or_fileobj=b"---\\nlicense: mit\\n---\\n# no env\\n", path_in_repo="README.md",
                            repo_id="anonymous/no-env")
        """,
            tmp_path,
        )
        assert hub.reevaluator is not None and hub.reevaluator.wait_idle(HANG)
        sha = hub.storage.resolve("anonymous/no-env", "main").id[:12]
    lines = [line for line in log.getvalue().splitlines() if line.startswith("zoo.hub.reevaluate ")]
    mine = [line.removeprefix("zoo.hub.reevaluate ") for line in lines if f"@{sha}" in line]
    assert (
        mine[0].startswith(f"queued anonymous/no-env@{sha} (")
        and mine[1] == f"started anonymous/no-env@{sha}"
    )
    assert re.fullmatch(
        rf"finished anonymous/no-env@{sha}: failed in \d+\.\d s: no env id to evaluate on: neither "
        "an eval.json task nor a model-index result in the card",
        mine[2],
    )
    assert any("no files to evaluate" in line for line in lines)  # the new repo's empty initial commit


def test_printable_escapes_what_could_forge_a_line():
    assert printable("a\nb\r\x00\x1b[31m\u2028\u202e\\n") == "a\\nb\\r\\x00\\x1b[31m\\u2028\\u202e\\\\n"
    assert printable("ünïcode names/are fine.bin") == "ünïcode names/are fine.bin"
    assert file_list([f"+{n}" for n in range(25)]).endswith("+19 and 5 more")
