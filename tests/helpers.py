"""Shared test helpers: real torch artifacts from zoo's CleanRL model classes, and a CLI runner."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import signal
import sys
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


def make_run(
    root: Path, env_id: str, exp_name: str, seed: int = 1, t: int = 1700000000, model_name: str | None = None
) -> Path:
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


def assert_exports_act_like_checkpoint(
    target: Path, out_dir: Path, *target_args: str, episodes: int = 8, num_envs: int = 4, continuous: bool
) -> dict[str, dict]:
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
    assert_release_acts_like_checkpoint(target, out_dir, target_args, common, expected)
    return sidecars


def write_release(target: Path, folder: Path, *, env_id: str | None = None) -> Path:
    """The framework-free forms of ``target``'s policy (agent.pt, model.safetensors + config.json, policy.onnx)
    written and proven into ``folder``, as ``zoo push`` stages them. Returns ``folder``."""
    from zoo import api
    from zoo.release.forms import forms_for_target

    forms_for_target(api.resolve(target, env_id=env_id), folder)
    return folder


def assert_release_acts_like_checkpoint(
    target: Path,
    out_dir: Path,
    target_args: tuple[str, ...],
    common: tuple[str, ...],
    expected: list[tuple[float, int]],
) -> None:
    """The release's framework-free forms (what ``zoo push`` stages beside the native files) written for the
    target, each proven at writing; ``zoo eval`` of the folder evaluates model.safetensors + config.json and
    gives the checkpoint's episodes, bit for bit (the graph runs the very kernels the framework's module ran)."""
    from zoo import api
    from zoo.frameworks import LoadOptions
    from zoo.release.forms import forms_for_target

    flags = dict(zip(target_args[::2], target_args[1::2], strict=True))
    options = LoadOptions(model_config=Path(flags["--model-config"]) if "--model-config" in flags else None)
    resolved = api.resolve(target, exp_name=flags.get("--exp-name"), env_id=flags.get("--env-id"))
    release = out_dir / "release"
    # the legacy ONNX exporter: this test's own export above went through dynamo already, and takes most of the time
    names = {form.name for form in forms_for_target(resolved, release, options, exporter="legacy")}
    assert {"agent.pt", "model.safetensors", "config.json", "policy.onnx"} <= names
    result = zoo("eval", release, "--deterministic", *common, "--out", out_dir / "release.eval.json")
    assert result.exit_code == 0, result.stderr
    assert json.loads((out_dir / "release.eval.json").read_text())["checkpoint"].endswith("model.safetensors")
    assert episodes_of(out_dir / "release.eval.json") == expected


# ----------------------------------------------------------------------------- rsl_rl
# The env and runner config the docs' rsl_rl runs are trained with (examples/train_rsl_rl.py), one definition.
sys.path.insert(0, str(REPO / "examples"))
from train_rsl_rl import GymVecEnv  # noqa: E402, F401
from train_rsl_rl import train_cfg as rsl_rl_train_cfg  # noqa: E402, F401


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


# ----------------------------------------------------------------------------- a base install
#: What a base install lacks (the training frameworks, their hub tools), and zoo's native loaders (each adapter's
#: policy module), which a release must not need either.
BLOCKED = (
    "stable_baselines3",
    "sb3_contrib",
    "rl_zoo3",
    "huggingface_sb3",
    "skrl",
    "rsl_rl",
    *(f"zoo.frameworks.{name}.policy" for name in ("sb3", "skrl", "rsl_rl", "cleanrl")),
)
SITECUSTOMIZE = f"""
import importlib.abc
import sys

BLOCKED = {BLOCKED!r}


class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == blocked or name.startswith(blocked + ".") for blocked in BLOCKED):
            raise ImportError(f"No module named {{name!r}} (blocked: not in a base install)", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
"""


def base_install_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a process in which the training frameworks cannot be imported; one torch thread, as
    zoo's evaluator steps (batch-1 inference on a small shared machine: 10x faster for a CNN, measured)."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]), "OMP_NUM_THREADS": "1"}


#: The one term a sidecar gives an observation group of rsl_rl's or skrl's (``policy``, 3 values) when the task
#: names none: the whole group, scale 1, no clip (docs/export.md).
POLICY_TERM = {"name": "policy", "start": 0, "dim": 3, "scale": 1.0, "clip": None}
