"""How fast is ``zoo check`` on a cluster's ``runs/``, next to what a user writes without zoo?

Builds N synthetic CleanRL run dirs (default 10,000): each holds a real torch-saved ``dqn`` state
dict and a real TensorBoard events file (written once with SummaryWriter, then copied). Then it
times, in one run and each in a fresh subprocess over the same tree:

- ``find ROOT -type f``: the floor, listing only;
- the naive loop a user writes: for every run, ``torch.load(weights_only=True)`` and tensorboard's
  ``EventAccumulator`` for the last ``charts/episodic_return`` (it neither checks CRCs nor shapes);
- ``zoo check ROOT --json`` cold (an empty zoo cache) and warm (the verdict memo the cold call left).

It prints each time and the ratios to the naive loop; the targets are cold >= 5x and warm >= 30x.

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

NAIVE = """
import sys, os, torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
root, found = sys.argv[1], 0
for run in sorted(os.listdir(root)):
    folder = os.path.join(root, run)
    model = torch.load(os.path.join(folder, "dqn.cleanrl_model"), map_location="cpu", weights_only=True)
    events = [f for f in os.listdir(folder) if f.startswith("events.out.tfevents")]
    acc = EventAccumulator(os.path.join(folder, events[0]), size_guidance={"scalars": 0}).Reload()
    found += bool(acc.Scalars("charts/episodic_return")[-1].value is not None and model)
print(found)
"""


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
    """One command's wall time. Each starts after a pause: the machine settles (clock, caches) after the
    last one, and ``zoo check``'s detached memo writer has finished before the warm call reads the memo."""
    time.sleep(2)
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
        if not (root / "runs").is_dir():
            build_tree(root, args.runs)
        print(f"built {args.runs} run dirs in {time.perf_counter() - t0:.1f}s under {root}")
        shutil.rmtree(work / "cache", ignore_errors=True)
        env = dict(os.environ, ZOO_CACHE_DIR=str(work / "cache"))  # starts empty: the first call is cold
        t_find, find = timed(["find", str(root), "-type", "f"])
        print(f"find -type f                 : {t_find:8.3f}s  ({len(find.stdout.splitlines())} files)")
        t_naive, naive = timed([sys.executable, "-c", NAIVE, str(root / "runs")])
        assert naive.returncode == 0, naive.stderr[-2000:]
        print(f"naive torch.load + EventAcc. : {t_naive:8.3f}s  ({naive.stdout.strip()} runs read)")
        for label in ("cold", "warm"):
            t_zoo, zoo = timed([sys.executable, "-m", "zoo", "check", str(root), "--json"], env)
            reports = json.loads(zoo.stdout)
            ok = sum(r["status"] == "ok" for r in reports)
            print(f"zoo check ({label})            : {t_zoo:8.3f}s  ({len(reports)} runs, {ok} ok, exit {zoo.returncode})"
                  f"  {t_naive / t_zoo:5.1f}x faster than naive, {t_zoo / args.runs * 1000:.3f} ms per run")  # fmt: skip
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
