"""``zoo.hub.push.upload`` says what the hub did: a commit, a PR, nothing, or why it failed, in one line.

Against ``zoo hub serve`` on 127.0.0.1 with a token file. Each upload runs in a fresh Python subprocess,
because huggingface_hub reads HF_ENDPOINT, HF_HUB_DISABLE_XET, HF_HOME and HF_TOKEN at import; the
subprocess stages the files with :func:`zoo.hub.push.stage` and prints ``upload``'s dict (or the
ZooError's message and hint) as JSON. Its whole stdout and stderr come back, to check the token never
shows.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import EXAMPLES
from test_hub_server import hub_log

from zoo.hub_server.server import HubServer
from zoo.hub_server.storage import HubStorage

ALICE, BOB = "hf_ALICEwrites0123456789abcdefghijklmn", "hf_BOBwritesOwn0123456789abcdefghijklm"
UNKNOWN = "hf_UNKNOWNtoken0123456789abcdefghijklm"
REPO = "alice/cartpole"

SCRIPT = """
import json, sys
from pathlib import Path
from zoo.errors import ZooError
from zoo.hub.push import stage, upload

src, stage_dir, kwargs = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
repo_id = kwargs.pop("repo_id")
sources = sorted((p.name, p) for p in src.iterdir())
staging = stage(repo_id, stage_dir, sources, "model.pt", "---\\nlibrary_name: cleanrl\\n---\\n# a card\\n")
args = dict(private=False, revision=None, create_pr=False, message="zoo push: test")
args.update(kwargs)
try:
    out = {"result": upload(staging, **args)}
except ZooError as exc:
    out = {"error": exc.message, "hint": exc.hint}
print("RESULT " + json.dumps(out))
"""


@pytest.fixture
def log() -> Iterator[io.StringIO]:
    with hub_log() as stream:  # the server's log lines
        yield stream


@pytest.fixture
def hub(tmp_path, log):
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"{ALICE} alice lab\n{BOB} bob\n")
    with HubServer(tmp_path / "root", token_file=tokens).start() as server:
        yield server
    for token in (ALICE, BOB, UNKNOWN):
        assert token not in log.getvalue()


@pytest.fixture
def run_files(tmp_path):
    """What a run dir holds, in small: weights (an LFS file) and a text file."""
    src = tmp_path / "run"
    src.mkdir()
    (src / "model.pt").write_bytes(b"\0weights" * 64)
    (src / "eval.json").write_text('{"return_mean": 500.0}\n')
    return src


class Pushed:
    def __init__(self, proc: subprocess.CompletedProcess):
        self.output = proc.stdout + proc.stderr
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
        assert proc.returncode == 0 and line, self.output[-4000:]
        data = json.loads(line.removeprefix("RESULT "))
        self.result, self.error, self.hint = data.get("result"), data.get("error"), data.get("hint")


def push(hub, src, tmp_path, token: str | None = ALICE, **kwargs) -> Pushed:
    """``upload()`` of ``src`` in a clean interpreter, as the CLI calls it after consent."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env.update(
        HF_ENDPOINT=hub.url,
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HOME=str(tmp_path / "hf-home"),
    )
    if token:
        env["HF_TOKEN"] = token
    kwargs.setdefault("repo_id", REPO)
    cmd = [
        sys.executable,
        "-c",
        textwrap.dedent(SCRIPT),
        str(src),
        str(tmp_path / "stage"),
        json.dumps(kwargs),
    ]
    return Pushed(subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120))


def refs(hub: HubServer, repo_id: str = REPO) -> dict:
    return HubStorage(hub.storage.root).refs(repo_id)


def _repo_files(hub: HubServer, repo_id: str) -> set[str]:
    """The paths main's head commit holds, read from the hub's store."""
    storage = HubStorage(hub.storage.root)
    return set(storage.load_commit(repo_id, storage.refs(repo_id)["heads"]["main"]).files)


# ---------------------------------------------------------------------------------------------- commits
def test_first_upload_commits_and_a_second_identical_one_is_unchanged(hub, run_files, tmp_path):
    first = push(hub, run_files, tmp_path).result
    assert first["status"] == "committed" and first["revision"] == "main" and not first["branch_created"]
    assert refs(hub)["heads"]["main"] == first["commit"]
    assert first["commit_url"] == f"{hub.url}/{REPO}/commit/{first['commit']}"
    assert first["summary"] == f"committed {first['commit'][:7]} to {REPO} @ main: {first['commit_url']}"
    assert first["pr_url"] is None and first["pr_revision"] is None

    again = push(hub, run_files, tmp_path)
    second = again.result
    assert second["status"] == "unchanged" and second["commit"] == first["commit"]
    assert second["summary"] == (
        f"nothing changed: {REPO} @ main already holds these files (commit {first['commit'][:7]})"
    )
    assert "pushed" not in second["summary"] and "committed" not in second["summary"]
    assert "No files have been modified" not in again.output  # huggingface_hub's warning: the summary says it
    assert refs(hub)["heads"]["main"] == first["commit"]

    (run_files / "eval.json").write_text('{"return_mean": 499.0}\n')
    third = push(hub, run_files, tmp_path).result
    assert third["status"] == "committed" and third["commit"] not in (first["commit"], None)


# ---------------------------------------------------------------------------------------------- PRs
def test_create_pr_opens_a_real_pull_request(hub, run_files, tmp_path):
    base = push(hub, run_files, tmp_path).result["commit"]
    (run_files / "eval.json").write_text('{"return_mean": 12.0}\n')
    result = push(hub, run_files, tmp_path, create_pr=True).result
    assert result["status"] == "pr-opened"
    assert result["pr_revision"] == "refs/pr/1" and result["pr_url"] == f"{hub.url}/{REPO}/discussions/1"
    assert result["summary"] == (
        f"opened pull request refs/pr/1 on {REPO} against main (commit {result['commit'][:7]}): {result['pr_url']}"
    )
    assert refs(hub) == {"heads": {"main": base}, "pr": {"1": result["commit"]}, "tags": {}}  # main untouched


def test_create_pr_with_nothing_changed_opens_none_and_says_so(hub, run_files, tmp_path):
    base = push(hub, run_files, tmp_path).result["commit"]
    result = push(hub, run_files, tmp_path, create_pr=True).result
    assert result["status"] == "unchanged" and result["pr_url"] is None and result["pr_revision"] is None
    assert result["summary"] == (
        f"nothing changed, so no pull request was opened: {REPO} @ main already holds these files "
        f"(commit {base[:7]})"
    )
    assert refs(hub)["pr"] == {}


def test_create_pr_that_the_hub_ignores_is_not_reported_as_a_pr(hub, run_files, tmp_path, monkeypatch):
    """A hub without pull requests commits to the branch: the result says so, and gives no PR url."""
    push(hub, run_files, tmp_path)
    commit = HubStorage.commit
    monkeypatch.setattr(HubStorage, "commit", lambda self, *a, create_pr=False, **kw: commit(self, *a, **kw))
    (run_files / "eval.json").write_text('{"return_mean": 3.0}\n')
    result = push(hub, run_files, tmp_path, create_pr=True).result
    assert result["status"] == "committed-without-pr" and result["pr_url"] is None
    assert refs(hub)["heads"]["main"] == result["commit"] and refs(hub)["pr"] == {}
    assert result["summary"] == (
        f"the hub opened no pull request: commit {result['commit'][:7]} went straight to {REPO} @ main: "
        f"{result['commit_url']}"
    )


def test_create_pr_with_another_branch_is_refused_before_any_request(hub, run_files, tmp_path, log):
    pushed = push(hub, run_files, tmp_path, create_pr=True, revision="exp")
    assert (
        pushed.error == "--create-pr opens a pull request against main, so it cannot go with --revision exp"
    )
    assert "drop --revision" in pushed.hint
    assert log.getvalue() == ""


def test_an_open_pr_ref_takes_more_commits(hub, run_files, tmp_path):
    push(hub, run_files, tmp_path)
    (run_files / "eval.json").write_text('{"return_mean": 1.0}\n')
    push(hub, run_files, tmp_path, create_pr=True)
    (run_files / "eval.json").write_text('{"return_mean": 2.0}\n')
    result = push(hub, run_files, tmp_path, revision="refs/pr/1").result
    assert result["status"] == "committed" and result["revision"] == "refs/pr/1"
    assert refs(hub)["pr"]["1"] == result["commit"] and not result["branch_created"]


# ---------------------------------------------------------------------------------------------- branches
def test_a_missing_branch_is_created_from_main_and_the_summary_says_so(hub, run_files, tmp_path):
    main = push(hub, run_files, tmp_path).result["commit"]
    (run_files / "eval.json").write_text('{"return_mean": 7.0}\n')
    result = push(hub, run_files, tmp_path, revision="exp-1").result
    assert result["status"] == "committed" and result["branch_created"] and result["revision"] == "exp-1"
    assert result["summary"].startswith(
        f"created branch 'exp-1' in {REPO} from main; committed {result['commit'][:7]} to {REPO} @ exp-1: "
    )
    assert refs(hub)["heads"] == {"main": main, "exp-1": result["commit"]}
    again = push(hub, run_files, tmp_path, revision="refs/heads/exp-1").result
    assert again["status"] == "unchanged" and not again["branch_created"] and again["revision"] == "exp-1"


def test_a_missing_pr_ref_has_its_own_message(hub, run_files, tmp_path):
    push(hub, run_files, tmp_path)
    pushed = push(hub, run_files, tmp_path, revision="refs/pr/7")
    assert pushed.error == f"pull request refs/pr/7 does not exist in {REPO}"
    assert "--create-pr" in pushed.hint and "HF_TOKEN" not in pushed.error + pushed.hint


def test_a_branch_the_hub_will_not_create_has_its_own_message(hub, run_files, tmp_path):
    pushed = push(hub, run_files, tmp_path, revision="bad..name")
    assert pushed.error.startswith(
        f"branch 'bad..name' does not exist in {REPO}, and {hub.url} did not create it"
    )
    assert "(400: invalid branch name" in pushed.error and "write access" not in pushed.error
    assert set(refs(hub)["heads"]) == {"main"}


def test_a_commit_id_as_revision_is_refused(hub, run_files, tmp_path):
    pushed = push(hub, run_files, tmp_path, revision="a" * 40)
    assert pushed.error.startswith(f"--revision {'a' * 40} is a commit id")


# ---------------------------------------------------------------------------------------------- tokens
def test_an_unknown_token_has_its_own_message_and_never_shows(hub, run_files, tmp_path):
    pushed = push(hub, run_files, tmp_path, token=UNKNOWN)
    assert (
        pushed.error == f"{hub.url} does not accept the token in HF_TOKEN (401: unknown, revoked or expired)"
    )
    assert "hf auth login" in pushed.hint
    assert UNKNOWN not in pushed.output and UNKNOWN[3:12] not in pushed.output


def test_no_token_where_the_hub_wants_one_says_so(hub, run_files, tmp_path):
    pushed = push(hub, run_files, tmp_path, token=None)
    assert pushed.error == f"{hub.url} wants a token to push to {REPO}, and none is set (401)"
    assert "HF_TOKEN" in pushed.hint


@pytest.mark.parametrize("repo_exists", [False, True])
def test_a_token_without_write_access_has_its_own_message(hub, run_files, tmp_path, repo_exists):
    if repo_exists:  # then create_repo(exist_ok) passes and the 403 comes from the upload itself
        push(hub, run_files, tmp_path)
    pushed = push(hub, run_files, tmp_path, token=BOB)
    assert pushed.error == (
        f"the token may not write to alice on {hub.url} (403: user bob may not write to namespace alice)"
    )
    assert "write access to alice" in pushed.hint and BOB not in pushed.output
    assert "does not accept" not in pushed.error  # not confused with a bad token


def test_an_unreachable_hub_is_a_network_message(run_files, tmp_path):
    class Gone:
        url = "http://127.0.0.1:9"  # discard port: nothing listens

    pushed = push(Gone, run_files, tmp_path)
    assert pushed.error.startswith(f"cannot reach {Gone.url} to push {REPO}: ")
    assert ALICE not in pushed.output


# ---------------------------------------------------------------------------------------------- CLI
def _run_and_env(hub, tmp_path) -> tuple[Path, dict]:
    """A copy of the bundled dqn run, and the environment of a ``zoo`` process pushing as alice."""
    src = next(EXAMPLES.glob("CartPole-v1__dqn__*"))
    run = tmp_path / "runs" / src.name
    shutil.copytree(src, run)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_", "ZOO_ALLOW"))}
    env.update(
        HF_ENDPOINT=hub.url,
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HOME=str(tmp_path / "hf-home"),
        HF_TOKEN=ALICE,
    )
    return run, env


def test_zoo_push_yes_twice_reports_unchanged_end_to_end(hub, tmp_path):
    """The real ``zoo push RUN --repo-id X --yes --json`` on an evaluated run: upload's fields reach the
    CLI's summary, and pushing the same run again is "unchanged"."""
    run, env = _run_and_env(hub, tmp_path)
    zoo = [sys.executable, "-m", "zoo"]
    evaluated = subprocess.run(
        [*zoo, "eval", str(run), "-n", "2", "--quiet", "--out", str(run / "eval.json")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert evaluated.returncode == 0, evaluated.stderr
    cmd = [
        *zoo,
        "push",
        str(run),
        "--repo-id",
        "alice/dqn",
        "--yes",
        "--json",
        "--stage-dir",
        str(tmp_path / "stage"),
    ]
    first, second = (subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300) for _ in "12")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    one, two = json.loads(first.stdout), json.loads(second.stdout)
    assert one["status"] == "committed" and two["status"] == "unchanged" and two["commit"] == one["commit"]
    assert two["summary"].startswith("nothing changed: alice/dqn @ main already holds these files")
    files = _repo_files(hub, "alice/dqn")
    assert "README.md" in files and ".zoo-staged" not in files  # the staging's mark stays local
    assert "No files have been modified" not in second.stderr and ALICE not in first.stderr + second.stderr


def test_a_run_evaluated_by_its_first_push_is_unchanged_on_the_second(hub, tmp_path):
    """Without an eval.json, the first ``--yes`` push evaluates, publishes and keeps that eval.json in the
    run dir; the card lists files by name, so the second push finds nothing to change."""
    run, env = _run_and_env(hub, tmp_path)
    cmd = [
        sys.executable,
        "-m",
        "zoo",
        "push",
        str(run),
        "--repo-id",
        "alice/dqn2",
        "--yes",
        "--json",
        "--episodes",
        "2",
        "--stage-dir",
        str(tmp_path / "stage"),
    ]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["made"] == ["eval.json"] and (run / "eval.json").is_file()
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["status"] == "unchanged" and "evaluating first" not in second.stderr


# ---------------------------------------------------------------------------------------------- releases
def test_the_commit_deletes_what_the_previous_release_listed_and_nothing_else(hub, run_files, tmp_path):
    """The second upload's one commit deletes eval.json (the first release's, not staged now); files the
    manifest does not list stay, and so does .gitattributes even when a (tampered) manifest lists it."""
    from zoo.hub.release import MANIFEST
    from zoo.hub_server.store_records import Put

    first = push(hub, run_files, tmp_path).result
    assert [c["change"] for c in first["changes"]] == [
        "added"
    ] * 4  # eval.json, model.pt, README.md, manifest
    storage = HubStorage(hub.storage.root)
    head = storage.load_commit(REPO, first["commit"])
    listed = json.loads(storage.read_blob(head.files[MANIFEST]))
    assert set(listed["files"]) == {"eval.json", "model.pt", "README.md"}
    listed["files"][".gitattributes"] = {"sha256": "0" * 64, "size": 1}
    hand = [
        Put(".gitattributes", storage.regular_file(b"*.pt filter=lfs diff=lfs merge=lfs -text\n")),
        Put("notes.md", storage.regular_file(b"mine\n")),
        Put(MANIFEST, storage.regular_file(json.dumps(listed).encode())),
    ]
    by_hand, _ = storage.commit(REPO, "main", hand, message="by hand", author="alice")

    (run_files / "eval.json").unlink()
    second = push(hub, run_files, tmp_path).result
    assert second["status"] == "committed"
    assert {c["name"]: c["change"] for c in second["changes"]} == {
        "model.pt": "unchanged",
        "README.md": "unchanged",
        MANIFEST: "replaced",
        "eval.json": "deleted",
    }
    assert second["compared_with"] == {
        "repo_id": REPO,
        "revision": "main",
        "commit": by_hand.id,
        "previous_release": MANIFEST,
        "kept": ["notes.md"],
    }
    now = storage.load_commit(REPO, second["commit"])
    assert now.parent == by_hand.id
    assert set(now.files) == {"model.pt", "README.md", MANIFEST, "notes.md", ".gitattributes"}
