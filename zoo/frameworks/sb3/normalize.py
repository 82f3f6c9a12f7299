"""VecNormalize statistics (``vecnormalize.pkl`` / ``vec_normalize.pkl``), decoded and applied.

The file is a pickle of SB3's ``VecNormalize`` (its ``venv`` removed). It is decoded with the
restricted unpickler and the SB3 allowlist: ``VecNormalize`` is rebuilt with ``__new__`` and
its ``__setstate__``, which only updates ``__dict__``; ``RunningMeanStd`` and the numpy arrays
only hold numbers. Any other global refuses the file, naming it. Observations are then
normalized exactly as ``VecNormalize.normalize_obs`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from zoo.artifacts import limits
from zoo.errors import BrokenFile, RefusedError, ZooError
from zoo.frameworks.sb3.archive import CHECKPOINT, UNKNOWN_HINT, checkpoint_stats_name

STATS_NAMES = ("vecnormalize.pkl", "vec_normalize.pkl")


def stats_candidates(model_file: Path, env_id: str | None) -> list[Path]:
    """Where a model's statistics may be, in the order they are looked for: its own snapshot first (a
    checkpoint's ``{prefix}_vecnormalize_{steps}_steps.pkl``; ``{stem}_vecnormalize.pkl`` beside any other
    model, such as the ``best_model_vecnormalize.pkl`` zoo watch keeps with ``best_model.zip``), then the run's."""
    folder = model_file.parent
    checkpoint = CHECKPOINT.match(model_file.name)
    own = checkpoint_stats_name(checkpoint) if checkpoint else f"{model_file.stem}_vecnormalize.pkl"
    subdirs = dict.fromkeys(d for d in (env_id, model_file.stem) if d)
    candidates = [folder / own, *(folder / d / "vecnormalize.pkl" for d in subdirs)]
    return candidates + [folder / n for n in STATS_NAMES]


def find_stats(model_file: Path, env_id: str | None) -> Path | None:
    """rl_zoo3: ``{env_id}/vecnormalize.pkl`` (a checkpoint's own beside it); hub repos: beside the model."""
    return next((p for p in stats_candidates(model_file, env_id) if p.is_file()), None)


@dataclass
class ObsNormalizer:
    """``clip((obs - mean) / sqrt(var + epsilon), -clip_obs, clip_obs)``, per key for Dict observations."""

    mean: Any  # ndarray, or {key: ndarray} for Dict observations
    var: Any
    epsilon: float
    clip_obs: float
    keys: list[str] | None = None  # the normalized keys of a Dict observation

    def _one(self, obs: np.ndarray, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
        return np.clip((obs - mean) / np.sqrt(var + self.epsilon), -self.clip_obs, self.clip_obs).astype(
            np.float32
        )

    def __call__(self, obs: Any) -> Any:
        if self.keys is None:
            return self._one(obs, self.mean, self.var)
        out = dict(obs)
        for key in self.keys:
            out[key] = self._one(obs[key], self.mean[key], self.var[key])
        return out

    def describe(self) -> dict[str, Any]:
        return {"clip_obs": self.clip_obs, "epsilon": self.epsilon, "keys": self.keys}


def read_stats_bytes(path: Path) -> bytes:
    """The statistics file, bounded: VecNormalize of image observations is a few MiB, never gigabytes."""
    return limits.read_pickle_file(
        path, "VecNormalize statistics", hint="this is not a file VecNormalize.save wrote"
    )


def _restricted(path: Path) -> Any:
    from zoo.artifacts.restricted_pickle import checked_loads
    from zoo.frameworks.sb3.allowlist import ALLOWED

    return checked_loads(read_stats_bytes(path), ALLOWED, path, unknown_hint=UNKNOWN_HINT)


def stats_findings(path: Path) -> list:
    """What ``VecNormalize.load`` (a full ``pickle.load``) would import from the file beyond zoo's allowlist:
    one error naming it (a file zoo cannot read at all is no finding here: ``zoo check`` says why)."""
    from zoo.artifacts.findings import Finding
    from zoo.artifacts.pickles import UNSAFE_HINT, classify, scan_pickles
    from zoo.artifacts.report import ERROR
    from zoo.frameworks.sb3.allowlist import SERIALIZED

    try:
        scan = scan_pickles(read_stats_bytes(path))
    except ZooError:
        return []
    verdict = classify(scan.globals, SERIALIZED)
    if verdict.dangerous:
        return [
            Finding(
                ERROR,
                path.name,
                f"is an unsafe pickle: VecNormalize.load would call {', '.join(verdict.dangerous)}",
                UNSAFE_HINT,
            )
        ]
    if verdict.unknown:
        return [
            Finding(
                ERROR,
                path.name,
                f"names {', '.join(verdict.unknown)}, which VecNormalize.load would import "
                "and zoo cannot check",
                UNKNOWN_HINT,
            )
        ]
    if not scan.complete:
        return [
            Finding(
                ERROR, path.name, f"is a pickle zoo cannot follow to its end ({scan.error})", UNKNOWN_HINT
            )
        ]
    return []


def load_stats(path: Path, *, trust_pickle: bool = False) -> ObsNormalizer | None:
    """The observation normalizer the file describes; None when it does not normalize observations."""
    import pickle

    from stable_baselines3.common.vec_env import VecNormalize

    try:
        stats = _restricted(path)
    except RefusedError:
        if not trust_pickle:
            raise
        with path.open("rb") as fh:
            stats = pickle.load(fh)  # noqa: S301 - the user passed --trust-pickle
    if not isinstance(stats, VecNormalize):
        raise BrokenFile(f"{path}: holds a {type(stats).__name__}, not VecNormalize statistics")
    try:
        return _normalizer(vars(stats))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ZooError(
            f"{path}: VecNormalize statistics are incomplete or malformed ({type(exc).__name__}: "
            f"{str(exc)[:100]})",
            hint="re-save them with VecNormalize.save",
        ) from None


def _normalizer(state: dict) -> ObsNormalizer | None:
    """The observation part of a VecNormalize state, each statistic checked to be numbers of one shape."""
    if not state.get("norm_obs", True):
        return None
    rms = state["obs_rms"]
    eps, clip = float(state.get("epsilon", 1e-8)), float(state.get("clip_obs", 10.0))
    if isinstance(rms, dict):
        keys = list(state.get("norm_obs_keys") or rms)
        stats = {k: _mean_var(rms[k]) for k in keys}
        return ObsNormalizer(
            {k: m for k, (m, _) in stats.items()}, {k: v for k, (_, v) in stats.items()}, eps, clip, keys
        )
    return ObsNormalizer(*_mean_var(rms), eps, clip)


def _mean_var(rms: Any) -> tuple[np.ndarray, np.ndarray]:
    mean, var = np.asarray(rms.mean), np.asarray(rms.var)
    if mean.dtype.kind != "f" or var.dtype.kind != "f" or mean.shape != var.shape:
        raise ValueError(
            f"mean {mean.dtype}{mean.shape} and var {var.dtype}{var.shape} are not matching floats"
        )
    return mean, var
