"""Default bounds that both the ``zoo`` command's flags and the library name: constants only.

The command's option declarations show these defaults in ``--help``; they live here, not in the modules that
enforce them (:mod:`zoo.rollout_guard`, :mod:`zoo.doctor.config`), so that ``zoo --help`` imports none of
that code (each command module's imports are paid by every ``zoo`` start).
"""

from __future__ import annotations

#: Steps per episode for an env without a time limit of its own (``--max-steps`` default), counted as eval.json's
#: ``length`` counts them (the raw env's steps). 100,000 is 200x CartPole's limit and 100x MuJoCo's; Atari's
#: 108,000-frame limit is the env's own (ALE's), so it is never cut shorter by this one.
DEFAULT_MAX_STEPS = 100_000
#: Seconds of rollout an evaluation may take (``--max-seconds`` default): an hour, far more than evaluations of
#: envs that end take, so that only a rollout that does not end reaches it. Long evaluations raise it.
DEFAULT_MAX_SECONDS = 3600.0
#: The largest ``--max-seconds`` accepted (a year): a finite number, which eval.json can record.
MAX_SECONDS_LIMIT = 365 * 24 * 3600.0

#: :class:`zoo.doctor.config.Guardrail`'s bounds (``zoo doctor``'s ``--max-*`` flags): env steps over all envs,
#: parallel envs, wall minutes, GPUs, and the runs a multirun sweep may be.
GUARDRAIL_MAX_TIMESTEPS = 1_000_000
GUARDRAIL_MAX_ENVS = 64
GUARDRAIL_MAX_WALL_MINUTES = 120.0
GUARDRAIL_MAX_GPUS = 1
GUARDRAIL_MAX_RUNS = 1
