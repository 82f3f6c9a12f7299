"""``zoo watch``: follow a training run's checkpoints, evaluate them and keep the best."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from zoo.cli import options as opt
from zoo.cli.render import count, err, escape, watch_line
from zoo.cli.shared import registry_of


@click.command("watch")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--every",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="K",
    help="Evaluate every K-th new checkpoint (the newest is always evaluated at an --idle stop).",
)
@opt.episodes
@opt.num_envs
@opt.seed
@click.option(
    "--until",
    type=click.IntRange(min=0),
    default=None,
    metavar="ITER",
    help="Stop after evaluating a checkpoint at this step or iteration, or later.",
)
@click.option(
    "--idle",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Stop when no checkpoint appeared or changed for this long [never].",
)
@click.option(
    "--poll",
    type=click.FloatRange(min=0, min_open=True),
    default=5.0,
    show_default=True,
    metavar="SECONDS",
    help="Look at the run dir this often.",
)
@click.option(
    "--device",
    type=click.Choice(["cpu", "cuda", "auto"]),
    default="cpu",
    show_default=True,
    help="Where policies run (the trainer keeps the GPU unless you say otherwise).",
)
@click.option(
    "--nice",
    type=click.IntRange(0, 19),
    default=10,
    show_default=True,
    help="Add this to the watcher's niceness: the trainer keeps >= 90% of a shared core at 10.",
)
@click.option(
    "--sched-idle",
    is_flag=True,
    help="Run only when a core would otherwise idle (Linux SCHED_IDLE; --nice is then moot): the "
    "trainer is not slowed, evaluations may lag.",
)
@click.option(
    "--max-cpu",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    metavar="N",
    help="Run on at most N cores, with N torch threads (0: no bound).",
)
@opt.bounds
@opt.exp_name
@opt.env_id
@click.option("--json", "as_json", is_flag=True, help="Print each evals.jsonl line on stdout when written.")
@opt.quiet
@click.pass_context
def watch_cmd(
    ctx,
    run_dir,
    every,
    episodes,
    num_envs,
    seed,
    until,
    idle,
    poll,
    device,
    nice,
    sched_idle,
    max_cpu,
    max_steps,
    max_seconds,
    exp_name,
    env_id,
    as_json,
    quiet,
) -> None:
    """Follow the training run saving checkpoints into RUN_DIR: evaluate every K-th new one, keep the best.

    Each evaluation (deterministic, seeded) is appended to RUN_DIR/evals.jsonl; a checkpoint that beats the
    best return so far is copied to RUN_DIR/best_model.* with best_model_meta.json. Restarted, it goes on
    where it stopped. Ctrl-C stops it with every file consistent (exit 130). See docs/watch.md.
    """
    from zoo import api
    from zoo.strict_json import dumps

    evaluations = []

    def on_eval(line: dict) -> None:
        evaluations.append(line)
        if as_json:
            click.echo(dumps(line, what="the --json output"))
        if not quiet or line["status"] != "ok":
            err().print(watch_line(line), markup=True)

    def notify(message: str) -> None:
        if message.startswith("warning:"):
            err().print(f"[yellow]warning:[/]{escape(message.removeprefix('warning:'))}", markup=True)
        elif not quiet:
            err().print(f"[dim]{escape(message)}[/]", markup=True)

    try:
        result = api.watch(
            run_dir,
            every=every,
            episodes=episodes,
            num_envs=num_envs,
            seed=seed,
            until=until,
            idle=idle,
            poll=poll,
            device=device,
            nice=nice,
            sched_idle=sched_idle,
            max_cpu=max_cpu or None,
            max_steps=max_steps,
            max_seconds=max_seconds,
            exp_name=exp_name,
            env_id=env_id,
            registry=registry_of(ctx),
            on_eval=on_eval,
            notify=notify,
        )
    except KeyboardInterrupt:
        err().print(
            f"interrupted: {count(len(evaluations), 'evaluation')} recorded this time; evals.jsonl and "
            "the best model are consistent"
        )
        sys.exit(130)
    if not quiet:
        best = result.best
        kept = (
            f"; best {best['return_mean']:.2f} at step {best['step']} -> {run_dir / best['model']}"
            if best
            else ""
        )
        why = (
            f"a checkpoint at step {until} or later" if result.stopped == "until" else f"idle for {idle:g} s"
        )
        err().print(f"stopped ({why}): {count(len(result.evaluations), 'evaluation')}{escape(kept)}")
