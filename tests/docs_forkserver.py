"""A fork server for the docs test's ``zoo`` and ``python``: each command is a fresh fork of a process that has
already imported torch and exported a tiny model, so that it does not pay that import (about 3 s of CPU) and the
exporters' first-call setup again.

The docs test runs a page's commands as written, in bash; ``zoo`` and ``python`` there are small shims that run
this file as a client (stdlib only, ``python -I -S``: it starts in milliseconds). The client hands the server
its arguments, working folder, environment and its stdin/stdout/stderr (the file descriptors themselves, over a
Unix socket); the server forks, and the child becomes that command: same fds, folder and environment,
``sys.path`` rebuilt as ``python -m zoo`` or ``python SCRIPT`` would build it from that ``PYTHONPATH``, then
``zoo``'s ``__main__`` (or the script, or ``-m`` module) run with ``runpy``. The child's exit status comes back
to the client, which exits with it, and a signal the client gets (``kill -TERM``) is passed to the child. Any
other way of calling ``python`` (``-c``, other flags) makes the child ``exec`` the real interpreter.

Only modules that read nothing of the environment a command may change are imported in advance (torch,
numpy, gymnasium, scipy, matplotlib, the exporters); zoo itself, huggingface_hub (``HF_ENDPOINT``) and the user's modules are
imported by each command. ``ZOO_DOCS_FORKSERVER=0`` makes the shims start real processes instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import time

PRELOAD = (
    "numpy",
    "torch",
    "gymnasium",
    "scipy.stats",
    "matplotlib",
    "yaml",
    "rich",
    "click",
    "torch.export",
    "torch.onnx",
    "onnx",
    "onnxscript",
    "onnxruntime",
    "safetensors.torch",
)


def _warm_up_export() -> None:
    """Run torch.export, the dynamo ONNX exporter, TorchScript and the meta device once on a tiny MLP, so that
    each forked ``zoo push`` (which writes and proves the release forms) does not pay their first-call setup
    (about 3 s of CPU)."""
    import io
    import warnings

    import torch

    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    example = (torch.zeros(1, 4),)
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.export.export(model, example)
        program = torch.onnx.export(
            model, example, None, dynamo=True, dynamic_axes={"input": {0: "batch"}}, input_names=["input"]
        )
        program.model_proto.SerializeToString()
        torch.jit.script(model)(*example)
        model.to("meta")(torch.zeros(1, 4, device="meta"))
    tqdm = sys.modules.get(
        "tqdm"
    )  # the exporter's progress bars leave tqdm's monitor thread, not to be forked
    if tqdm is not None and tqdm.tqdm.monitor is not None:
        tqdm.tqdm.monitor.exit()
        tqdm.tqdm.monitor = None


# ------------------------------------------------------------------------------------------------ client
def client(path: str, argv: list[str]) -> None:
    """Run ``argv`` in a fork of the server at ``path``; exit as it exits."""
    deadline = time.monotonic() + 300  # the server imports torch before it listens
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    while True:
        try:
            conn.connect(path)
            break
        except (FileNotFoundError, ConnectionRefusedError):
            if time.monotonic() > deadline:
                sys.exit(f"docs fork server: nothing listens at {path}")
            time.sleep(0.05)
    header = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    socket.send_fds(conn, [len(header).to_bytes(8, "big")], [0, 1, 2])
    conn.sendall(header)
    answers = conn.makefile("rb")
    pid = int(answers.readline())
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, lambda number, _frame: os.kill(pid, number))
    code = int(answers.readline() or "1")
    if code < 0:  # killed by a signal: so is the client, as a shell reports it (128 + N)
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


# ------------------------------------------------------------------------------------------------ server
def serve(path: str, repo: str) -> None:
    """Import ``PRELOAD``, listen at ``path``, fork a child per client; ``repo`` is where ``zoo`` is imported from."""
    import importlib
    import select

    before = dict(os.environ)
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    with contextlib.suppress(ImportError):
        _warm_up_export()
    # what the imports set for themselves (gymnasium: PYGAME_HIDE_SUPPORT_PROMPT), which a real process has too
    set_on_import = {k: v for k, v in os.environ.items() if before.get(k) != v}
    own = set(os.environ.get("PYTHONPATH", "").split(os.pathsep)) | {sys.path[0]}
    site = [p for p in sys.path[1:] if p not in own]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".tmp")
    os.rename(path + ".tmp", path)  # clients connect once it listens
    listener.listen(64)
    children: dict[int, socket.socket] = {}
    while True:
        ready, _, _ = select.select([listener], [], [], 0.05)
        if ready:
            conn, _ = listener.accept()
            head, fds, _, _ = socket.recv_fds(conn, 8, 3)
            size, body = int.from_bytes(head, "big"), b""
            while len(body) < size:
                body += conn.recv(size - len(body))
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                listener.close()
                conn.close()
                _become(json.loads(body), fds, repo, site, set_on_import)
            for fd in fds:
                os.close(fd)
            conn.sendall(f"{pid}\n".encode())
            children[pid] = conn
        for pid in list(children):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                conn = children.pop(pid)
                conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
                conn.close()


def _become(request: dict, fds: list[int], repo: str, site: list[str], set_on_import: dict[str, str]) -> None:
    """In the child: take the client's fds, folder and environment (with what the preloaded imports set, unless
    the client sets it), run its command, exit with its status."""
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update({**set_on_import, **request["env"]})
    user_path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join([repo, *user_path])  # as the shim sets it for what zoo starts
    argv = request["argv"]
    if argv[0] == "zoo":
        mode, target, args = "-m", "zoo", argv[1:]
    elif len(argv) > 1 and argv[1] == "-m" and len(argv) > 2:
        mode, target, args = "-m", argv[2], argv[3:]
    elif len(argv) > 1 and not argv[1].startswith("-") and os.path.isfile(argv[1]):
        mode, target, args = "script", argv[1], argv[2:]
    else:  # python -c ..., other flags, a bare python, a missing script: the real interpreter
        os.execv(sys.executable, [sys.executable, *argv[1:]])
    first = os.getcwd() if mode == "-m" else os.path.dirname(os.path.abspath(target))
    sys.path[:] = [first, repo, *user_path, *site]
    sys.argv = [target, *args]
    os._exit(_run(mode, target))


def _run(mode: str, target: str) -> int:
    import runpy
    import threading
    import traceback

    code: object = 0
    try:
        if mode == "-m":
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
    except BaseException:  # what the interpreter prints for an uncaught exception, and its status
        traceback.print_exc()
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    threading._shutdown()  # what interpreter exit does: wait for non-daemon threads, then the atexit handlers
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    return code & 0xFF


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    else:
        client(sys.argv[2], sys.argv[3:])
