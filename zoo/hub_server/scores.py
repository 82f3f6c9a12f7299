"""The data of the hub's leaderboard page: per env id, every visible repo's score, and what zoo can vouch for.

A repo's score comes from two places. Its card's ``model-index`` (what ``zoo push`` writes and the Hub's
RL leaderboard reads: a ``mean_reward`` metric valued ``"123.45 +/- 6.70"`` under a dataset named by the env
id) is what the uploader *says*: **self-reported**. A score is **verified** when zoo measured it: the repo's
``eval.json`` was written by ``zoo eval`` with a model whose sha256 is the sha256 of a file in the same commit
(``FileEntry.sha256`` is the content's, so the check is exact and reads no model), or the server's own
re-evaluation (:mod:`zoo.hub_server.reevaluate`, ``zoo hub serve --reevaluate``) evaluated that commit. A verified
row shows its episodes, seeds and the 95% bootstrap interval of :mod:`zoo.ranking.stats`, the statistics of
``zoo leaderboard`` (one repo is one training seed, so the interval is over its episodes). When the card
disagrees with the measurement, the row shows the measurement and says so.

The eval.json is read with :func:`zoo.ranking.records.parse_record`, so the page and ``zoo leaderboard``
accept and refuse the same files. What one commit says never changes (commits and blobs are immutable),
so it is computed once per ``(repo_id, sha)`` and cached; only the re-evaluation outcomes are read afresh.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from zoo.hub_server.evaluations import EvaluationStore
from zoo.ranking import stats
from zoo.ranking.records import InvalidEval, SeedRecord, parse_record

if TYPE_CHECKING:
    from zoo.hub_server.protocol import TokenInfo
    from zoo.hub_server.server import HubServer
    from zoo.hub_server.storage import HubStorage
    from zoo.hub_server.store_records import Commit

METRIC = "mean_reward"
REPO_EVAL = "repo eval.json"
SERVER_EVAL = "server re-evaluation"
EVAL_FILE = "eval.json"
#: An eval.json bigger than this is not read (a real one holds a few KiB per hundred episodes).
MAX_EVAL_BYTES = 16 << 20
#: The card says the mean with two decimals; a measurement that rounds to it agrees.
CARD_DECIMALS = 2
_CACHE_SIZE = 4096
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_SCORE = re.compile(rf"\s*({_NUMBER})\s*(?:(?:\+/-|\+-|±)\s*({_NUMBER}))?\s*")
_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class ScoreRow:
    """One repo on one env's leaderboard.

    ``rank`` is the competition rank among the env's verified rows (1 is best, ties share it); a
    self-reported row is listed after them with rank 0: nothing zoo measured puts it in the order.
    ``value``/``std`` are the measured ones when ``verified``, else the card's. ``card_value`` is the
    card's mean in both cases, and ``disagrees`` says the two differ beyond the card's two decimals.
    ``notes`` are one-line reasons a reader needs: why a repo's eval.json does not verify it, why the
    server's re-evaluation failed, what the card claims instead.
    """

    repo_id: str
    metric: str
    value: float | None
    std: float | None
    verified: bool
    self_reported: bool
    episodes: int | None
    seeds: int | None
    ci_low: float | None
    ci_high: float | None
    eval_source: str | None
    rank: int
    sha: str = ""
    private: bool = False
    exp_name: str | None = None
    card_value: float | None = None
    card_std: float | None = None
    disagrees: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class CardScore:
    """One ``model-index`` result of a card: the env id and the metric as the card states it."""

    env_id: str
    metric: str
    value: float | None
    std: float | None
    text: str


@dataclass(frozen=True)
class Measured:
    """What a zoo evaluation of a commit measured, with :mod:`zoo.ranking.stats`' statistics."""

    env_id: str
    exp_name: str
    value: float
    std: float
    episodes: int
    seeds: int
    ci_low: float | None
    ci_high: float | None
    source: str


@dataclass(frozen=True)
class CommitScores:
    """What one commit says: its card's scores, its verified eval.json (if any), and why not (if not)."""

    card: tuple[CardScore, ...]
    measured: Measured | None
    problem: str | None


@dataclass(frozen=True)
class _Repo:
    repo_id: str
    sha: str
    card: dict[str, Any]
    private: bool


# ---------------------------------------------------------------------------------------------- pages
def env_ids(hub: HubServer, viewer: TokenInfo | None) -> list[str]:
    """The env ids that have a leaderboard for ``viewer``: those of a card score or a verified evaluation."""
    found: set[str] = set()
    outcomes = _outcomes(hub)
    for repo in _visible(hub, viewer):
        scores = commit_scores(hub, repo)
        found.update(score.env_id for score in scores.card)
        measured = _server_measured(outcomes.get((repo.repo_id, repo.sha))) or scores.measured
        if measured is not None:
            found.add(measured.env_id)
    return sorted(found)


def board(hub: HubServer, env_id: str, viewer: TokenInfo | None) -> list[ScoreRow]:
    """The leaderboard of ``env_id`` for ``viewer``: verified rows ranked by their value, then the
    self-reported ones (rank 0), highest first. Public repos, and the private ones ``viewer`` may read."""
    outcomes = _outcomes(hub)
    verified: list[ScoreRow] = []
    reported: list[ScoreRow] = []
    for repo in _visible(hub, viewer):
        row = _row(repo, env_id, commit_scores(hub, repo), outcomes.get((repo.repo_id, repo.sha)))
        if row is not None:
            (verified if row.verified else reported).append(row)
    verified.sort(key=lambda r: (-(r.value or 0.0), r.repo_id))
    ranks = stats.competition_ranks([r.value or 0.0 for r in verified]) if verified else []
    ranked = [_with(row, rank=rank) for row, rank in zip(verified, ranks, strict=True)]
    reported.sort(key=lambda r: (r.value is None, -(r.value or 0.0), r.repo_id))
    return ranked + reported


def _row(repo: _Repo, env_id: str, scores: CommitScores, outcome: Any) -> ScoreRow | None:
    card = next((s for s in scores.card if s.env_id == env_id), None)
    notes: list[str] = []
    server = _server_measured(outcome)
    if outcome is not None and server is None and outcome.reason:
        notes.append(f"server re-evaluation {outcome.status}: {outcome.reason}")
    measured = server or scores.measured
    if scores.problem and server is None:
        notes.append(scores.problem)
    own = scores.measured
    if server is not None and own is not None and own.env_id == server.env_id and own.value != server.value:
        notes.append(
            f"the repo's eval.json says {own.value:.2f} over {own.episodes} episodes; the server's "
            f"re-evaluation {server.value:.2f} over {server.episodes}"
        )
    if measured is not None and measured.env_id != env_id:
        if card is not None:
            notes.append(f"the verified evaluation is on {measured.env_id}, not {env_id}")
        measured = None
    if measured is None and card is None:
        return None
    base = dict(
        repo_id=repo.repo_id,
        metric=METRIC,
        rank=0,
        sha=repo.sha,
        private=repo.private,
        card_value=card.value if card else None,
        card_std=card.std if card else None,
    )
    if measured is None:
        assert card is not None
        if card.value is None:
            notes.append(f"the card's {card.metric} {card.text!r} is not a number")
        return ScoreRow(
            **base,
            value=card.value,
            std=card.std,
            verified=False,
            self_reported=True,
            episodes=None,
            seeds=None,
            ci_low=None,
            ci_high=None,
            eval_source=None,
            notes=tuple(notes),
        )
    disagrees = card is not None and not _agrees(card.value, measured.value)
    if disagrees:
        assert card is not None
        notes.insert(
            0, f"the card says {card.text}; zoo measured {measured.value:.2f} +/- {measured.std:.2f}"
        )
    elif card is None:
        notes.append(f"the card has no {METRIC} for {env_id}")
    return ScoreRow(
        **base,
        value=measured.value,
        std=measured.std,
        verified=True,
        self_reported=False,
        episodes=measured.episodes,
        seeds=measured.seeds,
        ci_low=measured.ci_low,
        ci_high=measured.ci_high,
        eval_source=measured.source,
        exp_name=measured.exp_name,
        disagrees=disagrees,
        notes=tuple(notes),
    )


def _agrees(card_value: float | None, measured: float) -> bool:
    """The card's value is the measurement written with two decimals (a little slack for float rounding)."""
    return card_value is not None and abs(card_value - measured) <= 0.5 * 10**-CARD_DECIMALS + 1e-9


def _with(row: ScoreRow, **changes: Any) -> ScoreRow:
    return ScoreRow(**{**vars(row), **changes})


# ---------------------------------------------------------------------------------------------- repos
def _visible(hub: HubServer, viewer: TokenInfo | None) -> list[_Repo]:
    """Every repo ``viewer`` may read, at its main head, from the index: the public ones for an anonymous
    viewer (None), and also the private ones the API shows ``viewer`` (those of their namespaces)."""
    rows = hub.index.all_public() if viewer is None else hub.index.search(viewer, sort="id", direction=1)
    return [_Repo(r.repo_id, r.sha, r.card, r.private) for r in rows if r.sha]


# ---------------------------------------------------------------------------------------------- commits
_cache: OrderedDict[tuple[str, str, str], CommitScores] = OrderedDict()
_cache_lock = threading.Lock()


def commit_scores(hub: HubServer, repo: _Repo) -> CommitScores:
    """What the commit ``repo.sha`` of ``repo.repo_id`` says; computed once (an LRU of a few thousand)."""
    key = (str(hub.storage.root), repo.repo_id, repo.sha)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    scores = _compute(hub.storage, repo)
    with _cache_lock:
        _cache[key] = scores
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return scores


def _compute(storage: HubStorage, repo: _Repo) -> CommitScores:
    from zoo.hub_server.store_records import StorageError

    try:
        commit = storage.load_commit(repo.repo_id, repo.sha)
    except (StorageError, OSError, ValueError):
        return CommitScores((), None, None)
    measured, problem = repo_evaluation(storage, repo.repo_id, commit)
    return CommitScores(tuple(card_scores(repo.card)), measured, problem)


def card_scores(card: dict[str, Any]) -> list[CardScore]:
    """The card's ``mean_reward`` results, one per env id (the first one a card gives for an env);
    anything malformed is left out, as the Hub's own leaderboard does."""
    found: dict[str, CardScore] = {}
    models = card.get("model-index")
    for model in models if isinstance(models, list) else ():
        results = model.get("results") if isinstance(model, dict) else None
        for result in results if isinstance(results, list) else ():
            if not isinstance(result, dict) or not isinstance(result.get("dataset"), dict):
                continue
            dataset = result["dataset"]
            env_id = dataset.get("type") or dataset.get("name")
            metrics = result.get("metrics")
            if not isinstance(env_id, str) or not env_id.strip() or not isinstance(metrics, list):
                continue
            for metric in metrics:
                if isinstance(metric, dict) and METRIC in (metric.get("type"), metric.get("name")):
                    value, std = parse_score(metric.get("value"))
                    found.setdefault(
                        env_id.strip(),
                        CardScore(env_id.strip(), METRIC, value, std, str(metric.get("value"))),
                    )
                    break
    return list(found.values())


def parse_score(value: object) -> tuple[float | None, float | None]:
    """A card's metric value: a number, or ``"MEAN +/- STD"`` as ``zoo push`` and CleanRL write it."""
    if isinstance(value, bool):
        return None, None
    if isinstance(value, int | float):
        return (float(value), None) if math.isfinite(value) else (None, None)
    match = _SCORE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return None, None
    mean, std = float(match.group(1)), float(match.group(2)) if match.group(2) else None
    if not math.isfinite(mean) or (std is not None and not math.isfinite(std)):
        return None, None
    return mean, std


def repo_evaluation(storage: HubStorage, repo_id: str, commit: Commit) -> tuple[Measured | None, str | None]:
    """The commit's eval.json as a verified measurement, or the one line saying why it is not one (None when
    there is no eval.json at all: a card-only repo needs no excuse)."""
    entry = commit.files.get(EVAL_FILE)
    if entry is None:
        return None, None
    if entry.size > MAX_EVAL_BYTES:
        return None, f"eval.json is over {MAX_EVAL_BYTES >> 20} MiB: not read"
    try:
        text = storage.read_blob(entry).decode("utf-8")
        record = parse_record(text, run_path=f"{repo_id}@{commit.id}", eval_json=f"{repo_id}/{EVAL_FILE}")
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"eval.json unreadable: {type(exc).__name__}"
    except InvalidEval as exc:
        return None, str(exc)
    digest = record.model_sha256
    if digest is None or not _HEX64.fullmatch(digest):
        return None, "eval.json records no model_sha256: not written by zoo eval, or by one too old to say"
    model = next((p for p, e in sorted(commit.files.items()) if e.sha256 == digest and p != EVAL_FILE), None)
    if model is None:
        return None, (
            f"eval.json measured a model with sha256 {digest[:12]}…, which is no file of this commit "
            "(the model changed since it was evaluated)"
        )
    return measure(record, REPO_EVAL), None


def measure(record: SeedRecord, source: str) -> Measured:
    """A record's statistics as ``zoo leaderboard`` computes them for a one-seed group."""
    import numpy as np

    ci = stats.bootstrap_ci(record.returns)
    return Measured(
        env_id=record.env_id,
        exp_name=record.exp_name,
        value=record.mean,
        std=float(np.std(np.asarray(record.returns, dtype=np.float64))),
        episodes=len(record.returns),
        seeds=1,
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
        source=source,
    )


# ---------------------------------------------------------------------------------------------- server
def _outcomes(hub: HubServer) -> dict[tuple[str, str], Any]:
    """The server's re-evaluation outcomes, by (repo_id, sha); {} when it never re-evaluated anything."""
    return EvaluationStore(hub.storage.root).outcomes()


_server_cache: dict[tuple[str, str, str], Measured | None] = {}


def _server_measured(outcome: Any) -> Measured | None:
    """A successful re-evaluation's measurement (parsed once per outcome: outcomes never change either)."""
    if outcome is None or outcome.status != "ok" or not outcome.eval_json:
        return None
    key = (outcome.repo_id, outcome.sha, outcome.evaluated_at)
    with _cache_lock:
        if key in _server_cache:
            return _server_cache[key]
    try:
        record = parse_record(
            outcome.eval_json,
            run_path=f"{outcome.repo_id}@{outcome.sha}",
            eval_json=f"{outcome.repo_id}/{EVAL_FILE} (server)",
        )
        measured: Measured | None = measure(record, SERVER_EVAL)
    except InvalidEval:
        measured = None
    with _cache_lock:
        if len(_server_cache) > _CACHE_SIZE:
            _server_cache.clear()
        _server_cache[key] = measured
    return measured
