"""How fast is ``zoo check`` on a cluster's ``runs/``, next to what a user writes without zoo?

Builds N synthetic CleanRL run dirs (default 10,000): each holds a real torch-saved ``dqn`` state
dict and a real TensorBoard events file (written once with SummaryWriter, then copied). Then it
times, in one run and each in a fresh subprocess over the same tree:

- ``find ROOT -type f``: the floor, listing only;
- the naive loop a user writes: for every run, ``torch.load(weights_only=True)`` and tensorboard's
  ``EventAccumulator`` for the last ``charts/episodic_return`` (it neither checks CRCs nor shapes);
- ``zoo check ROOT --json`` cold (an empty zoo cache) and warm (the verdict memo the cold call left).

It prints each time and the ratios to the naive loop; the targets are cold >= 5x and warm >= 30x.
With flax installed it also checks a tree of the same size holding CleanRL ``dqn_jax`` runs (flax
msgpack files, read without jax) and prints their times as ratios to the torch tree's: about 1x.

    python benchmarks/check_scale.py [--runs 10000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
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


def _jax_model(workdir: Path) -> Path:
    """A dqn_jax model as dqn_jax.py saves it: ``flax.serialization.to_bytes(q_state.params)``."""
    import flax
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    class QNetwork(nn.Module):  # dqn_jax.py's network (cleanrl 1.2.0, lines 94-104)
        action_dim: int

        @nn.compact
        def __call__(self, x: jnp.ndarray):
            x = nn.relu(nn.Dense(120)(x))
            x = nn.relu(nn.Dense(84)(x))
            return nn.Dense(self.action_dim)(x)

    model = workdir / "dqn_jax.cleanrl_model"
    params = QNetwork(action_dim=2).init(jax.random.PRNGKey(0), jnp.zeros((1, 4)))
    model.write_bytes(flax.serialization.to_bytes(params))
    return model


def build_tree(root: Path, runs: int, exp_name: str = "dqn") -> None:
    """``runs`` run dirs of ``exp_name`` (dqn: a torch state dict; dqn_jax: flax params), each with a log."""
    model, events = _seed_files(root.parent)
    if exp_name == "dqn_jax":
        model = _jax_model(root.parent)
    runs_dir = root / "runs"
    runs_dir.mkdir(parents=True)
    for i in range(runs):
        run = runs_dir / f"CartPole-v1__{exp_name}__{i}__{1700000000 + i}"
        run.mkdir()
        shutil.copyfile(model, run / f"{exp_name}.cleanrl_model")
        shutil.copyfile(events, run / events.name)


def time_check(root: Path, env: dict, label: str) -> float:
    t_zoo, zoo = timed([sys.executable, "-m", "zoo", "check", str(root), "--json"], env)
    reports = json.loads(zoo.stdout)
    ok = sum(r["status"] == "ok" for r in reports)
    print(
        f"zoo check ({label}){' ' * (17 - len(label))}: {t_zoo:8.3f}s  ({len(reports)} runs, {ok} ok, exit {zoo.returncode})",
        end="",
    )
    return t_zoo


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
        torch_times = {}
        for label in ("cold", "warm"):
            torch_times[label] = t_zoo = time_check(root, env, label)
            print(f"  {t_naive / t_zoo:5.1f}x faster than naive, {t_zoo / args.runs * 1000:.3f} ms per run")
        if importlib.util.find_spec("flax") is None:
            print("no flax here: the JAX variant (dqn_jax runs) needs pip install 'rl-zoo-hub[jax]'")
            return
        jax_root = work / "jax-tree"
        if not (jax_root / "runs").is_dir():
            build_tree(jax_root, args.runs, "dqn_jax")
        jax_env = dict(env, ZOO_CACHE_DIR=str(work / "jax-cache"))
        shutil.rmtree(work / "jax-cache", ignore_errors=True)
        for label in ("cold", "warm"):
            t_jax = time_check(jax_root, jax_env, f"JAX, {label}")
            print(f"  {t_jax / torch_times[label]:5.2f}x the torch tree's time")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
