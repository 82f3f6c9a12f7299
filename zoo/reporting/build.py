"""Build a report folder: gather the seeds of each (env, experiment), draw them, render the page, and put the
folder in place atomically (built beside ``out``, renamed over it only once complete)."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.errors import UsageError
from zoo.strict_json import dumps

if TYPE_CHECKING:
    from zoo.artifacts.runs import Run
    from zoo.ranking.board import Leaderboard

#: The file that says a folder is a zoo report (an existing ``--out`` is replaced only if it holds one).
MARKER = "report.json"
PAGE = "index.html"


@dataclass
class Seed:
    """One run of a group: its label, its training curve and its eval returns (either may be empty)."""

    label: str
    run_path: str
    curve: list[tuple[int, float]] = field(default_factory=list)
    returns: tuple[float, ...] = ()


@dataclass
class EnvSection:
    env_id: str
    experiments: dict[str, list[Seed]]
    curves_png: str | None = None
    evals_png: str | None = None


@dataclass
class ReportResult:
    """What :func:`zoo.report` wrote: the folder, its page and images, the leaderboard shown, the problems."""

    out: Path
    index: Path
    images: list[str]
    leaderboard: Leaderboard
    problems: list[tuple[str, str]]

    @property
    def exit_code(self) -> int:
        """0: the page was written (problems are lines on it, not failures)."""
        return 0

    def to_json(self) -> dict:
        return {
            "out": str(self.out),
            "index": str(self.index),
            "images": list(self.images),
            "rows": len(self.leaderboard.rows),
            "runs_found": self.leaderboard.runs_found,
            "problems": [{"path": p, "message": m} for p, m in self.problems],
        }


def write_report(board: Leaderboard, runs: list[Run], out: Path) -> ReportResult:
    """The report of ``runs`` (discovered by the caller) and their ``board`` into the folder ``out``."""
    from zoo.atomic import check_writable, private_workdir

    out = Path(out)
    _check_out(out)
    check_writable(out, "--out", folder=True)
    problems = list(board.problems)
    sections = _sections(board, runs, problems)
    with private_workdir(out.parent.resolve(), f".{out.name}.") as work:
        new = work / "report"
        new.mkdir()
        images = _draw(sections, new)
        _render(new / PAGE, board, sections, problems)
        summary = {
            "zoo_report": 1,
            "page": PAGE,
            "images": images,
            "leaderboard": board.to_json(),
            "problems": [{"path": p, "message": m} for p, m in problems],
        }
        (new / MARKER).write_text(dumps(summary, what=MARKER, indent=2) + "\n", encoding="utf-8")
        _swap_in(new, out, work)
    return ReportResult(out, out / PAGE, images, board, problems)


def _check_out(out: Path) -> None:
    if out.is_file() or out.is_symlink():
        raise UsageError(f"--out {out} is a file or a link", hint="give a folder for the report")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise UsageError(
            f"--out {out} is a folder that is not a zoo report; refusing to replace it",
            hint="give a new or empty folder, or a report folder zoo wrote",
        )


def _swap_in(new: Path, out: Path, work: Path) -> None:
    """Rename ``new`` to ``out``; an existing ``out`` is moved aside first and removed after (put back if the
    rename fails)."""
    old = None
    if out.exists():
        old = work / "old"
        os.replace(out, old)
    try:
        os.replace(new, out)
    except OSError:
        if old is not None:
            os.replace(old, out)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _sections(board: Leaderboard, runs: list[Run], problems: list[tuple[str, str]]) -> list[EnvSection]:
    """Per env id, per experiment, the seeds: the leaderboard's runs (grouped as it grouped them, by the
    eval.json's task), then the runs it could not rank whose names say env and experiment (curves only)."""
    from zoo.frameworks import get_adapter
    from zoo.ranking.records import InvalidEval, eval_path, read_record

    by_path = {str(run.path): run for run in runs}
    groups: dict[str, dict[str, list[Seed]]] = {}
    seen: set[tuple] = set()
    placed: set[str] = set()
    for row in board.rows:
        seeds = groups.setdefault(row.env_id, {}).setdefault(row.exp_name, [])
        for run_path, run_seed in zip(row.runs, row.run_seeds, strict=True):
            run = by_path.get(run_path)
            seed = Seed(_label(run_seed, run_path), run_path)
            if run is not None:
                path = eval_path(run)
                try:
                    seed.returns = read_record(run, path).returns if path is not None else ()
                except InvalidEval:
                    seed.returns = ()
            seeds.append(seed)
            seen.add((row.env_id, row.exp_name, run_seed))
            placed.add(run_path)
    for run in runs:
        key = (run.env_id, run.exp_name, run.seed)
        if str(run.path) in placed or run.env_id is None or run.exp_name is None or key in seen:
            continue
        seen.add(key)
        groups.setdefault(run.env_id, {}).setdefault(run.exp_name, []).append(
            Seed(_label(run.seed, str(run.path)), str(run.path))
        )
        placed.add(str(run.path))
    for experiments in groups.values():
        for seeds in experiments.values():
            for seed in seeds:
                run = by_path.get(seed.run_path)
                if run is None:
                    continue
                if run.events_file is None:
                    problems.append((seed.run_path, "no TensorBoard events file: no learning curve"))
                    continue
                adapter = get_adapter(run.framework)
                said: list[str] = []
                _tag, seed.curve = adapter.train_returns(run, said)
                for line in said:  # "FILE NAME: what happened"
                    name, _, message = line.partition(": ")
                    problems.append((str(Path(run.events_file).parent / name), message))
                if not seed.curve and not said:
                    tags = ", ".join(adapter.train_return_tags) or "no tag"
                    problems.append(
                        (str(run.events_file), f"no training return logged ({tags}): no learning curve")
                    )
    return [EnvSection(env_id, dict(sorted(groups[env_id].items()))) for env_id in sorted(groups)]


def _label(run_seed: int | None, run_path: str) -> str:
    return str(run_seed) if run_seed is not None else os.path.basename(run_path)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "env"


def _draw(sections: list[EnvSection], folder: Path) -> list[str]:
    from zoo import plots

    images: list[str] = []
    for i, section in enumerate(sections, start=1):
        stem = f"{i:02d}-{_slug(section.env_id)}"
        curves = {name: [s.curve for s in seeds if s.curve] for name, seeds in section.experiments.items()}
        if any(curves.values()):
            section.curves_png = f"{stem}-learning-curves.png"
            plots.learning_curves(
                {k: v for k, v in curves.items() if v},
                folder / section.curves_png,
                title=f"{section.env_id}: training returns",
            )
            images.append(section.curves_png)
        evals = {
            name: [(s.label, s.returns) for s in seeds if s.returns]
            for name, seeds in section.experiments.items()
        }
        evals = {k: v for k, v in evals.items() if v}
        if evals:
            section.evals_png = f"{stem}-eval-returns.png"
            plots.eval_strip(
                evals,
                folder / section.evals_png,
                title=f"{section.env_id}: eval returns (a dot per episode, a bar per seed mean)",
            )
            images.append(section.evals_png)
    return images


def _render(
    path: Path, board: Leaderboard, sections: list[EnvSection], problems: list[tuple[str, str]]
) -> None:
    import jinja2

    from zoo.ranking import stats
    from zoo.ranking.board import COLUMNS, TEXT_COLUMNS, cells_of
    from zoo.version import __version__

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    rows = [{"row": row, "cells": cells_of(row)} for row in board.rows]
    html = env.get_template("index.html.j2").render(
        zoo_version=__version__,
        columns=COLUMNS,
        numeric=[c not in TEXT_COLUMNS for c in COLUMNS],
        rows=rows,
        sections=sections,
        problems=problems,
        runs_found=board.runs_found,
        confidence=stats.CONFIDENCE,
        bootstrap=stats.BOOTSTRAP_METHOD,
        resamples=stats.BOOTSTRAP_RESAMPLES,
    )
    path.write_text(html, encoding="utf-8")
