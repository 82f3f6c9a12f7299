"""The eval numbers a model page shows: every metric the card claims (its ``model-index``, self-reported)
and what zoo can vouch for, from :mod:`zoo.hub_server.scores`: the repo's ``eval.json``, when ``zoo eval`` wrote
it with a model whose sha256 is a file of the same commit (verified), or the one line saying why not."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from zoo.hub_server import scores
from zoo.hub_server.storage import HubStorage
from zoo.hub_server.store_records import Commit


@dataclass(frozen=True)
class CardResult:
    """One metric of one result in the card's ``model-index``, as the card states it."""

    model: str
    env_id: str
    metric: str
    value: str
    mean: float | None
    std: float | None


@dataclass(frozen=True)
class Evaluation:
    """A commit's eval.json as the leaderboard judges it: ``measured`` if verified, else ``problem``."""

    measured: scores.Measured | None
    problem: str | None


def card_results(card: dict[str, Any]) -> list[CardResult]:
    """Every metric of the card's ``model-index`` (the leaderboard reads only ``mean_reward``); entries of
    the wrong shape are skipped, not fatal: a card is whatever its author wrote."""
    found = []
    for model in _dicts(card.get("model-index")):
        for result in _dicts(model.get("results")):
            dataset = _dict(result.get("dataset"))
            env_id = dataset.get("type") or dataset.get("name")
            for metric in _dicts(result.get("metrics")):
                value = metric.get("value")
                mean, std = scores.parse_score(value)
                found.append(
                    CardResult(
                        model=str(model.get("name") or ""),
                        env_id=env_id if isinstance(env_id, str) else "",
                        metric=str(metric.get("name") or metric.get("type") or ""),
                        value="" if value is None else str(value),
                        mean=mean,
                        std=std,
                    )
                )
    return found


#: Judged eval.json by (store, repo, commit): a commit and its blobs never change, and the interval costs
#: a bootstrap, so a page shown again does not recompute it.
_cache: dict[tuple[str, str, str], Evaluation | None] = {}
_cache_lock = threading.Lock()
_CACHE_SIZE = 1024


def evaluation(storage: HubStorage, repo_id: str, commit: Commit) -> Evaluation | None:
    """The commit's eval.json as the leaderboard judges it; None when the commit has none."""
    key = (str(storage.root), repo_id, commit.id)
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    result = None
    if scores.EVAL_FILE in commit.files:
        result = Evaluation(*scores.repo_evaluation(storage, repo_id, commit))
    with _cache_lock:
        if len(_cache) >= _CACHE_SIZE:
            _cache.clear()
        _cache[key] = result
    return result


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
