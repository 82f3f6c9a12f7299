"""``zoo eval runs/ --all``: every run under a folder evaluated, each writing its own ``eval.json``.

:mod:`zoo.sweep.plan` finds the runs and plans each as ``zoo eval RUN`` would (a run that cannot be planned
is a failed row, not the end of the sweep) and skips a run whose eval.json was made from the same model
bytes with the same settings (:mod:`zoo.sweep.resume`). The plans then run in this process, one env kept per
env (:mod:`zoo.sweep.local`), or as Ray actors on a local Ray or a cluster (:mod:`zoo.sweep.ray_executor`).
Either way each outcome is a :class:`~zoo.sweep.outcome.Outcome`, and the eval.json files are the same.
"""
