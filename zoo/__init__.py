"""zoo: the model-zoo layer of reinforcement learning.

The library API is :mod:`zoo.api`, re-exported here (imported on first use, so that ``import zoo``
and ``zoo --help`` stay fast): ``zoo.check``, ``zoo.evaluate``, ``zoo.evaluate_all`` (``zoo eval runs/ --all``), ``zoo.export``, ``zoo.push``,
``zoo.enjoy``, ``zoo.load_policy``, ``zoo.resolve``, ``zoo.plan``, ``zoo.diagnose`` (``zoo doctor``),
``zoo.watch``, ``zoo.leaderboard``, ``zoo.report``, and the typed options they take, ``zoo.EvalSettings`` (how an
evaluation runs) and ``zoo.LoadOptions`` (what may be loaded and run). See docs/python-api.md.
"""

from __future__ import annotations

from typing import Any

from zoo.version import __version__

_API = (
    "check",
    "diagnose",
    "enjoy",
    "evaluate",
    "evaluate_all",
    "export",
    "leaderboard",
    "load_policy",
    "plan",
    "push",
    "report",
    "resolve",
    "run_plan",
    "watch",
    "EvalSettings",
    "LoadOptions",
    "PushResult",
)
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        from zoo import api

        return getattr(api, name)
    raise AttributeError(f"module 'zoo' has no attribute {name!r}")
