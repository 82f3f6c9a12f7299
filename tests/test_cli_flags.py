"""One set of flags with one meaning, hints that name real flags, and the bugs the redesign fixed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import make_run, save_model, zoo

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "runs"


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


@pytest.mark.parametrize("command", ["eval", "export"])
def test_model_config_for_a_framework_without_one_is_a_usage_error(dqn_run, tmp_path, command):
    config = tmp_path / "arch.yaml"
    config.write_text("network: []\n")
    result = zoo(command, dqn_run, "--model-config", config, "-q")
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith("error: --model-config is not used by cleanrl models")
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr


def test_a_folder_of_runs_hints_at_run_seed_and_run_seed_picks_one(tmp_path):
    runs = tmp_path / "runs"
    for seed in (1, 2):
        make_run(runs, "CartPole-v1", "dqn", seed=seed, t=1700000000 + seed)
    ambiguous = zoo("eval", runs, "-q", "-n", "1")
    assert ambiguous.exit_code == 1 and "--run-seed" in ambiguous.stderr
    assert "--seed" not in ambiguous.stderr.replace("--run-seed", "")
    picked = zoo("eval", runs, "--run-seed", "2", "-n", "1", "--json")
    assert picked.exit_code == 0, picked.stderr
    assert "__2__" in picked.json()["checkpoint"]


def test_seed_is_the_eval_seed_in_eval_and_enjoy(dqn_run, tmp_path):
    """The same --seed gives the same episodes through zoo eval and zoo enjoy (a local run)."""
    common = ("--stochastic", "--seed", "5", "--episodes", "3", "--num-envs", "1")
    evaluated = zoo("eval", dqn_run, *common, "--out", tmp_path / "eval.json")
    enjoyed = zoo(
        "enjoy",
        "--exp-name",
        "dqn",
        "--env-id",
        "CartPole-v1",
        "--run-seed",
        "1",
        "--runs-dir",
        dqn_run.parent,
        *common,
        "--out",
        tmp_path / "enjoy.json",
    )
    assert evaluated.exit_code == 0 and enjoyed.exit_code == 0, enjoyed.stderr
    assert "run seed 1, eval seed 5" in enjoyed.stderr
    one, two = (json.loads((tmp_path / f).read_text()) for f in ("eval.json", "enjoy.json"))
    assert one["seed"] == two["seed"] == 5 and one["episodes"] == two["episodes"]


def test_old_spellings_still_work_and_say_what_to_type(dqn_run, tmp_path):
    result = zoo("check", dqn_run.parent, "--seed", "1", "--json")
    assert result.exit_code == 0 and len(result.json()) == 1
    assert "note: --seed is now --run-seed" in result.stderr
    evaluated = zoo(
        "enjoy",
        "--exp-name",
        "dqn",
        "--env-id",
        "CartPole-v1",
        "--runs-dir",
        dqn_run.parent,
        "--eval-episodes",
        "2",
        "--out",
        tmp_path / "e.json",
        "-q",
    )
    assert evaluated.exit_code == 0, evaluated.stderr
    assert json.loads((tmp_path / "e.json").read_text())["num_episodes"] == 2
    assert "note: --eval-episodes is now --episodes" in evaluated.stderr


def test_version_reports_the_libraries_found():
    result = zoo("--version")
    assert result.exit_code == 0
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert lines["zoo"] == __import__("zoo").__version__
    from importlib.metadata import version

    assert lines["torch"] == version("torch") and lines["gymnasium"] == version("gymnasium")
    assert lines["stable-baselines3"] == version("stable-baselines3") and lines["skrl"] == version("skrl")
    assert lines["rsl-rl-lib"] == version("rsl-rl-lib")


def test_versions_read_from_dist_info_are_importlib_metadata_s():
    """zoo --version and the check memo read versions from the dist-info files directly: the same answer as
    importlib.metadata for every installed distribution, under each spelling of its name, and for none."""
    from importlib.metadata import distributions, version

    from zoo import dist_info

    names = {d.metadata["Name"] for d in distributions()}
    assert len(names) > 20
    for name in names:
        for spelling in (
            name,
            name.upper(),
            name.replace("-", "_"),
            name.replace("_", "-").replace(".", "-"),
        ):
            assert dist_info.version(spelling) == version(spelling), spelling
    assert dist_info.version("no-such-distribution-zoo") is None


def test_plugin_group_is_looked_up_only_when_a_distribution_names_it(tmp_path, monkeypatch):
    """framework_names() skips importlib.metadata's entry points when no entry_points.txt names the group,
    and asks it when one does (a dist-info folder put on sys.path)."""
    from zoo import dist_info

    assert not dist_info.may_declare("zoo.no-such-group")
    info = tmp_path / "zoo_example_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: zoo-example-plugin\nVersion: 1.0\n\nText\n")
    (info / "entry_points.txt").write_text("[zoo.no-such-group]\nexample = zoo_example_plugin:ADAPTER\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    dist_info._index_of.cache_clear()
    try:
        assert dist_info.may_declare("zoo.no-such-group")
        assert dist_info.version("zoo_example.plugin") == "1.0"
    finally:
        monkeypatch.undo()
        dist_info._index_of.cache_clear()


def test_check_lists_a_path_given_twice_once_and_names_rows_by_their_path(tmp_path):
    for parent in ("a", "b"):
        make_run(tmp_path / parent, "CartPole-v1", "dqn")
    again = zoo("check", tmp_path / "a", f"{tmp_path / 'a'}/", tmp_path / "a" / ".." / "a", "--json")
    assert again.exit_code == 0 and len(again.json()) == 1
    both = zoo("check", tmp_path / "a", tmp_path / "b", env={"COLUMNS": "300"})
    assert both.exit_code == 0
    for parent in ("a", "b"):
        assert f"{parent}/runs/CartPole-v1__dqn__1__1700000000" in both.stdout


def test_a_check_hint_names_the_flag_that_then_says_what_the_run_is(tmp_path):
    save_model(tmp_path / "runs" / "my-run" / "dqn.cleanrl_model", "dqn", "CartPole-v1")
    report = zoo("check", tmp_path / "runs", "--json").json()[0]
    assert report["status"] == "warning" and report["hint"] == "pass --env-id"
    checked = zoo("check", tmp_path / "runs", "--env-id", "CartPole-v1", "--json").json()[0]
    assert checked["status"] == "ok" and checked["run"]["env_id"] == "CartPole-v1"
    evaluated = zoo("eval", tmp_path / "runs" / "my-run", "--env-id", "CartPole-v1", "-n", "1", "-q")
    assert evaluated.exit_code == 0, evaluated.stderr


def test_nothing_found_names_every_framework_layout(tmp_path):
    (tmp_path / "empty").mkdir()
    result = zoo("check", tmp_path / "empty")
    assert result.exit_code == 1
    for framework in ("CleanRL:", "SB3:", "skrl:", "rsl_rl:"):
        assert framework in result.stderr


def test_device_cuda_on_an_exported_file_is_refused(dqn_run, tmp_path):
    assert zoo("export", dqn_run, "--out", tmp_path / "dqn.onnx", "-q").exit_code == 0
    result = zoo("eval", tmp_path / "dqn.onnx", "--device", "cuda", "-n", "1")
    assert result.exit_code == 1 and "exported files on the CPU" in result.stderr
    assert not (tmp_path / "dqn.onnx.eval.json").exists()


def test_a_dry_run_push_leaves_the_run_dir_untouched(dqn_run, tmp_path):
    before = _snapshot(dqn_run)
    result = zoo("push", dqn_run, "--hf-entity", "me", "--episodes", "2", "--stage-dir", tmp_path / "stage")
    assert result.exit_code == 0, result.stderr
    assert "dry run: nothing was uploaded" in result.stdout
    assert _snapshot(dqn_run) == before and (tmp_path / "stage" / "eval.json").is_file()


def test_video_paths_are_absolute_however_the_run_is_named(dqn_run, monkeypatch):
    """``./run`` and the absolute path plan the same video folder (CleanRL's videos/ beside runs/)."""
    import zoo as api

    monkeypatch.chdir(dqn_run.parent)
    relative = api.plan(Path(".") / dqn_run.name, settings=api.EvalSettings(capture_video=True), out=None)
    absolute = api.plan(dqn_run, settings=api.EvalSettings(capture_video=True), out=None)
    assert (
        relative.video_dir == absolute.video_dir == dqn_run.parent.parent / "videos" / f"{dqn_run.name}-eval"
    )


def test_cleanrl_card_reproduces_the_exact_training_command(dqn_run, tmp_path):
    result = zoo("push", dqn_run, "--repo-id", "me/dqn", "--episodes", "2", "--stage-dir", tmp_path / "stage")
    assert result.exit_code == 0, result.stderr
    card = (tmp_path / "stage" / "README.md").read_text()
    command = card.split("```bash\n", 2)[2].split("```", 1)[0]
    assert "python cleanrl/dqn.py" in command and "--total-timesteps 50000" in command
    assert "--env-id CartPole-v1" in command and "--seed 1" in command and "--learning-starts 1000" in command
    assert "--batch-size 128" in command  # a real flag of dqn.py (only PPO computes its batch size)
    assert command.rstrip().endswith("--save-model")  # the run holds a model: it was trained with it


def test_a_filter_that_matches_nothing_names_the_flag_given(dqn_run):
    result = zoo("check", dqn_run.parent, "--run-seed", "7")
    assert result.exit_code == 1 and "no run matches --run-seed 7" in result.stderr


def test_push_refuses_a_secret_before_it_evaluates_anything(dqn_run, tmp_path):
    (dqn_run / ".env").write_text("WANDB_API_KEY=abc\n")
    result = zoo("push", dqn_run, "--hf-entity", "me", "--episodes", "2", "--stage-dir", tmp_path / "stage")
    assert result.exit_code == 3 and "looks like a secret" in result.stderr
    assert "evaluating first" not in result.stderr and not (tmp_path / "stage").exists()


def test_check_of_a_model_file_names_its_run(dqn_run):
    result = zoo("check", dqn_run / "dqn.cleanrl_model", env={"COLUMNS": "300"})
    assert result.exit_code == 0 and dqn_run.name in result.stdout


def test_push_labels_the_run_model_as_the_weights(dqn_run, tmp_path):
    result = zoo("push", dqn_run, "--hf-entity", "me", "-n", "1", "--json", "--stage-dir", tmp_path / "stage")
    assert result.exit_code == 0, result.stderr
    what = {f["name"]: f["what"] for f in result.json()["files"]}
    assert what["dqn.cleanrl_model"] == "the model weights" and what["eval.json"] == "zoo eval results"
    assert "evaluating first (the run has no eval.json): 1 episode," in result.stderr
