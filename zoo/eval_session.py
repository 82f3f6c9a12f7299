"""Many evaluations in one process, one after another on one eval env, built once per env.

Building the eval env is the expensive part of a short evaluation (a MuJoCo model compiled, a
simulator started): a watch evaluates dozens of checkpoints of one run on the same env, a sweep
(``zoo eval runs/ --all``) hundreds of runs of a few envs. The session keeps the env between them and :func:`zoo.evaluator.evaluate` resets it with the seed, so every
evaluation gives the episodes ``zoo eval`` of that checkpoint gives, bit for bit. A gymnasium vector env
is kept when its seeded reset restores everything (:func:`zoo.envs.reset_restores`); zoo's tensor tasks
(Genesis) are kept and reseeded (:func:`zoo.tensor_env.reseeds`), so a scene compiles once per watch.
The others (an observation normalizer's statistics, Atari's episodic life, a user's ``--env-factory``)
are built per evaluation instead, exactness first. torch and the env's packages are imported once.

Each checkpoint is loaded through the path ``zoo eval`` takes (:mod:`zoo.targets`): resolved as a model
file of its run, verified without running it, loaded with the adapter's safe loader.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.envs import make_vector_env, reset_restores

if TYPE_CHECKING:
    from zoo.evaluator import EvalResult
    from zoo.registry import Registry
    from zoo.targets import EvalPlan, Target


class EvalSession:
    """Deterministic, seeded evaluations of model files with the same settings, on a kept env."""

    def __init__(
        self,
        registry: Registry,
        *,
        episodes: int | None = None,
        num_envs: int = 8,
        seed: int = 0,
        device: str = "cpu",
        exp_name: str | None = None,
        env_id: str | None = None,
        max_steps: int | None = None,
        max_seconds: float | None = None,
        lanes: int | None = None,
    ):
        """``lanes``: processes each rollout may be split across (:mod:`zoo.lanes`; None: chosen by the rollout,
        1: never split, for a caller that already runs one session per core)."""
        self.registry, self.episodes, self.num_envs, self.seed = registry, episodes, num_envs, seed
        self.device, self.exp_name, self.env_id = device, exp_name, env_id
        self.max_steps, self.max_seconds, self.lanes = max_steps, max_seconds, lanes
        self._envs = None
        self._built_for: tuple | None = None  # (spec, num_envs, device) of the kept env

    def evaluate(self, model_file: Path) -> tuple[Target, EvalResult]:
        """Resolve, load and roll out the model in ``model_file``, as ``zoo eval FILE --deterministic
        --out none`` would: nothing is written. Raises what ``zoo eval`` raises for that file."""
        from zoo.eval_settings import EvalSettings
        from zoo.targets import plan_eval, resolve_target

        target = resolve_target(model_file, self.registry, exp_name=self.exp_name, env_id=self.env_id)
        settings = EvalSettings(
            episodes=self.episodes,
            num_envs=self.num_envs,
            seed=self.seed,
            deterministic=True,
            device=self.device,
            max_steps=self.max_steps,
            max_seconds=self.max_seconds,
        )
        planned = plan_eval(target, settings, out=None)
        return target, self.run(planned)

    def run(self, planned: EvalPlan, on_episode: Callable[[int], None] | None = None) -> EvalResult:
        """Load and roll out a planned evaluation on the kept env (nothing is written; no video is recorded):
        the episodes ``zoo eval`` with the plan's settings gives. Raises what ``zoo eval`` raises."""
        import dataclasses

        from zoo.evaluator import evaluate
        from zoo.targets import env_spec, load_target_policy

        target = planned.target
        policy = load_target_policy(target, planned.options)
        spec = dataclasses.replace(env_spec(target, None, planned.options), max_steps=planned.max_steps)
        try:
            return evaluate(
                policy,
                spec,
                episodes=planned.episodes,
                num_envs=planned.num_envs,
                seed=planned.seed,
                deterministic=planned.deterministic,
                checkpoint=target.label,
                exp_name=target.entry.name,
                framework=target.entry.framework,
                device=planned.device,
                settings=planned.settings,
                source=planned.source,
                model_sha256=planned.model_sha256,
                on_episode=on_episode,
                envs=self._kept_env(spec, planned.num_envs, planned.device, planned.seed),
                max_seconds=planned.max_seconds,
                lanes=self.lanes,
            )
        except BaseException:
            self.close()  # an env a failed rollout left behind is not trusted again: the next one is new
            raise

    def _kept_env(self, spec, num_envs: int, device: str, seed: int):
        """The kept env for ``spec`` (built at its first use, rebuilt only if the spec changes), or None for
        a spec the evaluator must build fresh each time."""
        from zoo.tensor_env import TensorEnvSpec, build

        tensor_task = isinstance(spec, TensorEnvSpec) and spec.factory is None and spec.video_dir is None
        if not (tensor_task or reset_restores(spec)):
            return None
        if self._built_for != (spec, num_envs, device):
            self.close()
            self._envs = (
                build(spec, num_envs, device, seed) if tensor_task else make_vector_env(spec, num_envs)
            )
            self._built_for = (spec, num_envs, device)
        return self._envs

    def close(self) -> None:
        """Close the kept env (a session may be used again: the next evaluation builds a new one)."""
        if self._envs is not None:
            self._envs.close()
        self._envs, self._built_for = None, None
