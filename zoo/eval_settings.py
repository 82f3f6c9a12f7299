"""How one evaluation runs, as one typed object: the CLI builds it once from its flags (``zoo eval``, ``enjoy``,
``push``, ``leaderboard --eval``, ``eval --all``) and :mod:`zoo.api` carries it as it is down to
:func:`zoo.targets.plan_eval`, so a new evaluation setting is a field here and a flag in
:mod:`zoo.cli.options`, nothing in between. What may be loaded and run to get the policy (trust, the user's
code, the engine) is the other object, :class:`zoo.frameworks.LoadOptions`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EvalSettings:
    """The settings of an evaluation; what is left None comes from the run's registry entry.

    ``seed`` seeds the envs and the policy's own randomness, and ``device`` is where the policy runs: an
    evaluation's :class:`~zoo.frameworks.LoadOptions` get both from here (a ``LoadOptions`` that sets them
    otherwise is refused)."""

    episodes: int | None = None  # None: the registry entry's eval.episodes
    seed: int = 0
    num_envs: int = 8  # vectorized envs (at most ``episodes``)
    device: str = "auto"  # auto, cpu, cuda or cuda:N; exported files run on the CPU
    deterministic: bool | None = None  # greedy/mean actions, sampling, or None: the registry's published mode
    capture_video: bool = False  # record env 0's episodes (a failure only warns)
    #: Steps an episode may run before it is cut and recorded as truncated (None: the env's own time limit, else
    #: 100,000); the rollout's wall-time budget in seconds (None: an hour), past which the evaluation fails
    #: (:mod:`zoo.rollout_guard`, docs/eval.md "Bounds").
    max_steps: int | None = None
    max_seconds: float | None = None
