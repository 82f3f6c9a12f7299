"""Re-pushes are exact, dry runs say what changes, and a lone model file is a release.

Against ``zoo hub serve`` on 127.0.0.1, with the real ``zoo`` CLI in subprocesses (huggingface_hub reads
HF_ENDPOINT at import). A re-push deletes, in the commit that uploads it, what the previous zoo release had
and this one has not (zoo_release.json lists it; an older zoo's card table stands in for it), and leaves the
files zoo never wrote. The runs are real: the bundled dqn run, a dqn run trained again by
examples/train_examples.py, SB3 models saved by ``model.save()`` with and without VecNormalize.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import EXAMPLES, REPO
from test_hub_server import hub_log

from zoo.hub.release import MANIFEST, card_names, manifest_names
from zoo.hub_server.server import HubServer
from zoo.hub_server.storage import HubStorage
from zoo.hub_server.store_records import RepoNotFound
from zoo.release.forms import PURPOSE

#: The framework-free forms every release of an exportable policy carries (zoo.release).
FORMS = tuple(PURPOSE)

ALICE = "hf_ALICEwrites0123456789abcdefghijklmn"


@pytest.fixture
def log():
    with hub_log() as stream:  # the server's log lines
        yield stream


@pytest.fixture
def hub(tmp_path, log):
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"{ALICE} alice\n")
    with HubServer(tmp_path / "root", token_file=tokens).start() as server:
        yield server


def _env(hub, tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_", "ZOO_ALLOW"))}
    env.update(
        HF_ENDPOINT=hub.url,
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HOME=str(tmp_path / "hf-home"),
        HF_TOKEN=ALICE,
        COLUMNS="200",
    )
    return env


def _zoo(hub, tmp_path, *args) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "zoo", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=_env(hub, tmp_path), timeout=600)


def _push(hub, tmp_path, target, *args) -> dict:
    """``zoo push TARGET ... --json``: its JSON, after checking it exited 0."""
    proc = _zoo(hub, tmp_path, "push", target, "--stage-dir", tmp_path / "stage", "--json", *args)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


def _hf(hub, tmp_path, code: str) -> None:
    """huggingface_hub as a user calls it, in its own interpreter (``api`` is an HfApi)."""
    script = "from huggingface_hub import HfApi\napi = HfApi()\n" + textwrap.dedent(code)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=_env(hub, tmp_path), timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-4000:]


def _head(hub, repo_id: str):
    storage = HubStorage(hub.storage.root)
    return storage.load_commit(repo_id, storage.refs(repo_id)["heads"]["main"])


def _changes(result: dict) -> dict[str, str]:
    return {c["name"]: c["change"] for c in result["changes"]}


def _dqn_copy(tmp_path) -> Path:
    src = next(EXAMPLES.glob("CartPole-v1__dqn__*"))
    run = tmp_path / "runs" / src.name
    shutil.copytree(src, run)
    return run


@pytest.fixture(scope="module")
def retrained_dqn(tmp_path_factory) -> Path:
    """The dqn experiment trained again, seed 1 as the bundled run (so the same repo), 400 steps, by
    examples/train_examples.py: a new run dir with its own events file."""
    import torch

    spec = importlib.util.spec_from_file_location("train_examples", REPO / "examples" / "train_examples.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["train_examples"] = module  # dataclasses resolve their module by name
    threads = torch.get_num_threads()
    try:
        spec.loader.exec_module(module)
        torch.set_num_threads(1)
        out = tmp_path_factory.mktemp("retrained") / "runs"
        out.mkdir()
        args = module.DQNArgs(total_timesteps=400, learning_starts=100, eval_frequency=200, eval_episodes=2)
        module.train_dqn(args, out)
    finally:
        torch.set_num_threads(threads)
        sys.modules.pop("train_examples", None)
    (run,) = out.iterdir()
    return run


@pytest.fixture(scope="module")
def sb3_releases(tmp_path_factory) -> dict[str, Path]:
    """What SB3 users save: ``normalized/`` holds a PPO zip trained behind VecNormalize with the statistics
    ``VecNormalize.save`` wrote beside it (and a notes file of the user's); ``plain/model.zip`` is
    examples/train_sb3.py's PPO, no normalizer. 256 steps each, on CartPole-v1."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize
    from train_sb3 import train

    root = tmp_path_factory.mktemp("sb3-releases")
    normalized = root / "normalized"
    normalized.mkdir()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        venv = VecNormalize(make_vec_env("CartPole-v1", n_envs=2, seed=0))
        model = PPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
        model.learn(256)
        model.save(normalized / "model.zip")
        venv.save(str(normalized / "vec_normalize.pkl"))
    finally:
        torch.set_num_threads(threads)
    (normalized / "notes.txt").write_text("tried lr 3e-4 first\n")
    plain = train("ppo", "CartPole-v1", 256, 1, root / "plain" / "model.zip")
    return {"normalized": normalized, "plain": plain}


# ---------------------------------------------------------------------------------------------- re-push
def test_a_repush_after_a_retrain_deletes_the_old_events_file_and_replay_in_its_commit(
    hub, tmp_path, retrained_dqn
):
    """The first release has the bundled run's events file and a replay; the retrained run has its own events
    file and no replay. The dry run (with --allow-download) says so file by file, the upload deletes both in
    its one commit, and a notes file uploaded by hand stays."""
    first_run = _dqn_copy(tmp_path)
    old_events = next(first_run.glob("events.out.tfevents.*")).name
    first = _push(hub, tmp_path, first_run, "--repo-id", "alice/dqn", "--capture-video", "-n", "1", "--yes")
    assert {old_events, "replay.mp4", MANIFEST} <= {f["name"] for f in first["files"]}
    assert set(_changes(first).values()) == {"added"}
    _hf(
        hub,
        tmp_path,
        """api.upload_file(path_or_fileobj=b"- try a bigger buffer\\n", path_in_repo="notes.md",
                                          repo_id="alice/dqn", commit_message="my notes")""",
    )
    before = _head(hub, "alice/dqn")

    new_run = tmp_path / "runs" / retrained_dqn.name
    shutil.copytree(retrained_dqn, new_run)
    new_events = next(new_run.glob("events.out.tfevents.*")).name
    assert new_events != old_events
    dry = _push(hub, tmp_path, new_run, "--repo-id", "alice/dqn", "-n", "2", "--allow-download")
    planned = _changes(dry)
    assert planned[old_events] == planned["replay.mp4"] == "deleted"
    assert planned[new_events] == "added"
    assert planned["dqn.cleanrl_model"] == planned["README.md"] == planned[MANIFEST] == "replaced"
    assert "notes.md" not in planned
    assert dry["compared_with"] == {
        "repo_id": "alice/dqn",
        "revision": "main",
        "commit": before.id,
        "previous_release": MANIFEST,
        "kept": ["notes.md"],
    }
    assert _head(hub, "alice/dqn").id == before.id  # a dry run writes nothing

    second = _push(hub, tmp_path, new_run, "--repo-id", "alice/dqn", "-n", "2", "--yes")
    assert second["status"] == "committed" and second["changes"][-2:] == [
        {"name": old_events, "change": "deleted", "size": before.files[old_events].size},
        {"name": "replay.mp4", "change": "deleted", "size": before.files["replay.mp4"].size},
    ]
    head = _head(hub, "alice/dqn")
    assert head.id == second["commit"] and head.parent == before.id  # one commit: uploads and deletions
    staged = {f["name"] for f in second["files"]}
    assert set(head.files) == staged | {"notes.md"}
    manifest = json.loads(HubStorage(hub.storage.root).read_blob(head.files[MANIFEST]))
    assert set(manifest["files"]) == staged - {MANIFEST}
    assert manifest["files"]["dqn.cleanrl_model"]["size"] == (new_run / "dqn.cleanrl_model").stat().st_size


def test_a_repo_an_older_zoo_pushed_is_cleaned_by_its_cards_file_table(hub, tmp_path, log):
    """Without zoo_release.json (an older zoo's push), the file table of the card zoo wrote names the previous
    release; a card zoo did not write names nothing, and nothing is deleted."""
    run = _dqn_copy(tmp_path)
    _push(hub, tmp_path, run, "--repo-id", "alice/old", "--capture-video", "-n", "1", "--yes")
    assert (run / "eval.json").is_file()  # kept by the upload: the next push evaluates nothing
    _hf(hub, tmp_path, f'api.delete_file("{MANIFEST}", repo_id="alice/old")')  # as an older zoo left the repo

    by_card = _push(hub, tmp_path, run, "--repo-id", "alice/old", "--allow-download")
    assert by_card["compared_with"]["previous_release"] == "README.md"
    assert _changes(by_card)["replay.mp4"] == "deleted" and _changes(by_card)[MANIFEST] == "added"
    assert _changes(by_card)["dqn.cleanrl_model"] == "unchanged"

    _hf(
        hub,
        tmp_path,
        """api.upload_file(path_or_fileobj=b"---\\nlicense: mit\\n---\\n# my own card\\n",
                                          path_in_repo="README.md", repo_id="alice/old")""",
    )
    by_hand = _zoo(
        hub,
        tmp_path,
        "push",
        run,
        "--repo-id",
        "alice/old",
        "--stage-dir",
        tmp_path / "stage",
        "--allow-download",
    )
    assert by_hand.returncode == 0, by_hand.stderr
    assert "deleted" not in by_hand.stdout
    assert "1 other file stays (no earlier zoo release there lists its files)" in " ".join(
        by_hand.stdout.split()
    )
    assert "comparing with alice/old on" in by_hand.stderr


def test_without_allow_download_the_dry_run_asks_the_hub_nothing(hub, tmp_path, log):
    run = _dqn_copy(tmp_path)
    proc = _zoo(
        hub, tmp_path, "push", run, "--repo-id", "alice/dqn", "-n", "1", "--stage-dir", tmp_path / "s"
    )
    assert proc.returncode == 0, proc.stderr
    assert (
        "not compared with alice/dqn on the hub: pass --allow-download to list what this push adds, "
        "replaces and deletes there"
    ) in " ".join(proc.stdout.split())
    assert "change" not in proc.stdout.splitlines()[1]  # no change column: nothing was compared
    assert log.getvalue() == ""  # not one request reached the hub
    as_json = _zoo(
        hub,
        tmp_path,
        "push",
        run,
        "--repo-id",
        "alice/dqn",
        "-n",
        "1",
        "--stage-dir",
        tmp_path / "s",
        "--json",
    )
    assert (
        json.loads(as_json.stdout)["changes"] is None and json.loads(as_json.stdout)["compared_with"] is None
    )
    assert log.getvalue() == ""


def test_a_dry_run_against_a_repo_that_does_not_exist_lists_every_file_as_added(hub, tmp_path):
    run = _dqn_copy(tmp_path)
    dry = _push(hub, tmp_path, run, "--repo-id", "alice/new", "-n", "1", "--allow-download")
    assert set(_changes(dry).values()) == {"added"} and len(dry["changes"]) == len(dry["files"])
    assert dry["compared_with"]["commit"] is None
    with pytest.raises(RepoNotFound):
        HubStorage(hub.storage.root).repo_meta("alice/new")  # the dry run created nothing


# ---------------------------------------------------------------------------------------------- SB3
def test_an_sb3_repo_whose_new_model_has_no_normalizer_loses_the_old_one(hub, tmp_path, sb3_releases):
    """``zoo push FOLDER`` of a folder holding a zip and its vec_normalize.pkl publishes both (not the user's
    notes beside them); ``zoo push model.zip --env-id`` of a model trained without VecNormalize then deletes
    the statistics, so ``zoo enjoy`` of the repo scores the new model as it is, not with stale statistics."""
    folder = tmp_path / "normalized"
    shutil.copytree(sb3_releases["normalized"], folder)
    first = _push(
        hub, tmp_path, folder, "--env-id", "CartPole-v1", "--hf-entity", "alice", "-n", "3", "--yes"
    )
    assert first["repo_id"] == "alice/ppo-CartPole-v1" and first["made"] == ["eval.json"]
    assert {f["name"] for f in first["files"]} == {
        "model.zip",
        "vec_normalize.pkl",
        "eval.json",
        "ppo-CartPole-v1.zip",
        "images/eval_returns.png",
        "README.md",
        MANIFEST,
        *FORMS,
    }
    assert sorted(p.name for p in folder.iterdir()) == [
        "model.zip",
        "notes.txt",
        "vec_normalize.pkl",
    ]  # untouched
    head = _head(hub, "alice/ppo-CartPole-v1")
    storage = HubStorage(hub.storage.root)
    assert storage.read_blob(head.files["vec_normalize.pkl"]) == (folder / "vec_normalize.pkl").read_bytes()

    plain = sb3_releases["plain"]
    second = _push(
        hub, tmp_path, plain, "--env-id", "CartPole-v1", "--hf-entity", "alice", "-n", "3", "--yes"
    )
    assert _changes(second)["vec_normalize.pkl"] == "deleted" and _changes(second)["model.zip"] == "replaced"
    files = _head(hub, "alice/ppo-CartPole-v1").files
    assert "vec_normalize.pkl" not in files and set(files) == {f["name"] for f in second["files"]}
    assert storage.read_blob(files["ppo-CartPole-v1.zip"]) == plain.read_bytes()

    def returns(*args) -> list[float]:
        out = tmp_path / f"eval-{len(list(tmp_path.glob('eval-*')))}.json"
        proc = _zoo(hub, tmp_path, *args, "-n", "4", "--out", out)
        assert proc.returncode == 0, proc.stderr
        return [e["return"] for e in json.loads(out.read_text())["episodes"]]

    enjoyed = returns(
        "enjoy",
        "--exp-name",
        "sb3_ppo",
        "--env-id",
        "CartPole-v1",
        "--hf-entity",
        "alice",
        "--allow-download",
    )
    assert enjoyed == returns("eval", plain, "--env-id", "CartPole-v1")
    stale = tmp_path / "stale"
    stale.mkdir()
    shutil.copy(plain, stale / "model.zip")
    shutil.copy(folder / "vec_normalize.pkl", stale / "vec_normalize.pkl")
    assert (
        returns("eval", stale / "model.zip", "--env-id", "CartPole-v1") != enjoyed
    )  # what stale statistics do


def test_a_lone_model_file_and_a_folder_holding_it_stage_only_what_belongs_to_it(tmp_path, sb3_releases):
    """A lone zip is staged with its normalizer and nothing else of its folder (a secret-looking file beside it
    is not staged, hence not refused); an eval.json of this very file beside it is used, one of another
    model is not; every refusal still holds for what is staged."""
    from helpers import zoo

    folder = tmp_path / "models"
    shutil.copytree(sb3_releases["normalized"], folder)
    (folder / ".env").write_text("WANDB_API_KEY=abc\n")
    shutil.copy(sb3_releases["plain"], folder / "other.bin")
    stage = tmp_path / "stage"

    no_env = zoo("push", folder / "model.zip", "--repo-id", "me/ppo", "--stage-dir", stage)
    assert no_env.exit_code == 1 and "cannot tell the env id" in no_env.stderr and "--env-id" in no_env.stderr

    result = zoo(
        "push",
        folder / "model.zip",
        "--env-id",
        "CartPole-v1",
        "--repo-id",
        "me/ppo",
        "-n",
        "2",
        "--stage-dir",
        stage,
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    staged = {f["name"]: f["what"] for f in result.json()["files"]}
    assert set(staged) == {
        "model.zip",
        "vec_normalize.pkl",
        "eval.json",
        "ppo-CartPole-v1.zip",
        "images/eval_returns.png",
        "README.md",
        MANIFEST,
        *FORMS,
    }
    assert staged["vec_normalize.pkl"] == "read with the model when it is evaluated"
    assert result.json()["made"] == ["eval.json"] and not (folder / "eval.json").exists()

    evaluated = zoo("eval", folder / "model.zip", "--env-id", "CartPole-v1", "-n", "2", "--quiet")
    assert evaluated.exit_code == 0 and (folder / "eval.json").is_file()
    again = zoo(
        "push", folder, "--env-id", "CartPole-v1", "--repo-id", "me/ppo", "--stage-dir", stage, "--json"
    )
    assert again.exit_code == 0, again.stderr
    assert (
        again.json()["made"] == []
        and (stage / "eval.json").read_bytes() == (folder / "eval.json").read_bytes()
    )

    shutil.copy(sb3_releases["plain"], folder / "model.zip")  # the eval.json beside it is now another model's
    other = zoo(
        "push",
        folder,
        "--env-id",
        "CartPole-v1",
        "--repo-id",
        "me/ppo",
        "-n",
        "1",
        "--stage-dir",
        stage,
        "--json",
    )
    assert other.exit_code == 0 and other.json()["made"] == ["eval.json"]

    too_big = zoo(
        "push",
        folder,
        "--env-id",
        "CartPole-v1",
        "--repo-id",
        "me/ppo",
        "--stage-dir",
        stage,
        "--max-file-mb",
        "0.05",
    )
    assert too_big.exit_code == 3 and "model.zip is 0 MB, over the 0.05 MB limit" in " ".join(
        too_big.stderr.split()
    )


# ---------------------------------------------------------------------------------------------- lists
def test_the_previous_release_is_read_from_the_manifest_else_from_a_card_zoo_wrote(dqn_run):
    from helpers import zoo

    stage = dqn_run.parent.parent / "stage"
    assert zoo("push", dqn_run, "--repo-id", "me/dqn", "-n", "1", "--stage-dir", stage).exit_code == 0
    staged = {str(p.relative_to(stage)) for p in stage.rglob("*") if p.is_file()} - {".zoo-staged"}
    assert manifest_names((stage / MANIFEST).read_text()) == staged - {MANIFEST}
    assert card_names((stage / "README.md").read_text()) == staged
    assert card_names("---\nlicense: mit\n---\n# mine\n\n## Files\n\n| `notes.md` | mine |\n") is None
    assert manifest_names('{"format": "something-else", "files": {"a": {}}}') is None
    assert manifest_names("not json") is None
