"""One run's eval.json as a seed of a leaderboard group, or the one line saying why it cannot be one.

A leaderboard reads files other tools (and other zoo versions) wrote, so every field it uses is checked
here and a bad file becomes a problem line naming it, never an exception that would hide the other runs.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from zoo.artifacts.runs import Run

#: What a run without an eval.json is told (the message the docs and the tests quote).


@dataclass(frozen=True)
class SeedRecord:
    """One run's evaluation: one seed of its (env, experiment) group.

    ``returns`` holds every episode's return in eval.json order; ``successes`` only the episodes that
    published a success flag (most envs publish none). ``num_episodes``, ``deterministic`` and
    ``eval_seed`` are the evaluation's settings, compared within a group (``mixed_settings``).
    """

    run_path: str
    eval_json: str
    env_id: str
    exp_name: str
    run_seed: int | None
    started_at: int | None
    returns: tuple[float, ...]
    successes: tuple[bool, ...]
    num_episodes: int
    deterministic: bool | None
    eval_seed: int | None
    model_sha256: str | None = None  # what ``zoo eval`` hashed; a hub checks it against the repo's files

    @property
    def mean(self) -> float:
        """The seed's mean return: the unit the seeds are aggregated over."""
        return float(np.mean(self.returns))

    @property
    def settings(self) -> dict:
        """The settings that make two evaluations comparable."""
        return {
            "num_episodes": self.num_episodes,
            "deterministic": self.deterministic,
            "seed": self.eval_seed,
        }


class InvalidEval(ValueError):
    """An eval.json that cannot be ranked; the message is the problem line."""


def read_record(run: Run, path: Path) -> SeedRecord:
    """The run's evaluation from its eval.json at ``path``; :class:`InvalidEval` says why not."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidEval(f"unreadable eval.json: {type(exc).__name__}: {exc}") from None
    return parse_record(
        text,
        run_path=str(run.path),
        eval_json=str(path),
        exp_name=run.exp_name,
        run_seed=run.seed,
        started_at=run.started_at,
    )


def parse_record(
    text: str,
    *,
    run_path: str,
    eval_json: str,
    exp_name: str | None = None,
    run_seed: int | None = None,
    started_at: int | None = None,
) -> SeedRecord:
    """An eval.json's text as a record, with what its run's name says (``exp_name``, ``run_seed``,
    ``started_at``); :class:`InvalidEval` says why not. Shared by the leaderboard (files on disk) and the
    hub's leaderboard page (blobs), so both accept and refuse the same files."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidEval(f"invalid eval.json: not JSON ({exc}); rerun zoo eval") from None
    if not isinstance(data, dict):
        raise InvalidEval("invalid eval.json: not a JSON object; rerun zoo eval")
    task = data.get("task")
    if not isinstance(task, str) or not task:
        raise InvalidEval("invalid eval.json: no task (env id); rerun zoo eval")
    exp_name = data.get("exp_name") if isinstance(data.get("exp_name"), str) else exp_name
    if not exp_name:
        raise InvalidEval(
            "invalid eval.json: no exp_name, and the run's name does not say; rerun zoo eval --exp-name"
        )
    returns, successes = _episodes(data.get("episodes"))
    num_episodes = data.get("num_episodes")
    seed = data.get("seed")
    deterministic = data.get("deterministic")
    sha256 = data.get("model_sha256")
    return SeedRecord(
        run_path=run_path,
        eval_json=eval_json,
        env_id=task,
        exp_name=exp_name,
        run_seed=run_seed,
        started_at=started_at,
        returns=returns,
        successes=successes,
        num_episodes=num_episodes if _is_int(num_episodes) else len(returns),
        deterministic=deterministic if isinstance(deterministic, bool) else None,
        eval_seed=seed if _is_int(seed) else None,
        model_sha256=sha256 if isinstance(sha256, str) else None,
    )


def _episodes(episodes: object) -> tuple[tuple[float, ...], tuple[bool, ...]]:
    """Every episode's return, and the success flags of those that published one."""
    if not isinstance(episodes, list) or not episodes:
        raise InvalidEval("invalid eval.json: no episodes; rerun zoo eval")
    returns: list[float] = []
    successes: list[bool] = []
    for i, episode in enumerate(episodes):
        value = episode.get("return") if isinstance(episode, dict) else None
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise InvalidEval(f"invalid eval.json: episode {i} has no finite return; rerun zoo eval")
        returns.append(float(value))
        success = episode.get("success")
        if isinstance(success, bool):
            successes.append(success)
        elif success is not None:
            raise InvalidEval(
                f"invalid eval.json: episode {i}'s success is {success!r}, not true, false or null"
            )
    return tuple(returns), tuple(successes)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def eval_path(run: Run) -> Path | None:
    """The run's eval.json, if it has one (discovery found it, or it was written since)."""
    if run.eval_json is not None and Path(run.eval_json).is_file():
        return Path(run.eval_json)
    folder = run.path if Path(run.path).is_dir() else Path(run.path).parent
    candidate = folder / "eval.json"
    return candidate if candidate.is_file() else None


def run_key(run: Run) -> str:
    """The key a run's evaluation failure is remembered under (its absolute path)."""
    return os.path.abspath(run.path)
