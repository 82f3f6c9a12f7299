#!/usr/bin/env python3
"""Set up a virtualenv and run zoo's demo or test suite: needs only Python 3.11 and pip.

    python3 dev.py demo   # .venv + zoo, then `zoo check`, `zoo eval` on the bundled example runs,
                          # `zoo export` one to ONNX and `zoo eval` the exported file, and offline
                          # sharing: a local hub, `zoo push` an example to it, `zoo enjoy` it back
    python3 dev.py test   # .venv + zoo[dev,atari,mujoco,sb3,skrl,rsl,rlzoo3,video,jax,envpool,genesis], then the whole test suite
    python3 dev.py test --fast   # the same without the tests that train, build Genesis scenes or are slow

torch is installed first and pinned (2.13.0, a CPU build): any open requirement would pull a
multi-GB CUDA build of a newer release. Re-running is cheap: pip skips what is installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
TORCH = "torch==2.13.0"
EXAMPLES = Path("examples") / "runs"  # relative to ROOT, where every command runs


def run(*cmd: str | Path, check: bool = True) -> int:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], cwd=ROOT, check=check).returncode


def setup(extras: str = "") -> None:
    if not (BIN / "python").exists():
        venv.create(VENV, with_pip=True)
    pip = (BIN / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check")
    run(*pip, TORCH)
    run(*pip, "-e", f".[{extras}]" if extras else ".")


def demo() -> int:
    setup()
    zoo = BIN / "zoo"
    run(zoo, "check", EXAMPLES, check=False)
    out = Path(".cache") / "demo"
    status = 0
    for run_dir in sorted(p.relative_to(ROOT) for p in (ROOT / EXAMPLES).iterdir() if p.is_dir()):
        status |= run(zoo, "eval", run_dir, "--episodes", "20", "--deterministic",
                      "--out", out / f"{run_dir.name}.eval.json", check=False)  # fmt: skip
    return status | export_loop(zoo, out) | hub_loop(zoo, out)


def export_loop(zoo: Path, out: Path) -> int:
    """Export the td3 example to ONNX (parity-checked) and evaluate the exported file like the checkpoint."""
    run_dir = next((ROOT / EXAMPLES).glob("Pendulum-v1__td3_continuous_action__*")).relative_to(ROOT)
    policy = out / "export" / "td3_pendulum.onnx"
    if run(zoo, "export", run_dir, "--out", policy, check=False):
        return 1
    return run(zoo, "eval", policy, "--episodes", "20", check=False)


def hub_loop(zoo: Path, out: Path) -> int:
    """Offline share-and-fetch: a local hub on 127.0.0.1, push an example to it, enjoy it back, stop it."""
    import shutil
    import signal
    import socket
    import time
    import urllib.request

    shutil.rmtree(ROOT / out / "hub-loop", ignore_errors=True)
    work = out / "hub-loop"
    run_dir = next((ROOT / EXAMPLES).glob("CartPole-v1__dqn__*"))
    shutil.copytree(run_dir, ROOT / work / "runs" / run_dir.name)  # push evaluates into the run dir
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, HF_ENDPOINT=url, HF_HUB_DISABLE_XET="1", HF_HUB_DISABLE_TELEMETRY="1",
               HF_HOME=str(ROOT / work / "hf-home"))  # fmt: skip
    env.pop("HF_TOKEN", None)
    print(f"+ {zoo} hub serve --root {work / 'hub'} --port {port} &", flush=True)
    hub = subprocess.Popen(
        [str(zoo), "hub", "serve", "--root", str(work / "hub"), "--port", str(port)], cwd=ROOT
    )
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{url}/api/whoami-v2", timeout=0.5)
                break
            except OSError:
                time.sleep(0.1)
        repo = "demo/CartPole-v1-dqn-seed1"
        steps = [
            [zoo, "push", work / "runs" / run_dir.name, "--repo-id", repo, "--yes", "--episodes", "20",
             "--stage-dir", work / "stage"],
            [zoo, "enjoy", "--exp-name", "dqn", "--env-id", "CartPole-v1", "--run-seed", "1", "--hf-repository", repo,
             "--runs-dir", work / "no-local-runs", "--allow-download", "--deterministic", "--episodes", "20",
             "--out", work / "enjoy.eval.json"],
        ]  # fmt: skip
        for cmd in steps:
            print("+", " ".join(str(c) for c in cmd), flush=True)
            if subprocess.run([str(c) for c in cmd], cwd=ROOT, env=env).returncode:
                return 1
        return 0
    finally:
        hub.send_signal(signal.SIGINT)  # zoo hub serve stops cleanly on Ctrl-C
        hub.wait(timeout=10)
        print("+ hub stopped", flush=True)


def test() -> int:
    """The whole suite; ``--fast`` leaves out the tests that train, build Genesis scenes or are slow (a development loop)."""
    setup("dev,atari,mujoco,sb3,skrl,rsl,rlzoo3,video,jax,envpool,genesis")
    env = dict(os.environ, MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl"))
    args = sys.argv[2:]
    if "--fast" in args:
        args = [a for a in args if a != "--fast"] + ["-m", "not slow and not trains and not genesis"]
    cmd = [str(BIN / "python"), "-m", "pytest", "-n", "2", "--durations=10", *args]
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    task = sys.argv[1] if len(sys.argv) > 1 else ""
    if task not in ("demo", "test"):
        sys.exit("usage: python3 dev.py demo|test [pytest args]")
    sys.exit(demo() if task == "demo" else test())
