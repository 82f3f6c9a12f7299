#!/usr/bin/env python3
"""Set up a virtualenv and run zoo's demo or test suite: needs only Python 3.11 and pip.

    python3 dev.py demo   # .venv + zoo, then `zoo check` and `zoo eval` on the bundled example runs
    python3 dev.py test   # .venv + zoo[dev,atari,mujoco], then the whole test suite

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
    return status


def test() -> int:
    setup("dev,atari,mujoco")
    env = dict(os.environ, MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl"))
    cmd = [str(BIN / "python"), "-m", "pytest", "-n", "2", "--durations=10", *sys.argv[2:]]
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    task = sys.argv[1] if len(sys.argv) > 1 else ""
    if task not in ("demo", "test"):
        sys.exit("usage: python3 dev.py demo|test [pytest args]")
    sys.exit(demo() if task == "demo" else test())
