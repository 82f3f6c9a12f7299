"""Following a training run: evaluate its checkpoints as they are saved and keep the best one.

``zoo watch`` (:func:`zoo.api.watch`, built on :mod:`zoo.watcher.loop`) polls a run dir from its own
process; :class:`zoo.integrations.sb3.ZooEvalCallback` does the same inside an SB3 training. Both
evaluate with :mod:`zoo.eval_session` (one eval env kept for every checkpoint) and write the run's
``evals.jsonl`` and best model through :mod:`zoo.watcher.records`, which is also what ``zoo check`` reads.
No framework is named here: what a run's checkpoints are, and what the best one's copy is called, are
the adapters' answers (:meth:`~zoo.frameworks.Adapter.checkpoints`,
:meth:`~zoo.frameworks.Adapter.best_model_files`).

This package's ``__init__`` imports nothing, so that the modules that read its records (``zoo check``,
``zoo eval``'s target resolution) do not load the loop.
"""
