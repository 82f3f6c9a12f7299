"""What stops a rollout before it gives a score, and the one line that says why.

An evaluation is a number other people read and rank, so a rollout that cannot give an honest one fails
(:class:`~zoo.errors.RolloutError`, exit 1, nothing written) rather than record a wrong one. Both rollout
paths (gymnasium vector envs in :mod:`zoo.evaluator`, batched tensor envs in :mod:`zoo.tensor_rollout`)
keep the same rules:

- **Non-finite values.** A model saved after its training diverged holds NaN weights; its Gaussian
  policy acts NaN and its Q-network's argmax over NaN is a valid-looking action (0). :func:`require_finite`
  checks, at every step, the actions of continuous policies (in the rollout) and the Q-values or logits a
  discrete action is taken from (in each framework's policy, where they are computed). A return that is
  not finite (the env's rewards) fails the evaluation too (:func:`check_returns`).
- **The step bound.** An episode runs at most ``max_steps`` steps (``--max-steps``; default: the env's
  own time limit, else :data:`DEFAULT_MAX_STEPS`). An episode the bound cuts counts toward its env's quota
  and is recorded with ``"truncated": true``.
- **The wall-time budget.** The rollout runs at most ``max_seconds`` (``--max-seconds``, default
  :data:`DEFAULT_MAX_SECONDS`), checked between steps. When it runs out before every episode has finished
  the evaluation fails, saying how many did: a partial evaluation would favour short episodes (what the
  per-env quotas exist against) and would differ from one machine to the next.
- **The env raising.** An exception from the env's ``reset`` or ``step`` is the env's: one line naming
  the env (its id and entry point, or the user's ``--env-factory``), the exception and the line it came
  from (:func:`env_error`).

When no bound is hit, none of this changes a result: the same seed gives the same episodes, bit for bit.
"""

from __future__ import annotations

import math
import time
from typing import Any

# the bounds' defaults are defined in zoo.defaults (the CLI's flags show them), and named here too
from zoo.defaults import DEFAULT_MAX_SECONDS as DEFAULT_MAX_SECONDS
from zoo.defaults import DEFAULT_MAX_STEPS as DEFAULT_MAX_STEPS
from zoo.defaults import MAX_SECONDS_LIMIT as MAX_SECONDS_LIMIT
from zoo.errors import RolloutError, UsageError, ZooError

#: The info key of the step on which the step bound cut an episode (:class:`zoo.step_bound.StepBound`).
CUT_INFO = "zoo_max_steps"
#: Seconds past the budget after which a call that has not returned is interrupted (:class:`Deadline`): the
#: budget itself is looked at between steps, so only a call that hangs ever reaches this.
STUCK_GRACE = 2.0


def check_bounds(max_steps: int | None, max_seconds: float | None) -> None:
    """Refuse bounds that bound nothing, for callers of the Python API (the CLI's option types say the same)."""
    steps_ok = isinstance(max_steps, int) and not isinstance(max_steps, bool) and max_steps >= 1
    if max_steps is not None and not steps_ok:
        raise UsageError(f"--max-steps {max_steps!r}: a number of steps, at least 1")
    seconds_ok = isinstance(max_seconds, int | float) and 0 < max_seconds <= MAX_SECONDS_LIMIT
    if max_seconds is not None and not seconds_ok:
        raise UsageError(f"--max-seconds {max_seconds!r}: seconds above 0, at most {MAX_SECONDS_LIMIT:.0f}")


_WEIGHTS_HINT = (
    "its weights are NaN or infinite (a training run that diverged saves them) or the env's "
    "observations are: evaluate an earlier checkpoint, or check the env"
)


def require_finite(values: Any, what: str) -> None:
    """Raise :class:`RolloutError` if the batch ``values`` (a numpy array or torch tensor, one row per env) holds a
    NaN or an infinity. The common case costs one reduction: a sum is finite when no value is NaN or infinite
    (finite values that overflow it are told apart on the slow path, which only a failing batch takes). A
    tensor on an accelerator is read once (the host reads the actions anyway)."""
    if math.isfinite(float(values.sum())):
        return
    bad = _bad_rows(values)
    if bad:
        more = f" and {len(bad) - 1} more" if len(bad) > 1 else ""
        raise RolloutError(
            f"the policy's {what} are not finite (NaN or infinity) for env {bad[0]}{more}: "
            "no action taken from them means anything",
            hint=_WEIGHTS_HINT,
        )


def _bad_rows(values: Any) -> list[int]:
    """The envs (rows) whose values are not all finite."""
    import numpy as np

    array = values.detach().cpu().numpy() if hasattr(values, "detach") else np.asarray(values)
    array = np.asarray(array, dtype=np.float64)
    rows = array.reshape(len(array), -1) if array.ndim else array.reshape(1, 1)
    return np.flatnonzero(~np.isfinite(rows).all(axis=1)).tolist()


def nonfinite_actions(step: int) -> RolloutError:
    """The tensor path's :func:`require_finite`: the actions are checked on the device and read every few
    steps, so the error says by which step."""
    return RolloutError(
        f"the policy's actions are not finite (NaN or infinity) by step {step}: no action "
        "taken from them means anything",
        hint=_WEIGHTS_HINT,
    )


def check_returns(episodes: list) -> None:
    """Raise :class:`RolloutError` if an episode's return is NaN or infinite: the env's rewards were."""
    bad = [e for e in episodes if not math.isfinite(e.return_)]
    if bad:
        first = bad[0]
        raise RolloutError(
            f"{len(bad)} of {len(episodes)} episodes returned a non-finite total (env "
            f"{first.env_index}: {first.return_}): the env's rewards are not finite",
            hint="a mean of NaN or infinity is no score; check the env's reward",
        )


class _Stuck(BaseException):
    """Raised by the alarm inside a call that outlived the budget (a BaseException: a user's ``except
    Exception`` around its own code does not swallow it)."""


class Deadline:
    """The wall-time budget of one rollout, started when the rollout starts; a context manager.

    The budget is looked at between steps. A single call that never returns (an env's ``step`` stuck in a
    loop, a policy waiting on a lock) is not between steps, so inside ``with`` an alarm (SIGALRM, in the
    main thread where the platform has it) interrupts whatever Python code runs :data:`STUCK_GRACE` after
    the budget, and the rollout fails in one line. An alarm the caller armed already (a harness's own
    guard) that fires first is left as it is; one that fires later is re-armed on exit.
    """

    def __init__(self, max_seconds: float | None, at: float | None = None):
        """``at``: when the budget runs out (``time.perf_counter()``), for a budget started elsewhere (a rollout
        lane's process goes on with its parent's); by default ``max_seconds`` from now."""
        self.max_seconds = DEFAULT_MAX_SECONDS if max_seconds is None else float(max_seconds)
        self.at = time.perf_counter() + self.max_seconds if at is None else at
        self._restore: tuple | None = None

    def passed(self) -> bool:
        return time.perf_counter() > self.at

    def __enter__(self) -> Deadline:
        import signal
        import threading

        if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
            return self
        delay = self.at - time.perf_counter() + STUCK_GRACE
        outer, interval = signal.getitimer(signal.ITIMER_REAL)
        handler = signal.getsignal(signal.SIGALRM)
        # the caller's alarm fires first, or is not Python's: it stays the bound
        if (outer and outer <= delay) or handler is None:
            return self
        self._restore = (handler, outer, interval, time.perf_counter())
        signal.signal(signal.SIGALRM, _raise_stuck)
        signal.setitimer(signal.ITIMER_REAL, delay)
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if self._restore is not None:
            import signal

            handler, outer, interval, armed = self._restore
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, handler)
            if outer:
                left = max(outer - (time.perf_counter() - armed), 1e-3)
                signal.setitimer(signal.ITIMER_REAL, left, interval)
            self._restore = None
        if kind is _Stuck:
            budget = f"--max-seconds {self.max_seconds:g}"
            raise RolloutError(
                f"a step did not return within the {budget} budget (the env's step or the "
                "policy's forward pass hangs)",
                hint="find where it waits (py-spy dump --pid PID shows the stack), or raise --max-seconds",
            ) from None

    def error(self, finished: int, episodes: int, steps: int) -> RolloutError:
        """The one line for a budget that ran out with ``finished`` of ``episodes`` done after ``steps`` steps."""
        budget = f"--max-seconds {self.max_seconds:g}"
        if finished == 0:
            return RolloutError(
                f"no episode finished within the {budget} budget ({steps} steps per env)",
                hint="raise --max-seconds, or bound each episode with --max-steps",
            )
        return RolloutError(
            f"the {budget} budget ran out with {finished} of {episodes} episodes finished",
            hint="raise --max-seconds, or ask for fewer --episodes (a partial evaluation is not "
            "recorded: it would favour short episodes)",
        )


def _raise_stuck(_signum, _frame) -> None:
    raise _Stuck


def env_error(exc: Exception, who: str, called: str) -> ZooError:
    """An exception the env raised in ``called`` as one line naming ``who`` (the env) and the line of code it came
    from; zoo's own errors (a refused wrapper, a missing extra) are passed on as they are."""
    if isinstance(exc, ZooError):
        return exc
    from zoo.errors import user_error

    said = user_error(exc, called, who)
    return RolloutError(said.message, said.hint)


def gym_env_label(env_id: str) -> str:
    """How errors name a gymnasium env: its id and, when registered with one, its entry point (the code that
    raised is there)."""
    try:
        import gymnasium as gym

        entry = gym.spec(env_id.rsplit(":", 1)[-1]).entry_point  # module:EnvId: the module registered EnvId
    except Exception:  # noqa: BLE001 - the label is for a message; an id gymnasium cannot look up has none
        entry = None
    return f"the env {env_id}" + (f" ({entry})" if isinstance(entry, str) else "")
