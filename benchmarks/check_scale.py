"""How fast is ``zoo check`` on a big tree, next to plain ``find``?

Builds N synthetic CleanRL run dirs (default 10,000): each holds a real torch-saved
``dqn`` state dict and a real TensorBoard events file (written once with
SummaryWriter, then copied), like a cluster's ``runs/`` folder. Then it times, in
one run, ``find ROOT -type f`` and ``zoo check ROOT --json`` over the same tree,
each in a fresh subprocess, and prints the times and ratios. ``zoo check`` runs
twice: first with an empty events memo, then with the memo the first call left.

    python benchmarks/check_scale.py [--runs 10000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _seed_files(workdir: Path) -> tuple[Path, Path]:
    import gymnasium as gym
    import torch
    from torch.utils.tensorboard import SummaryWriter

    from zoo.frameworks.cleanrl.checkpoint import vector_env_view
    from zoo.frameworks.cleanrl.models import QNetwork

    env = gym.make("CartPole-v1")
    model = workdir / "dqn.cleanrl_model"
    torch.save(QNetwork(vector_env_view(env.observation_space, env.action_space)).state_dict(), model)
    writer = SummaryWriter(str(workdir / "tb"))
    for step in range(0, 5000, 100):
        writer.add_scalar("charts/episodic_return", step / 10, step)
    writer.close()
    events = next((workdir / "tb").glob("events.out.tfevents.*"))
    return model, events


def build_tree(root: Path, runs: int) -> None:
    model, events = _seed_files(root.parent)
    runs_dir = root / "runs"
    runs_dir.mkdir(parents=True)
    for i in range(runs):
        run = runs_dir / f"CartPole-v1__dqn__{i}__{1700000000 + i}"
        run.mkdir()
        shutil.copyfile(model, run / "dqn.cleanrl_model")
        shutil.copyfile(events, run / events.name)


def timed(cmd: list[str], env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return time.perf_counter() - start, proc


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--keep", type=Path, default=None, help="build the tree here and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="zoo-check-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    root = work / "tree"
    try:
        t0 = time.perf_counter()
        build_tree(root, args.runs)
        print(f"built {args.runs} run dirs in {time.perf_counter() - t0:.1f}s under {root}")
        env = dict(os.environ, ZOO_CACHE_DIR=str(work / "cache"))  # starts empty: the first call is cold
        t_find, find = timed(["find", str(root), "-type", "f"])
        print(f"find -type f              : {t_find:8.3f}s  ({len(find.stdout.splitlines())} files)")
        for label in ("cold events cache", "warm events cache"):
            t_zoo, zoo = timed([sys.executable, "-m", "zoo", "check", str(root), "--json"], env)
            reports = json.loads(zoo.stdout)
            ok = sum(r["status"] == "ok" for r in reports)
            print(f"zoo check ({label}): {t_zoo:8.3f}s  ({len(reports)} runs, {ok} ok, exit {zoo.returncode})"
                  f"  = {t_zoo / t_find:.0f}x find, {t_zoo / args.runs * 1000:.2f} ms per run")  # fmt: skip
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
