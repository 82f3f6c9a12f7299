"""``zoo push``: stage a run with its model card (a dry run), or upload it with ``--yes``."""

from __future__ import annotations

from pathlib import Path

import click

from zoo.cli import options as opt
from zoo.cli.render import err, escape, print_json, render_push
from zoo.cli.shared import registry_of


@click.command("push")
@click.argument("run", type=click.Path(path_type=Path))
@click.option("--repo-id", default=None, help="ORG/NAME [registry pattern with --hf-entity].")
@opt.hf_entity
@opt.target_options
@click.option("--yes", is_flag=True, help="Upload (consent to the network). Without it: a dry run.")
@click.option("--revision", default=None, help="Branch to commit to [main].")
@click.option("--create-pr", is_flag=True, help="Open a pull request instead of committing to the branch.")
@click.option("--private", is_flag=True, help="Create the repo private.")
@click.option("--commit-message", default=None, help="Commit message.")
@opt.episodes
@opt.seed
@opt.capture_video
@opt.alias("--video", "--capture-video", "capture_video", is_flag=True, default=None)
@click.option("--allow-large", is_flag=True, help="Allow files over --max-file-mb.")
@click.option("--max-file-mb", type=float, default=100, show_default=True, help="Per-file size limit.")
@click.option(
    "--stage-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to stage [~/.cache/zoo/push/ORG/NAME].",
)
@click.option(
    "--strip-unsafe",
    is_flag=True,
    help="Stage copies without what the libraries' own loaders would run as code (SB3 pickles "
    "off the allowlist, YAML Python tags) instead of refusing the push.",
)
@opt.allow_download
@opt.as_json
@click.pass_context
@opt.typed(device="cpu")
def push_cmd(
    ctx,
    run,
    repo_id,
    hf_entity,
    exp_name,
    env_id,
    run_seed,
    yes,
    revision,
    create_pr,
    private,
    commit_message,
    allow_large,
    max_file_mb,
    stage_dir,
    strip_unsafe,
    allow_download,
    as_json,
    settings,
) -> None:
    """Stage RUN with a generated model card (dry run), or upload it in one commit with --yes.

    RUN is a run dir, a folder holding one model file, or the model file itself (--env-id when zoo
    cannot tell its env). The run dir is not written to: an eval.json (--episodes, --seed) or a replay
    (--capture-video) the run lacks is made for the push and staged beside its files. The commit deletes
    what the repo's previous zoo release had and this one has not.
    """
    from zoo import api

    result = api.push(
        run,
        repo_id,
        hf_entity=hf_entity,
        dry_run=not yes,
        exp_name=exp_name,
        env_id=env_id,
        run_seed=run_seed,
        revision=revision,
        create_pr=create_pr,
        private=private,
        commit_message=commit_message,
        settings=settings,
        allow_large=allow_large,
        max_file_mb=max_file_mb,
        stage_dir=stage_dir,
        registry=registry_of(ctx),
        notify=lambda line: err().print(escape(line)),
        strip_unsafe=strip_unsafe,
        allow_download=allow_download,
    )
    if as_json:
        print_json(result.to_json())
    else:
        render_push(result)
