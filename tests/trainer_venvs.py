"""Run a script with a trainer that cannot share the main venv (dev.py's TRAINER_VENVS): its venv's python, no zoo
on its path, a clear failure (never a skip) when the venv is missing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from dev import TRAINER_VENVS, bin_dir  # noqa: E402

#: The scripts the trainer venvs run (tests/trainers/<library>_*.py).
SCRIPTS = Path(__file__).resolve().parent / "trainers"


def trainer_python(library: str) -> Path:
    """The python of the venv that holds ``library``; fails the test when dev.py has not made it."""
    folder = next(folder for folder, (_, libraries) in TRAINER_VENVS.items() if library in libraries)
    python = bin_dir(ROOT / folder) / "python"
    if not python.exists():
        pytest.fail(
            f"{library} trains in {folder}, which is missing: run `python3 dev.py test` (it creates it)"
        )
    return python


def run_trainer(library: str, script: str, *args: str | Path, cwd: Path, timeout: float = 900) -> str:
    """``python tests/trainers/<script> args...`` in ``library``'s venv, in ``cwd``; its stdout. The environment
    keeps no PYTHONPATH (the main venv's zoo and tests must not leak in) and runs torch on one thread."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(
        OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MUJOCO_GL=env.get("MUJOCO_GL", "egl"), WANDB_MODE="disabled"
    )
    cmd = [str(trainer_python(library)), str(SCRIPTS / script), *map(str, args)]
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode:
        pytest.fail(
            f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
        )
    return done.stdout
