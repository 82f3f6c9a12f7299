"""Shared test helpers: real torch artifacts from zoo's CleanRL model classes, and a CLI runner."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples" / "runs"


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)


def zoo(*args: str, env: dict | None = None) -> CliResult:
    """Run the ``zoo`` CLI in-process; stdout and stderr kept apart."""
    from zoo.cli import cli

    result = CliRunner().invoke(cli, [str(a) for a in args], env=env, catch_exceptions=False)
    return CliResult(result.exit_code, result.stdout, result.stderr)


@contextlib.contextmanager
def hang_guard(seconds: float = 60.0) -> Iterator[None]:
    """Fail the test if the block runs longer than ``seconds`` (SIGALRM in the main thread): a guard against
    a hang, generous enough never to fire on a loaded machine. Speed is measured in benchmarks/, not here."""

    def hung(_signum, _frame):
        raise AssertionError(f"no result after {seconds:g} s: a hang")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def spaces(env_id: str):
    import gymnasium as gym

    env = gym.make(env_id)
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


def save_model(path: Path, exp_name: str, env_id: str, seed: int = 0) -> Path:
    """torch.save a freshly initialised registry model in the layout its training script writes."""
    import torch

    from zoo.envs import env_spec_for, probe_spaces
    from zoo.frameworks.cleanrl.checkpoint import build_model
    from zoo.registry import load_registry

    torch.manual_seed(seed)
    entry = load_registry().get(exp_name)
    space_pair = probe_spaces(env_spec_for(entry, env_id))  # the spaces the eval env's wrappers give
    models = [build_model(entry, part, space_pair, {}).state_dict() for part in entry.parts]
    kind = entry.layout["kind"]
    if kind == "state_dict":
        obj = models[0]
    elif kind == "tuple":
        obj = tuple(models)
    else:
        args = {"exp_name": exp_name, "env_id": env_id, "n_atoms": 101, "v_min": -100, "v_max": 100}
        obj = {entry.layout["weights_key"]: models[0], entry.layout["args_key"]: args}
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(obj, path)
    return path


def make_run(root: Path, env_id: str, exp_name: str, seed: int = 1, t: int = 1700000000,
             model_name: str | None = None) -> Path:  # fmt: skip
    """``root/runs/{env_id}__{exp_name}__{seed}__{t}/{exp_name}.cleanrl_model``."""
    run = root / "runs" / f"{env_id}__{exp_name}__{seed}__{t}"
    save_model(run / (model_name or f"{exp_name}.cleanrl_model"), exp_name, env_id, seed)
    return run


class Canary:
    """Pickles to a call that creates ``path``: proof that a load executed code."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def write_malicious(path: Path, canary: Path, as_torch: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if as_torch:
        import torch

        torch.save({"network.0.weight": torch.zeros(2), "payload": Canary(canary)}, path)
    else:
        path.write_bytes(pickle.dumps(Canary(canary), protocol=4))
    return path


def episodes_of(eval_json: Path) -> list[tuple[float, int]]:
    """``(return, length)`` per episode, in eval.json order."""
    return [(e["return"], e["length"]) for e in json.loads(eval_json.read_text())["episodes"]]


def assert_exports_act_like_checkpoint(target: Path, out_dir: Path, *target_args: str, episodes: int = 8,
                                       num_envs: int = 4, continuous: bool) -> dict[str, dict]:  # fmt: skip
    """Evaluate the checkpoint, export it in both formats, evaluate each exported file: same episodes.

    Discrete actions and TorchScript give the same returns bit for bit. onnxruntime's kernels round
    differently from torch's (parity: ~1e-6 on an action), so continuous returns agree to 1e-5 relative (1e-4 absolute) there.
    Returns the two sidecars.
    """
    import numpy as np

    common = ("-n", str(episodes), "--num-envs", str(num_envs), "--seed", "3", "-q")
    ref = zoo(
        "eval", target, *target_args, "--deterministic", *common, "--out", out_dir / "checkpoint.eval.json"
    )
    assert ref.exit_code == 0, ref.stderr
    expected = episodes_of(out_dir / "checkpoint.eval.json")
    sidecars = {}
    for fmt, suffix in (("torchscript", ".ts"), ("onnx", ".onnx")):
        policy = out_dir / f"policy{suffix}"
        exported = zoo("export", target, *target_args, "--out", policy, "-q")
        assert exported.exit_code == 0, exported.stderr
        result = zoo("eval", policy, *common, "--out", out_dir / f"{fmt}.eval.json")
        assert result.exit_code == 0, result.stderr
        got = episodes_of(out_dir / f"{fmt}.eval.json")
        assert [length for _, length in got] == [length for _, length in expected], fmt
        if continuous and fmt == "onnx":
            np.testing.assert_allclose([r for r, _ in got], [r for r, _ in expected], rtol=1e-5, atol=1e-4)
        else:
            assert got == expected, fmt
        sidecars[fmt] = json.loads((out_dir / f"policy{suffix}.metadata.json").read_text())
    return sidecars


# ----------------------------------------------------------------------------- rsl_rl
class GymVecEnv:
    """rsl_rl's ``VecEnv`` contract over a gymnasium vector env: TensorDict observations, same-step resets."""

    def __init__(self, env_id: str, num_envs: int, seed: int):
        import gymnasium as gym
        import torch

        self.envs = gym.vector.SyncVectorEnv(
            [lambda: gym.make(env_id)] * num_envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
        )
        self.num_envs = num_envs
        self.num_actions = self.envs.single_action_space.shape[0]
        self.max_episode_length = self.envs.envs[0].spec.max_episode_steps
        self.episode_length_buf = torch.zeros(num_envs, dtype=torch.long)
        self.device = "cpu"
        self.cfg = {"env_id": env_id, "num_envs": num_envs, "seed": seed}
        self._obs = self._tensordict(self.envs.reset(seed=seed)[0])

    def _tensordict(self, obs):
        import torch
        from tensordict import TensorDict

        return TensorDict({"policy": torch.as_tensor(obs, dtype=torch.float32)}, batch_size=[self.num_envs])

    def get_observations(self):
        return self._obs

    def step(self, actions):
        import numpy as np
        import torch

        obs, rew, terminated, truncated, _ = self.envs.step(actions.cpu().numpy())
        self._obs = self._tensordict(obs)
        dones = torch.as_tensor(np.logical_or(terminated, truncated))
        self.episode_length_buf = torch.where(dones, 0, self.episode_length_buf + 1)
        rewards = torch.as_tensor(rew, dtype=torch.float32)
        return self._obs, rewards, dones.long(), {"time_outs": torch.as_tensor(truncated)}


def rsl_rl_train_cfg(rnn_type: str | None) -> dict:
    """An rsl-rl-lib 5.x runner config (the dict Isaac Lab's ``RslRlOnPolicyRunnerCfg`` turns into)."""
    gaussian = {"class_name": "GaussianDistribution", "init_std": 1.0, "std_type": "scalar"}
    actor = {"class_name": "RNNModel" if rnn_type else "MLPModel", "hidden_dims": [32, 32],
             "activation": "elu", "obs_normalization": True, "distribution_cfg": gaussian}  # fmt: skip
    if rnn_type:
        actor.update(rnn_type=rnn_type, rnn_hidden_dim=16, rnn_num_layers=1 if rnn_type == "lstm" else 2)
    return {
        "seed": 7, "num_steps_per_env": 32, "save_interval": 50, "clip_actions": None,
        "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
        "algorithm": {"class_name": "PPO", "num_learning_epochs": 2, "num_mini_batches": 2,
                      "learning_rate": 1e-3},
        "actor": actor,
        "critic": {"class_name": "MLPModel", "hidden_dims": [32, 32], "activation": "elu",
                   "obs_normalization": True},
    }  # fmt: skip


def holding_little(work, bound_mib: int = 64):
    """``work()``'s result, asserting its peak of Python memory stayed under ``bound_mib``: proof that a bound
    was checked before a file was read or inflated whole (reading would show here, on any machine)."""
    import tracemalloc

    tracemalloc.start()
    try:
        result = work()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < bound_mib << 20, f"held {peak >> 20} MiB"
    return result
