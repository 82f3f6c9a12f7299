"""``model.safetensors`` + ``config.json``: a policy that loads with torch and safetensors, nothing pickled.

``model.safetensors`` holds every tensor the policy reads (weights, normalizer statistics, action bounds)
under the name its framework's module gives it. ``config.json`` (format ``zoo-policy``, versioned by
``format_version``) holds the facts an export sidecar holds (the env, the observation layout, the actions,
what is baked in, what is left to the caller, the parity evidence) and the graph that computes the
deterministic action from those tensors (:mod:`zoo.release.graph`). docs/release-format.md is the schema.

Reading a release is bounded before any work: the config's size, the graph's node count and every
reference in it are checked (:func:`zoo.release.graph.check_graph`); the weights file must be the one the
config names (sha256), and safetensors reads only a JSON header and raw tensor bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from zoo.artifacts.digest import sha256_file
from zoo.errors import BrokenFile, ZooError
from zoo.exporter.sidecar import rnn_sizes

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
FORMAT = "zoo-policy"
FORMAT_VERSION = 1
#: config.json larger than this is refused before it is parsed (a policy's graph is a few kB).
MAX_CONFIG_BYTES = 16 << 20
#: The sidecar facts config.json must hold, beside the graph and the weights' checksum.
REQUIRED = (
    "format",
    "format_version",
    "task",
    "env",
    "exp_name",
    "framework",
    "obs_shape",
    "obs_groups",
    "action_type",
    "is_recurrent",
    "graph",
    "file_sha256",
)


def is_release_config(path: Path) -> bool:
    """``path`` is a config.json zoo wrote (cheap: the name and the format key, bounded read), or one too large to
    read beside a weights file (:func:`read_config` then says so)."""
    if path.name != CONFIG_FILE or not path.is_file():
        return False
    if path.stat().st_size > MAX_CONFIG_BYTES:
        return path.with_name(WEIGHTS_FILE).is_file()
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def release_config(path: Path) -> Path | None:
    """The config.json of a release named by ``path``: the folder holding it, the weights file or the config."""
    path = Path(path)
    candidates = (
        [path / CONFIG_FILE]
        if path.is_dir()
        else [path]
        if path.name == CONFIG_FILE
        else ([path.with_name(CONFIG_FILE)] if path.name == WEIGHTS_FILE else [])
    )
    found = [c for c in candidates if is_release_config(c)]
    return found[0] if found else None


def read_config(path: Path) -> dict:
    """config.json, checked: its format and version, the required facts, the graph (against the weights'
    tensor names) and the weights file's sha256. Raises BrokenFile or ZooError in one line."""
    from safetensors import safe_open

    from zoo.release.graph import check_graph

    shown = f"{path.parent.name}/{path.name}"
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise BrokenFile(f"{shown} is over {MAX_CONFIG_BYTES >> 20} MiB; not reading it")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BrokenFile(f"{shown}: not readable JSON ({exc})") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise BrokenFile(f"{shown} is not a zoo policy description (format {FORMAT!r})")
    version = config.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ZooError(
            f"{shown}: format_version {version!r}; this zoo reads up to {FORMAT_VERSION}",
            hint="upgrade zoo (pip install -U rl-zoo-hub)",
        )
    missing = [key for key in REQUIRED if key not in config]
    if missing:
        raise BrokenFile(f"{shown}: missing {', '.join(missing)}")
    weights = path.with_name(WEIGHTS_FILE)
    if not weights.is_file():
        raise ZooError(f"{shown}: no {WEIGHTS_FILE} beside it", hint="keep the release's files together")
    if sha256_file(weights) != config["file_sha256"]:
        raise ZooError(
            f"{WEIGHTS_FILE} does not match {shown} (sha256 differs)",
            hint="the files come from different releases; download the release again",
        )
    try:
        with safe_open(str(weights), framework="pt") as f:
            names = set(f.keys())
    except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types on a bad header
        raise BrokenFile(
            f"{WEIGHTS_FILE}: not a safetensors file ({str(exc).splitlines()[0][:200]})"
        ) from None
    check_graph(config["graph"], names)
    return config


def load_graph(path: Path, config: dict):
    """The :class:`~zoo.release.graph.GraphModule` of a checked config over its weights file."""
    from safetensors.torch import load_file

    from zoo.release.graph import GraphModule

    try:
        tensors = load_file(str(path.with_name(WEIGHTS_FILE)), device="cpu")
    except Exception as exc:  # noqa: BLE001
        raise BrokenFile(f"{WEIGHTS_FILE}: {str(exc).splitlines()[0][:200]}") from None
    # fresh, aligned copies: safetensors' tensors lie at the file's offsets, and torch's CPU kernels take other
    # paths on unaligned data (Linear at batch 2: 3e-8 off the source, measured)
    return GraphModule(config["graph"], {name: tensor.clone() for name, tensor in tensors.items()})


class GraphRunner:
    """A release's graph behind the exporter's runner interface: float32 numpy in, actions out; a recurrent
    one carries ``(num_layers, batch, hidden)`` states between calls and zeroes those of reset envs."""

    def __init__(self, config_path: Path, config: dict):
        import torch

        self.module = load_graph(config_path, config)
        self.recurrent = config.get("recurrent")
        self.state: tuple | None = None
        shape = [dim for dim in config["obs_shape"] if isinstance(dim, int) and 0 < dim <= 1 << 24]
        if len(shape) != len(config["obs_shape"]) or len(shape) > 8:
            raise BrokenFile(f"{CONFIG_FILE}: obs_shape {str(config['obs_shape'])[:80]} is not a shape")
        example = [torch.zeros(1, *shape)]
        if self.recurrent is not None:
            self.layers, self.hidden = rnn_sizes(self.recurrent)
            example += [torch.zeros(self.layers, 1, self.hidden)] * 2
        self.module.check_shapes(*example)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        import torch

        obs = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
        with torch.inference_mode():
            if self.recurrent is None:
                return self.module(obs).numpy()
            if self.state is None or self.state[0].shape[1] != len(x):
                shape = (self.layers, len(x), self.hidden)
                self.state = (torch.zeros(shape), torch.zeros(shape))
            actions, h, c = self.module(obs, *self.state)
            self.state = (h, c)
            return actions.numpy()

    def reset(self, done: np.ndarray) -> None:
        import torch

        if self.state is not None and self.state[0].shape[1] == len(done):
            keep = torch.as_tensor(~np.asarray(done, dtype=bool)).to(torch.float32).view(1, -1, 1)
            self.state = (self.state[0] * keep, self.state[1] * keep)
