"""Train small, real Genesis runs as Genesis' examples do (``go2_train.py``, ``hover_train.py``), on zoo's tasks.

Genesis' example scripts pickle ``[env_cfg, obs_cfg, reward_cfg, command_cfg, train_cfg]`` to
``logs/<exp_name>/cfgs.pkl`` before building the env, then train with rsl_rl's ``OnPolicyRunner``
(``init_at_random_ep_len=True``). This script does the same on zoo's definitions of those tasks
(``zoo.tasks.genesis``, checked step for step against the examples' envs in zoo's tests), so that zoo's docs
and tests have a real Genesis run to read::

    python examples/train_genesis.py [go2|hover] [--out logs] [--num-envs 8] [--iterations 2] [--seed 1]

writes ``logs/go2-walking`` (or ``logs/drone-hovering``): ``cfgs.pkl``, ``model_0.pt`` and the final
``model_{iterations - 1}.pt`` (rsl-rl-lib 5.5.1 with ``save_interval`` 100), and the runner's events file.
Genesis is initialised by zoo (no seed: its kernel cache is keyed by the seed); the training seed is applied
to torch, numpy and random as ``gs.init(seed=...)`` would. It needs the ``genesis`` and ``rsl`` extras; on a
CPU, building the scene takes about 14 s (90 s the first time Genesis compiles its kernels).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import pickle
import shutil
from pathlib import Path


def _train(
    task_cls, default_cfgs: list[dict], exp_name: str, logs: Path, num_envs: int, iterations: int, seed: int
) -> Path:
    from rsl_rl.runners import OnPolicyRunner

    from zoo.tasks.genesis import import_genesis

    log_dir = Path(logs) / exp_name
    if log_dir.exists():
        shutil.rmtree(log_dir)
    log_dir.mkdir(parents=True)
    cfgs = copy.deepcopy(default_cfgs)
    with open(log_dir / "cfgs.pkl", "wb") as f:
        pickle.dump(cfgs, f)
    import_genesis().utils.set_random_seed(seed)
    env = task_cls(num_envs=num_envs, device="cpu", seed=seed, cfgs=cfgs)
    with contextlib.redirect_stdout(io.StringIO()):  # the runner prints its models and a table per iteration
        runner = OnPolicyRunner(env, copy.deepcopy(cfgs[4]), str(log_dir), device="cpu")
        runner.learn(num_learning_iterations=iterations, init_at_random_ep_len=True)
    env.close()
    return log_dir


def train_go2(logs: Path, num_envs: int = 8, iterations: int = 2, seed: int = 1) -> Path:
    """A go2_train.py run (``logs/go2-walking``: cfgs.pkl, model_0.pt, model_{iterations-1}.pt, events)."""
    from zoo.tasks.genesis.go2 import DEFAULT_CFGS, Go2Walking

    return _train(Go2Walking, DEFAULT_CFGS, "go2-walking", logs, num_envs, iterations, seed)


def train_hover(logs: Path, num_envs: int = 8, iterations: int = 2, seed: int = 1) -> Path:
    """A hover_train.py run (``logs/drone-hovering``), the same way."""
    from zoo.tasks.genesis.hover import DEFAULT_CFGS, DroneHover

    return _train(DroneHover, DEFAULT_CFGS, "drone-hovering", logs, num_envs, iterations, seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=("go2", "hover"), nargs="?", default="go2")
    parser.add_argument("--out", type=Path, default=Path("logs"), help="logs folder to write into [logs]")
    parser.add_argument("--num-envs", type=int, default=8, help="envs trained in parallel [8]")
    parser.add_argument("--iterations", type=int, default=2, help="PPO iterations [2]")
    parser.add_argument("--seed", type=int, default=1, help="training seed [1]")
    cli = parser.parse_args()
    train = train_go2 if cli.task == "go2" else train_hover
    run = train(cli.out, num_envs=cli.num_envs, iterations=cli.iterations, seed=cli.seed)
    print(f"{cli.task}: {run} ({', '.join(sorted(p.name for p in run.glob('model_*.pt')))})")


if __name__ == "__main__":
    main()
