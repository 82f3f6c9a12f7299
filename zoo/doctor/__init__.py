"""``zoo doctor``: check that packages, files, config and spaces fit, before anything is loaded or launched.

Doctor has no side effects: it installs, downloads, deserializes, trains, launches and writes
nothing, looks up no credential and runs no user code (``--handoff DIR`` writes its two files, and
that is all). Its answer is a :class:`~zoo.doctor.diagnosis.Diagnosis` with a fixed exit code:

====  ===================================================================================
0     every requested check passed and the config is within the bounded-run guardrail
1     a requirement is missing or invalid (a package, a file, its content, the spaces)
2     usage error (raised as :class:`~zoo.errors.UsageError` before any check)
3     the config parsed but exceeds or evades the guardrail
====  ===================================================================================

None of them authorizes training: a handoff is a plan for a human to read and run.

The modules, in the order a diagnosis meets them: :mod:`~zoo.doctor.installed` (what this machine has),
:mod:`~zoo.doctor.config` (the experiment config and the :class:`Guardrail`), :mod:`~zoo.doctor.checks`
and :mod:`~zoo.doctor.policy` (the ordered checks), :mod:`~zoo.doctor.diagnosis` (the verdict),
:mod:`~zoo.doctor.handoff` (the plan) and :mod:`~zoo.doctor.runbook` (how to follow, stop, recover and clean up
what it runs, and what doctor could not establish). The names below are imported on first use: ``zoo``'s CLI must not load the checks to
start (its flags' defaults are :mod:`zoo.defaults`).
"""

from __future__ import annotations

import importlib

_NAMES = {"Guardrail": "config", "Check": "checks", "Diagnosis": "diagnosis", "diagnose": "diagnosis"}
__all__ = sorted(_NAMES)


def __getattr__(name: str):
    if name in _NAMES:
        return getattr(importlib.import_module(f"zoo.doctor.{_NAMES[name]}"), name)
    raise AttributeError(f"module 'zoo.doctor' has no attribute {name!r}")
