"""Hundreds of runs, one answer: a shell loop of ``zoo eval`` per run against ``zoo eval FOLDER --all``, and the
local sweep against ``--executor ray``, side by side in one run.

The runs are copies of the bundled CleanRL DQN run on CartPole-v1 (a real trained model), one folder per
training seed. Two parts:

  small    ``--runs`` runs (200) x ``--episodes`` episodes (10): (a) a bash loop calling ``zoo eval RUN`` once
           per run, (b) ``zoo eval FOLDER --all``, (c) ``--all --executor ray --num-cpus 2``.
  long     ``--long-runs`` runs (40) whose eval takes over a second (``--long-episodes`` 200 episodes each):
           (b) the local sweep, (c) Ray with 1 worker and with 2 workers.

Each variant starts from runs without eval.json (the sweep would skip them otherwise) and is timed from
the shell, start-up included. Printed per variant: wall time, runs/s, the per-run overhead (wall time per
run minus the mean rollout seconds eval.json records), and the speed-up over its baseline.

    python benchmarks/sweep.py [--runs 200] [--episodes 10] [--long-runs 40] [--long-episodes 200] [--skip-loop]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ZOO = Path(sys.executable).with_name("zoo")


def make_runs(root: Path, count: int) -> Path:
    """``count`` copies of the bundled DQN run, seeds 1..count, under ``root``."""
    src = next((REPO / "examples" / "runs").glob("CartPole-v1__dqn__1__*"))
    for seed in range(1, count + 1):
        dst = root / src.name.replace("__1__", f"__{seed}__")
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("eval.json"))
    return root


def clear(root: Path) -> None:
    for path in root.glob("*/eval.json"):
        path.unlink()


def timed(command: str, root: Path) -> tuple[float, float]:
    """Wall seconds of ``command`` (bash), and the mean rollout seconds of the eval.json files it wrote."""
    clear(root)
    start = time.perf_counter()
    subprocess.run(["bash", "-c", command], check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    rollouts = [json.loads(p.read_text())["wall_clock_seconds"] for p in root.glob("*/eval.json")]
    if len(rollouts) != len(list(root.iterdir())):
        raise SystemExit(f"{command}: {len(rollouts)} eval.json files for {len(list(root.iterdir()))} runs")
    return wall, sum(rollouts) / len(rollouts)


def report(
    label: str, wall: float, rollout: float, runs: int, baseline: float | None, workers: int = 1
) -> None:
    """One variant's line. The per-run overhead is the worker time a run costs beyond its rollout:
    ``wall * workers / runs - rollout`` (start-up, imports, loading, writing, scheduling)."""
    speedup = f"{baseline / wall:6.2f}x" if baseline else "   1.00x (baseline)"
    overhead = 1000 * (wall * workers / runs - rollout)
    print(
        f"  {label:<34} {wall:8.1f} s  {runs / wall:7.2f} runs/s  overhead {overhead:7.1f} ms/run  "
        f"rollout {1000 * rollout:6.1f} ms/run  {speedup}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--long-runs", type=int, default=40)
    parser.add_argument("--long-episodes", type=int, default=200)
    parser.add_argument("--skip-loop", action="store_true", help="leave out (a), the slow shell loop")
    args = parser.parse_args()
    zoo = str(ZOO)
    with tempfile.TemporaryDirectory(prefix="zoo-sweep-bench-") as tmp:
        small = make_runs(Path(tmp) / "small", args.runs)
        n = f"--episodes {args.episodes}"
        print(f"small: {args.runs} runs x {args.episodes} episodes (CartPole-v1 DQN, 8 envs)", flush=True)
        sweep = timed(f"{zoo} eval {small} --all {n} -q", small)
        if not args.skip_loop:
            loop = timed(f'for run in {small}/*/; do {zoo} eval "$run" {n} -q; done', small)
            report("(a) shell loop of zoo eval", *loop, args.runs, None)
            report("(b) zoo eval --all", *sweep, args.runs, loop[0])
        else:
            report("(b) zoo eval --all", *sweep, args.runs, None)
        ray = timed(f"{zoo} eval {small} --all {n} -q --executor ray --num-cpus 2", small)
        report("(c) --executor ray, 2 workers", *ray, args.runs, sweep[0], workers=2)

        long = make_runs(Path(tmp) / "long", args.long_runs)
        n = f"--episodes {args.long_episodes}"
        print(
            f"long: {args.long_runs} runs x {args.long_episodes} episodes (an eval over a second each)",
            flush=True,
        )
        local = timed(f"{zoo} eval {long} --all {n} -q", long)
        report("(b) zoo eval --all", *local, args.long_runs, None)
        for workers in (1, 2):
            ray = timed(f"{zoo} eval {long} --all {n} -q --executor ray --num-cpus {workers}", long)
            report(
                f"(c) --executor ray, {workers} worker{'s' if workers > 1 else ''}",
                *ray,
                args.long_runs,
                local[0],
            )


if __name__ == "__main__":
    main()
