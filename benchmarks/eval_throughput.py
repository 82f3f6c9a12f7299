"""Env steps per second of ``zoo eval``'s rollout loop, side by side with its limits.

For each env (CartPole-v1, HalfCheetah-v5, and BreakoutNoFrameskip-v4 on CleanRL's and on rl_zoo3's
Atari wrapper stacks, 8 envs each) this measures, in one run:

  (a) a gymnasium SyncVectorEnv stepping random actions: the limit of a loop in one process;
  (g) a gymnasium AsyncVectorEnv (one worker process per env, shared memory) stepping random actions;
  (h) EnvPool stepping random actions (drawn beforehand): its own C++ implementation of the env (for Atari
      its own wrapper stack), on its own threads;
  (b) zoo's rollout loop (``zoo.evaluator.rollout``) as ``zoo eval`` runs it: the exact torch path, split
      into lanes (``zoo.lanes``) where its first steps say that pays; the policy is a CleanRL policy from
      the registry, or for rl_zoo3's stack an SB3 PPO CnnPolicy saved by SB3 and loaded by zoo;
  (b1) the same loop kept in one process (``lanes=1``): what ``zoo eval`` ran before lanes;
  (c) stable-baselines3's ``evaluate_policy`` on a DummyVecEnv of 8 envs;
  (d) a CleanRL-style loop: one env, one forward pass per step;
  (f) zoo's rollout loop with ``--engine onnxruntime``: the same policy exported in memory and run by
      onnxruntime (one thread), after its parity check on the env's observations (not timed).

Every variant's sub-envs are wrapped in the same step counter (shared memory: steps taken in a lane's or an
AsyncVectorEnv's worker process count), so the rates count real env steps (including the extra steps a
vector env takes to fill per-env quotas). (a), (g), (h), (b), (b1) and (f) are measured ``--rounds`` times,
interleaved, and their medians compared; "fastest" is the best of (a), (g) and (h) in the same round.
Targets: (b) >= 1.0 x (a) on HalfCheetah and on Breakout (both stacks), >= 0.9 x (a) on CartPole, and
>= 0.8 x the fastest random stepping everywhere; CartPole (b) >= 2 x (c). Breakout's (c) runs on rl_zoo3's
stack only, with SB3's own VecFrameStack, and so does (e): the same policy exported by ``zoo export`` to ONNX
and run by ``zoo eval policy.onnx``, onnxruntime on one thread. CartPole uses the bundled trained dqn
(500-step episodes, what a user evaluates); HalfCheetah has no bundled run, so it is measured with fresh
weights of two policy sizes: the TD3 actor (256x256) and the PPO agent (64x64).

    python benchmarks/eval_throughput.py [--episodes-cartpole 400] [--episodes-cheetah 16] [--rounds 3]
                                         [--only cartpole|cheetah|breakout]
"""

from __future__ import annotations

import argparse
import dataclasses
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from stepcount import counted
from stepcount import rate as _rate

import zoo
import zoo.lanes
from zoo.env_wrappers import WrapperRef
from zoo.envs import EnvSpec, env_factory
from zoo.evaluator import rollout, single_cpu_thread
from zoo.frameworks.cleanrl.checkpoint import build_model
from zoo.frameworks.cleanrl.policy import CleanRLPolicy
from zoo.registry import load_registry


def rate(fn) -> float:
    return _rate(fn)[0]


EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "runs"
ROUNDS = 3  # --rounds: (a) to (f) measured this many times, interleaved; medians reported


def random_actions(spec: EnvSpec, num_envs: int, vector_steps: int, vector=gym.vector.SyncVectorEnv) -> float:
    """(a): the envs in one process (``SyncVectorEnv``) stepping random actions; (g) with
    ``vector=async_vector``: each in a worker process."""
    envs = vector([counted(env_factory(spec, i)) for i in range(num_envs)])
    envs.reset(seed=0)
    envs.action_space.seed(0)

    def run():
        for _ in range(vector_steps):
            envs.step(envs.action_space.sample())

    try:
        return rate(run)
    finally:
        envs.close()


def async_vector(env_fns):
    """(g)'s vector env: an AsyncVectorEnv, one worker process per env, observations in shared memory."""
    return gym.vector.AsyncVectorEnv(env_fns, shared_memory=True)


#: (h): EnvPool's task for each env measured here (its own implementation; for Atari, its own wrapper stack).
ENVPOOL_TASKS = {
    "CartPole-v1": "CartPole-v1",
    "HalfCheetah-v5": "HalfCheetah-v5",
    "BreakoutNoFrameskip-v4": "Breakout-v5",
}


def envpool_random(env_id: str, num_envs: int, vector_steps: int) -> float | None:
    """(h): EnvPool's synchronous step of ``num_envs`` envs on its own threads, with random actions drawn
    before the clock starts; None without envpool."""
    import time

    try:
        import envpool
    except ImportError:
        return None
    envs = envpool.make_gymnasium(ENVPOOL_TASKS[env_id], num_envs=num_envs, seed=0)
    space = envs.action_space
    space.seed(0)
    actions = [np.array([space.sample() for _ in range(num_envs)]) for _ in range(vector_steps)]
    envs.reset()
    start = time.perf_counter()
    for action in actions:
        envs.step(action)
    elapsed = time.perf_counter() - start
    envs.close()
    return num_envs * vector_steps / elapsed


#: Lanes of each rollout that split (``zoo.lanes.run_lanes``), for the report's "split into" line.
SPLITS: list[int] = []
_run_lanes = zoo.lanes.run_lanes


def _counted_run_lanes(whole, count, deadline):
    SPLITS.append(count)
    _run_lanes(whole, count, deadline)


zoo.lanes.run_lanes = _counted_run_lanes


def zoo_policy(exp_name: str, spec: EnvSpec) -> tuple[CleanRLPolicy, str]:
    """The bundled trained example for this env when there is one (what users evaluate), else fresh weights."""
    entry = load_registry().get(exp_name)
    trained = sorted(EXAMPLES.glob(f"{spec.env_id}__{exp_name}__*/{exp_name}.cleanrl_model"))
    if trained:
        policy = zoo.load_policy(trained[-1], exp_name=exp_name, env_id=spec.env_id)
        return policy, f"trained {exp_name} from examples/runs"
    probe = env_factory(spec, 0)()
    spaces = (probe.observation_space, probe.action_space)
    probe.close()
    module = build_model(entry, entry.policy["part"], spaces, {})
    return CleanRLPolicy(
        module, entry.policy["head"], *spaces, entry.eval, "cpu", seed=0
    ), f"{exp_name} (fresh weights)"


def zoo_rollout(
    policy, spec: EnvSpec, num_envs: int, episodes: int, deterministic: bool = True, lanes: int | None = None
) -> float:
    """(b) with ``lanes=None`` (``zoo eval``'s choice), (b1) with ``lanes=1``."""
    envs = gym.vector.SyncVectorEnv([counted(env_factory(spec, i)) for i in range(num_envs)])
    try:
        with single_cpu_thread("cpu"):
            return rate(
                lambda: rollout(policy, envs, episodes, seed=0, deterministic=deterministic, lanes=lanes)
            )
    finally:
        envs.close()


def sb3_evaluate(spec: EnvSpec, num_envs: int, episodes: int, algo: str) -> float:
    from stable_baselines3 import PPO, TD3
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([counted(env_factory(spec, i)) for i in range(num_envs)])
    model = (PPO if algo == "ppo" else TD3)("MlpPolicy", venv, seed=0, device="cpu")
    try:
        return rate(lambda: evaluate_policy(model, venv, n_eval_episodes=episodes, deterministic=True))
    finally:
        venv.close()


def cleanrl_single(policy: CleanRLPolicy, spec: EnvSpec, episodes: int, deterministic: bool = True) -> float:
    env = counted(env_factory(spec, 0))()

    def run():
        for ep in range(episodes):
            obs, _ = env.reset(seed=ep)
            done = False
            while not done:
                action, _ = policy.act(obs[None], deterministic=deterministic)
                obs, _r, term, trunc, _ = env.step(action[0])
                done = term or trunc

    try:
        return rate(run)
    finally:
        env.close()


def bench(
    env_id: str,
    exp_name: str,
    sb3_algo: str | None,
    episodes: int,
    num_envs: int = 8,
    preset: str = "classic",
) -> dict:
    """The same env stack under every variant (``preset``): only the loops differ."""
    spec = EnvSpec(env_id, preset)
    policy, label = zoo_policy(exp_name, spec)
    if preset == "atari":  # fresh weights act alike every step (a stuck paddle plays for ever): the policy
        policy.epsilon, label = (
            1.0,
            f"{label}, forward pass every step, epsilon 1",
        )  # still runs, acts at random
    deterministic = preset != "atari"
    engine = engine_policy(policy, spec, exp_name) if deterministic else None
    zoo_rollout(policy, spec, num_envs, num_envs, deterministic)  # warm-up: imports, first forward passes
    SPLITS.clear()
    # interleaved round by round, the medians kept: this machine's speed drifts by 2x over minutes
    steps = max(200, episodes * 60 // num_envs)
    rounds = [
        limits(spec, num_envs, steps)
        | {
            "b": zoo_rollout(policy, spec, num_envs, episodes, deterministic),
            "b1": zoo_rollout(policy, spec, num_envs, episodes, deterministic, lanes=1),
            "f": zoo_rollout(engine, spec, num_envs, episodes) if engine else None,
        }
        for _ in range(ROUNDS)
    ]
    c = sb3_evaluate(spec, num_envs, episodes, sb3_algo) if sb3_algo else None
    d = cleanrl_single(policy, spec, max(2, episodes // 8), deterministic)
    return summary(rounds) | {"c": c, "d": d, "policy": label}


def limits(spec: EnvSpec, num_envs: int, vector_steps: int) -> dict:
    """One round of (a), (g) and (h): random-action stepping of the same envs, three ways."""
    return {
        "a": random_actions(spec, num_envs, vector_steps),
        "g": random_actions(spec, num_envs, vector_steps, vector=async_vector),
        "h": envpool_random(spec.env_id, num_envs, vector_steps),
    }


def summary(rounds: list[dict]) -> dict:
    """Medians of each variant over the rounds, and each round's ratios (variants a few seconds apart)."""
    out = {
        key: float(np.median([r[key] for r in rounds])) if rounds[0].get(key) is not None else None
        for key in rounds[0]
    }
    fastest = [max(r["a"], r["g"], r["h"] or 0.0) for r in rounds]
    out["ratios"] = {
        "b/a": sorted(r["b"] / r["a"] for r in rounds),
        "b/fastest": sorted(r["b"] / f for r, f in zip(rounds, fastest, strict=True)),
        "b/b1": sorted(r["b"] / r["b1"] for r in rounds),
    }
    if rounds[0].get("f") is not None:
        out["ratios"]["f/a"] = sorted(r["f"] / r["a"] for r in rounds)
    return out


def engine_policy(policy, spec: EnvSpec, exp_name: str):
    """``zoo eval --engine onnxruntime``'s policy: exported in memory, parity-proven on the env's observations."""
    import types

    from zoo.exporter.engine import onnxruntime_policy

    target = types.SimpleNamespace(env_id=spec.env_id, entry=load_registry().get(exp_name), model_file=None)
    return onnxruntime_policy(policy, target, spec, seed=0)


#: rl_zoo3's Atari stack, as zoo rebuilds it from a run's config.yml (``env_wrapper`` and ``frame_stack: 4``).
SB3_ATARI = EnvSpec(
    "BreakoutNoFrameskip-v4",
    "run_config",
    wrappers=(
        WrapperRef("stable_baselines3.common.atari_wrappers.AtariWrapper"),
        WrapperRef("zoo.env_wrappers.StackedFrames", (("n_stack", 4),)),
    ),
)


def sb3_atari(episodes: int, num_envs: int = 8) -> dict:
    """An SB3 CnnPolicy (fresh weights, saved and loaded back by zoo) on rl_zoo3's Atari stack, sampled."""
    import tempfile

    import ale_py  # noqa: F401 - registers the ALE envs
    from stable_baselines3 import PPO
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack

    spec = SB3_ATARI
    atari_wrapper_only = dataclasses.replace(
        spec, wrappers=spec.wrappers[:1]
    )  # SB3 stacks in its VecFrameStack
    venv = VecFrameStack(
        DummyVecEnv([counted(env_factory(atari_wrapper_only, i)) for i in range(num_envs)]), 4
    )
    model = PPO("CnnPolicy", venv, seed=0, device="cpu")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ppo-BreakoutNoFrameskip-v4.zip"
        model.save(path)
        policy = zoo.load_policy(path, env_id=spec.env_id)
        exported = zoo.load_policy(zoo.export(path, Path(tmp) / "policy.onnx", env_id=spec.env_id).path)
        zoo_rollout(policy, spec, num_envs, num_envs, deterministic=False)  # warm-up
        SPLITS.clear()
        steps = max(200, episodes * 60 // num_envs)
        rounds = [
            limits(spec, num_envs, steps)
            | {
                "b": zoo_rollout(policy, spec, num_envs, episodes, deterministic=False),
                "b1": zoo_rollout(policy, spec, num_envs, episodes, deterministic=False, lanes=1),
            }
            for _ in range(ROUNDS)
        ]
        with single_cpu_thread("cpu"):
            c = rate(lambda: evaluate_policy(model, venv, n_eval_episodes=episodes, deterministic=False))
        # the exported file acts greedily; a fresh greedy CNN may never press FIRE again: a fixed step budget
        e = exported_steps(exported, spec, num_envs, vector_steps=max(200, episodes * 60 // num_envs))
    venv.close()
    return summary(rounds) | {
        "c": c,
        "d": None,
        "e": e,
        "policy": "SB3 PPO CnnPolicy (fresh weights), sampled actions",
    }


def exported_steps(policy, spec: EnvSpec, num_envs: int, vector_steps: int) -> float:
    """``zoo eval policy.onnx``'s loop body (onnxruntime, one thread), for a fixed number of vector steps."""
    envs = gym.vector.SyncVectorEnv([counted(env_factory(spec, i)) for i in range(num_envs)])
    obs, _ = envs.reset(seed=0)

    def run():
        nonlocal obs
        for _ in range(vector_steps):
            actions, _ = policy.act(obs)
            obs = envs.step(actions)[0]

    try:
        return rate(run)
    finally:
        envs.close()


def report(env_id: str, r: dict, targets: str) -> None:
    def per_round(key: str) -> str:
        values = r["ratios"][key]
        return f"median {float(np.median(values)):.2f}, range {values[0]:.2f}-{values[-1]:.2f}"

    fastest = max(r["a"], r["g"], r["h"] or 0.0)
    print(f"\n{env_id}, 8 envs, policy: {r['policy']} (env steps per second)")
    print(f"  (a) SyncVectorEnv, random actions    : {r['a']:10,.0f}")
    print(f"  (g) AsyncVectorEnv, random actions   : {r['g']:10,.0f}")
    if r["h"] is not None:
        print(
            f"  (h) EnvPool, random actions          : {r['h']:10,.0f}   (its own implementation of the env)"
        )
    print(
        f"  (b) zoo eval (exact, lanes chosen)   : {r['b']:10,.0f}   b/a = {r['b'] / r['a']:.2f}   "
        f"b/fastest = {r['b'] / fastest:.2f}"
    )
    print(f"  (b1) zoo eval in one process         : {r['b1']:10,.0f}   b/b1 = {r['b'] / r['b1']:.2f}")
    print(
        f"      per round ({ROUNDS}, interleaved): b/a {per_round('b/a')}; b/fastest {per_round('b/fastest')}"
    )
    print(
        f"      b/b1 {per_round('b/b1')}; lanes used by (b) and (f): {sorted(set(SPLITS)) or 'none (not split)'}"
    )
    if r.get("f") is not None:
        print(
            f"  (f) zoo eval --engine onnxruntime    : {r['f']:10,.0f}   f/a = {r['f'] / r['a']:.2f}   ({per_round('f/a')})"
        )
    if r["c"] is not None:
        print(f"  (c) SB3 evaluate_policy              : {r['c']:10,.0f}   b/c = {r['b'] / r['c']:.2f}")
    if r.get("e") is not None:
        print(f"  (e) zoo eval of its ONNX export      : {r['e']:10,.0f}   e/a = {r['e'] / r['a']:.2f}")
    if r["d"] is not None:
        print(f"  (d) CleanRL-style single env         : {r['d']:10,.0f}   b/d = {r['b'] / r['d']:.2f}")
    print(f"  targets: {targets}")
    SPLITS.clear()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes-cartpole", type=int, default=400)
    parser.add_argument("--episodes-cheetah", type=int, default=16)
    parser.add_argument("--episodes-breakout", type=int, default=16)
    parser.add_argument(
        "--rounds", type=int, default=3, help="interleaved rounds of (a) to (f), medians kept"
    )
    parser.add_argument(
        "--only", choices=["cartpole", "cheetah", "breakout"], help="just one env (quick loop)"
    )
    args = parser.parse_args()
    global ROUNDS
    ROUNDS = args.rounds
    torch.manual_seed(0)
    np.random.seed(0)
    warnings.filterwarnings("ignore", message="Evaluation environment is not wrapped")
    print(
        f"torch {torch.__version__}, gymnasium {gym.__version__}, threads {torch.get_num_threads()}, "
        f"cores {zoo.lanes.usable_cores()}"
    )
    if args.only in (None, "cartpole"):
        cart = bench("CartPole-v1", "dqn", "ppo", args.episodes_cartpole)
        report("CartPole-v1", cart, "b/a >= 0.9, b/fastest >= 0.8 and b/c >= 2")
    if args.only in (None, "cheetah"):
        for exp_name, algo in (("td3_continuous_action", "td3"), ("ppo_continuous_action", "ppo")):
            cheetah = bench("HalfCheetah-v5", exp_name, algo, args.episodes_cheetah)
            report("HalfCheetah-v5", cheetah, "b/a >= 1.0 and b/fastest >= 0.8")
    if args.only in (None, "breakout"):
        breakout = bench("BreakoutNoFrameskip-v4", "dqn_atari", None, args.episodes_breakout, preset="atari")
        target = "b/a >= 1.0 and b/fastest >= 0.8"
        report("BreakoutNoFrameskip-v4 (CleanRL's Atari stack)", breakout, target)
        report("BreakoutNoFrameskip-v4 (rl_zoo3's Atari stack)", sb3_atari(args.episodes_breakout), target)


if __name__ == "__main__":
    main()
