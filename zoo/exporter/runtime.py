"""Run an exported file the way a deployment would: ``torch.jit.load`` or an onnxruntime session.

Used twice: by the exporter's parity check (the file as written, loaded back) and by
``zoo eval policy.onnx|policy.ts``, where :class:`ExportedPolicy` stands in for the source
policy behind the evaluator's Policy protocol, its env described by the sidecar.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from zoo.artifacts.digest import sha256_file
from zoo.errors import ZooError
from zoo.exporter.obs import flatten_obs
from zoo.exporter.sidecar import rnn_sizes

if TYPE_CHECKING:
    from zoo.frameworks import SpaceKinds

SIDECAR_SUFFIX = ".metadata.json"
EXPORT_SUFFIXES = (".onnx", ".ts")


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + SIDECAR_SUFFIX)


#: A sidecar larger than this is refused before it is parsed (one is a few kB, its env's config included).
MAX_SIDECAR_BYTES = 16 << 20


def is_exported(path: Path) -> bool:
    """A file ``zoo export`` wrote (or one that claims to be: it has a sidecar or an export suffix)."""
    return path.is_file() and (path.suffix in EXPORT_SUFFIXES or sidecar_path(path).is_file())


def read_sidecar(path: Path) -> dict:
    """The sidecar of ``path``, checked to describe this very file."""
    side = sidecar_path(path)
    if not side.is_file():
        raise ZooError(
            f"{path}: no sidecar {side.name} next to it",
            hint="zoo evaluates exported files with the sidecar zoo export wrote; keep them together",
        )
    if side.stat().st_size > MAX_SIDECAR_BYTES:
        raise ZooError(
            f"{side}: over {MAX_SIDECAR_BYTES >> 20} MiB, not reading it (a sidecar is a few kB)",
            hint="export the policy again with zoo export",
        )
    try:
        meta = json.loads(side.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ZooError(f"{side}: not readable JSON ({exc})", hint="export the policy again") from None
    missing = [
        k for k in ("format", "task", "env", "obs_groups", "is_recurrent", "file_sha256") if k not in meta
    ]
    if missing:
        raise ZooError(
            f"{side}: missing {', '.join(missing)}", hint="export the policy again with zoo export"
        )
    if sha256_file(path) != meta["file_sha256"]:
        raise ZooError(
            f"{path} does not match its sidecar (sha256 differs)",
            hint="the file was changed or replaced after export; export it again",
        )
    return meta


class TorchScriptRunner:
    """A TorchScript export: numpy in, numpy out; a recurrent one keeps its state inside."""

    def __init__(self, path: Path, recurrent: bool):
        import warnings

        import torch

        with warnings.catch_warnings():
            warnings.simplefilter(
                "ignore", DeprecationWarning
            )  # torch 2.13 deprecates TorchScript; it still works
            self.module = torch.jit.load(str(path), map_location="cpu")
        self.recurrent = recurrent

    def __call__(self, x: np.ndarray) -> np.ndarray:
        import torch

        with torch.inference_mode():
            return self.module(torch.from_numpy(x)).numpy()

    def reset(self, done: np.ndarray) -> None:
        import torch

        if self.recurrent:
            self.module.reset_envs(torch.as_tensor(np.asarray(done, dtype=bool)))


class OnnxRunner:
    """An ONNX export in onnxruntime; the recurrent state travels through ``h_in``/``c_in`` here."""

    def __init__(self, path: Path, recurrent: dict | None, threads: int = 1):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.recurrent = recurrent
        self.state: dict[str, np.ndarray] = {}

    def _states(self, batch: int) -> dict[str, np.ndarray]:
        names = self.recurrent["inputs"][1:]
        if not self.state or next(iter(self.state.values())).shape[1] != batch:
            layers, hidden = rnn_sizes(self.recurrent)
            shape = (layers, batch, hidden)
            self.state = {name: np.zeros(shape, dtype=np.float32) for name in names}
        return self.state

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if self.recurrent is None:
            return self.session.run(["actions"], {"obs": x})[0]
        feeds = {"obs": x, **self._states(len(x))}
        actions, *states = self.session.run(self.recurrent["outputs"], feeds)
        self.state = dict(zip(self.recurrent["inputs"][1:], states, strict=True))
        return actions

    def reset(self, done: np.ndarray) -> None:
        mask = np.asarray(done, dtype=bool)
        for value in self.state.values():
            if value.shape[1] == len(mask):
                value[:, mask] = 0.0


def open_runner(path: Path, fmt: str, recurrent: dict | None, meta: dict | None = None):
    """The runner for an exported file of format ``fmt`` (a release's ``model.safetensors``: ``meta`` is its
    checked config.json)."""
    from zoo.release.config import CONFIG_FILE, FORMAT, GraphRunner

    if fmt == FORMAT:
        return GraphRunner(path.with_name(CONFIG_FILE), meta)
    if fmt == "torchscript":
        return TorchScriptRunner(path, recurrent is not None)
    try:
        return OnnxRunner(path, recurrent)
    except ImportError:
        raise ZooError(
            "running ONNX files needs onnxruntime", hint="pip install 'rl-zoo-hub[export]'"
        ) from None


_ACTION_KEYS = ("action_type", "action_shape", "num_actions", "nvec", "action_range")


def fit_problem(meta: dict, observation_space: Any, action_space: Any) -> str | None:
    """Why an exported file cannot drive an env with these spaces (its input or output layout differs).

    The input is compared group by group (name, size, shape) and must tile the file's input: the file's own
    ``start`` of each group says where it goes, so a file laid out in another key order (alphabetical, as zoo
    exported goal-conditioned observations before) fits the same env."""
    from gymnasium import spaces

    from zoo.exporter.obs import input_order, obs_layout
    from zoo.exporter.sidecar import action_facts, read_range

    shape, groups = obs_layout(observation_space)
    named = isinstance(observation_space, spaces.Dict)  # a Box's one group is named by its framework

    def sizes(obs_groups: dict) -> dict:
        return {
            (k if named else ""): (g.get("dim"), list(g.get("shape") or [])) for k, g in obs_groups.items()
        }

    file_groups = meta["obs_groups"]
    tiled, start = isinstance(file_groups, dict) and all(isinstance(g, dict) for g in file_groups.values()), 0
    if tiled:
        for name in input_order(file_groups):
            tiled = tiled and file_groups[name].get("start") == start
            start += file_groups[name].get("dim") or 0
    if list(shape) != meta.get("obs_shape") or not tiled or sizes(groups) != sizes(file_groups):
        return f"the file takes observations of shape {meta.get('obs_shape')}, the env gives {list(shape)}"
    env = action_facts(action_space)
    file = {**meta, "action_range": read_range(meta.get("action_range"))}
    for key in _ACTION_KEYS:
        if env.get(key) != file.get(key):
            return f"the file's actions have {key} {file.get(key)}, the env's {env.get(key)}"
    return None


class ExportedPolicy:
    """An exported file behind :class:`zoo.policy.Policy` (deterministic only: the file is)."""

    def __init__(self, path: Path, meta: dict, observation_space: Any = None, action_space: Any = None):
        self.meta = meta
        self.observation_space = observation_space
        self.action_space = action_space
        self.is_recurrent = bool(meta["is_recurrent"])
        self.obs_groups = meta["obs_groups"]
        self.scales = baked_scales(meta)
        self.runner = open_runner(path, meta["format"], meta.get("recurrent"), meta)

    def act(self, obs_batch: Any, state: Any = None, deterministic: bool = True) -> tuple[np.ndarray, Any]:
        flat = flatten_obs(obs_batch, self.obs_groups)
        if self.scales is not None:  # the env gives what the task computed; the file takes raw values
            flat = self.scales.raw(flat)
        return self.runner(flat), state

    def reset(self, done_mask: np.ndarray) -> None:
        self.runner.reset(done_mask)


def baked_scales(meta: dict):
    """The observation terms a file applies itself (its sidecar's ``obs_terms_baked``), None when it applies
    none but the identity or was exported before terms were baked (it takes what the task computes)."""
    import math

    from zoo.errors import BrokenFile
    from zoo.exporter.terms import TermScales

    if meta.get("obs_terms_baked") is not True:
        return None
    try:
        return TermScales.of(meta["obs_groups"], math.prod(meta["obs_shape"]))
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise BrokenFile(f"the sidecar's observation terms do not fit its obs_shape ({exc})") from None


def exported_kinds(meta: dict) -> SpaceKinds:
    """The actions an exported file gives, as its sidecar states them (:func:`zoo.exporter.sidecar.action_facts`)."""
    from zoo.frameworks import SpaceKinds

    kinds = {
        "continuous": "Box",
        "discrete": "Discrete",
        "multi_discrete": "MultiDiscrete",
        "multi_binary": "MultiBinary",
    }
    return SpaceKinds(kinds.get(meta.get("action_type")))


def load_exported(path: Path, meta: dict, entry, env_id: str, spec) -> ExportedPolicy:
    """An exported file behind the Policy protocol, checked to fit ``spec``, the eval env its sidecar names."""
    spaces = exported_kinds(meta).fitting(spec, f"{path.name} (exported {meta.get('exp_name')})", env_id)
    if spaces is None:
        from zoo.errors import UsageError

        raise UsageError(
            "--env-factory: zoo checks an exported file against its env's spaces, which a user's "
            "tensor env states only once built",
            hint="evaluate the checkpoint it was exported from with --env-factory",
        )
    problem = fit_problem(meta, *spaces)
    if problem:
        raise ZooError(
            f"{path} does not fit {env_id}: {problem}",
            hint=f"it was exported for {meta['task']}; check --env-id",
        )
    return ExportedPolicy(path, meta, *spaces)
