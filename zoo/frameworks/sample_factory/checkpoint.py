"""What a Sample Factory checkpoint holds, and the actor zoo rebuilds from it and config.json.

``Learner._get_checkpoint_dict`` saves ``{train_step, env_steps, best_performance, model, optimizer, curr_lr}``;
``best_performance`` is the float ``-1e9`` until a best is saved, then an ``np.float64`` (a numpy scalar that
``torch.load(weights_only=True)`` refuses unless numpy's scalar and dtype are allowlisted, as zoo's loader does).
``model`` is ``ActorCriticSharedWeights.state_dict()`` (the default ``actor_critic_share_weights``; with separate
weights, ``ActorCriticSeparateWeights``' ``actor_encoder``/``actor_core``/``actor_decoder`` and ``critic_*``):

- ``obs_normalizer.running_mean_std.running_mean_std.<key>.{running_mean, running_var, count}`` (float64) when
  ``normalize_input``;
- ``encoder.encoders.<key>.mlp_head.<2i>.{weight, bias}``: Linear then the nonlinearity, per layer;
- ``core.core.{weight_ih, weight_hh, bias_ih, bias_hh}_l<k>``: ``nn.GRU``/``nn.LSTM`` when ``use_rnn``;
- ``decoder.mlp.<2i>.{weight, bias}`` when ``decoder_mlp_layers``;
- ``action_parameterization.distribution_linear.{weight, bias}`` (logits; or Gaussian means and log-stds) and,
  for continuous actions without ``adaptive_stddev``, ``action_parameterization.learned_stddev``;
- ``critic_linear.*`` and ``returns_normalizer.*``: the critic's, unused by the actor.

One set of functions reads static tensor descriptions (``zoo check``) and real tensors (the loader): both have
``.shape``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zoo.errors import BrokenFile, UnsupportedError
from zoo.frameworks.sample_factory.config import SfConfig

CHECKPOINT_KEYS = frozenset({"train_step", "env_steps", "best_performance", "model", "optimizer", "curr_lr"})
#: Sample Factory's running_mean_std.py's _NORM_EPS and _DEFAULT_CLIP (the observation normalizer), misc.EPS.
NORM_EPS, NORM_CLIP, EPS = 1e-5, 5.0, 1e-8
OBS_KEY = "obs"  # Sample Factory wraps a non-dict observation as {"obs": ...}
NORM = f"obs_normalizer.running_mean_std.running_mean_std.{OBS_KEY}."
HEAD = "action_parameterization.distribution_linear."
STDDEV = "action_parameterization.learned_stddev"
#: The critic's tensors: in every checkpoint, never used by the actor (with separate weights, its own encoder,
#: core and decoder too).
CRITIC = ("critic_linear.", "returns_normalizer.", "critic_encoder.", "critic_core.", "critic_decoder.")


@dataclass(frozen=True)
class Prefixes:
    """Where the actor's encoder, core and decoder are in the state dict: ``encoder.``/``core.``/``decoder.``
    (``ActorCriticSharedWeights``), or ``actor_encoder.``/``actor_core.``/``actor_decoder.``
    (``ActorCriticSeparateWeights``, ``actor_critic_share_weights: false``)."""

    encoder: str
    core: str
    decoder: str

    @classmethod
    def of(cls, share_weights: bool) -> Prefixes:
        actor = "" if share_weights else "actor_"
        return cls(
            f"{actor}encoder.encoders.{OBS_KEY}.mlp_head.", f"{actor}core.core.", f"{actor}decoder.mlp."
        )

    @property
    def encoders(self) -> str:
        return self.encoder.removesuffix(f"{OBS_KEY}.mlp_head.")


_NOT_REBUILT = "zoo rebuilds Sample Factory's MLP actor-critics (see docs/frameworks/sample_factory.md)"


@dataclass(frozen=True)
class Architecture:
    """The actor as the weights and config.json describe it."""

    obs_dim: int
    encoder: tuple[int, ...]
    rnn_type: str | None  # "gru" | "lstm" | None (no core)
    rnn_size: int
    rnn_layers: int
    decoder: tuple[int, ...]
    head_out: int  # distribution_linear's outputs
    learned_stddev: bool  # continuous actions with one learned log-std per action (adaptive_stddev false)
    normalized: bool
    nonlinearity: str
    tanh_scale: float
    prefixes: Prefixes

    def summary(self) -> str:
        parts = [f"mlp {list(self.encoder)} {self.nonlinearity}"]
        if self.rnn_type:
            parts.append(f"{self.rnn_type.upper()} x{self.rnn_layers} ({self.rnn_size})")
        if self.decoder:
            parts.append(f"decoder {list(self.decoder)}")
        parts.append(f"head {self.head_out}")
        return f"{self.obs_dim} -> " + " -> ".join(parts)

    @property
    def features(self) -> int:
        """The size of what reaches the action head."""
        if self.decoder:
            return self.decoder[-1]
        if self.rnn_type:
            return self.rnn_size
        return self.encoder[-1] if self.encoder else self.obs_dim

    def action_text(self) -> str:
        if self.learned_stddev:
            return f"continuous: {self.head_out} Gaussian means, one learned log-std each"
        return (
            f"{self.head_out} outputs: discrete logits, or {self.head_out // 2} Gaussian means and log-stds"
        )


def model_state(content: Any, name: str) -> Mapping[str, Any]:
    """The ``model`` state dict of a checkpoint dict Sample Factory's Learner saved."""
    if not isinstance(content, Mapping) or not all(isinstance(k, str) for k in content):
        raise BrokenFile(
            f"{name}: not a Sample Factory checkpoint (expected the Learner's dict, found {type(content).__name__})",
            hint="is this file from Sample Factory's checkpoint_p<N>/?",
        )
    model = content.get("model")
    if not isinstance(model, Mapping) or not model or not all(hasattr(v, "shape") for v in model.values()):
        keys = ", ".join(sorted(content)[:8]) or "none"
        raise BrokenFile(
            f"{name}: no 'model' state dict (keys: {keys})",
            hint="is this file from Sample Factory's checkpoint_p<N>/?",
        )
    return model


def _shape(state: Mapping[str, Any], key: str) -> tuple[int, ...]:
    value = state.get(key)
    if value is None:
        raise BrokenFile(
            f"the model has no {key}",
            hint="is this checkpoint from the experiment its config.json describes?",
        )
    return tuple(value.shape)


def _linear_chain(state: Mapping[str, Any], prefix: str, inputs: int, what: str) -> tuple[int, ...]:
    """The sizes of ``prefix.<2i>.weight`` layers, each one's input checked against the previous output."""
    sizes = []
    indices = sorted(int(m[1]) for k in state if (m := re.match(rf"^{re.escape(prefix)}(\d+)\.weight$", k)))
    if indices != list(range(0, 2 * len(indices), 2)):
        raise BrokenFile(f"{what} layers are numbered {indices}, Sample Factory's MLPs are 0, 2, 4, ...")
    for i in indices:
        out, inp = _shape(state, f"{prefix}{i}.weight")
        if inp != inputs or _shape(state, f"{prefix}{i}.bias") != (out,):
            raise BrokenFile(
                f"{what} layer {i} takes {inp} inputs with bias {_shape(state, f'{prefix}{i}.bias')}, expected {inputs}"
            )
        sizes.append(out)
        inputs = out
    return tuple(sizes)


def _refuse_layout(state: Mapping[str, Any], config: SfConfig, at: Prefixes) -> None:
    """Refuse, by name, the models zoo does not rebuild (before any shape is read)."""
    other = Prefixes.of(not config.share_weights)
    if any(k.startswith((other.encoders, other.core, other.decoder)) for k in state):
        said = "true" if config.share_weights else "false"
        found = "separate actor and critic ones" if config.share_weights else "shared"
        raise BrokenFile(
            f"config.json says actor_critic_share_weights {said}, the weights are {found}",
            hint="is this checkpoint from the experiment its config.json describes?",
        )
    keys = {k[len(at.encoders) :].split(".")[0] for k in state if k.startswith(at.encoders)}
    if keys - {OBS_KEY}:
        raise UnsupportedError(
            f"dict observations (encoders for {', '.join(sorted(keys))}) are not rebuilt by zoo",
            hint=_NOT_REBUILT,
        )
    mlp = [k for k in state if k.startswith(at.encoders) and not k.startswith(at.encoder)]
    if mlp:
        raise UnsupportedError(
            f"encoder {mlp[0]!r} is not Sample Factory's MLP encoder (conv encoders: images)",
            hint=_NOT_REBUILT,
        )


def architecture(state: Mapping[str, Any], config: SfConfig) -> Architecture:
    """The actor the weights hold, checked against config.json (which says the nonlinearity and the core)."""
    at = Prefixes.of(config.share_weights)
    _refuse_layout(state, config, at)
    used = set()
    normalized = any(k.startswith(NORM) for k in state)
    if normalized != config.normalize_input:
        raise BrokenFile(
            f"config.json says normalize_input {str(config.normalize_input).lower()}, the weights "
            f"{'hold' if normalized else 'have no'} an observation normalizer",
            hint="is this checkpoint from the experiment its config.json describes?",
        )
    first = f"{at.encoder}0.weight"
    obs_dim = _shape(state, first)[1] if first in state else None
    if normalized:
        keys = [f"{NORM}{n}" for n in ("running_mean", "running_var", "count")]
        mean = _shape(state, keys[0])
        size = mean[0] if len(mean) == 1 else -1
        if size < 0 or (obs_dim is not None and size != obs_dim) or _shape(state, keys[1]) != mean:
            raise BrokenFile(
                f"the observation normalizer has shape {mean}, the encoder takes {obs_dim} inputs"
            )
        obs_dim = size
        used.update(keys)
    if obs_dim is None:
        raise BrokenFile("the model has neither an encoder nor an observation normalizer to size its input")
    encoder = _linear_chain(state, at.encoder, obs_dim, "the encoder's")
    if encoder != config.encoder_mlp_layers:
        raise BrokenFile(
            f"config.json declares encoder_mlp_layers {list(config.encoder_mlp_layers)}, the weights have {list(encoder)}",
            hint="is this checkpoint from the experiment its config.json describes?",
        )
    used.update(k for k in state if k.startswith(at.encoder))
    features = encoder[-1] if encoder else obs_dim
    rnn_type = _core(state, config, features, at.core) if config.use_rnn else None
    if rnn_type is None and any(k.startswith(at.core) for k in state):
        raise BrokenFile("config.json says use_rnn false, the weights hold a recurrent core")
    used.update(k for k in state if k.startswith(at.core))
    if rnn_type:
        features = config.rnn_size
    decoder = _linear_chain(state, at.decoder, features, "the decoder's")
    if decoder != config.decoder_mlp_layers:
        raise BrokenFile(
            f"config.json declares decoder_mlp_layers {list(config.decoder_mlp_layers)}, the weights have {list(decoder)}"
        )
    used.update(k for k in state if k.startswith(at.decoder))
    features = decoder[-1] if decoder else features
    out, inp = _shape(state, f"{HEAD}weight")
    if inp != features or _shape(state, f"{HEAD}bias") != (out,):
        raise BrokenFile(f"the action head takes {inp} inputs, the layers before it give {features}")
    used.update({f"{HEAD}weight", f"{HEAD}bias"})
    learned = STDDEV in state
    if learned:
        if _shape(state, STDDEV) != (out,):
            raise BrokenFile(
                f"learned_stddev has shape {_shape(state, STDDEV)}, the action head gives {out} means"
            )
        used.add(STDDEV)
    unused = sorted(k for k in state if k not in used and not k.startswith(CRITIC))
    if unused:
        raise UnsupportedError(
            f"the model holds tensors zoo's rebuilt actor does not use: {', '.join(unused[:3])}",
            hint=_NOT_REBUILT,
        )
    return Architecture(
        obs_dim=obs_dim,
        encoder=encoder,
        rnn_type=rnn_type,
        rnn_size=config.rnn_size,
        rnn_layers=config.rnn_num_layers,
        decoder=decoder,
        head_out=out,
        learned_stddev=learned,
        normalized=normalized,
        nonlinearity=config.nonlinearity,
        tanh_scale=config.continuous_tanh_scale if learned else 0.0,
        prefixes=at,
    )


def _core(state: Mapping[str, Any], config: SfConfig, inputs: int, prefix: str) -> str:
    gates = 3 if config.rnn_type == "gru" else 4
    hidden, layers = config.rnn_size, config.rnn_num_layers
    for k in range(layers):
        expected = {
            f"{prefix}weight_ih_l{k}": (gates * hidden, inputs if k == 0 else hidden),
            f"{prefix}weight_hh_l{k}": (gates * hidden, hidden),
            f"{prefix}bias_ih_l{k}": (gates * hidden,),
            f"{prefix}bias_hh_l{k}": (gates * hidden,),
        }
        for key, shape in expected.items():
            if _shape(state, key) != shape:
                raise BrokenFile(
                    f"{key} has shape {_shape(state, key)}, a {config.rnn_type.upper()} of {layers} layer(s) of "
                    f"{hidden} over {inputs} inputs has {shape}",
                    hint="is this checkpoint from the experiment its config.json describes?",
                )
    extra = [
        k
        for k in state
        if k.startswith(prefix) and not re.search(rf"_l({'|'.join(map(str, range(layers)))})$", k)
    ]
    if extra:
        raise BrokenFile(f"the core holds {extra[0]}, beyond the {layers} layer(s) config.json declares")
    return config.rnn_type
