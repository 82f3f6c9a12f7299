"""``ZooEvalCallback``: what ``zoo watch`` does, inside a Stable-Baselines3 training.

``model.learn(total_timesteps, callback=ZooEvalCallback("logs/run", eval_freq=5_000))`` evaluates the
model every ``eval_freq`` calls of the callback (SB3's convention, as its ``EvalCallback``: one call per
``env.step`` of the training's vector env, so ``eval_freq * n_envs`` environment steps) and records the
result in the run dir exactly as ``zoo watch`` would: a line in ``evals.jsonl``, and on a new best
``best_model.zip``, ``best_model_vecnormalize.pkl`` and ``best_model_meta.json``
(:class:`zoo.watcher.records.RunRecords`, the one place for those files and the best-model rule).

What is evaluated is what is kept: the model is saved with SB3's own writers (``model.save``, and
``VecNormalize.save`` for the training's observation statistics at that moment) into a private folder of
the run dir, and those files are evaluated by zoo's evaluator through ``zoo eval``'s loader
(deterministic, seeded, the registry's episode quota, raw env returns: the normalized reward SB3 trains
on never leaks into the score). A new best is a copy of those very files, so ``zoo eval best_model.zip``
gives its recorded score again. The torch random state is put back after each evaluation, so training
goes on as it would have without the callback.

Unlike ``zoo watch`` (its own process, at a lower priority), the evaluation pauses training while it runs.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.errors import UnsupportedError, UsageError

try:
    from stable_baselines3.common.callbacks import BaseCallback
except ImportError:  # zoo itself imports without SB3; this module is SB3's
    raise UnsupportedError(
        "zoo.integrations.sb3 needs Stable-Baselines3", hint="pip install 'rl-zoo-hub[sb3]'"
    ) from None

if TYPE_CHECKING:
    from zoo.registry import Registry


class ZooEvalCallback(BaseCallback):
    """Evaluate the training model every ``eval_freq`` calls; keep ``evals.jsonl`` and the best model in
    ``run_dir`` as ``zoo watch`` does (a run dir with records already is resumed: the best so far stays
    until beaten). ``env_id``: the env to evaluate on [the training env's ``spec.id``]; ``episodes``: the
    registry's quota unless given. ``last_line`` is the evals.jsonl line of the latest evaluation."""

    def __init__(
        self,
        run_dir: str | os.PathLike,
        eval_freq: int,
        *,
        episodes: int | None = None,
        num_envs: int = 8,
        seed: int = 0,
        env_id: str | None = None,
        device: str = "cpu",
        registry: Registry | str | os.PathLike | None = None,
        verbose: int = 0,
    ):
        super().__init__(verbose)
        if eval_freq < 1:
            raise UsageError(f"eval_freq {eval_freq}: must be at least 1")
        self.run_dir, self.eval_freq, self.registry = Path(run_dir), eval_freq, registry
        self.episodes, self.num_envs, self.seed = episodes, num_envs, seed
        self.env_id, self.device = env_id, device
        self.last_line: dict | None = None
        self._session = None
        self._records = None

    def _init_callback(self) -> None:
        """Before training starts: everything that could be wrong with the settings fails here, not later."""
        from zoo.eval_session import EvalSession
        from zoo.frameworks import SavedCheckpoint, get_adapter
        from zoo.registry import Registry, load_registry
        from zoo.watcher.records import RunRecords

        self.run_dir.mkdir(parents=True, exist_ok=True)
        registry = self.registry if isinstance(self.registry, Registry) else load_registry(self.registry)
        self._records = RunRecords(self.run_dir)
        # the names a snapshot's best copy takes must not be someone else's (rl_zoo3's EvalCallback writes them)
        snapshot = SavedCheckpoint(None, self.run_dir / "model.zip", {"vecnormalize": self.run_dir / "s.pkl"})
        self._records.check_owned(get_adapter("sb3").best_model_files(self.run_dir, snapshot))
        self._session = EvalSession(
            registry,
            episodes=self.episodes,
            num_envs=self.num_envs,
            seed=self.seed,
            device=self.device,
            env_id=self.env_id or self._training_env_id(),
        )

    def _training_env_id(self) -> str:
        spec = self.training_env.get_attr("spec", [0])[0]
        if spec is None or not getattr(spec, "id", None):
            raise UsageError(
                "ZooEvalCallback: the training env has no gymnasium spec to name its env id",
                hint="pass env_id='...' (a gymnasium id zoo can make)",
            )
        return spec.id

    def _on_step(self) -> bool:
        if self.n_calls % self.eval_freq == 0:
            self.evaluate_now()
        return True

    def evaluate_now(self) -> dict:
        """Snapshot the model (and its VecNormalize) now, evaluate the snapshot, record it; the line. An
        evaluation that fails is recorded as a failed line and warned about: the training goes on."""
        import torch

        from zoo.artifacts.digest import sha256_file
        from zoo.atomic import private_workdir
        from zoo.frameworks import SavedCheckpoint, get_adapter

        assert self._session is not None and self._records is not None, "learn() initialises the callback"
        with private_workdir(self.run_dir, ".zoo-callback-") as work, torch.random.fork_rng(devices=[]):
            model_file = work / "model.zip"
            self.model.save(model_file)
            companions = {}
            normalizer = self.model.get_vec_normalize_env()
            if normalizer is not None:  # under the name zoo's loader looks for beside model.zip
                companions["vecnormalize"] = work / "model_vecnormalize.pkl"
                normalizer.save(str(companions["vecnormalize"]))
            checkpoint = SavedCheckpoint(self.num_timesteps, model_file, companions)
            digests = {path: sha256_file(path) for path in (model_file, *companions.values())}
            try:
                _target, result = self._session.evaluate(model_file)
            except Exception as exc:  # noqa: BLE001 - a failed evaluation is recorded; the training goes on
                line = self._records.add_failure(
                    exc, step=self.num_timesteps, source=None, sha256=digests[model_file], attempts=1
                )
                warnings.warn(f"ZooEvalCallback at step {self.num_timesteps}: {line['error']}", stacklevel=2)
            else:
                line = self._records.add(
                    result,
                    step=self.num_timesteps,
                    source=None,
                    sha256=digests[model_file],
                    files=get_adapter("sb3").best_model_files(self.run_dir, checkpoint),
                    digests=digests,
                )
        self.last_line = line
        if self.verbose and line["status"] == "ok":
            m = line["metrics"]
            print(
                f"zoo eval at step {line['step']}: return {m['return_mean']:.2f} +/- {m['return_std']:.2f}"
                + (" (new best)" if line["new_best"] else "")
            )
        return line

    def _on_training_end(self) -> None:
        if self._session is not None:
            self._session.close()
