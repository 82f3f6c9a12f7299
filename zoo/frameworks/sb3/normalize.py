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

from zoo.errors import RefusedError, ZooError
from zoo.frameworks.sb3.archive import CHECKPOINT

STATS_NAMES = ("vecnormalize.pkl", "vec_normalize.pkl")


def find_stats(model_file: Path, env_id: str | None) -> Path | None:
    """rl_zoo3: ``{env_id}/vecnormalize.pkl`` (a checkpoint's own beside it); hub repos: beside the model."""
    folder = model_file.parent
    checkpoint = CHECKPOINT.match(model_file.name)
    subdirs = dict.fromkeys(d for d in (env_id, model_file.stem) if d)
    candidates = [folder / f"rl_model_vecnormalize_{checkpoint[1]}_steps.pkl"] if checkpoint else []
    candidates += [folder / d / "vecnormalize.pkl" for d in subdirs] + [folder / n for n in STATS_NAMES]
    return next((p for p in candidates if p.is_file()), None)


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


def scan_stats(path: Path) -> list[str]:
    """Dangerous globals the statistics pickle names (opcode scan: nothing runs)."""
    from zoo.artifacts.pickles import PickleTruncated, is_dangerous, scan_globals

    try:
        found = scan_globals(path.read_bytes())
    except PickleTruncated:
        raise ZooError(f"{path}: pickle is cut short", hint="re-save or re-download it") from None
    return sorted({f"{m}.{n}" for m, n in found if is_dangerous(m, n)})


def _restricted(path: Path) -> Any:
    from zoo.artifacts.restricted_pickle import RefusedGlobal, restricted_loads
    from zoo.frameworks.sb3.allowlist import ALLOWED

    try:
        return restricted_loads(path.read_bytes(), ALLOWED)
    except RefusedGlobal as exc:
        raise RefusedError(f"{path}: refers to {exc.qualname}, which zoo does not unpickle",
                           hint="only if you trust the file, pass --trust-pickle") from None  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - a broken pickle is a finding, not a crash
        raise ZooError(f"{path}: does not decode as VecNormalize statistics: {exc}") from None


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
        raise ZooError(f"{path}: holds a {type(stats).__name__}, not VecNormalize statistics")
    state = vars(stats)
    if not state.get("norm_obs", True):
        return None
    rms = state["obs_rms"]
    eps, clip = float(state.get("epsilon", 1e-8)), float(state.get("clip_obs", 10.0))
    if isinstance(rms, dict):
        keys = state.get("norm_obs_keys") or list(rms)
        return ObsNormalizer(
            {k: rms[k].mean for k in keys}, {k: rms[k].var for k in keys}, eps, clip, list(keys)
        )
    return ObsNormalizer(rms.mean, rms.var, eps, clip)
