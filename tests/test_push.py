"""``zoo push`` without a hub: the dry run stages exactly what would be uploaded, and refuses secrets."""

from __future__ import annotations

import json
import os

import pytest
from helpers import zoo

SENTINEL = "hf_SENTINELtoken0123456789abcdefghijklmnop"


@pytest.fixture
def run_copy(dqn_run):
    """The bundled dqn run, copied (it has no eval.json: pushing evaluates it first)."""
    return dqn_run


def _push(run, *args, env=None):
    return zoo("push", run, "--stage-dir", run.parent.parent / "stage", *args, env=env)


def test_dry_run_stages_files_and_a_card(run_copy):
    result = _push(run_copy, "--hf-entity", "myorg", "--json", "--episodes", "3")
    assert result.exit_code == 0, result.stderr
    summary = result.json()
    assert summary["repo_id"] == "myorg/CartPole-v1-dqn-seed1"
    stage = run_copy.parent.parent / "stage"
    names = sorted(
        str(p.relative_to(stage)) for p in stage.rglob("*") if p.is_file() and p.name != ".zoo-staged"
    )
    assert names == sorted(f["name"] for f in summary["files"])
    assert {"dqn.cleanrl_model", "eval.json", "README.md"} <= set(names)
    assert {"images/learning_curve.png", "images/eval_returns.png"} <= set(names)
    assert any(n.startswith("events.out.tfevents") for n in names)
    assert (stage / "dqn.cleanrl_model").read_bytes() == (run_copy / "dqn.cleanrl_model").read_bytes()
    assert json.loads((stage / "eval.json").read_text())["num_episodes"] == 3  # evaluated because missing


def test_card_header_is_what_the_hub_leaderboard_reads(run_copy):
    from huggingface_hub import ModelCard

    assert _push(run_copy, "--repo-id", "me/dqn-cartpole", "--episodes", "4").exit_code == 0
    card = ModelCard.load(run_copy.parent.parent / "stage" / "README.md")
    data = card.data.to_dict()
    assert data["library_name"] == "cleanrl"
    assert {"CartPole-v1", "reinforcement-learning", "deep-reinforcement-learning", "cleanrl"} <= set(
        data["tags"]
    )
    metric = data["model-index"][0]["results"][0]["metrics"][0]
    evaluation = json.loads((run_copy.parent.parent / "stage" / "eval.json").read_text())["metrics"]
    assert metric["type"] == "mean_reward"
    assert metric["value"] == f"{evaluation['return_mean']:.2f} +/- {evaluation['return_std']:.2f}"
    body = card.text
    for needed in (
        "zoo enjoy --exp-name dqn --env-id CartPole-v1 --run-seed 1 --hf-repository me/dqn-cartpole",
        "|learning_rate|0.001|",
        "python cleanrl/dqn.py",
        "## Results",
        "zoo 0.1.0",
    ):
        assert needed in body, needed


def test_card_reproduce_command_passes_only_flags_upstream_cleanrl_takes(run_copy):
    """The bundled runs were trained by zoo's examples/train_examples.py, which logs two fields of its own:
    upstream's dqn.py would stop at its parser on them, so the command leaves them out and the card says so."""
    from zoo.frameworks.cleanrl.scripts import SCRIPT_ARGS

    assert _push(run_copy, "--repo-id", "me/dqn-cartpole", "--episodes", "2").exit_code == 0
    body = (run_copy.parent.parent / "stage" / "README.md").read_text()
    command = body.split("python cleanrl/dqn.py", 1)[1].split("```", 1)[0]
    flags = {word[2:].replace("-", "_") for word in command.split() if word.startswith("--")}
    assert flags and flags <= SCRIPT_ARGS["dqn"] and "learning_rate" in flags
    assert "--eval-frequency" not in body
    assert (
        "The run also logged `eval_frequency` and `eval_episodes`, which CleanRL's `dqn.py` does not take"
        in (" ".join(body.split()))
    )


def test_card_shows_the_learning_curve_and_the_eval_histogram(run_copy):
    from PIL import Image

    result = _push(run_copy, "--repo-id", "me/dqn-cartpole", "--episodes", "3", "--json")
    assert result.exit_code == 0, result.stderr
    stage = run_copy.parent.parent / "stage"
    card = (stage / "README.md").read_text()
    for name in ("images/learning_curve.png", "images/eval_returns.png"):
        path = stage / name
        assert path.stat().st_size > 1000
        with Image.open(path) as image:
            assert image.format == "PNG" and image.width > 100 and image.height > 100
        assert f"]({name})" in card  # a relative Markdown image link
    staged = {f["name"] for f in result.json()["files"]}
    assert {"images/learning_curve.png", "images/eval_returns.png"} <= staged
    assert not (run_copy / "images").exists()  # the run dir is never written to


def test_run_without_events_file_gets_no_curve(run_copy):
    for events in run_copy.glob("events.out.tfevents.*"):
        events.unlink()
    result = _push(run_copy, "--repo-id", "me/dqn-cartpole", "--episodes", "2")
    assert result.exit_code == 0, result.stderr
    stage = run_copy.parent.parent / "stage"
    assert not (stage / "images" / "learning_curve.png").exists()
    assert (stage / "images" / "eval_returns.png").is_file()
    card = (stage / "README.md").read_text()
    assert "learning_curve.png" not in card and "](images/eval_returns.png)" in card


def test_human_output_says_dry_run(run_copy):
    result = _push(run_copy, "--hf-entity", "myorg", env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "dry run: nothing was uploaded; pass --yes to push" in result.stdout
    assert "dqn.cleanrl_model" in result.stdout and "model card:" in result.stdout


def test_repo_id_is_required_somehow(run_copy):
    result = _push(run_copy)
    assert result.exit_code == 2 and "--repo-id" in result.stderr


@pytest.mark.parametrize(
    ("plant", "message"),
    [
        (lambda run: (run / ".env").write_text("WANDB_API_KEY=abc\n"), "looks like a secret"),
        (lambda run: (run / "hf_token.txt").write_text("x"), "looks like a secret"),
        (lambda run: (run / "id_rsa").write_text("x"), "looks like a secret"),
        (
            lambda run: (run / "notes.txt").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n"),
            "private key",
        ),
        (lambda run: (run / "config.yaml").write_text(f"token: {SENTINEL}\n"), "access token"),
        (lambda run: (run / "outside").symlink_to("/etc/hostname"), "outside the run dir"),
        (lambda run: (run / "big.bin").write_bytes(b"\0" * 2_100_000), "over the 2 MB limit"),
        (
            lambda run: (run / "hparams.yaml").write_text(
                "lr: 0.001\nhook: !!python/object/apply:os.system [true]\n"
            ),
            "refusing to push: hparams.yaml: hook is tagged !!python/object/apply:os.system",
        ),
    ],
)
def test_refusals_exit_3_and_stage_nothing(run_copy, plant, message):
    plant(run_copy)
    result = _push(run_copy, "--hf-entity", "myorg", "--max-file-mb", "2")
    assert result.exit_code == 3, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not (run_copy.parent.parent / "stage").exists()


def test_large_files_pass_with_allow_large(run_copy):
    (run_copy / "big.bin").write_bytes(b"\0" * 2_100_000)
    result = _push(run_copy, "--hf-entity", "myorg", "--max-file-mb", "2", "--allow-large", "--episodes", "2")
    assert result.exit_code == 0, result.stderr


def test_symlink_inside_the_run_dir_is_staged_as_a_copy(run_copy):
    (run_copy / "model-link.cleanrl_model").symlink_to(run_copy / "dqn.cleanrl_model")
    result = _push(run_copy, "--hf-entity", "myorg", "--episodes", "2")
    assert result.exit_code == 0, result.stderr
    staged = run_copy.parent.parent / "stage" / "model-link.cleanrl_model"
    assert staged.is_file() and not staged.is_symlink()


def test_sentinel_token_never_reaches_output_or_stage(run_copy):
    env = {"HF_TOKEN": SENTINEL}
    result = _push(run_copy, "--hf-entity", "myorg", "--episodes", "2", env=env)
    assert result.exit_code == 0
    assert SENTINEL not in result.stdout + result.stderr
    for path in (run_copy.parent.parent / "stage").rglob("*"):
        assert SENTINEL not in str(path)
        if path.is_file():
            assert SENTINEL.encode() not in path.read_bytes()


def test_push_offline_with_yes_is_refused(run_copy):
    result = _push(run_copy, "--hf-entity", "myorg", "--episodes", "2", "--yes", env={"HF_HUB_OFFLINE": "1"})
    assert result.exit_code == 1 and "HF_HUB_OFFLINE=1" in result.stderr


def _record_replays(run, episodes: int) -> list:
    """Real replays of the run, as ``zoo eval --capture-video`` records them (CleanRL: beside ``runs/``)."""
    out = run.parent.parent / "recorded.json"
    result = zoo("eval", run, "-n", episodes, "--num-envs", 1, "--capture-video", "--out", out, "--quiet")
    assert result.exit_code == 0, result.stderr
    return sorted((run.parent.parent / "videos" / f"{run.name}-eval").glob("*.mp4"))


def test_newest_eval_video_is_staged_as_replay(run_copy):
    older, newest = _record_replays(run_copy, 2)
    assert newest.name == "rl-video-episode-1.mp4"
    os.utime(newest, (newest.stat().st_atime + 5, newest.stat().st_mtime + 5))
    result = _push(run_copy, "--hf-entity", "myorg", "--episodes", "2", "--json")
    assert result.exit_code == 0, result.stderr
    assert (run_copy.parent.parent / "stage" / "replay.mp4").read_bytes() == newest.read_bytes()
    assert {
        "name": "replay.mp4",
        "size": newest.stat().st_size,
        "what": "a replay of the agent",
    } in result.json()["files"]
    assert result.json()["warnings"] == []


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda video: video.write_bytes(b""), "is empty (0 bytes): not staged"),
        (
            lambda video: os.truncate(video, video.stat().st_size // 2),
            "does not decode (moov atom not found): not staged",
        ),
    ],
)
def test_a_replay_that_is_empty_or_does_not_decode_is_not_staged(run_copy, damage, why):
    """An eval killed while recording leaves such files: a replay of them would be a broken player on the hub."""
    (video,) = _record_replays(run_copy, 1)
    damage(video)
    result = _push(run_copy, "--hf-entity", "myorg", "--episodes", "1", "--json")
    assert result.exit_code == 0, result.stderr
    assert "replay.mp4" not in {f["name"] for f in result.json()["files"]}
    assert not (run_copy.parent.parent / "stage" / "replay.mp4").exists()
    assert result.json()["warnings"] == [f"replay.mp4 ({video}) {why}"]
    assert f"warning: replay.mp4 ({video}) {why}" in " ".join(result.stderr.split())


def test_a_video_in_the_run_dir_that_does_not_decode_is_not_staged(run_copy):
    (video,) = _record_replays(run_copy, 1)
    inside = run_copy / "videos" / "eval" / "rl-video-episode-0.mp4"
    inside.parent.mkdir(parents=True)
    inside.write_bytes(video.read_bytes()[:1000])
    video.unlink()
    result = _push(run_copy, "--hf-entity", "myorg", "--episodes", "1", "--json")
    assert result.exit_code == 0, result.stderr
    assert not any(f["name"].endswith(".mp4") for f in result.json()["files"])
    assert result.json()["warnings"] == [
        "videos/eval/rl-video-episode-0.mp4 does not decode (moov atom not found): not staged"
    ]


def test_an_exported_policy_is_not_a_release_of_its_own(run_copy):
    assert zoo("export", run_copy, "--out", run_copy.parent.parent / "dqn.onnx", "-q").exit_code == 0
    result = _push(run_copy.parent.parent / "dqn.onnx", "--repo-id", "me/dqn")
    assert result.exit_code == 1 and result.stderr.count("error:") == 1
    assert (
        "is a policy zoo export wrote; zoo push publishes the run or model file it was exported from"
        in " ".join(result.stderr.split())
    )


def test_exported_policies_ship_with_their_sidecars_and_a_deploy_section(run_copy):
    assert zoo("export", run_copy, "--out", run_copy / "dqn.onnx", "-q").exit_code == 0
    result = _push(run_copy, "--repo-id", "me/dqn-cartpole", "--episodes", "2", "--json")
    assert result.exit_code == 0, result.stderr
    stage = run_copy.parent.parent / "stage"
    assert (stage / "dqn.onnx").read_bytes() == (run_copy / "dqn.onnx").read_bytes()
    assert (stage / "dqn.onnx.metadata.json").is_file()
    card = (stage / "README.md").read_text()
    deploy = card[card.index("## Deploy it") :]
    assert "`dqn.onnx` is this policy exported by `zoo export` (onnx, opset 17)" in deploy
    assert "exact on 257 observations" in deploy
    assert 'hf_hub_download("me/dqn-cartpole", "dqn.onnx")' in deploy

    (run_copy / "dqn.onnx").write_bytes(
        (run_copy / "dqn.onnx").read_bytes() + b"\0"
    )  # no longer what was checked
    stale = _push(run_copy, "--repo-id", "me/dqn-cartpole")
    assert stale.exit_code == 1 and "does not match its sidecar" in stale.stderr
    assert stale.stderr.count("error:") == 1


def test_unreachable_hub_and_a_stage_dir_under_a_file_are_one_line_each(run_copy, tmp_path):
    """Connection refused gets its own line (not "internal error"), and the staging folder is checked first."""
    import socket
    import subprocess
    import sys

    with socket.socket() as probe:  # a port nobody listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(
        HF_ENDPOINT=f"http://127.0.0.1:{port}",
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HOME=str(tmp_path / "hf-home"),
    )
    cmd = [
        sys.executable,
        "-m",
        "zoo",
        "push",
        str(run_copy),
        "--repo-id",
        "me/dqn",
        "--yes",
        "--episodes",
        "2",
        "--stage-dir",
        str(tmp_path / "stage"),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert f"cannot reach http://127.0.0.1:{port} to push me/dqn: ConnectError" in proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr

    (tmp_path / "a-file").write_text("x")
    under_file = zoo("push", run_copy, "--repo-id", "me/dqn", "--stage-dir", tmp_path / "a-file" / "stage")
    assert under_file.exit_code == 1 and under_file.stderr.count("error:") == 1
    assert f"{tmp_path / 'a-file'} is a file, not a folder" in under_file.stderr
    on_file = zoo("push", run_copy, "--repo-id", "me/dqn", "--stage-dir", tmp_path / "a-file")
    assert on_file.exit_code == 2 and "--stage-dir" in on_file.stderr and "is a file" in on_file.stderr


def test_a_stage_dir_of_the_users_own_files_or_a_link_is_never_replaced(run_copy, tmp_path):
    """Staging replaces its folder whole: only an empty one, or one an earlier push staged (it holds the
    .zoo-staged mark, which is never uploaded), may be replaced; the user's folder and a link stay as they were."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "thesis.tex").write_text("years of it")
    refused = zoo("push", run_copy, "--repo-id", "me/dqn", "-n", "1", "--stage-dir", work)
    assert refused.exit_code == 2 and refused.stderr.count("error:") == 1, refused.stderr
    assert "holds files zoo push did not stage; refusing to replace them" in " ".join(refused.stderr.split())
    assert [p.name for p in work.iterdir()] == ["thesis.tex"]

    link = tmp_path / "stage-link"
    link.symlink_to(work)
    linked = zoo("push", run_copy, "--repo-id", "me/dqn", "-n", "1", "--stage-dir", link)
    assert linked.exit_code == 2 and "is a link" in linked.stderr and link.is_symlink()

    stage = tmp_path / "stage"
    first = zoo("push", run_copy, "--repo-id", "me/dqn", "-n", "1", "--stage-dir", stage, "--json")
    assert first.exit_code == 0, first.stderr
    assert (stage / ".zoo-staged").is_file() and ".zoo-staged" not in {
        f["name"] for f in first.json()["files"]
    }
    again = zoo("push", run_copy, "--repo-id", "me/dqn", "-n", "1", "--stage-dir", stage)
    assert again.exit_code == 0 and (stage / "README.md").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".stage.")]  # the previous one is gone


def test_strip_unsafe_stages_yaml_without_the_tagged_keys_that_an_unsafe_loader_runs(run_copy, tmp_path):
    """Any YAML a push stages is held to the same rule, whatever the framework; the stripped copy keeps the
    rest (tuples included) and loads under yaml.UnsafeLoader without running anything."""
    import yaml

    canary = tmp_path / "canary"
    text = (
        f"lr: 0.001\nsizes: !!python/tuple [64, 64]\nhook: !!python/object/apply:os.system [touch {canary}]\n"
    )
    (run_copy / "hparams.yaml").write_text(text)
    result = _push(run_copy, "--hf-entity", "myorg", "--episodes", "1", "--strip-unsafe", "--json")
    assert result.exit_code == 0, result.stderr
    assert result.json()["stripped"] == {"hparams.yaml": ["hook"]}
    staged = run_copy.parent.parent / "stage" / "hparams.yaml"
    assert yaml.load(staged.read_text(), Loader=yaml.UnsafeLoader) == {"lr": 0.001, "sizes": (64, 64)}
    assert (run_copy / "hparams.yaml").read_text() == text  # the run dir is never written to
    assert not canary.exists()
    yaml.load(text, Loader=yaml.UnsafeLoader)
    assert canary.exists()  # what was stripped is real code
