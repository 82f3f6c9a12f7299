"""When a run's eval.json already holds the evaluation a sweep would make: same model bytes, same settings.

The fingerprint is what decides the episodes: the model file's sha256 (hashed when planned), the env id,
the experiment, episode and env counts, the seed, the mode, the device and the mode's parameters and step
bound (``settings``). Paths and timing do not count (nor the wall-time budget: an evaluation that finished
is the same whatever its budget was), so a runs folder moved to another disk resumes; an eval.json
written before zoo recorded ``model_sha256`` is evaluated again, since nothing proves its bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zoo.targets import EvalPlan


def fingerprint(planned: EvalPlan) -> dict:
    """What an evaluation's result depends on, as its eval.json records it."""
    return {
        "model_sha256": planned.model_sha256,
        "task": planned.target.env_id,
        "exp_name": planned.target.entry.name,
        "num_episodes": planned.episodes,
        "num_envs": max(1, min(planned.num_envs, planned.episodes)),
        "seed": planned.seed,
        "deterministic": planned.deterministic,
        "device": planned.device,
        "settings": _deciding(planned.settings),
    }


def recorded_fingerprint(eval_json: dict) -> dict:
    """The same fields, read from an eval.json (missing ones are None, and then never match)."""
    recorded = {
        key: eval_json.get(key)
        for key in (
            "model_sha256",
            "task",
            "exp_name",
            "num_episodes",
            "num_envs",
            "seed",
            "deterministic",
            "device",
            "settings",
        )
    }
    if isinstance(recorded["settings"], dict):
        recorded["settings"] = _deciding(recorded["settings"])
    return recorded


def _deciding(settings: dict) -> dict:
    """The settings that decide the episodes: not an engine's parity evidence (a result of the evaluation) nor
    the wall-time budget (an evaluation that finished within one is the same)."""
    return {k: v for k, v in settings.items() if k not in ("engine_parity", "max_seconds")}


def already_evaluated(planned: EvalPlan) -> dict | None:
    """The existing eval.json of the planned evaluation when it holds exactly this evaluation, else None
    (none there, unreadable, or made from other bytes or settings)."""
    path = planned.out_path
    if planned.model_sha256 is None or path is None or not Path(path).is_file():
        return None
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict) or recorded_fingerprint(data) != fingerprint(planned):
        return None
    return data
