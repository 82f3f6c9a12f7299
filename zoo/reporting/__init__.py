"""``zoo report``: one HTML page (and its PNGs) of the runs under some folders: learning curves, eval
returns and the leaderboard.

:mod:`zoo.reporting.build` gathers each experiment's seeds (training returns from the events files, through
the adapters; eval returns from the eval.json files the leaderboard ranked), draws them with
:mod:`zoo.plots` and renders ``templates/index.html.j2``. The statistics of the table are the leaderboard's
(:mod:`zoo.ranking`), never recomputed here.

The package is not called ``zoo.report``: importing a submodule binds its name on the parent package,
which would shadow the function ``zoo.report`` once the first call had imported it.
"""

from __future__ import annotations

from zoo.reporting.build import MARKER, ReportResult, write_report

__all__ = ["MARKER", "ReportResult", "write_report"]
