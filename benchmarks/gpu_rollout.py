"""Tensor-env rollout throughput on zoo's Genesis Go2 task: zoo's evaluator against the simulator alone.

For each batch size N, one Go2 walking scene (zoo's definition of Genesis' example) is built once and,
in one run, interleaved round by round so that machine noise hits every variant alike, stepped by:

  (a) random   ``env.step(uniform(-1, 1))``: the simulator alone, the upper bound;
  (b) zoo      ``zoo.tensor_rollout.tensor_rollout`` with the policy ``zoo.load_policy`` rebuilt from an
               rsl_rl checkpoint (the example's actor: MLP 512-256-128, elu), one episode quota per env:
               what ``zoo eval --env-id Genesis-Go2Walking-v0`` runs, all bookkeeping on the device;
  (c) example  the loop of Genesis' ``go2_eval.py``: ``runner.get_inference_policy()`` then
               ``obs, *_ = env.step(policy(obs))`` under ``torch.no_grad`` (no episode accounting).

Rates are env steps per second (N per step), counted at ``env.step``; the device is synchronised
before every clock read. Episodes are cut to ``--episode-steps`` so that (b) fills its quotas in a
bounded time. Targets: on a GPU, (b) >= 0.9x (a) at 4096 envs. The checkpoint is written by rsl_rl's own
``OnPolicyRunner.save`` (untrained: the network's cost, not its skill, is measured).

    python benchmarks/gpu_rollout.py [--device cpu|cuda] [--num-envs 1 64] [--episode-steps 100] [--rounds 2]

On the CPU backend the default is 1 and 64 envs (a few minutes, most of it Genesis' scene build);
``benchmarks/gpu_check.sh`` runs 1, 64 and 4096 on a CUDA machine.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import pickle
import tempfile
import time
from pathlib import Path

import torch

import zoo
from zoo.tasks.genesis.go2 import DEFAULT_CFGS, Go2Walking
from zoo.tensor_rollout import tensor_rollout


class Counted:
    """The env with its ``step`` calls counted (each is ``num_envs`` env steps)."""

    def __init__(self, env):
        self.env, self.steps = env, 0

    def __getattr__(self, name):
        return getattr(self.env, name)

    def step(self, actions):
        self.steps += 1
        return self.env.step(actions)

    def close(self):  # the benchmark closes the scene itself, after every variant
        pass


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def checkpoint(env, cfgs: list[dict], folder: Path, device: str):
    """A Genesis-layout run (``logs/go2-walking/cfgs.pkl`` + ``model_0.pt``) from rsl_rl's runner, and its
    inference policy (what ``go2_eval.py`` steps with)."""
    from rsl_rl.runners import OnPolicyRunner

    run = folder / "logs" / "go2-walking"
    run.mkdir(parents=True, exist_ok=True)
    (run / "cfgs.pkl").write_bytes(pickle.dumps(cfgs))
    with contextlib.redirect_stdout(io.StringIO()):  # the runner prints its models
        runner = OnPolicyRunner(env, copy.deepcopy(cfgs[4]), str(run), device=device)
    runner.save(str(run / "model_0.pt"))
    return run / "model_0.pt", runner.get_inference_policy(device=device)


def random_steps(env: Counted, steps: int, device: str) -> None:
    generator = torch.Generator(device=device).manual_seed(0)
    for _ in range(steps):
        env.step(torch.rand(env.num_envs, env.num_actions, generator=generator, device=device) * 2 - 1)


def example_loop(env: Counted, policy, steps: int) -> None:
    obs = env.reset()
    with torch.no_grad():
        for _ in range(steps):
            obs, _, _, _ = env.step(policy(obs))


def zoo_rollout(env: Counted, policy) -> None:
    tensor_rollout(policy, env, episodes=env.num_envs, deterministic=True, where="Genesis-Go2Walking-v0")


def measure(run, env: Counted, device: str) -> float:
    env.steps = 0
    sync(device)
    start = time.perf_counter()
    run()
    sync(device)
    return env.steps * env.num_envs / (time.perf_counter() - start)


def bench(num_envs: int, device: str, episode_steps: int, rounds: int, folder: Path) -> dict[str, float]:
    cfgs = copy.deepcopy(DEFAULT_CFGS)
    cfgs[0]["episode_length_s"] = episode_steps * 0.02  # max_episode_length = episode_steps
    build = time.perf_counter()
    env = Counted(Go2Walking(num_envs=num_envs, device=device, seed=0, cfgs=cfgs))
    built = time.perf_counter() - build
    model, example_policy = checkpoint(env, cfgs, folder / f"n{num_envs}", device)
    policy = zoo.load_policy(model, device=device)
    steps = episode_steps + 1
    best: dict[str, float] = {}
    variants = {
        "a": lambda: random_steps(env, steps, device),
        "b": lambda: zoo_rollout(env, policy),
        "c": lambda: example_loop(env, example_policy, steps),
    }
    for _ in range(rounds):
        for name, run in variants.items():
            best[name] = max(best.get(name, 0.0), measure(run, env, device))
    env.env.close()
    best["build_s"] = built
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--num-envs", type=int, nargs="+", default=None)
    parser.add_argument("--episode-steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    sizes = args.num_envs or ([1, 64, 4096] if args.device.startswith("cuda") else [1, 64])
    if args.device == "cpu":
        torch.set_num_threads(1)  # as zoo eval does on the CPU; Genesis' CPU kernels run on one thread too
    print(
        f"Go2 walking (zoo's Genesis task), device {args.device}, episodes of {args.episode_steps} steps, "
        f"best of {args.rounds} interleaved rounds; env steps per second"
    )
    print(
        f"{'envs':>6} {'(a) random':>12} {'(b) zoo':>12} {'(c) example':>12} {'b/a':>6} {'c/a':>6} {'b/c':>6} {'build s':>8}"
    )
    with tempfile.TemporaryDirectory(prefix="zoo-gpu-bench-") as tmp:
        for n in sizes:
            r = bench(n, args.device, args.episode_steps, args.rounds, Path(tmp))
            print(
                f"{n:>6} {r['a']:>12.0f} {r['b']:>12.0f} {r['c']:>12.0f} {r['b'] / r['a']:>6.2f} "
                f"{r['c'] / r['a']:>6.2f} {r['b'] / r['c']:>6.2f} {r['build_s']:>8.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
