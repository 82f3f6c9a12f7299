"""``zoo leaderboard``: the runs under some folders, ranked per env from their eval.json files.

:mod:`zoo.ranking.records` reads one run's eval.json into a :class:`~zoo.ranking.records.SeedRecord` (or
the one line saying why it cannot), :mod:`zoo.ranking.stats` holds the statistics (all of them scipy's,
imported when first used so that ``zoo --help`` stays fast), and :mod:`zoo.ranking.board` groups the
records by env and experiment into ranked :class:`~zoo.ranking.board.Row` s of a
:class:`~zoo.ranking.board.Leaderboard`, with its JSON, CSV and Markdown forms; :mod:`zoo.ranking.runs`
finds the runs (through the checker, so through every adapter).

The package itself imports nothing: the hub server reads eval.json files with :mod:`zoo.ranking.records`
and :mod:`zoo.ranking.stats`, and importing them must not bring in discovery and the adapters.

The package is not called ``zoo.leaderboard``: importing a submodule binds its name on the parent
package, which would shadow the function ``zoo.leaderboard`` once the first call had imported it.
"""
