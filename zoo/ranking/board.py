"""Seed records grouped by (env id, experiment) into ranked rows, and the leaderboard's output formats.

A group's seeds are its runs (one run, one training seed). Seeds weigh equally: the row's ``mean`` is the
mean of the per-seed means, and its interval is bootstrapped over those means, since seeds, not episodes,
are the independent repeats of a training. With a single seed there is nothing to resample across seeds,
so the interval is bootstrapped over that seed's episodes, and ``ci_over`` says so: it then measures
evaluation noise only, not how much another training would differ.

``Leaderboard.to_json()`` is a stable format (docs/leaderboard.md lists its fields): other tools render it.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from zoo.ranking import stats
from zoo.ranking.records import InvalidEval, SeedRecord, eval_path, read_record, run_key
from zoo.ranking.runs import discover

if TYPE_CHECKING:
    from zoo.artifacts.runs import RunFilter
    from zoo.registry import Registry

#: Bumped only when a field of :meth:`Leaderboard.to_json` changes meaning or goes away.
SCHEMA_VERSION = 1
#: The evaluation settings compared within a group; a row whose seeds differ in one is ``mixed_settings``.
SETTINGS = ("num_episodes", "deterministic", "seed")


@dataclass(frozen=True)
class Row:
    """One experiment on one env, aggregated over its seeds; docs/leaderboard.md says what each field means."""

    rank: int
    env_id: str
    exp_name: str
    mean: float
    ci_low: float | None
    ci_high: float | None
    ci_over: str | None  # "seeds", "episodes" (a single seed), or None (one seed with one episode)
    iqm: float
    seed_min: float
    seed_max: float
    seeds: int
    episodes: int
    run_seeds: list[int | None]
    seed_means: list[float]
    success_rate: float | None
    success_ci_low: float | None
    success_ci_high: float | None
    success_episodes: int
    mixed_settings: bool
    mixed: list[str]
    eval_episodes: int | None
    deterministic: bool | None
    eval_seed: int | None
    runs: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """The row as plain JSON values, in a fixed field order."""
        return {
            name: (list(value) if isinstance(value, list) else value) for name, value in vars(self).items()
        }


@dataclass
class Leaderboard:
    """Ranked rows (by env id, then rank) and the problems met on the way, as ``(path, message)`` pairs:
    runs without an eval.json, unreadable or invalid files, unknown experiments, failed evaluations."""

    rows: list[Row]
    problems: list[tuple[str, str]]
    runs_found: int = 0

    @property
    def exit_code(self) -> int:
        """0 when something could be ranked, 1 when nothing could."""
        return 0 if self.rows else 1

    def to_json(self) -> dict:
        """The stable JSON form (``zoo leaderboard --json``; fields in docs/leaderboard.md): only ever added to."""
        return {
            "schema_version": SCHEMA_VERSION,
            "confidence_level": stats.CONFIDENCE,
            "bootstrap": {
                "method": stats.BOOTSTRAP_METHOD,
                "n_resamples": stats.BOOTSTRAP_RESAMPLES,
                "rng_seed": stats.BOOTSTRAP_SEED,
            },
            "runs_found": self.runs_found,
            "rows": [row.to_json() for row in self.rows],
            "problems": [{"path": path, "message": message} for path, message in self.problems],
        }

    def to_csv(self) -> str:
        """One line per row, every :meth:`Row.to_json` field as a column; lists are ``;``-joined, None is empty."""
        buffer = io.StringIO()
        names = [*Row.__dataclass_fields__]
        writer = csv.DictWriter(buffer, fieldnames=names, lineterminator="\n")
        writer.writeheader()
        for row in self.rows:
            writer.writerow({k: _csv_cell(v) for k, v in row.to_json().items()})
        return buffer.getvalue()

    def to_markdown(self) -> str:
        """A GitHub table of the rows, the numbers as the terminal table shows them."""
        lines = [
            "| " + " | ".join(COLUMNS) + " |",
            "|" + "|".join(" --- " if c in TEXT_COLUMNS else " ---: " for c in COLUMNS) + "|",
        ]
        for row in self.rows:
            cells = [c.replace("|", "\\|") for c in cells_of(row)]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"


#: The columns of the terminal and Markdown tables (to_json has every field, these only the readable ones).
COLUMNS = (
    "rank",
    "env",
    "experiment",
    "mean",
    "95% CI",
    "IQM",
    "seed min..max",
    "seeds",
    "episodes",
    "success (95% CI)",
    "notes",
)
TEXT_COLUMNS = frozenset({"env", "experiment", "notes", "95% CI", "success (95% CI)", "seed min..max"})


def cells_of(row: Row) -> list[str]:
    """A row's cells under :data:`COLUMNS`, numbers with two decimals."""
    ci = f"[{row.ci_low:.2f}, {row.ci_high:.2f}]" if row.ci_low is not None else "-"
    if row.success_rate is None:
        success = "-"
    else:
        success = f"{row.success_rate:.0%} [{row.success_ci_low:.0%}, {row.success_ci_high:.0%}]"
    return [
        str(row.rank),
        row.env_id,
        row.exp_name,
        f"{row.mean:.2f}",
        ci,
        f"{row.iqm:.2f}",
        f"{row.seed_min:.2f}..{row.seed_max:.2f}",
        str(row.seeds),
        str(row.episodes),
        success,
        notes_of(row),
    ]


def notes_of(row: Row) -> str:
    """What the reader of a row must know: an interval over one seed's episodes, mixed settings."""
    notes = []
    if row.ci_over == "episodes":
        notes.append("CI over episodes (1 seed)")
    elif row.ci_over is None:
        notes.append("no CI (1 episode)")
    if row.mixed_settings:
        notes.append("mixed settings: " + ", ".join(row.mixed))
    return "; ".join(notes)


def _csv_cell(value: object) -> object:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ";".join("" if v is None else str(v) for v in value)
    return "" if value is None else value


def build_leaderboard(
    paths: Iterable[Path], registry: Registry, run_filter: RunFilter, failed: Mapping[str, str] | None = None
) -> Leaderboard:
    """The leaderboard of the runs under ``paths`` that ``run_filter`` keeps (``--env-id`` also keeps only
    eval.json files of that task). ``failed`` maps a run's absolute path to why its evaluation failed
    (``--eval``), said instead of "no eval.json". No run found raises a ZooError; every other problem is a line."""
    failed = failed or {}
    runs = discover(paths, registry, run_filter)
    records: list[SeedRecord] = []
    problems: list[tuple[str, str]] = []
    for run in runs:
        path = eval_path(run)
        if path is None:
            problems.append((str(run.path), _missing(run, registry, failed)))
            continue
        try:
            record = read_record(run, path)
        except InvalidEval as exc:
            problems.append((str(path), str(exc)))
            continue
        if run_filter.env_id is not None and record.env_id != run_filter.env_id:
            continue  # the run's name said the env; its eval.json is of another one
        records.append(record)
    records, duplicates = _newest_per_seed(records)
    problems += duplicates
    return Leaderboard(_rows(records), problems, runs_found=len(runs))


def _missing(run, registry: Registry, failed: Mapping[str, str]) -> str:
    """The problem line of a run without an eval.json: why, and a command that mends it. A run whose model
    cannot be evaluated says what ``zoo check`` would (telling its user to run ``zoo eval`` would only lead
    to the same error)."""
    if run_key(run) in failed:
        return f"zoo eval failed: {failed[run_key(run)]}"
    if run.exp_name is None:
        return f"no eval.json, and no experiment name ({run.name_problem or 'the path does not say'})"
    if run.exp_name not in registry.entries:
        return (
            f"unknown experiment {run.exp_name!r} and no eval.json: add it to a registry (--registry FILE; "
            "zoo registry list shows the known ones)"
        )
    from zoo.frameworks import get_adapter

    verdict = get_adapter(run.framework).inspect_run(run, registry)
    if verdict.status == "error":
        return f"no eval.json, and its model cannot be evaluated: {verdict.reason}" + (
            f" ({verdict.hint})" if verdict.hint else ""
        )
    return f"no eval.json: run zoo eval {run.path}, or zoo leaderboard --eval"


def _newest_per_seed(records: list[SeedRecord]) -> tuple[list[SeedRecord], list[tuple[str, str]]]:
    """One record per (env, experiment, training seed): the newest run of a seed (a retraining) counts, and
    each older one is a problem line. Records without a seed (lone model files) are each their own."""
    newest: dict[tuple, SeedRecord] = {}
    kept: list[SeedRecord] = []
    for record in records:
        if record.run_seed is None:
            kept.append(record)
            continue
        key = (record.env_id, record.exp_name, record.run_seed)
        other = newest.get(key)
        if other is None or (record.started_at or 0, record.run_path) > (
            other.started_at or 0,
            other.run_path,
        ):
            newest[key] = record
    problems = []
    for record in records:
        winner = newest.get((record.env_id, record.exp_name, record.run_seed))
        if record.run_seed is not None and winner is not record:
            problems.append(
                (
                    record.run_path,
                    f"run seed {record.run_seed} of {record.exp_name} on {record.env_id} "
                    f"is also in {os.path.basename(winner.run_path)}, a newer run: only the newest "
                    "run of a seed is ranked",
                )
            )
    return kept + list(newest.values()), problems


def _rows(records: list[SeedRecord]) -> list[Row]:
    groups: dict[tuple[str, str], list[SeedRecord]] = {}
    for record in records:
        groups.setdefault((record.env_id, record.exp_name), []).append(record)
    unranked = [_row(env_id, exp_name, seeds) for (env_id, exp_name), seeds in groups.items()]
    rows: list[Row] = []
    for env_id in sorted({row.env_id for row in unranked}):
        in_env = sorted((r for r in unranked if r.env_id == env_id), key=lambda r: (-r.mean, r.exp_name))
        for row, rank in zip(in_env, stats.competition_ranks([r.mean for r in in_env]), strict=True):
            rows.append(Row(**{**vars(row), "rank": rank}))
    return rows


def _row(env_id: str, exp_name: str, seeds: list[SeedRecord]) -> Row:
    """One group's statistics (rank 0: ranked once the env's rows are known)."""
    seeds = sorted(seeds, key=lambda s: (s.run_seed is None, s.run_seed or 0, s.run_path))
    means = [s.mean for s in seeds]
    episodes = [r for s in seeds for r in s.returns]
    if len(seeds) > 1:
        ci, over = stats.bootstrap_ci(means), "seeds"
    else:
        ci = stats.bootstrap_ci(episodes)
        over = "episodes" if ci is not None else None
    flags = [f for s in seeds for f in s.successes]
    success = sum(flags)
    wilson = stats.wilson_ci(success, len(flags)) if flags else (None, None)
    mixed = [name for name in SETTINGS if len({repr(s.settings[name]) for s in seeds}) > 1]
    first = seeds[0].settings
    return Row(
        rank=0,
        env_id=env_id,
        exp_name=exp_name,
        mean=float(np.mean(means)),
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
        ci_over=over,
        iqm=stats.iqm(episodes),
        seed_min=min(means),
        seed_max=max(means),
        seeds=len(seeds),
        episodes=len(episodes),
        run_seeds=[s.run_seed for s in seeds],
        seed_means=means,
        success_rate=success / len(flags) if flags else None,
        success_ci_low=wilson[0],
        success_ci_high=wilson[1],
        success_episodes=len(flags),
        mixed_settings=bool(mixed),
        mixed=mixed,
        eval_episodes=None if "num_episodes" in mixed else first["num_episodes"],
        deterministic=None if "deterministic" in mixed else first["deterministic"],
        eval_seed=None if "seed" in mixed else first["seed"],
        runs=[s.run_path for s in seeds],
    )
