"""Stable-Baselines3 adapter: recognise SB3 zips, inspect them safely, build policies.

Registry entries ``sb3_ppo``, ``sb3_a2c``, ``sb3_dqn``, ``sb3_sac``, ``sb3_td3`` and ``sb3_ddpg``, and
for sb3-contrib ``sb3_qrdqn``, ``sb3_tqc``, ``sb3_trpo``, ``sb3_ars``, ``sb3_crossq``, ``sb3_ppo_lstm``
and ``sb3_ppo_mask`` (the ``sb3_`` prefix keeps rl_zoo3's algorithm names apart from CleanRL's experiments) map
the algorithm found in a zip's ``data`` to its eval defaults and hub pattern. Loading never
runs SB3's ``load``: see :mod:`zoo.frameworks.sb3.archive` and :mod:`~zoo.frameworks.sb3.build`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.artifacts.report import WARNING, RunReport
from zoo.artifacts.runs import Run
from zoo.errors import UnsupportedError, ZooError
from zoo.frameworks.base import (
    Adapter,
    Checkpoint,
    HubNaming,
    LoadOptions,
    Misfit,
    PolicyView,
    SavedCheckpoint,
)
from zoo.frameworks.sb3 import discover as _discover
from zoo.frameworks.sb3.archive import ALGORITHMS, SB3Archive, is_sb3_zip, read_archive

if TYPE_CHECKING:
    from zoo.artifacts.findings import Finding
    from zoo.envs import EnvSpec
    from zoo.registry import Entry, Registry


@dataclass
class SB3Checkpoint(Checkpoint):
    """A verified SB3 zip: its ``data`` decoded by the allowlisted unpickler, weights still unread."""

    archive: SB3Archive | None = None


def _view(checkpoint: SB3Checkpoint, entry: Entry, rebuilt: Any) -> PolicyView:
    """The view of a policy rebuilt with SB3's classes: what the fit check compares and eval runs."""
    from zoo.frameworks.kinds import SpaceKinds

    kinds = SpaceKinds.of(rebuilt.observation_space, rebuilt.action_space)
    return PolicyView(checkpoint, entry, kinds, model=rebuilt)


def _installed_sb3() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("stable-baselines3")
    except PackageNotFoundError:
        return None


class SB3Adapter(Adapter):
    name = "sb3"
    packages = ("stable-baselines3", "sb3-contrib", "rl_zoo3")
    training_modules = {"stable_baselines3": "stable-baselines3", "rl_zoo3": "rl_zoo3"}
    training_command = (
        "python -m rl_zoo3.train --algo {algorithm} --env {env_id} -n {total_timesteps} --seed {seed} "
        "-f {output_dir} --save-freq {checkpoint_every} --eval-freq {eval_every} --eval-episodes {eval_episodes} "
        "--vec-env dummy --hyperparams n_envs:{num_envs}{hyperparams}"
    )
    training_device_flag = "--device"  # rl_zoo3.train's, "auto" by default
    #: rl_zoo3's save path: ``{log_folder}/{algo}/{env}_{last run id + 1}``.
    training_run_folder = "{output_dir}/{algorithm}/{env_id}_*"
    training_resume = (
        "rl_zoo3 goes on from a saved model with -i RUN/rl_model_STEPS_steps.zip (--trained-agent) added to the "
        "command: it trains -n more steps into a new run folder"
    )
    extra = "sb3"
    #: rl_zoo3 is what the training command runs (and what reads rl_zoo3's own Hub repos).
    extra_modules = {"sb3": ("stable_baselines3",), "rlzoo3": ("rl_zoo3",)}
    train_return_tags = ("rollout/ep_rew_mean",)
    layout_hint = "SB3: a model .zip (data + policy.pth), e.g. rl_zoo3's logs/{algo}/{env_id}_{n}/"
    hub = HubNaming(
        library_name="stable-baselines3",
        display_name="Stable-Baselines3",
        tags=("stable-baselines3", "deep-reinforcement-learning", "reinforcement-learning"),
        default_org="sb3",
        card_template="default",
        companions=("vec_normalize.pkl", "config.yml", "args.yml", "env_kwargs.yml"),
    )

    def entry_problem(self, raw: dict) -> tuple[str, str] | None:
        if raw.get("algorithm") not in ALGORITHMS:
            return "algorithm", f"{raw.get('algorithm', '<missing>')!r} is not one of {', '.join(ALGORITHMS)}"
        if raw.get("format") != "sb3-zip":
            return "format", "SB3 models are 'sb3-zip'"
        if raw.get("layout", {}).get("kind", "sb3-zip") != "sb3-zip":
            return "layout.kind", "SB3 models have one layout: 'sb3-zip'"
        if not str(raw.get("filename", "")).endswith(".zip"):
            return "filename", "SB3 models are .zip files"
        return None

    def discover(self, root: Path) -> Iterator[Run]:
        return _discover.discover(root)

    def inputs(self, run: Run) -> list[Path | None]:
        """The zip, every place its statistics may be, and every place of rl_zoo3's YAML files."""
        from zoo.frameworks.sb3.normalize import stats_candidates
        from zoo.frameworks.sb3.rlzoo_files import yaml_candidates

        model = run.model_file
        if model is None:
            return [run.events_file]
        return [
            model,
            *stats_candidates(model, run.env_id),
            *yaml_candidates(model, run.env_id),
            run.events_file,
        ]

    def companion_files(self, run: Run) -> list[Path]:
        """The statistics the model is evaluated with (one of the places :meth:`inputs` lists: the first that
        exists, as evaluation picks it) and rl_zoo3's YAML files."""
        from zoo.frameworks.sb3.normalize import find_stats

        stats = find_stats(run.model_file, run.env_id) if run.model_file else None
        return [*([stats] if stats else []), *self.config_files(run)]

    def config_files(self, run: Run) -> list[Path]:
        """rl_zoo3's ``config.yml``, ``args.yml`` and ``env_kwargs.yml`` (its ``enjoy`` and ``load_from_hub``
        read them with ``yaml.UnsafeLoader``), wherever rl_zoo3 and its hub repos keep them."""
        from zoo.frameworks.sb3.rlzoo_files import yaml_candidates

        return (
            [p for p in yaml_candidates(run.model_file, run.env_id) if p.is_file()] if run.model_file else []
        )

    def file_findings(self, path: Path) -> list[Finding]:
        """An SB3 zip: what SB3's own load would run or fail on. VecNormalize statistics: any global off the
        allowlist (``VecNormalize.load`` unpickles the file in full)."""
        from zoo.artifacts.findings import Finding
        from zoo.frameworks.sb3.normalize import STATS_NAMES, stats_findings
        from zoo.frameworks.sb3.own_load import findings

        if path.suffix == ".zip" and is_sb3_zip(path):
            try:
                archive = read_archive(path)
            except ZooError as exc:
                why = exc.message.removeprefix(f"{path}: ")
                return [
                    Finding(WARNING, path.name, f"SB3's load fails on it: {why}", "re-save or re-download it")
                ]
            return findings(archive)
        if (
            path.name in STATS_NAMES
            or path.name.endswith("vecnormalize.pkl")
            or "_vecnormalize_" in path.name
        ):
            return stats_findings(path)
        return []

    def strip_findings(self, path: Path, findings: list[Finding]) -> bytes:
        from zoo.frameworks.sb3.own_load import strip

        return strip(path, findings)

    def read(self, run: Run, entry: Entry | None) -> SB3Checkpoint:
        assert run.model_file is not None
        archive = read_archive(run.model_file)
        return SB3Checkpoint(run.model_file, "sb3-zip", run.model_file.stat().st_size, archive=archive)

    def reason(self, exc: ZooError, run: Run) -> str:
        """Errors name files from the model's folder: the row already says which run."""
        if run.model_file is None:
            return exc.message
        return exc.message.replace(f"{run.model_file.parent}{os.sep}", "", 1)

    def inspect(self, report: RunReport, registry: Registry) -> PolicyView | None:
        from zoo.frameworks.sb3.inspect import inspect_model

        run = report.run
        if run.model_file is None:
            report.flag(
                WARNING, run.name_problem or "no SB3 model here", "give an SB3 .zip (data + policy.pth)"
            )
            return None
        from zoo.artifacts.findings import flag
        from zoo.frameworks.sb3.own_load import findings

        checkpoint = self.read(run, None)
        archive = checkpoint.archive
        assert archive is not None
        flag(report, findings(archive, zoo_reads=True))
        report.details.update(
            size=run.model_file.stat().st_size,
            format="sb3-zip",
            algorithm=archive.algorithm,
            policy_class=archive.policy_class_name,
            sb3_saved=archive.version,
            sb3_installed=_installed_sb3(),
            num_timesteps=archive.num_timesteps,
            saved_with=archive.saved_with,
        )
        entry = registry.find(run.exp_name or "")
        if entry is None:
            what = run.exp_name or f"policy class {archive.policy_class_name}"
            raise ZooError(
                f"no registry entry for {what}", f"zoo knows SB3's {', '.join(ALGORITHMS)}; pass --exp-name"
            )
        rebuilt = inspect_model(self, report, archive, entry, run.env_id)
        return None if rebuilt is None else _view(checkpoint, entry, rebuilt)

    def env_id_unknown(self, run: Run, view: PolicyView) -> tuple[str, str]:
        return "env id unknown (no rl_zoo3 folder, hub file name or args.yml)", "pass --env-id"

    def misfit(self, view: PolicyView, env_id: str, spaces: tuple | None) -> Misfit | None:
        """The env's spaces against those the zip was saved with, as SB3's ``load`` compares them."""
        from zoo.frameworks.sb3.fit import fit_problem

        assert spaces is not None
        return Misfit.of(env_id, fit_problem(view.model, spaces))

    def env_id(self, run: Run) -> str | None:
        """From the names, with the module that registers the env when ``args.yml`` gives one (MyoSuite)."""
        from zoo.frameworks.sb3.discover import qualified_env_id

        return qualified_env_id(run)

    def loaded(self, checkpoint: Checkpoint, entry: Entry, env_id: str, options: LoadOptions) -> PolicyView:
        """The policy rebuilt with SB3's classes from the zip's decoded ``data``, its weights loaded safely."""
        from zoo.frameworks.sb3.build import load
        from zoo.frameworks.sb3.fit import SB3_HINT
        from zoo.frameworks.sb3.inspect import algorithm_mismatch

        assert isinstance(checkpoint, SB3Checkpoint) and checkpoint.archive is not None
        archive = checkpoint.archive
        mismatch = algorithm_mismatch(archive, entry)
        if mismatch:
            raise type(mismatch)(f"{checkpoint.model_file}: {mismatch.message}", mismatch.hint)
        if self.missing_extra(entry, env_id) == "sb3":
            raise UnsupportedError("SB3 models need Stable-Baselines3", hint=SB3_HINT)
        return _view(
            checkpoint, entry, load(archive, device=options.device, trust_pickle=options.trust_pickle)
        )

    def build_policy(self, view: PolicyView, env_id: str, spaces: tuple | None, options: LoadOptions):
        """The rebuilt policy with the VecNormalize statistics its evaluation applies (rl_zoo3's config says
        where they are)."""
        from zoo.frameworks.sb3.normalize import load_stats
        from zoo.frameworks.sb3.policy import SB3Policy
        from zoo.frameworks.sb3.recurrent import SB3RecurrentPolicy
        from zoo.frameworks.sb3.rlzoo_config import run_config_for, statistics_file

        assert isinstance(view.checkpoint, SB3Checkpoint) and spaces is not None
        model_file, archive = view.checkpoint.model_file, view.checkpoint.archive
        assert archive is not None
        stats = statistics_file(model_file, env_id, run_config_for(model_file, env_id))
        normalizer = load_stats(stats, trust_pickle=options.trust_pickle) if stats else None
        kind = SB3RecurrentPolicy if archive.algorithm == "RecurrentPPO" else SB3Policy
        return kind(view.model, normalizer, archive.algorithm, options.seed, spaces[0])

    def checkpoints(self, run_dir: Path) -> list[SavedCheckpoint]:
        """``CheckpointCallback``'s zips with their VecNormalize snapshots, then zips saved over in place."""
        return _discover.saved_checkpoints(run_dir)

    def env_spec(
        self,
        entry: Entry,
        env_id: str,
        video_dir: str | None = None,
        *,
        model_file: Path | None = None,
        trusted_wrappers: frozenset[str] = frozenset(),
    ) -> EnvSpec:
        """rl_zoo3's test env when the run has a config (or is an Atari model), else the entry's preset."""
        from zoo.frameworks.sb3.rlzoo_config import eval_env_spec, run_config_for

        config = run_config_for(model_file, env_id)
        if config is None:
            return super().env_spec(entry, env_id, video_dir)
        return eval_env_spec(config, env_id, video_dir, trusted_wrappers)

    def eval_mode(self, entry: Entry, env_id: str) -> tuple[bool, str]:
        """rl_zoo3 evaluates Atari models by sampling (``enjoy``, ``ExperimentManager.deterministic_eval``):
        a greedy Atari policy often stands still, and the ``sb3`` organization's scores are sampled ones."""
        from zoo.envs import extras_for_env

        if "atari" in extras_for_env(env_id):
            return False, "rl_zoo3's Atari protocol"
        return super().eval_mode(entry, env_id)

    def hub_files(self, model_file: Path, env_id: str, workdir: Path) -> dict[str, Path]:
        """The statistics under huggingface_sb3's name, and what rl_zoo3's ``load_from_hub`` reads."""
        from zoo.frameworks.sb3.normalize import find_stats
        from zoo.frameworks.sb3.rlzoo_files import hub_files as rlzoo_hub_files

        stats = find_stats(model_file, env_id)
        files = {"vec_normalize.pkl": stats} if stats is not None else {}
        files.update(rlzoo_hub_files(model_file, env_id, workdir))
        return files


ADAPTER = SB3Adapter()
