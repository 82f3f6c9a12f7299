"""zoo's Python API: what the ``zoo`` command does, as functions (the CLI is a thin shell over these).

Every function takes what the matching command takes, under the same names (``run_seed`` is the
training seed that picks a run, ``seed`` the evaluation seed); an evaluation's settings travel as one
:class:`~zoo.eval_settings.EvalSettings` and what may be loaded as one :class:`~zoo.frameworks.LoadOptions`
(both exported as ``zoo.EvalSettings``, ``zoo.LoadOptions``). Each raises a :class:`zoo.errors.ZooError`
subclass for every expected failure. They are importable from the package itself::

    import zoo

    reports = zoo.check(["runs/"])
    result = zoo.evaluate("runs/CartPole-v1__dqn__1__1700000000", zoo.EvalSettings(episodes=20, seed=0))
    print(result.metrics["return_mean"])
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.eval_settings import EvalSettings
from zoo.frameworks import LoadOptions

if TYPE_CHECKING:
    from zoo.artifacts.report import RememberedReport, RunReport
    from zoo.doctor.config import Guardrail
    from zoo.doctor.diagnosis import Diagnosis
    from zoo.evaluator import EvalResult
    from zoo.exporter import ExportResult
    from zoo.hub.fetch import Source
    from zoo.hub.push import Staging
    from zoo.policy import Policy
    from zoo.ranking.board import Leaderboard
    from zoo.registry import Entry, Registry
    from zoo.reporting import ReportResult
    from zoo.sweep.outcome import Outcome, SweepResult
    from zoo.sweep.plan import SweepItem
    from zoo.targets import EvalPlan, Target
    from zoo.watcher.loop import WatchResult

PathLike = str | os.PathLike[str]


def _registry(registry: Registry | PathLike | None) -> Registry:
    """A loaded registry, the bundled one merged with a user file (a path), or the one given."""
    from zoo.registry import Registry, load_registry

    return registry if isinstance(registry, Registry) else load_registry(registry)


def check(
    paths: PathLike | Iterable[PathLike],
    *,
    exp_name: str | None = None,
    env_id: str | None = None,
    run_seed: int | None = None,
    use_cache: bool = True,
    registry: Registry | PathLike | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[RunReport | RememberedReport]:
    """``zoo check``: one report per run found under ``paths`` (``.status`` is ok, warning or error;
    ``.reason``, ``.hint``, ``.details``). Nothing is executed; "ok" means :func:`load_policy` succeeds.
    ``exp_name``/``env_id`` say what a path that holds one run (a run dir, a model file) is, as for
    :func:`resolve`; among several runs they pick, as ``run_seed`` always does."""
    from zoo.artifacts.runs import RunFilter
    from zoo.checker import check_paths

    paths = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    return check_paths(
        [Path(p) for p in paths],
        _registry(registry),
        RunFilter(exp_name, env_id, run_seed),
        use_cache=use_cache,
        on_progress=on_progress,
    )


def resolve(
    target: PathLike,
    *,
    exp_name: str | None = None,
    env_id: str | None = None,
    run_seed: int | None = None,
    registry: Registry | PathLike | None = None,
) -> Target:
    """The run, registry entry, env id and model file that ``target`` (a run dir, model file, or a file
    ``zoo export`` wrote) names; the keywords narrow a folder of runs and override what names say."""
    from zoo.targets import resolve_target

    return resolve_target(
        Path(target), _registry(registry), exp_name=exp_name, env_id=env_id, run_seed=run_seed
    )


def load_policy(
    target: PathLike | Target | None = None,
    *,
    exp_name: str | None = None,
    env_id: str | None = None,
    run_seed: int | None = None,
    device: str = "cpu",
    seed: int = 0,
    trust_pickle: bool = False,
    model_config: PathLike | None = None,
    trust_wrappers: Iterable[str] = (),
    env_factory: str | None = None,
    env_module: str | None = None,
    policy_class: str | None = None,
    registry: Registry | PathLike | None = None,
) -> Policy:
    """The target's policy, loaded safely: ``policy.act(obs_batch, deterministic=True)`` maps a batch
    of raw observations to env actions. ``seed`` seeds the policy's own randomness; ``trust_wrappers``
    names env wrapper classes beyond zoo's allowlist that the run's config may use (their code runs);
    ``env_factory`` (``module:function``) names the user's tensor env the policy is for (not called here);
    ``env_module`` imports the package that registers the env id (MyoSuite: ``"myosuite"``);
    ``policy_class`` (``module:Class``) is the user's own policy, constructed here for ``env_id`` (user code:
    ``target`` may then be None, or a file its ``load(path)`` reads; docs/frameworks/custom.md)."""
    from zoo.evaluator import resolve_device
    from zoo.frameworks import LoadOptions
    from zoo.targets import load_target_policy
    from zoo.tensor_env import parse_factory

    resolved = _target(target, exp_name, env_id, run_seed, registry, env_module, policy_class)
    options = LoadOptions(
        device=resolve_device(device),
        seed=seed,
        trust_pickle=trust_pickle,
        model_config=Path(model_config) if model_config else None,
        trusted_wrappers=frozenset(trust_wrappers),
        env_factory=parse_factory(env_factory) if env_factory else None,
        policy_class=policy_class,
    )
    return load_target_policy(resolved, options)


def _target(
    target: Target | PathLike | None,
    exp_name: str | None,
    env_id: str | None,
    run_seed: int | None,
    registry: Registry | PathLike | None,
    env_module: str | None = None,
    policy_class: str | None = None,
) -> Target:
    """The resolved target; ``env_module`` (``--env-module``) qualifies its env id as ``module:EnvId``, after the
    run and its model file were chosen by the bare id. No target: the user's ``policy_class`` alone."""
    from zoo.envs import qualify_env_id
    from zoo.errors import UsageError
    from zoo.targets import Target, class_target

    if target is None:
        if policy_class is None:
            raise UsageError(
                "nothing to evaluate: no target",
                hint="give a run dir or model file, or policy_class='module:Class' with env_id",
            )
        target = class_target(_registry(registry), policy_class, exp_name=exp_name, env_id=env_id)
    elif not isinstance(target, Target):
        target = resolve(target, exp_name=exp_name, env_id=env_id, run_seed=run_seed, registry=registry)
    if env_module:
        target = dataclasses.replace(target, env_id=qualify_env_id(target.env_id, env_module))
    return target


def plan(
    target: PathLike | Target | None = None,
    settings: EvalSettings | None = None,
    load: LoadOptions | None = None,
    *,
    out: PathLike | None | str = "default",
    exp_name: str | None = None,
    env_id: str | None = None,
    run_seed: int | None = None,
    env_module: str | None = None,
    registry: Registry | PathLike | None = None,
    source: dict[str, Any] | None = None,
    video_dir: PathLike | None = None,
) -> EvalPlan:
    """Every setting :func:`evaluate` would use, resolved (registry defaults filled in), nothing run.

    ``settings``: the :class:`~zoo.eval_settings.EvalSettings` (episodes, seed, num_envs, device, deterministic,
    capture_video, max_steps, max_seconds; default: all the registry's). ``load``: the
    :class:`~zoo.frameworks.LoadOptions` saying what may be loaded and run: ``trust_pickle``, ``model_config``,
    ``trusted_wrappers``; ``env_factory``, ``module:function`` building the user's batched tensor env, which
    replaces the eval env (user code: it runs when the rollout starts, see docs/tensor-envs.md);
    ``policy_class``, ``module:Class``, the user's own policy (user code: it runs when the policy is loaded), with
    which ``target`` may be None (eval.json then goes to ``./eval.json``), see docs/frameworks/custom.md;
    ``engine``, ``"torch"`` (exact, the default) or ``"onnxruntime"``, the policy exported in memory and proven
    to act the same on the run's own observations before it is used (deterministic only; docs/eval.md).

    ``out``: where eval.json goes; ``"default"`` is the run dir's ``eval.json`` (beside an exported
    file: ``FILE.eval.json``), None writes nothing. ``env_module``: the package that registers the env id,
    imported by every ``gym.make`` of it (the id becomes ``module:EnvId``). ``source``: where the model came
    from, for eval.json. ``video_dir``: where ``capture_video`` records (default: the framework's layout beside
    the run)."""
    from zoo.targets import DEFAULT_OUT, plan_eval

    load = load or LoadOptions()
    resolved = _target(target, exp_name, env_id, run_seed, registry, env_module, load.policy_class)
    out_path = DEFAULT_OUT if out == "default" else (Path(out) if out is not None else None)
    return plan_eval(
        resolved,
        settings or EvalSettings(),
        load,
        out=out_path,
        source=source,
        video_dir=Path(video_dir) if video_dir else None,
    )


def evaluate(
    target: PathLike | Target | EvalPlan | None = None,
    settings: EvalSettings | None = None,
    load: LoadOptions | None = None,
    *,
    out: PathLike | None | str = "default",
    exp_name: str | None = None,
    env_id: str | None = None,
    run_seed: int | None = None,
    env_module: str | None = None,
    registry: Registry | PathLike | None = None,
    on_episode: Callable[[int], None] | None = None,
) -> EvalResult:
    """``zoo eval``: seeded, vectorized rollouts of the target's policy; writes eval.json (``out``, as for
    :func:`plan`, which says what ``settings`` and ``load`` hold) and returns the
    :class:`~zoo.evaluator.EvalResult`. A planned :class:`~zoo.targets.EvalPlan` runs as it was planned.

    The same seed gives the same result, bit for bit. ``result.videos`` lists the replays written with
    ``capture_video=True``; ``result.warnings`` says what went wrong on the side (a video not recorded)."""
    from zoo.targets import EvalPlan

    if isinstance(target, EvalPlan):
        planned = target
    else:
        planned = plan(
            target,
            settings,
            load,
            out=out,
            exp_name=exp_name,
            env_id=env_id,
            run_seed=run_seed,
            env_module=env_module,
            registry=registry,
        )
    return run_plan(planned, on_episode=on_episode)


def run_plan(
    planned: EvalPlan, policy: Policy | None = None, on_episode: Callable[[int], None] | None = None
) -> EvalResult:
    """Load the planned target's policy (unless given), roll it out, write eval.json atomically."""
    from zoo.atomic import write_json_atomic
    from zoo.envs import VideoLog
    from zoo.evaluator import evaluate as rollouts
    from zoo.targets import env_spec, load_target_policy

    target = planned.target
    policy = policy if policy is not None else load_target_policy(target, planned.options)
    log = VideoLog()
    spec = dataclasses.replace(
        env_spec(target, planned.video_dir, planned.options), video_log=log, max_steps=planned.max_steps
    )
    with warnings.catch_warnings():  # the recorder's failures arrive in the log; do not print them twice
        warnings.filterwarnings("ignore", message="video capture")
        result = rollouts(
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
            max_seconds=planned.max_seconds,
        )
    if planned.video_dir is not None:
        result.videos = [str(p) for p in log.written]
    result.warnings = list(log.failures)
    if planned.out_path is not None:
        write_json_atomic(planned.out_path, result.to_json())
    return result


def evaluate_all(
    paths: PathLike | Iterable[PathLike],
    settings: EvalSettings | None = None,
    load: LoadOptions | None = None,
    *,
    exp_name: str | None = None,
    env_id: str | None = None,
    run_seed: int | None = None,
    env_module: str | None = None,
    force: bool = False,
    executor: str = "local",
    address: str | None = None,
    num_cpus: int | None = None,
    num_gpus: float = 0,
    registry: Registry | PathLike | None = None,
    on_planned: Callable[[list[SweepItem]], None] | None = None,
    on_run: Callable[[Outcome], None] | None = None,
    on_episode: Callable[[SweepItem, int], None] | None = None,
) -> SweepResult:
    """``zoo eval runs/ --all``: every run under ``paths`` (narrowed by ``exp_name``/``env_id``/``run_seed``)
        evaluated as :func:`evaluate` would evaluate it alone, each writing its own eval.json; ``result.outcomes``
        says per run: evaluated, skipped or failed (with its one-line reason). A run that fails does not stop the
        sweep, and a run whose eval.json was made from the same model bytes (sha256) with the same settings is
        skipped unless ``force``. ``settings`` and ``load`` are :func:`plan`'s, the same for every run (each run
    writes its own eval.json and records no video: ``capture_video`` and ``policy_class``, ``env_factory`` and
    ``model_config`` are for one run).

        ``executor="local"`` runs them in this process, each env built once and kept for all its runs;
        ``"ray"`` as Ray actors on a local Ray (``num_cpus`` workers, ``num_gpus`` shared) or on the cluster at
        ``address``: same seed, same eval.json files, timing aside (docs/scale-out.md)."""
    from zoo.artifacts.runs import RunFilter
    from zoo.errors import UsageError
    from zoo.sweep.plan import SweepSettings
    from zoo.sweep.runner import run_sweep

    settings, load = settings or EvalSettings(), load or LoadOptions()
    one_run = {
        "capture_video": settings.capture_video,
        "policy_class": load.policy_class,
        "env_factory": load.env_factory,
        "model_config": load.model_config,
    }
    given = [name for name, value in one_run.items() if value]
    if given:
        raise UsageError(
            f"{given[0]} evaluates one run; a sweep evaluates every run into its own eval.json",
            hint=f"drop {given[0]}, or evaluate one run with zoo.evaluate",
        )
    paths = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    return run_sweep(
        [Path(p) for p in paths],
        _registry(registry),
        RunFilter(exp_name, env_id, run_seed),
        SweepSettings(settings, load, env_module),
        force=force,
        executor=executor,
        address=address,
        num_cpus=num_cpus,
        num_gpus=num_gpus,
        on_planned=on_planned,
        on_run=on_run,
        on_episode=on_episode,
    )


def leaderboard(
    paths: PathLike | Iterable[PathLike],
    *,
    exp_name: str | None = None,
    env_id: str | None = None,
    evaluate_missing: bool = False,
    settings: EvalSettings | None = None,
    registry: Registry | PathLike | None = None,
    on_run: Callable[[Outcome], None] | None = None,
) -> Leaderboard:
    """``zoo leaderboard``: the runs under ``paths`` ranked per env id from their eval.json files, aggregated
    over seeds (``.rows``), with a line per run that could not be ranked (``.problems``); docs/leaderboard.md.

    ``evaluate_missing`` (``--eval``) first evaluates, with :func:`evaluate_all` and ``settings``, the runs that
    have no eval.json (``on_run`` gets each outcome); an existing eval.json is
    never redone. No run found raises a ZooError; nothing rankable is ``result.exit_code == 1``."""
    from zoo.artifacts.runs import RunFilter
    from zoo.ranking.board import build_leaderboard
    from zoo.ranking.runs import runs_without_eval

    roots = [Path(p) for p in ([paths] if isinstance(paths, str | os.PathLike) else paths)]
    reg, run_filter = _registry(registry), RunFilter(exp_name, env_id)
    failed: dict[str, str] = {}
    missing = runs_without_eval(roots, reg, run_filter) if evaluate_missing else []
    if missing:
        sweep = evaluate_all(
            missing,
            settings,
            exp_name=exp_name,
            env_id=env_id,
            force=False,
            registry=reg,
            on_run=on_run,
        )
        failed = {
            os.path.abspath(o.run_dir): o.message or "failed" for o in sweep.outcomes if o.status == "failed"
        }
    return build_leaderboard(roots, reg, run_filter, failed=failed)


def report(
    paths: PathLike | Iterable[PathLike],
    out: PathLike,
    *,
    exp_name: str | None = None,
    env_id: str | None = None,
    registry: Registry | PathLike | None = None,
) -> ReportResult:
    """``zoo report``: ``out/index.html`` (no script, no network) and its PNGs for the runs under ``paths``:
    per env, the learning curves of each experiment (mean over seeds, 95% band) and its eval returns, and the
    :func:`leaderboard` table; a run without an events file or an eval.json is a line under "Problems". The
    folder is built beside ``out`` and renamed into place when complete (docs/report.md). No run found
    raises a ZooError."""
    from zoo.artifacts.runs import RunFilter
    from zoo.ranking.runs import discover
    from zoo.reporting import write_report

    roots = [Path(p) for p in ([paths] if isinstance(paths, str | os.PathLike) else paths)]
    reg = _registry(registry)
    board = leaderboard(roots, exp_name=exp_name, env_id=env_id, registry=reg)
    return write_report(board, discover(roots, reg, RunFilter(exp_name, env_id)), Path(out))


def export(
    target: PathLike | Target,
    out: PathLike | None = None,
    *,
    format: str | None = None,
    opset: int | None = None,
    exporter: str = "auto",
    tolerance: float | None = None,
    load: LoadOptions | None = None,
    exp_name: str | None = None,
    env_id: str | None = None,
    run_seed: int | None = None,
    env_module: str | None = None,
    revision: str | None = None,
    allow_download: bool = False,
    notify: Callable[[str], None] | None = None,
    registry: Registry | PathLike | None = None,
) -> ExportResult:
    """``zoo export``: the target's policy as one ONNX or TorchScript file (raw observation in, env
    action out, normalizer and action head baked in) plus its sidecar, parity-checked against the
    source policy; a file that does not act like it is not kept.

    ``target`` may be a hub repo id ``"ORG/NAME"`` where no local path has that name (a local path always
    wins): its model card says what it holds (``exp_name``/``env_id`` say it instead), and its model comes as
    :func:`enjoy` fetches one, at ``revision`` (default main): the Hugging Face cache first, the hub only with
    ``allow_download``, verified against the hub's checksum, never unpickled beyond the allowlist. The file
    then goes to the current folder unless ``out`` says otherwise, and its sidecar records the ``source``.
    ``notify`` hears each download before it starts, then where the model came from. ``load``: what may be
    loaded (``trust_pickle``, ``model_config``, ``trusted_wrappers``, ``env_factory``), as for :func:`plan`; the
    policy is traced on the CPU with seed 0."""
    from zoo.errors import UsageError, ZooError
    from zoo.exporter import DEFAULT_OPSET, export_paths, export_policy, onnx_exporters
    from zoo.targets import Target, env_spec, load_target_policy
    from zoo.tensor_env import parse_factory

    load = load or LoadOptions()
    source = None
    if isinstance(target, Target) or Path(target).exists():
        if revision is not None:
            raise UsageError(
                f"--revision names a hub revision, but {target} is a local path",
                hint="drop --revision (a local path wins over a hub repo id of the same name)",
            )
        resolved = _target(target, exp_name, env_id, run_seed, registry, env_module)
    else:
        resolved, source = _repo_target(
            str(target),
            exp_name=exp_name,
            env_id=env_id,
            run_seed=run_seed,
            trust_pickle=load.trust_pickle,
            revision=revision or "main",
            allow_download=allow_download,
            registry=registry,
            notify=notify,
        )
        resolved = _target(resolved, None, None, None, registry, env_module)
    if resolved.exported is not None:
        raise ZooError(
            f"{resolved.model_file} is already an exported policy",
            hint="export the run dir or checkpoint it came from",
        )
    if resolved.model_file is None:
        raise UsageError(
            f"nothing to export: {resolved.label} is a policy class, not a model file",
            hint="export the run dir or checkpoint it was trained into",
        )
    # a file fetched from the hub is exported into the current folder, never into the Hugging Face cache
    beside = resolved.model_file if source is None else Path(resolved.model_file.name)
    fmt, out_path = export_paths(beside, format, Path(out) if out is not None else None)
    if fmt == "torchscript" and (opset is not None or exporter != "auto"):
        raise UsageError(
            "--opset and --exporter are ONNX settings; a TorchScript file has neither",
            hint="drop them, or export --format onnx",
        )
    opset = DEFAULT_OPSET if opset is None else opset
    if fmt == "onnx":
        onnx_exporters(exporter, opset)  # refuse an opset no exporter writes before the checkpoint is read
    options = dataclasses.replace(
        load, device="cpu", seed=0, env_factory=parse_factory(load.env_factory) if load.env_factory else None
    )
    policy = load_target_policy(resolved, options)
    spec = env_spec(resolved, options=options)
    facts = {
        "task": resolved.env_id,
        "env": spec.to_json(),
        "exp_name": resolved.entry.name,
        "framework": resolved.entry.framework,
        "checkpoint": str(resolved.model_file),
    }
    if source is not None:
        facts["source"] = source.to_json()
    return export_policy(
        policy,
        target=facts,
        preset_notes=spec.deployment_notes(),
        fmt=fmt,
        out=out_path,
        opset=opset,
        exporter=exporter,
        tolerance=tolerance,
        obs_terms=spec.obs_terms(),
    )


def _repo_target(
    repo: str,
    *,
    exp_name: str | None,
    env_id: str | None,
    run_seed: int | None,
    trust_pickle: bool,
    revision: str,
    allow_download: bool,
    registry: Registry | PathLike | None,
    notify: Callable[[str], None] | None,
) -> tuple[Target, Source]:
    """The target a hub repo id names (no local path has its name), and where its model came from."""
    from zoo.errors import UsageError
    from zoo.hub.repo_target import repo_id_of, resolve_repo

    repo_id = repo_id_of(repo)
    if trust_pickle:
        raise UsageError(
            f"--trust-pickle is for a file you trust on disk, and {repo_id} is a hub repo",
            hint="drop it: zoo reads what it downloads without unpickling what is off its allowlist",
        )
    if run_seed is not None:
        raise UsageError(
            f"--run-seed picks a run in a folder, and {repo_id} is a hub repo (one release)",
            hint="drop --run-seed; --revision picks a branch, tag or commit of the repo",
        )
    entry, env, source = resolve_repo(
        repo_id,
        _registry(registry),
        exp_name=exp_name,
        env_id=env_id,
        revision=revision,
        allow_download=allow_download,
        notify=notify,
    )
    if notify is not None:
        notify(f"model: {source.describe()}")
    return _fetched_target(source, entry, env, None, _registry(registry)), source


def _fetched_target(
    source: Source, entry: Entry, env_id: str, run_seed: int | None, registry: Registry
) -> Target:
    """A model from the hub or its cache as a target: a release's framework-free form (model.safetensors +
    config.json), the run its snapshot holds (rsl_rl, skrl), else the file."""
    from zoo.artifacts.runs import Run
    from zoo.release.config import CONFIG_FILE, WEIGHTS_FILE
    from zoo.targets import Target, release_target

    if source.kind != "local-run" and source.path.name == WEIGHTS_FILE:
        return dataclasses.replace(
            release_target(source.path.with_name(CONFIG_FILE), registry, env_id), entry=entry
        )
    run = source.run or Run(
        framework=entry.framework,
        path=source.path,
        model_file=source.path,
        exp_name=entry.name,
        env_id=env_id,
        seed=run_seed,
    )
    return Target(run, entry, env_id, source.path)


@dataclass
class PushResult:
    """What :func:`push` staged, and (unless a dry run) what the hub made of the upload."""

    repo_id: str
    staging: Staging
    made: list[str]  # files made for this push (an eval.json, a replay), staged but not written to the run
    upload: dict[str, Any] | None = (
        None  # upload()'s answer: status, summary, commit_url, pr_url; None for a dry run
    )
    #: ``changes`` (each file added, replaced, unchanged or deleted) and ``compared_with`` (repo, revision,
    #: commit, where the previous release's list came from); None for a dry run without ``allow_download``.
    comparison: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        staged = [{"name": f.name, "size": f.size, "what": f.what} for f in self.staging.files]
        return {
            "repo_id": self.repo_id,
            "staged": str(self.staging.folder),
            "card": str(self.staging.card),
            "files": staged,
            "made": self.made,
            "stripped": self.staging.stripped,
            "warnings": self.staging.warnings,
            "dry_run": self.upload is None,
            **(self.comparison or {"changes": None, "compared_with": None}),
            **(self.upload or {}),
        }


def push(
    run: PathLike,
    repo_id: str | None = None,
    *,
    hf_entity: str | None = None,
    dry_run: bool = True,
    exp_name: str | None = None,
    env_id: str | None = None,
    run_seed: int | None = None,
    revision: str | None = None,
    create_pr: bool = False,
    private: bool = False,
    commit_message: str | None = None,
    settings: EvalSettings | None = None,
    allow_large: bool = False,
    max_file_mb: float = 100,
    stage_dir: PathLike | None = None,
    registry: Registry | PathLike | None = None,
    notify: Callable[[str], None] | None = None,
    strip_unsafe: bool = False,
    allow_download: bool = False,
) -> PushResult:
    """``zoo push``: stage the run dir (or a lone model file with the companions evaluating it reads) with a
    generated model card; upload it in one commit unless ``dry_run`` (the default). The run dir is never
    written to: an eval.json or a replay (``settings.capture_video``) that the run lacks is made with ``settings``
    (default: the registry's episodes, seed 0, on the CPU) in a temp folder and staged from there.

    The commit deletes every file the repo's previous zoo release listed (its ``zoo_release.json``) that
    this one does not stage; ``comparison`` says what was added, replaced, unchanged and deleted. A dry run
    reads the repo to say the same only with ``allow_download`` (reading the hub is network).

    A file whose library's own loader would run code (an SB3 ``:serialized:`` pickle off the allowlist, a
    YAML Python tag) refuses the push (:class:`~zoo.errors.RefusedError`) unless ``strip_unsafe`` stages
    a copy without it; what the loaders would merely fail on is said through ``notify``."""
    from zoo.artifacts.cache import cache_dir
    from zoo.errors import UsageError
    from zoo.hub.consent import endpoint, require_network
    from zoo.hub.push import check_publishable, compare, latest_replay, prepare, release_forms, upload

    settings = settings or EvalSettings(device="cpu")
    target = resolve(run, exp_name=exp_name, env_id=env_id, run_seed=run_seed, registry=registry)
    if repo_id is None:
        if not hf_entity:
            raise UsageError(
                "no repo id: pass --repo-id ORG/NAME, or --hf-entity ORG for the registry pattern"
            )
        if "repo" not in target.entry.hub:
            raise UsageError(
                f"registry entry {target.entry.name!r} has no hub.repo pattern", hint="pass --repo-id"
            )
        repo_id = target.entry.hub_repo(hf_entity=hf_entity, env_id=target.env_id, seed=target.run.seed or 0)
    folder = Path(stage_dir) if stage_dir else cache_dir() / "push" / repo_id
    # every refusal before anything is evaluated
    sources = check_publishable(
        target, folder, max_mb=max_file_mb, allow_large=allow_large, strip=strip_unsafe
    )
    with tempfile.TemporaryDirectory(prefix="zoo-push-") as work:  # what the push makes, until staged
        has_eval = "eval.json" in dict(sources)
        need_video = settings.capture_video and latest_replay(target) is None
        made: dict[str, Path] = {}
        if not has_eval or need_video:
            planned = plan(
                target,
                dataclasses.replace(settings, capture_video=need_video),
                out=Path(work) / "eval.json",
                video_dir=Path(work) / "videos",
            )
            lacks = (
                "the run has no eval.json"
                if target.run.path.is_dir()
                else "no eval.json of this file is beside it"
            )
            why = lacks if not has_eval else "to record a replay video"
            if notify:
                count = f"{planned.episodes} episode{'' if planned.episodes == 1 else 's'}"
                notify(f"evaluating first ({why}): {count}, seed {planned.seed}, {planned.mode}")
            evaluated = run_plan(planned)
            if not has_eval:
                made["eval.json"] = Path(work) / "eval.json"
            if evaluated.videos:
                made["replay.mp4"] = Path(evaluated.videos[-1])
            for warning in evaluated.warnings:
                if notify:
                    notify(f"warning: {warning}")
        hub_work = Path(work) / "hub"
        hub_work.mkdir()
        forms = release_forms(target, Path(work) / "release", notify)
        staging = prepare(
            target,
            repo_id=repo_id,
            folder=folder,
            max_mb=max_file_mb,
            allow_large=allow_large,
            workdir=hub_work,
            made=made,
            strip=strip_unsafe,
            forms=forms,
        )
    if notify:
        for warning in staging.warnings:
            notify(f"warning: {warning}")
    result = PushResult(repo_id, staging, sorted(made))
    if dry_run:
        if allow_download:
            require_network(f"read {repo_id} to compare the push with it", "--allow-download", consented=True)
            if notify:
                notify(f"comparing with {repo_id} on {endpoint()} ...")
            result.comparison = compare(staging, revision=revision, create_pr=create_pr)
        return result
    require_network(f"push {len(staging.files)} files to {repo_id}", "--yes", consented=True)
    message = commit_message or f"zoo push: {target.entry.name} on {target.env_id}"
    if notify:
        notify(f"uploading {len(staging.files)} files to {repo_id} on {endpoint()} ...")
    result.upload = upload(staging, private=private, revision=revision, create_pr=create_pr, message=message)
    result.comparison = {key: result.upload.pop(key) for key in ("changes", "compared_with")}
    if "eval.json" in made and target.run.path.is_dir():
        # published: the run keeps the evaluation its card shows (a re-push is unchanged); a lone model file's
        # folder is the user's, not a run's, and is never written to
        from zoo.atomic import write_text_atomic

        write_text_atomic(
            target.run.path / "eval.json", (staging.folder / "eval.json").read_text(encoding="utf-8")
        )
    return result


def enjoy(
    exp_name: str,
    env_id: str,
    settings: EvalSettings | None = None,
    load: LoadOptions | None = None,
    *,
    run_seed: int = 1,
    out: PathLike | None | str = "default",
    env_module: str | None = None,
    hf_entity: str | None = None,
    hf_repository: str | None = None,
    revision: str = "main",
    runs_dir: PathLike = "runs",
    allow_download: bool = False,
    registry: Registry | PathLike | None = None,
    notify: Callable[[str], None] | None = None,
) -> tuple[EvalPlan, Source]:
    """``zoo enjoy`` without the rollout: the plan for a published model (a local run of ``runs_dir``
    first, then the Hugging Face cache, then, only with ``allow_download``, the hub) and where its model
    comes from. ``evaluate(plan)`` runs it. ``settings``, ``load``, ``out`` and ``env_module`` are :func:`plan`'s
    (``out`` and videos default to the current folder for a model from the hub or its cache); ``notify`` hears which host is asked before a download starts."""
    from zoo.artifacts.runs import RunFilter
    from zoo.checker import discover_runs
    from zoo.hub.fetch import hub_file, resolve_model

    settings, load = settings or EvalSettings(), load or LoadOptions()
    reg = _registry(registry)
    entry = reg.get(exp_name)
    where = hub_file(
        entry,
        env_id=env_id,
        run_seed=run_seed,
        hf_entity=hf_entity,
        hf_repository=hf_repository,
        revision=revision,
    )
    runs_dir = Path(runs_dir)
    local = None
    if runs_dir.is_dir():
        runs = [
            r for r in discover_runs([runs_dir], reg, RunFilter(exp_name, env_id, run_seed)) if r.model_file
        ]
        local = max(runs, key=lambda r: r.started_at or 0) if runs else None
    source = resolve_model(
        where, local, allow_download, notify, release=_release_first(entry, env_id, settings, load)
    )
    target = _fetched_target(source, entry, env_id, run_seed, reg)
    video_dir = None
    if source.kind != "local-run":  # not into the Hugging Face cache: beside the caller
        out = Path("eval.json") if out == "default" else out
        video_dir = Path("videos") / f"{where.repo_id.replace('/', '--')}-eval"
    planned = plan(
        target,
        settings,
        load,
        out=out,
        env_module=env_module,
        registry=reg,
        source=source.to_json(),
        video_dir=video_dir,
    )
    return planned, source


def _release_first(entry: Entry, env_id: str, settings: EvalSettings, load: LoadOptions) -> bool:
    """Whether ``zoo enjoy`` fetches a release's framework-free form (model.safetensors + config.json) before its
    native file: when the evaluation is deterministic on the CPU with torch, all that form computes."""
    from zoo.frameworks import get_adapter
    from zoo.release.config import CONFIG_FILE

    adapter = get_adapter(entry.framework)
    if (
        CONFIG_FILE in adapter.hub.loader_files
    ):  # its repos' config.json is the run's, not the safetensors form's
        return False
    deterministic = settings.deterministic
    if deterministic is None:
        deterministic, _ = adapter.eval_mode(entry, env_id)
    native_only = load.engine != "torch" or settings.device.startswith("cuda")
    # the user's tensor env (--env-factory) states its spaces only once built: the native checkpoint is evaluated
    return bool(deterministic) and not native_only and not (load.policy_class or load.env_factory)


def watch(
    run_dir: PathLike,
    *,
    every: int = 1,
    episodes: int | None = None,
    num_envs: int = 8,
    seed: int = 0,
    until: int | None = None,
    idle: float | None = None,
    poll: float = 5.0,
    device: str = "cpu",
    nice: int = 10,
    max_cpu: int | None = 1,
    sched_idle: bool = False,
    retries: int = 3,
    max_steps: int | None = None,
    max_seconds: float | None = None,
    exp_name: str | None = None,
    env_id: str | None = None,
    registry: Registry | PathLike | None = None,
    on_eval: Callable[[dict[str, Any]], None] | None = None,
    notify: Callable[[str], None] | None = None,
) -> WatchResult:
    """``zoo watch``: follow the training run saving checkpoints into ``run_dir``; evaluate every ``every``-th
    new one (deterministic, ``seed``, ``episodes``, bounded by ``max_steps`` and ``max_seconds`` as :func:`plan`
    says), append each result to ``run_dir/evals.jsonl`` and keep
    the best one as ``best_model.*`` with ``best_model_meta.json`` (docs/watch.md).

    Returns once a checkpoint at step ``until`` or later was evaluated, or no checkpoint appeared for
    ``idle`` seconds (neither: never; a KeyboardInterrupt stops it with every file consistent). It lowers
    this process's priority first (``nice``, or Linux's ``SCHED_IDLE`` with ``sched_idle``; ``max_cpu`` cores:
    the bound it keeps to beside the trainer),
    so call it in a process of its own. ``on_eval`` gets each evals.jsonl line as it is written, ``notify``
    each status line (those starting ``warning:`` are warnings). A run already followed is resumed: what
    evals.jsonl holds is not evaluated again, and the best so far stays unless beaten."""
    from zoo.watcher.loop import watch_run

    return watch_run(
        Path(run_dir),
        _registry(registry),
        every=every,
        episodes=episodes,
        num_envs=num_envs,
        seed=seed,
        until=until,
        idle=idle,
        poll=poll,
        device=device,
        nice=nice,
        max_cpu=max_cpu,
        sched_idle=sched_idle,
        retries=retries,
        max_steps=max_steps,
        max_seconds=max_seconds,
        exp_name=exp_name,
        env_id=env_id,
        notify=notify or _ignore,
        on_eval=on_eval or _ignore,
    )


def _ignore(_what: object) -> None:
    pass


def diagnose(
    *,
    framework: str | None = None,
    policy: PathLike | None = None,
    config: PathLike | None = None,
    launcher: str | None = None,
    probe_env: bool = False,
    env_id: str | None = None,
    env_module: str | None = None,
    exp_name: str | None = None,
    seed: int = 0,
    episodes: int | None = None,
    policy_class: str | None = None,
    guardrail: Guardrail | None = None,
    handoff: PathLike | None = None,
    command: Iterable[str] = (),
    registry: Registry | PathLike | None = None,
) -> Diagnosis:
    """``zoo doctor``: the checks the arguments ask for, in order (package, file, content, spaces; config and
    guardrail), with no side effects; ``diagnosis.exit_code`` is 0, 1 or 3 (a usage error raises). Without
    ``framework``: only what is installed (``diagnosis.environment``). ``handoff``: a folder to write
    ``handoff.json`` and ``HANDOFF.md`` into (the only files doctor writes; ``command`` is the doctor command
    line they record). Nothing here authorizes training."""
    from zoo.doctor.diagnosis import diagnose as run_checks

    diagnosis = run_checks(
        framework=framework,
        policy=Path(policy) if policy else None,
        config=Path(config) if config else None,
        launcher=launcher,
        probe_env=probe_env,
        env_id=env_id,
        env_module=env_module,
        exp_name=exp_name,
        seed=seed,
        episodes=episodes,
        policy_class=policy_class,
        guardrail=guardrail,
        registry=_registry(registry) if framework else None,
    )
    if handoff is not None:
        from zoo.doctor.handoff import write_handoff

        diagnosis.handoff = [str(p) for p in write_handoff(diagnosis, Path(handoff), list(command))]
    return diagnosis


__all__ = [
    "EvalSettings",
    "LoadOptions",
    "PushResult",
    "diagnose",
    "check",
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
]
