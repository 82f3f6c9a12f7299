"""What ``zoo watch`` costs the trainer it follows: one SB3 training timed alone and with the watcher, side by side.

The trainer is PPO on CartPole-v1 behind VecNormalize, saving a checkpoint with its VecNormalize
snapshot every ``--save-every`` steps (``CheckpointCallback(save_vecnormalize=True)``), one torch thread,
in a process of its own. Rounds alternate, so that machine noise hits both variants alike:

  alone    the trainer only;
  watched  the trainer with ``zoo watch RUN --every 1`` following it in another process (its defaults:
           nice 10, one core, one torch thread), evaluating every checkpoint as it appears.

Printed: the trainer's wall time per round, the median of each variant, and their ratio (watched /
alone); then, for the watched rounds, how many checkpoints the watcher evaluated. docs/watch.md states
the bound: on a core both want, the trainer keeps at least 90 % of it (nice 10 under CFS). With a
``--taskset`` core list the trainer and the watcher share those cores: ``--taskset 0`` puts both on one
core, the case the bound is about.

    python benchmarks/watch_overhead.py [--steps 40960] [--save-every 4096] [--rounds 3] [--taskset 0] [--watch-args=--sched-idle]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRAINER = """
import sys, torch
torch.set_num_threads(1)
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import CheckpointCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize
run_dir, steps, save_every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
venv = VecNormalize(make_vec_env("CartPole-v1", n_envs=4, seed=0))
model = PPO("MlpPolicy", venv, n_steps=256, batch_size=256, seed=0, device="cpu")
model.learn(steps, callback=CheckpointCallback(save_freq=save_every // 4, save_path=run_dir, save_vecnormalize=True))
"""


def _pinned(cmd: list[str], cores: str | None) -> list[str]:
    return ["taskset", "-c", cores, *cmd] if cores else cmd


def train(
    run_dir: Path, steps: int, save_every: int, cores: str | None, watched: bool, watch_args: list[str]
) -> tuple[float, int]:
    """The trainer's wall seconds, and how many checkpoints a watcher evaluated (0 when alone)."""
    watcher = None
    run_dir.mkdir(parents=True)  # zoo watch follows a folder that exists; the trainer fills it
    if watched:
        watch = [
            sys.executable,
            "-m",
            "zoo",
            "watch",
            str(run_dir),
            "--env-id",
            "CartPole-v1",
            "--every",
            "1",
            "--poll",
            "0.5",
            "--idle",
            "5",
            "--json",
            "--quiet",
            *watch_args,
        ]
        watcher = subprocess.Popen(
            _pinned(watch, cores), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
    start = time.perf_counter()
    subprocess.run(
        _pinned([sys.executable, "-c", TRAINER, str(run_dir), str(steps), str(save_every)], cores),
        check=True,
        capture_output=True,
    )
    wall = time.perf_counter() - start
    evaluated = 0
    if watcher is not None:
        out, _ = watcher.communicate(timeout=600)
        evaluated = sum(1 for line in out.splitlines() if line.strip() and "metrics" in json.loads(line))
    return wall, evaluated


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40960)
    parser.add_argument("--save-every", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--taskset", default=None, help="cores for both processes, e.g. 0 (one shared core)")
    parser.add_argument("--watch-args", default="", help="more zoo watch flags, e.g. '--sched-idle'")
    args = parser.parse_args()
    times: dict[str, list[float]] = {"alone": [], "watched": []}
    evaluated = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for variant in ("alone", "watched") if r % 2 == 0 else ("watched", "alone"):
                run_dir = Path(tmp) / f"{variant}-{r}"
                wall, n = train(
                    run_dir,
                    args.steps,
                    args.save_every,
                    args.taskset,
                    variant == "watched",
                    args.watch_args.split(),
                )
                times[variant].append(wall)
                if variant == "watched":
                    evaluated.append(n)
                print(
                    f"round {r + 1} {variant:8s} trainer {wall:6.2f} s"
                    + (f", {n} checkpoints evaluated" if n else "")
                )
    alone, watched = statistics.median(times["alone"]), statistics.median(times["watched"])
    cores = f"cores {args.taskset}" if args.taskset else f"{os.cpu_count()} cores, not pinned"
    cores += f", zoo watch {args.watch_args}" if args.watch_args else ", zoo watch's defaults"
    print(
        f"{args.steps} steps, a checkpoint every {args.save_every} ({cores}): median trainer {alone:.2f} s alone, "
        f"{watched:.2f} s watched; watched / alone = {watched / alone:.2f}x; checkpoints evaluated {evaluated}"
    )


if __name__ == "__main__":
    main()
