"""``zoo eval`` and ``zoo enjoy``: one evaluation, announced, rolled out with a progress bar and summarised
(``zoo eval --all`` hands over to :mod:`zoo.cli.sweep`)."""

from __future__ import annotations

from pathlib import Path

import click

from zoo.cli import options as opt
from zoo.cli.render import count, err, escape, print_json, run_with_progress
from zoo.cli.shared import registry_of
from zoo.errors import UsageError


@click.command("eval")
@click.argument("target", type=click.Path(path_type=Path), required=False)
@opt.target_options
@opt.eval_options
@opt.trust_pickle
@opt.trust_wrapper
@opt.env_factory
@opt.env_module
@opt.policy_class
@opt.out("Where to write eval.json [run dir/eval.json].")
@opt.model_config
@opt.engine
@opt.sweep_options
@click.option(
    "--json", "as_json", is_flag=True, help="Print eval.json on stdout (with --all: the sweep's rows)."
)
@opt.quiet
@click.pass_context
@opt.typed()
def eval_cmd(
    ctx,
    target,
    exp_name,
    env_id,
    run_seed,
    env_module,
    out_path,
    sweep,
    force,
    executor,
    address,
    num_cpus,
    num_gpus,
    as_json,
    quiet,
    settings,
    load,
) -> None:
    """Evaluate TARGET (a run dir, model file, or a policy.onnx/policy.ts from zoo export) and write eval.json.

    Rollouts are vectorized, seeded and deterministic: the same seed gives the same result, bit for bit.
    With --policy-class module:Class and --env-id, your own class is evaluated and TARGET is optional.
    With --all, every run under the folder TARGET is evaluated in one process (or on Ray), each writing its
    own eval.json; runs whose eval.json already holds the same evaluation are skipped (docs/eval.md).
    """
    from zoo import api

    if target is None and load.policy_class is None:  # TARGET is optional only for a policy class
        raise click.MissingParameter(ctx=ctx, param_type="argument", param_hint="'TARGET'")
    sweep_flags = {
        "--force": force,
        "--executor": executor != "local",
        "--address": address,
        "--num-cpus": num_cpus,
        "--num-gpus": num_gpus,
    }
    if not sweep:
        given = [flag for flag, value in sweep_flags.items() if value]
        if given:
            raise UsageError(
                f"{given[0]} is a setting of a sweep", hint=f"add --all: zoo eval {target} --all"
            )
    else:
        single = {
            "--out": out_path,
            "--capture-video": settings.capture_video,
            "--policy-class": load.policy_class,
            "--env-factory": load.env_factory,
            "--model-config": load.model_config,
        }
        given = [flag for flag, value in single.items() if value]
        if given:
            raise UsageError(
                f"{given[0]} evaluates one run; --all evaluates every run into its own eval.json",
                hint=f"drop {given[0]}, or name one run instead of --all",
            )
        from zoo.cli.sweep import sweep as run_sweep

        run_sweep(
            target,
            settings=settings,
            load=load,
            exp_name=exp_name,
            env_id=env_id,
            run_seed=run_seed,
            env_module=env_module,
            force=force,
            executor=executor,
            address=address,
            num_cpus=num_cpus,
            num_gpus=num_gpus,
            registry=registry_of(ctx),
            as_json=as_json,
            quiet=quiet,
        )
        return
    plan = api.plan(
        target,
        settings,
        load,
        out=out_path or "default",
        exp_name=exp_name,
        env_id=env_id,
        run_seed=run_seed,
        env_module=env_module,
        registry=registry_of(ctx),
    )
    _evaluate(plan, quiet, as_json)


def _evaluate(plan, quiet: bool, as_json: bool, seeds: str | None = None) -> None:
    """Say what will run, roll out with a progress bar, report videos and warnings, summarise."""
    from zoo import api
    from zoo.rollout_guard import DEFAULT_MAX_STEPS
    from zoo.targets import load_target_policy

    target = plan.target
    if plan.options.policy_class:  # said even with --quiet, and before loading: loading runs the user's class
        err().print(
            f"[yellow]note:[/] running your code: --policy-class {escape(plan.options.policy_class)} acts",
            markup=True,
        )
    policy = load_target_policy(target, plan.options)  # refusals and bad files before the announcement
    if plan.options.env_factory:  # said even with --quiet: it is the user's code that runs
        err().print(
            f"[yellow]note:[/] running your code: --env-factory {escape(plan.options.env_factory)} "
            "builds the env",
            markup=True,
        )
    if not quiet:
        err().print(
            f"evaluating [bold]{escape(target.label)}[/] ({target.entry.name}, {target.env_id}): "
            f"{count(plan.episodes, 'episode')}, {count(plan.num_envs, 'env')}, {seeds or f'seed {plan.seed}'}, {plan.mode} "
            f"[dim]({plan.mode_source})[/], device {plan.device}"
            + ("" if plan.options.engine == "torch" else f", engine {plan.options.engine}"),
            markup=True,
        )
    result = run_with_progress(
        quiet, plan.episodes, lambda on_episode: api.run_plan(plan, policy, on_episode)
    )
    for message in result.warnings:
        err().print(f"[yellow]warning:[/] {escape(message)}", markup=True)
    if as_json:
        print_json(result.to_json())
    if not quiet:
        m = result.metrics
        success = "" if m["success_rate"] is None else f", success {m['success_rate']:.0%}"
        cut = sum(e.truncated for e in result.episodes)
        bound = plan.max_steps or DEFAULT_MAX_STEPS  # an episode is cut by the flag's bound, else by the cap
        cut = f", {cut} cut at {bound} steps (truncated)" if cut else ""
        where = f" -> {plan.out_path}" if plan.out_path else ""
        err().print(
            f"return {m['return_mean']:.2f} +/- {m['return_std']:.2f} over {count(plan.episodes, 'episode')} "
            f"(length {m['length_mean']:.1f}{success}{cut}) in {result.wall_clock_seconds:.1f}s{where}"
        )
        if result.videos:
            err().print(f"videos: {len(result.videos)} in {Path(result.videos[0]).parent}")


@click.command("enjoy")
@click.option("--exp-name", required=True, help="Experiment name (registry), e.g. dqn.")
@click.option("--env-id", required=True, help="Env id, e.g. CartPole-v1.")
@click.option(
    "--run-seed",
    type=int,
    default=1,
    show_default=True,
    help="Training seed of the run / hub repo (CleanRL's repos end in -seed{N}).",
)
@opt.hf_entity
@click.option("--hf-repository", default=None, help="Full repo id; overrides the registry's pattern.")
@click.option("--revision", default="main", show_default=True, help="Hub branch, tag or commit.")
@click.option(
    "--runs-dir",
    type=click.Path(path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="Local runs folder searched first.",
)
@opt.eval_options
@opt.trust_wrapper
@opt.env_factory
@opt.env_module
@opt.out("eval.json path [run dir for a local run, else ./eval.json].")
@opt.allow_download
@click.option("--json", "as_json", is_flag=True, help="Print eval.json on stdout.")
@opt.quiet
@click.pass_context
@opt.typed()
def enjoy_cmd(
    ctx,
    exp_name,
    env_id,
    run_seed,
    hf_entity,
    hf_repository,
    revision,
    runs_dir,
    env_module,
    out_path,
    allow_download,
    as_json,
    quiet,
    settings,
    load,
) -> None:
    """Evaluate a published model: local run first, then the HF cache, then (with consent) the hub.

    Flags follow CleanRL's enjoy, with zoo's meaning of --seed: the evaluation seed (--run-seed picks
    the model). Downloads are verified against the hub's checksum before loading.
    """
    from zoo import api

    plan, source = api.enjoy(
        exp_name,
        env_id,
        settings,
        load,
        run_seed=run_seed,
        out=out_path or "default",
        env_module=env_module,
        hf_entity=hf_entity,
        hf_repository=hf_repository,
        revision=revision,
        runs_dir=runs_dir,
        allow_download=allow_download,
        registry=registry_of(ctx),
        notify=None if quiet else lambda line: err().print(escape(line)),
    )
    if not quiet:
        err().print(f"model: {source.describe()}")
    _evaluate(plan, quiet, as_json, seeds=f"run seed {run_seed}, eval seed {settings.seed}")
