"""Torch ports of the flax networks of CleanRL's JAX scripts, built from the params they save.

CleanRL's ``*_jax.py`` scripts write ``flax.serialization.to_bytes(obj)`` with ``--save-model``.
``flax.serialization.msgpack_restore`` of that file gives ``obj``'s state dict: nested dicts of
numpy arrays, every list turned into a dict keyed ``"0"``, ``"1"``, ... Each network's params are
what ``module.init`` returned: ``{"params": {"Dense_0": {"kernel", "bias"}, ...}}``, so a tree key
reads ``params.Dense_0.kernel``. This module needs neither jax nor flax.

What each script saves (line numbers in cleanrl 1.2.0's scripts, except where said):

=================================  ====================================================  ==========
script                             saved object                                          parts
=================================  ====================================================  ==========
dqn_jax, dqn_atari_jax             ``q_state.params`` (dqn_jax.py:263, atari :291)       q_network
qdagger_dqn_atari_jax_impalacnn    ``q_state.params`` (upstream fe8d8a0, :451)           q_network
c51_jax, c51_atari_jax             ``{"model_weights": q_state.params,                   q_network
                                   "args": vars(args)}`` (c51_jax.py:275-280, atari
                                   :308-313); ``atoms`` is not saved: the evaluator
                                   rebuilds it from ``args`` n_atoms/v_min/v_max
td3_continuous_action_jax          ``[actor, qf1, qf2]`` params (upstream fe8d8a0,       actor, qf1,
                                   :326-338; 1.2.0 has no ``--save-model``)              qf2
ddpg_continuous_action_jax         ``[actor, qf1]`` params (upstream fe8d8a0, :284-295;  actor, qf1
                                   1.2.0 has no ``--save-model``)
ppo_atari_envpool_xla_jax_scan     ``[vars(args), [network, actor, critic]]`` params     agent
                                   (ppo_atari_envpool_xla_jax_scan.py:477-491)
=================================  ====================================================  ==========

The actor's ``action_scale``/``action_bias`` are flax module *attributes* computed from the
vector env's batched action space (td3 1.2.0 :161-162, ddpg 1.2.0 :169-174), not params: they are
not in the file, so :class:`JaxDeterministicActor` computes them from the action space.

Layouts: a flax ``Dense`` kernel is ``(in, out)`` (torch ``Linear.weight`` is its transpose); a
``Conv`` kernel is ``HWIO`` (torch ``OIHW``: ``kernel.transpose(3, 2, 0, 1)``). The Atari
networks take the env's ``(N, C, H, W)`` frame stack and ``jnp.transpose`` it to NHWC first, so
the flatten before their first ``Dense`` runs over (H, W, C): the ports convolve in NCHW and
permute to NHWC before flattening. Torch attribute names are flax's module names
(``Dense_0.weight`` is ``params.Dense_0.kernel`` transposed).

Every ``from_flax`` checks each key and shape first and raises :class:`~zoo.errors.LayoutMismatch`
naming the first key that differs; each port's ``flax_shapes`` classmethod gives those expected
shapes without building anything. This module describes single networks only: where each one sits in
a script's whole ``--save-model`` file (the table above) is said once, by the ``layout`` of the
script's entry in ``registry.yaml``, which :mod:`zoo.frameworks.cleanrl.flaxlayout` reads (``split``
the file into parts, ``fit_problem`` against the env's spaces, ``build`` each part's port).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo.errors import LayoutMismatch, UnsupportedError

Shapes = dict[str, tuple[int, ...]]

_HINT = "check the script name, and that the spaces are those of the env the model was trained on"


# ----------------------------------------------------------------------------- trees
def flatten_tree(tree: Any) -> dict[str, Any]:
    """Dotted keys -> leaves of a restored flax tree; lists/tuples are keyed by index, as flax saves them."""
    out: dict[str, Any] = {}

    def walk(node: Any, key: str) -> None:
        if isinstance(node, Mapping):
            items = [(str(k), v) for k, v in node.items()]
        elif isinstance(node, list | tuple):
            items = [(str(i), v) for i, v in enumerate(node)]
        else:
            out[key] = node
            return
        if not items and key:
            out[key] = node  # an empty dict is a leaf (flax restores it as {})
        for k, v in items:
            walk(v, f"{key}.{k}" if key else k)

    if not isinstance(tree, Mapping | list | tuple):
        raise LayoutMismatch(f"expected a flax params tree (nested dicts), got a {type(tree).__name__}")
    walk(tree, "")
    return out


def _check(flat: Mapping[str, Any], expected: Shapes, what: str) -> dict[str, np.ndarray]:
    """The arrays of ``flat`` as float32, or LayoutMismatch naming the first key that differs."""
    arrays: dict[str, np.ndarray] = {}
    for key, shape in expected.items():
        if key not in flat:
            raise LayoutMismatch(f"{what}: missing {key} (expected shape {shape})", hint=_HINT)
        leaf = flat[key]
        if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
            raise LayoutMismatch(
                f"{what}: {key} is a {type(leaf).__name__}, expected an array of shape {shape}", hint=_HINT
            )
        found = tuple(int(d) for d in leaf.shape)
        if found != shape:
            raise LayoutMismatch(f"{what}: {key} has shape {found}, expected {shape}", hint=_HINT)
        arr = np.asarray(leaf)
        if arr.dtype.kind != "f" and arr.dtype.name != "bfloat16":
            raise LayoutMismatch(f"{what}: {key} has dtype {arr.dtype}, expected floats")
        arrays[key] = arr.astype(np.float32, copy=False)
    for key in flat:
        if key not in expected:
            raise LayoutMismatch(f"{what}: unexpected {key} (not in the network's params)", hint=_HINT)
    return arrays


def _to_torch(key: str, arr: np.ndarray) -> torch.Tensor:
    """A flax leaf in torch's layout: Dense kernels transposed, Conv kernels HWIO -> OIHW."""
    if key.endswith("kernel"):
        arr = arr.T if arr.ndim == 2 else arr.transpose(3, 2, 0, 1)
    return torch.from_numpy(
        np.array(arr, dtype=np.float32, order="C")
    )  # a copy: restored arrays are read-only


def _pre(prefix: str, shapes: Shapes) -> Shapes:
    return {prefix + k: v for k, v in shapes.items()}


def _dense(name: str, n_in: int, n_out: int) -> Shapes:
    return {f"{name}.kernel": (n_in, n_out), f"{name}.bias": (n_out,)}


def _conv(name: str, k: int, c_in: int, c_out: int) -> Shapes:
    return {f"{name}.kernel": (k, k, c_in, c_out), f"{name}.bias": (c_out,)}


# ----------------------------------------------------------------------------- spaces
def _features(space, what: str) -> int:
    """A flax Dense acts on the last axis: its input size is the observation's last dimension."""
    shape = tuple(getattr(space, "shape", None) or ())
    if not shape:
        raise UnsupportedError(f"{what} needs a Box observation space with a shape, got {space}")
    return int(shape[-1])


def _n_actions(space, what: str) -> int:
    if not hasattr(space, "n"):
        raise UnsupportedError(f"{what} needs a Discrete action space, got {space}")
    return int(space.n)


def _act_dim(space, what: str) -> int:
    if not (hasattr(space, "low") and hasattr(space, "high") and getattr(space, "shape", None)):
        raise UnsupportedError(f"{what} needs a Box action space, got {space}")
    return int(np.prod(space.shape))


def _image(space, what: str) -> tuple[int, int, int]:
    shape = tuple(getattr(space, "shape", None) or ())
    if len(shape) != 3:
        raise UnsupportedError(f"{what} needs (C, H, W) image observations (a frame stack), got {space}")
    return int(shape[0]), int(shape[1]), int(shape[2])


# ----------------------------------------------------------------------------- base
class FlaxPort(nn.Module):
    """A torch module that computes what one of CleanRL's flax modules computes, from its params."""

    script: str = ""

    @classmethod
    def flax_shapes(cls, observation_space, action_space, **kwargs) -> Shapes:
        """Dotted keys -> shapes of the params ``module.init`` returns (``params.Dense_0.kernel``, ...)."""
        raise NotImplementedError

    @classmethod
    def from_flax(cls, params: Any, observation_space, action_space, **kwargs) -> FlaxPort:
        """Build the port from a restored params tree; LayoutMismatch names the first key that differs."""
        expected = cls.flax_shapes(observation_space, action_space, **kwargs)
        arrays = _check(flatten_tree(params), expected, f"{cls.script} {cls.__name__}")
        model = cls(observation_space, action_space, **kwargs)
        model.load_flax_arrays(arrays)
        return model.eval()

    def torch_key(self, flax_key: str) -> str:
        """``params.Dense_0.kernel`` -> ``Dense_0.weight``."""
        key = flax_key.removeprefix("params.")
        return key[: -len("kernel")] + "weight" if key.endswith("kernel") else key

    def load_flax_arrays(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Copy already-checked flax arrays (keys as in :meth:`flax_shapes`) into the parameters."""
        state = {self.torch_key(k): _to_torch(k, v) for k, v in arrays.items()}
        result = self.load_state_dict(state, strict=False)
        buffers = {name for name, _ in self.named_buffers()}
        missing = [k for k in result.missing_keys if k not in buffers]
        if missing or result.unexpected_keys:  # a bug in this module, not in the file
            raise AssertionError(
                f"{type(self).__name__}: missing {missing}, unexpected {result.unexpected_keys}"
            )


def _as_float(x: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return x.to(like.dtype)


class _MLP3(FlaxPort):
    """``Dense(h1) -> relu -> Dense(h2) -> relu -> Dense(out)`` over the last axis."""

    hidden: tuple[int, int] = (120, 84)

    def _init_mlp(self, n_in: int, n_out: int) -> None:
        h1, h2 = self.hidden
        self.Dense_0 = nn.Linear(n_in, h1)
        self.Dense_1 = nn.Linear(h1, h2)
        self.Dense_2 = nn.Linear(h2, n_out)

    @classmethod
    def _mlp_shapes(cls, n_in: int, n_out: int) -> Shapes:
        h1, h2 = cls.hidden
        return _pre(
            "params.",
            {**_dense("Dense_0", n_in, h1), **_dense("Dense_1", h1, h2), **_dense("Dense_2", h2, n_out)},
        )

    def _mlp(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.Dense_0(_as_float(x, self.Dense_0.weight)))
        return self.Dense_2(F.relu(self.Dense_1(x)))


# Nature-CNN of the Atari scripts: (features, kernel, stride), padding="VALID"
_NATURE = ((32, 8, 4), (64, 4, 2), (64, 3, 1))


def _nature_shapes(space, what: str) -> tuple[Shapes, int]:
    c, h, w = _image(space, what)
    shapes: Shapes = {}
    for i, (out, k, s) in enumerate(_NATURE):
        shapes.update(_conv(f"Conv_{i}", k, c, out))
        c, h, w = out, (h - k) // s + 1, (w - k) // s + 1
        if h < 1 or w < 1:
            raise UnsupportedError(
                f"{what}: frames of {space.shape} are too small for its VALID convolutions"
            )
    return shapes, c * h * w


class _NatureTrunk(FlaxPort):
    """``x/255 -> 3 VALID convs (relu) -> NHWC flatten``: the conv part of the Atari networks."""

    observation_kind = "image"

    def _init_convs(self, in_channels: int) -> None:
        c = in_channels
        for i, (out, k, s) in enumerate(_NATURE):
            setattr(self, f"Conv_{i}", nn.Conv2d(c, out, k, stride=s))  # padding 0 == flax "VALID"
            c = out

    def _conv_features(self, x: torch.Tensor) -> torch.Tensor:
        x = _as_float(x, self.Conv_0.weight) / 255.0  # the scripts: jnp.transpose(x, (0, 2, 3, 1)) / 255.0
        for i in range(len(_NATURE)):
            x = F.relu(getattr(self, f"Conv_{i}")(x))
        return x.permute(0, 2, 3, 1).reshape(x.shape[0], -1)  # flax flattens NHWC


# ----------------------------------------------------------------------------- DQN
class DQNJaxQNetwork(_MLP3):
    """``dqn_jax.py`` QNetwork (1.2.0 :94-104): Dense 120-84-n with relu; ``forward`` -> Q-values."""

    script = "dqn_jax"

    def __init__(self, observation_space, action_space):
        super().__init__()
        self._init_mlp(_features(observation_space, self.script), _n_actions(action_space, self.script))

    @classmethod
    def flax_shapes(cls, observation_space, action_space) -> Shapes:
        return cls._mlp_shapes(_features(observation_space, cls.script), _n_actions(action_space, cls.script))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._mlp(x)


class DQNAtariJaxQNetwork(_NatureTrunk):
    """``dqn_atari_jax.py`` QNetwork (1.2.0 :114-131): Nature-CNN on ``(N, 4, 84, 84)`` frames -> Q-values."""

    script = "dqn_atari_jax"

    def __init__(self, observation_space, action_space):
        super().__init__()
        _, flat = _nature_shapes(observation_space, self.script)
        self._init_convs(observation_space.shape[0])
        self.Dense_0 = nn.Linear(flat, 512)
        self.Dense_1 = nn.Linear(512, _n_actions(action_space, self.script))

    @classmethod
    def flax_shapes(cls, observation_space, action_space) -> Shapes:
        convs, flat = _nature_shapes(observation_space, cls.script)
        n = _n_actions(action_space, cls.script)
        return _pre("params.", {**convs, **_dense("Dense_0", flat, 512), **_dense("Dense_1", 512, n)})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.Dense_1(F.relu(self.Dense_0(self._conv_features(x))))


# ----------------------------------------------------------------------------- C51
class _C51Jax:
    """C51 head: the flax module returns ``softmax`` pmfs ``(N, n, n_atoms)``; acting takes argmax of
    ``(pmfs * atoms).sum(-1)`` with ``atoms = jnp.asarray(np.linspace(v_min, v_max, n_atoms))``."""

    def _init_atoms(self, n_actions: int, n_atoms: int, v_min: float, v_max: float) -> None:
        self.n, self.n_atoms = n_actions, int(n_atoms)
        atoms = np.linspace(v_min, v_max, num=int(n_atoms)).astype(np.float32)  # float64 -> float32, as jnp
        self.register_buffer("atoms", torch.from_numpy(atoms))

    def _pmfs(self, logits: torch.Tensor) -> torch.Tensor:
        return torch.softmax(logits.reshape(logits.shape[0], self.n, self.n_atoms), dim=-1)

    def pmfs(self, x: torch.Tensor) -> torch.Tensor:
        """Atom probabilities ``(N, n_actions, n_atoms)``: what the flax module returns."""
        return self._pmfs(self.logits(x))

    def q_from_pmfs(self, pmfs: torch.Tensor) -> torch.Tensor:
        """The scripts' ``(pmfs * atoms).sum(axis=-1)`` (c51_jax.py:225, c51_jax_eval.py:42)."""
        return (pmfs * self.atoms).sum(-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Expected Q-values ``(N, n_actions)``: what the scripts take the argmax of."""
        return self.q_from_pmfs(self.pmfs(x))


class C51JaxQNetwork(_C51Jax, _MLP3):
    """``c51_jax.py`` QNetwork (1.2.0 :94-107): Dense 120-84-(n*n_atoms), softmax over atoms.

    Defaults are the script's ``--n-atoms 101 --v-min -100 --v-max 100`` (c51_jax.py:49-54).
    """

    script = "c51_jax"

    def __init__(self, observation_space, action_space, n_atoms: int = 101, v_min=-100, v_max=100):
        super().__init__()
        n = _n_actions(action_space, self.script)
        self._init_mlp(_features(observation_space, self.script), n * int(n_atoms))
        self._init_atoms(n, n_atoms, v_min, v_max)

    @classmethod
    def flax_shapes(
        cls, observation_space, action_space, n_atoms: int = 101, v_min=-100, v_max=100
    ) -> Shapes:
        n = _n_actions(action_space, cls.script)
        return cls._mlp_shapes(_features(observation_space, cls.script), n * int(n_atoms))

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return self._mlp(x)


class C51AtariJaxQNetwork(_C51Jax, _NatureTrunk):
    """``c51_atari_jax.py`` QNetwork (1.2.0 :114-134): Nature-CNN -> Dense(n*n_atoms), softmax over atoms.

    Defaults are the script's ``--n-atoms 51 --v-min -10 --v-max 10`` (c51_atari_jax.py:60-65).
    """

    script = "c51_atari_jax"

    def __init__(self, observation_space, action_space, n_atoms: int = 51, v_min=-10, v_max=10):
        super().__init__()
        _, flat = _nature_shapes(observation_space, self.script)
        n = _n_actions(action_space, self.script)
        self._init_convs(observation_space.shape[0])
        self.Dense_0 = nn.Linear(flat, 512)
        self.Dense_1 = nn.Linear(512, n * int(n_atoms))
        self._init_atoms(n, n_atoms, v_min, v_max)

    @classmethod
    def flax_shapes(cls, observation_space, action_space, n_atoms: int = 51, v_min=-10, v_max=10) -> Shapes:
        convs, flat = _nature_shapes(observation_space, cls.script)
        n = _n_actions(action_space, cls.script)
        return _pre(
            "params.", {**convs, **_dense("Dense_0", flat, 512), **_dense("Dense_1", 512, n * int(n_atoms))}
        )

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.Dense_1(F.relu(self.Dense_0(self._conv_features(x))))


# ----------------------------------------------------------------------------- QDagger (IMPALA CNN)
def _same_pads(size: int, window: int, stride: int) -> tuple[int, int, int]:
    """lax's "SAME" padding: (low, high, output size); the extra pad goes *after* (torch pads both sides)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + window - size, 0)
    return total // 2, total - total // 2, out


class _ImpalaResidualBlock(nn.Module):
    """``ResidualBlock``: ``x + Conv_1(relu(Conv_0(relu(x))))``, 3x3 "SAME" convs."""

    def __init__(self, channels: int):
        super().__init__()
        self.Conv_0 = nn.Conv2d(channels, channels, 3, padding=1)  # 3x3 stride 1 "SAME" == pad 1 each side
        self.Conv_1 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.Conv_1(F.relu(self.Conv_0(F.relu(x))))


class _ImpalaConvSequence(nn.Module):
    """``ConvSequence``: 3x3 "SAME" conv, 3x3/2 "SAME" max-pool, two residual blocks."""

    def __init__(self, in_channels: int, channels: int):
        super().__init__()
        self.Conv_0 = nn.Conv2d(in_channels, channels, 3, padding=1)
        self.ResidualBlock_0 = _ImpalaResidualBlock(channels)
        self.ResidualBlock_1 = _ImpalaResidualBlock(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.Conv_0(x)
        h_lo, h_hi, _ = _same_pads(x.shape[2], 3, 2)
        w_lo, w_hi, _ = _same_pads(x.shape[3], 3, 2)
        # flax's max_pool pads with -inf; on even sizes "SAME" pads (0, 1), not torch's padding=1 (1, 1)
        x = F.max_pool2d(F.pad(x, (w_lo, w_hi, h_lo, h_hi), value=float("-inf")), 3, stride=2)
        return self.ResidualBlock_1(self.ResidualBlock_0(x))


class QDaggerImpalaJaxQNetwork(FlaxPort):
    """``qdagger_dqn_atari_jax_impalacnn.py`` QNetwork (upstream fe8d8a0 :128-178): IMPALA CNN -> Q-values.

    ``x/255 -> ConvSequence x3 (16, 32, 32) -> relu -> NHWC flatten -> Dense 256 -> relu -> Dense n``.
    """

    script = "qdagger_dqn_atari_jax_impalacnn"
    observation_kind = "image"

    def __init__(self, observation_space, action_space, channelss: Sequence[int] = (16, 32, 32)):
        super().__init__()
        c, h, w = _image(observation_space, self.script)
        for i, out in enumerate(channelss):
            setattr(self, f"ConvSequence_{i}", _ImpalaConvSequence(c, out))
            c, h, w = out, _same_pads(h, 3, 2)[2], _same_pads(w, 3, 2)[2]
        self.n_sequences = len(channelss)
        self.Dense_0 = nn.Linear(c * h * w, 256)
        self.Dense_1 = nn.Linear(256, _n_actions(action_space, self.script))

    @classmethod
    def flax_shapes(cls, observation_space, action_space, channelss: Sequence[int] = (16, 32, 32)) -> Shapes:
        c, h, w = _image(observation_space, cls.script)
        shapes: Shapes = {}
        for i, out in enumerate(channelss):
            seq = {**_conv("Conv_0", 3, c, out)}
            for b in range(2):
                seq.update(_conv(f"ResidualBlock_{b}.Conv_0", 3, out, out))
                seq.update(_conv(f"ResidualBlock_{b}.Conv_1", 3, out, out))
            shapes.update(_pre(f"ConvSequence_{i}.", seq))
            c, h, w = out, _same_pads(h, 3, 2)[2], _same_pads(w, 3, 2)[2]
        n = _n_actions(action_space, cls.script)
        return _pre("params.", {**shapes, **_dense("Dense_0", c * h * w, 256), **_dense("Dense_1", 256, n)})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = _as_float(x, self.Dense_0.weight) / 255.0
        for i in range(self.n_sequences):
            x = getattr(self, f"ConvSequence_{i}")(x)
        x = F.relu(x).permute(0, 2, 3, 1).reshape(x.shape[0], -1)
        return self.Dense_1(F.relu(self.Dense_0(x)))


# ----------------------------------------------------------------------------- TD3 / DDPG
class JaxDeterministicActor(_MLP3):
    """``td3``/``ddpg_continuous_action_jax.py`` Actor (1.2.0 :95-109): Dense 256-256-act_dim, relu,
    ``tanh(x) * action_scale + action_bias``; ``forward`` -> actions.

    ``action_scale``/``action_bias`` are flax module attributes, not params: CleanRL computes them from
    the vector env's batched ``envs.action_space`` (shape ``(1, *action_shape)``, float32); here they are
    buffers of that shape computed from the single action space.
    """

    script = "td3_continuous_action_jax / ddpg_continuous_action_jax"
    hidden = (256, 256)

    def __init__(self, observation_space, action_space):
        super().__init__()
        self._init_mlp(_features(observation_space, "Actor"), _act_dim(action_space, "Actor"))
        high = np.asarray(action_space.high, dtype=np.float32)[None]
        low = np.asarray(action_space.low, dtype=np.float32)[None]
        self.register_buffer("action_scale", torch.from_numpy((high - low) / np.float32(2.0)))
        self.register_buffer("action_bias", torch.from_numpy((high + low) / np.float32(2.0)))

    @classmethod
    def flax_shapes(cls, observation_space, action_space) -> Shapes:
        return cls._mlp_shapes(_features(observation_space, "Actor"), _act_dim(action_space, "Actor"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self._mlp(x)) * self.action_scale + self.action_bias


class JaxContinuousQNetwork(_MLP3):
    """``td3``/``ddpg_continuous_action_jax.py`` QNetwork (1.2.0 :83-92): ``Q(concat(x, a))``, Dense 256-256-1."""

    script = "td3_continuous_action_jax / ddpg_continuous_action_jax"
    hidden = (256, 256)

    def __init__(self, observation_space, action_space):
        super().__init__()
        self._init_mlp(_features(observation_space, "QNetwork") + _act_dim(action_space, "QNetwork"), 1)

    @classmethod
    def flax_shapes(cls, observation_space, action_space) -> Shapes:
        n_in = _features(observation_space, "QNetwork") + _act_dim(action_space, "QNetwork")
        return cls._mlp_shapes(n_in, 1)

    def forward(self, x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        """``(N, 1)``, as the flax module returns it."""
        w = self.Dense_0.weight
        return self._mlp(torch.cat([_as_float(x, w), _as_float(a, w)], -1))


# ----------------------------------------------------------------------------- PPO (EnvPool, XLA, scan)
class _PPONetwork(_NatureTrunk):
    def __init__(self, observation_space):
        super().__init__()
        _, flat = _nature_shapes(observation_space, "ppo_atari_envpool_xla_jax_scan Network")
        self._init_convs(observation_space.shape[0])
        self.Dense_0 = nn.Linear(flat, 512)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.Dense_0(self._conv_features(x)))


class PPOAtariJaxAgent(FlaxPort):
    """``ppo_atari_envpool_xla_jax_scan.py`` Network + Actor + Critic (1.2.0 :113-162).

    ``network``: Nature-CNN ``x/255 -> convs -> NHWC flatten -> Dense 512 -> relu`` (the hidden state);
    ``actor``: ``Dense(n)`` logits; ``critic``: ``Dense(1)`` value. Built from the saved
    ``[network_params, actor_params, critic_params]`` (keys ``0.params...``, ``1.params...``, ``2.params...``).
    ``forward`` -> the actor's logits ``(N, n)`` (zoo's ``categorical`` head: argmax, or a sample in the
    stochastic mode, as CleanRL's own eval samples Gumbel-max over them: ppo_envpool_jax_eval.py:51-53);
    :meth:`value` -> the critic's ``(N, 1)``; :meth:`act` is the deterministic argmax of the logits.
    """

    script = "ppo_atari_envpool_xla_jax_scan"
    observation_kind = "image"
    _PARTS = ("network", "actor", "critic")

    def __init__(self, observation_space, action_space):
        super().__init__()
        self.network = _PPONetwork(observation_space)
        self.actor = nn.Module()
        self.actor.Dense_0 = nn.Linear(512, _n_actions(action_space, self.script))
        self.critic = nn.Module()
        self.critic.Dense_0 = nn.Linear(512, 1)

    @classmethod
    def flax_shapes(cls, observation_space, action_space) -> Shapes:
        convs, flat = _nature_shapes(observation_space, cls.script)
        n = _n_actions(action_space, cls.script)
        return {
            **_pre("0.params.", {**convs, **_dense("Dense_0", flat, 512)}),
            **_pre("1.params.", _dense("Dense_0", 512, n)),
            **_pre("2.params.", _dense("Dense_0", 512, 1)),
        }

    def torch_key(self, flax_key: str) -> str:
        index, _, rest = flax_key.partition(".")
        return f"{self._PARTS[int(index)]}.{super().torch_key(rest)}"

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.actor.Dense_0(self.network(x))

    def value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic.Dense_0(self.network(x))

    def act(self, x: torch.Tensor) -> torch.Tensor:
        """Deterministic actions: argmax of the logits."""
        return self.actor.Dense_0(self.network(x)).argmax(dim=1)
