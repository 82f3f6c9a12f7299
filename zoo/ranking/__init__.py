"""``zoo leaderboard``: the runs under some folders, ranked per env from their eval.json files.

:mod:`zoo.ranking.records` reads one run's eval.json into a :class:`~zoo.ranking.records.SeedRecord` (or
the one line saying why it cannot), :mod:`zoo.ranking.stats` holds the statistics (all of them scipy's,
imported when first used so that ``zoo --help`` stays fast), and :mod:`zoo.ranking.board` groups the
records by env and experiment into ranked :class:`~zoo.ranking.board.Row` s of a
:class:`~zoo.ranking.board.Leaderboard`, with its JSON, CSV and Markdown forms.

The package is not called ``zoo.leaderboard``: importing a submodule binds its name on the parent
package, which would shadow the function ``zoo.leaderboard`` once the first call had imported it.
"""

from __future__ import annotations

from zoo.ranking.board import Leaderboard, Row, build_leaderboard
from zoo.ranking.records import SeedRecord, runs_without_eval

__all__ = ["Leaderboard", "Row", "SeedRecord", "build_leaderboard", "runs_without_eval"]
