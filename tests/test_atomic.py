"""Outputs: what ``--out`` may name, what a failed write does, and the permissions of what zoo writes.

Every writer goes through :mod:`zoo.atomic`: a regular file (or a new name) is replaced atomically, a
symlink's target is replaced and the link kept, a device or a pipe is written through, anything else is
refused before work. A failed write is one line and exit 1, never exit 0, and leaves the old file as it was.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import REPO, make_run, zoo


@pytest.fixture
def run(tmp_path):
    return make_run(tmp_path / "runs", "CartPole-v1", "dqn")


@pytest.fixture
def umask_027():
    """The process's umask set to 027 for the test (xdist runs each worker in its own process)."""
    before = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(before)


def _eval(run: Path, out) -> object:
    return zoo("eval", run, "-n", "2", "--num-envs", "2", "--deterministic", "--out", out, "-q")


def _one_error(result, *words: str) -> None:
    text = " ".join(result.stderr.split())
    assert result.exit_code == 1, result.stderr
    assert result.stderr.count("error:") == 1 and "Traceback" not in result.stderr, result.stderr
    assert "internal error" not in text, text
    for word in words:
        assert word in text, text


def test_a_full_device_is_one_line_and_exit_1_and_stays_a_device(run):
    result = _eval(run, "/dev/full")
    _one_error(result, "cannot write /dev/full: no space left")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_device_is_written_through_not_replaced(run):
    before = os.stat("/dev/null")
    assert _eval(run, "/dev/null").exit_code == 0
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino


def test_a_fifo_is_written_through_and_stays_a_fifo(run, tmp_path):
    fifo = tmp_path / "eval.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert _eval(run, fifo).exit_code == 0
    reader.join(timeout=120)  # a guard against a hang, not a time bound
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json.loads(received[0])["task"] == "CartPole-v1"


def test_a_symlink_keeps_being_a_link_and_its_target_gets_the_result(run, tmp_path):
    target = tmp_path / "results" / "eval-1.json"
    target.parent.mkdir()
    target.write_text("{}")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    assert _eval(run, link).exit_code == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["num_episodes"] == 2
    assert not [p for p in target.parent.iterdir() if p.name != target.name]  # no temp file left


def test_a_socket_or_folder_is_refused_before_the_rollout(run, tmp_path, monkeypatch):
    import zoo.evaluator

    monkeypatch.setattr(zoo.evaluator, "evaluate", lambda *a, **k: pytest.fail("rolled out before refusing"))
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        _one_error(_eval(run, path), "is a socket, not a file")
        assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_dev_stdout_redirected_to_a_file_writes_into_that_file(run, tmp_path):
    """``zoo eval --out /dev/stdout > f``: the shell's file gets eval.json; it is not replaced by another."""
    redirected = tmp_path / "redirected.json"
    with redirected.open("w") as fh:
        inode = os.fstat(fh.fileno()).st_ino
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "zoo",
                "eval",
                str(run),
                "-n",
                "1",
                "--num-envs",
                "1",
                "--deterministic",
                "--out",
                "/dev/stdout",
                "-q",
            ],
            stdout=fh,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            timeout=300,
        )
    assert proc.returncode == 0, proc.stderr
    assert os.stat(redirected).st_ino == inode
    assert json.loads(redirected.read_text())["num_episodes"] == 1


def test_export_refuses_a_device_and_keeps_it(run):
    result = zoo("export", run, "--out", "/dev/null", "-q")
    _one_error(result, "cannot write --out /dev/null: it is a device or a pipe")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_export_through_a_symlink_replaces_its_target(run, tmp_path):
    target = tmp_path / "deploy" / "policy-v1.onnx"
    target.parent.mkdir()
    link = tmp_path / "policy.onnx"
    link.symlink_to(target)
    assert zoo("export", run, "--out", link, "-q").exit_code == 0
    assert link.is_symlink() and target.stat().st_size > 0
    assert json.loads((tmp_path / "policy.onnx.metadata.json").read_text())["format"] == "onnx"


def test_a_disk_that_fills_up_mid_write_leaves_the_old_file_and_no_temp(run, monkeypatch):
    """ENOSPC from the kernel while eval.json is written: one line naming the disk, exit 1, the previous
    eval.json intact and no temp file in the run dir."""
    import zoo.atomic

    out = run / "eval.json"
    out.write_text('{"previous": true}\n')
    real_fsync = os.fsync

    def full(fd: int) -> None:
        if Path(os.readlink(f"/proc/self/fd/{fd}")).name.endswith(".tmp"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(zoo.atomic.os, "fsync", full)
    _one_error(_eval(run, out), f"cannot write {out}: no space left on its disk")
    assert out.read_text() == '{"previous": true}\n'
    assert not [p for p in run.iterdir() if p.name.endswith(".tmp")]


def test_a_full_disk_anywhere_is_named_as_the_cause(run, monkeypatch):
    """An ENOSPC raised outside zoo's writers (a library writing a temp file) is the disk's error, not zoo's."""
    import zoo.api

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/tmp/some-library-temp")

    monkeypatch.setattr(zoo.api, "run_plan", full)
    _one_error(
        _eval(run, run / "eval.json"), "cannot write /tmp/some-library-temp: no space left on its disk"
    )


def test_new_files_get_the_umask_mode_and_replaced_ones_keep_theirs(run, tmp_path, umask_027):
    out = tmp_path / "eval.json"
    assert _eval(run, out).exit_code == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    out.chmod(0o604)
    assert _eval(run, out).exit_code == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o604


def test_watch_records_and_the_handoff_are_readable_as_a_plain_write_makes_them(tmp_path, umask_027):
    """best_model_meta.json, evals.jsonl's neighbours and doctor's handoff were 0600 (mkstemp's mode)."""
    from zoo.atomic import copy_file_atomic, write_bytes_atomic, write_json_atomic

    assert (
        stat.S_IMODE(write_json_atomic(tmp_path / "best_model_meta.json", {"a": 1}).stat().st_mode) == 0o640
    )
    assert stat.S_IMODE(write_bytes_atomic(tmp_path / "curve.png", b"\x89PNG").stat().st_mode) == 0o640
    src = tmp_path / "model.pt"
    src.write_bytes(b"weights")
    src.chmod(0o644)
    assert stat.S_IMODE(copy_file_atomic(src, tmp_path / "best_model.pt").stat().st_mode) == 0o644

    result = zoo("doctor", "--framework", "sb3", "--handoff", tmp_path / "plan")
    assert result.exit_code in (0, 1), result.stderr
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "plan").iterdir()}
    assert modes == {"handoff.json": 0o640, "HANDOFF.md": 0o640}, modes
