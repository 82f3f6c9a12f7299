"""An experiment's ``config.json``: the architecture and env Sample Factory rebuilds its actor-critic from.

Sample Factory's checkpoints hold weights only; ``enjoy`` rebuilds the model from the saved config
(``load_from_checkpoint``) with ``create_actor_critic``. zoo reads the same fields, as data: the JSON is parsed
with a size bound and every field zoo uses is checked for its type and its allowed values (a string is never
evaluated or imported). What zoo does not rebuild (separate actor and critic weights, conv encoders, another
model factory's keys) is refused by name in :mod:`.checkpoint`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zoo.artifacts.runs import note_read
from zoo.errors import BrokenFile, UnsupportedError

#: A Sample Factory config.json is a few KiB; a larger one is not read.
MAX_CONFIG_BYTES = 1 << 20
NONLINEARITIES = ("elu", "relu", "tanh")
RNN_TYPES = ("gru", "lstm")


@dataclass(frozen=True)
class SfConfig:
    """The fields of config.json zoo reads (Sample Factory 2.x names and defaults)."""

    source: Path
    algo: str | None
    env: str | None
    seed: int | None
    encoder_mlp_layers: tuple[int, ...]
    decoder_mlp_layers: tuple[int, ...]
    nonlinearity: str
    use_rnn: bool
    rnn_type: str
    rnn_size: int
    rnn_num_layers: int
    share_weights: bool
    adaptive_stddev: bool
    continuous_tanh_scale: float
    normalize_input: bool
    normalize_input_keys: tuple[str, ...] | None
    obs_subtract_mean: float
    obs_scale: float
    env_frameskip: int
    env_framestack: int
    with_wandb: bool
    command_line: str | None

    def core_text(self) -> str:
        if not self.use_rnn:
            return "none (use_rnn false)"
        return f"{self.rnn_type.upper()} x{self.rnn_num_layers} (hidden {self.rnn_size})"


def _field(doc: dict, key: str, kind: type | tuple[type, ...], default: Any, path: Path) -> Any:
    """``doc[key]`` (``default`` when absent), refused in one line when not of ``kind`` (a bool is no number)."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    value = doc.get(key, default)
    if float in kinds and type(value) is int:
        value = float(value)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        raise BrokenFile(
            f"{path.name}: {key} is {value!r:.60}, expected {' or '.join(k.__name__ for k in kinds)}",
            hint="is this the config.json Sample Factory wrote for this experiment?",
        )
    return value


def _layers(doc: dict, key: str, default: list[int], path: Path) -> tuple[int, ...]:
    value = _field(doc, key, list, default, path)
    if not all(type(v) is int and 0 < v <= 1 << 16 for v in value) or len(value) > 64:
        raise BrokenFile(f"{path.name}: {key} is {value!r:.60}, expected a list of layer sizes")
    return tuple(value)


def _choice(doc: dict, key: str, choices: tuple[str, ...], default: str, path: Path) -> str:
    value = _field(doc, key, str, default, path)
    if value not in choices:
        raise UnsupportedError(
            f"{path.name}: {key} {value!r:.60} is not one of {', '.join(choices)}",
            hint="zoo rebuilds Sample Factory's own MLP encoders, GRU/LSTM cores and decoders",
        )
    return value


def read_document(path: Path) -> dict:
    """config.json as a dict, size-bounded; one-line errors."""
    note_read(path)  # discovery's memo depends on it (env id, seed)
    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise BrokenFile(
                f"{path}: {size:,} bytes, over the {MAX_CONFIG_BYTES >> 10} KiB a config.json may take"
            )
        doc = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise BrokenFile(
            f"{path.parent}: no {path.name} (Sample Factory's config of the experiment)",
            hint="zoo rebuilds the model from config.json, as Sample Factory's enjoy does",
        ) from None
    except (OSError, ValueError) as exc:
        raise BrokenFile(f"{path}: not readable JSON ({str(exc).splitlines()[0][:120]})") from None
    if not isinstance(doc, dict):
        raise BrokenFile(f"{path}: a JSON {type(doc).__name__}, not Sample Factory's config object")
    return doc


def read_config(path: Path) -> SfConfig:
    """The experiment's config.json, its fields checked (Sample Factory's defaults where one is absent)."""
    doc = read_document(path)
    keys = doc.get("normalize_input_keys")
    if keys is not None and not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)):
        raise BrokenFile(
            f"{path.name}: normalize_input_keys is {keys!r:.60}, expected null or a list of keys"
        )
    seed = doc.get("seed")
    env = doc.get("env")
    return SfConfig(
        source=path,
        algo=_field(doc, "algo", (str, type(None)), None, path),
        env=env if isinstance(env, str) and env else None,
        seed=seed if type(seed) is int else None,
        encoder_mlp_layers=_layers(doc, "encoder_mlp_layers", [512, 512], path),
        decoder_mlp_layers=_layers(doc, "decoder_mlp_layers", [], path),
        nonlinearity=_choice(doc, "nonlinearity", NONLINEARITIES, "elu", path),
        use_rnn=_field(doc, "use_rnn", bool, True, path),
        rnn_type=_choice(doc, "rnn_type", RNN_TYPES, "gru", path),
        rnn_size=_field(doc, "rnn_size", int, 512, path),
        rnn_num_layers=_field(doc, "rnn_num_layers", int, 1, path),
        share_weights=_field(doc, "actor_critic_share_weights", bool, True, path),
        adaptive_stddev=_field(doc, "adaptive_stddev", bool, True, path),
        continuous_tanh_scale=_field(doc, "continuous_tanh_scale", float, 0.0, path),
        normalize_input=_field(doc, "normalize_input", bool, True, path),
        normalize_input_keys=tuple(keys) if keys is not None else None,
        obs_subtract_mean=_field(doc, "obs_subtract_mean", float, 0.0, path),
        obs_scale=_field(doc, "obs_scale", float, 1.0, path),
        env_frameskip=_field(doc, "env_frameskip", int, 1, path),
        env_framestack=_field(doc, "env_framestack", int, 1, path),
        with_wandb=_field(doc, "with_wandb", bool, False, path),
        command_line=doc.get("command_line") if isinstance(doc.get("command_line"), str) else None,
    )


def env_of(path: Path) -> tuple[str | None, int | None]:
    """``(env, seed)`` of a config.json for discovery; nothing when it cannot be read (check says why)."""
    try:
        doc = read_document(path)
    except BrokenFile:
        return None, None
    env, seed = doc.get("env"), doc.get("seed")
    return (env if isinstance(env, str) and env else None), (seed if type(seed) is int else None)
