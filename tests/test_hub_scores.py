"""The hub's leaderboard data (:mod:`zoo.hub_server.scores`) and ``--reevaluate`` (:mod:`zoo.hub_server.reevaluate`).

One token hub on 127.0.0.1 holds real repos: the bundled dqn run pushed by the real ``zoo push --yes``
(which evaluates it with ``zoo eval`` first), and, made from that push's staged files with the real
``huggingface_hub`` client in a subprocess, a copy whose model a later commit replaced, a copy whose card
boasts, a card-only repo and a private copy. The re-evaluation tests serve more copies from a second
hub that evaluates new main heads itself.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest
from helpers import EXAMPLES, write_malicious

from zoo.hub_server import scores
from zoo.hub_server.evaluations import EvaluationStore
from zoo.hub_server.protocol import TokenInfo
from zoo.hub_server.reevaluate import Reevaluator
from zoo.hub_server.server import HubServer

ALICE = "hf_ALICEscores0123456789abcdefghijklmn"
ENV = "CartPole-v1"
VERIFIED, REPLACED, BOASTING, CARD_ONLY, PRIVATE = (
    "lab/dqn-verified",
    "lab/dqn-replaced",
    "lab/dqn-boasting",
    "lab/card-only",
    "alice/dqn-private",
)

CLIENT = """
import json, sys
from pathlib import Path
from huggingface_hub import EvalResult, HfApi, ModelCard, ModelCardData

api = HfApi()
stage, c51 = Path(sys.argv[1]), Path(sys.argv[2])
readme = (stage / "README.md").read_text()
for repo, private in (("lab/dqn-replaced", False), ("lab/dqn-boasting", False), ("alice/dqn-private", True)):
    api.create_repo(repo, private=private)
    api.upload_folder(repo_id=repo, folder_path=stage, commit_message="the files zoo push staged")
api.upload_file(repo_id="lab/dqn-replaced", path_or_fileobj=c51.read_bytes(), path_in_repo="dqn.cleanrl_model",
                commit_message="a new model, the old eval.json")
value = readme.split("value: ", 1)[1].split("\\n", 1)[0]
api.upload_file(repo_id="lab/dqn-boasting", path_or_fileobj=readme.replace(value, "999.00 +/- 0.00").encode(),
                path_in_repo="README.md", commit_message="a better score, by hand")
result = EvalResult(task_type="reinforcement-learning", dataset_type="CartPole-v1", dataset_name="CartPole-v1",
                    metric_type="mean_reward", metric_name="mean_reward", metric_value="321.00 +/- 1.50")
card = ModelCard("---\\n" + ModelCardData(model_name="DQN", eval_results=[result]).to_yaml() + "\\n---\\n# card only\\n")
api.create_repo("lab/card-only")
api.upload_file(repo_id="lab/card-only", path_or_fileobj=str(card).encode(), path_in_repo="README.md")
print(json.dumps({"ok": True}))
"""


def _env(hub: HubServer, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_", "ZOO_ALLOW"))}
    env.update(
        HF_ENDPOINT=hub.url,
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        HF_HOME=str(home),
        HF_TOKEN=ALICE,
    )
    return env


def _run(cmd: list[str], env: dict[str, str]) -> str:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc.stdout


@pytest.fixture(scope="module")
def zoo_hub(tmp_path_factory):
    """The hub with the five repos, and the folder ``zoo push`` staged (its eval.json, model, card)."""
    tmp = tmp_path_factory.mktemp("scores")
    tokens = tmp / "tokens.txt"
    tokens.write_text(f"{ALICE} alice lab\n")
    src = next(EXAMPLES.glob(f"{ENV}__dqn__*"))
    run = tmp / "runs" / src.name
    shutil.copytree(src, run)
    with HubServer(tmp / "root", token_file=tokens).start() as hub:
        env = _env(hub, tmp / "hf-home")
        _run(
            [
                sys.executable,
                "-m",
                "zoo",
                "push",
                str(run),
                "--repo-id",
                VERIFIED,
                "--yes",
                "--episodes",
                "8",
                "--stage-dir",
                str(tmp / "stage"),
            ],
            env,
        )
        c51 = next(next(EXAMPLES.glob(f"{ENV}__c51__*")).glob("*.cleanrl_model"))
        _run([sys.executable, "-c", textwrap.dedent(CLIENT), str(tmp / "stage"), str(c51)], env)
        yield hub, tmp / "stage"


def _rows(hub, viewer=None) -> dict[str, scores.ScoreRow]:
    return {row.repo_id: row for row in scores.board(hub, ENV, viewer)}


def _leaderboard_row(eval_json: Path, tmp_path: Path):
    """What ``zoo leaderboard`` makes of this eval.json, in a run dir of its own."""
    from zoo.artifacts.runs import RunFilter
    from zoo.ranking.board import build_leaderboard
    from zoo.registry import load_registry

    src = next(EXAMPLES.glob(f"{ENV}__dqn__*"))
    run = tmp_path / "runs" / src.name
    shutil.copytree(src, run)
    shutil.copy(eval_json, run / "eval.json")
    board = build_leaderboard([tmp_path / "runs"], load_registry(), RunFilter())
    assert len(board.rows) == 1, board.problems
    return board.rows[0]


# ---------------------------------------------------------------------------------------------- the board
def test_zoo_push_repo_is_verified_with_the_statistics_of_zoo_leaderboard(zoo_hub, tmp_path):
    hub, stage = zoo_hub
    row = _rows(hub)[VERIFIED]
    expected = _leaderboard_row(stage / "eval.json", tmp_path)
    evaluation = json.loads((stage / "eval.json").read_text())
    assert row.verified and not row.self_reported and row.eval_source == "repo eval.json"
    assert row.value == pytest.approx(expected.mean) and row.value == pytest.approx(
        evaluation["metrics"]["return_mean"]
    )
    assert row.std == pytest.approx(evaluation["metrics"]["return_std"])
    assert (row.episodes, row.seeds) == (expected.episodes, expected.seeds) == (8, 1)
    assert (row.ci_low, row.ci_high) == (expected.ci_low, expected.ci_high)
    assert row.ci_low is not None and row.ci_low <= row.value <= row.ci_high
    assert row.rank == 1 and row.exp_name == "dqn" and not row.disagrees and row.notes == ()
    assert row.card_value == pytest.approx(round(evaluation["metrics"]["return_mean"], 2))
    assert row.sha == hub.index.get(VERIFIED).sha


def test_a_model_replaced_after_its_evaluation_is_only_self_reported(zoo_hub):
    hub, stage = zoo_hub
    row = _rows(hub)[REPLACED]
    assert not row.verified and row.self_reported and row.eval_source is None and row.rank == 0
    assert row.episodes is None and row.ci_low is None
    evaluation = json.loads((stage / "eval.json").read_text())
    assert row.value == pytest.approx(round(evaluation["metrics"]["return_mean"], 2))  # the card's
    assert any(
        "no file of this commit" in note and evaluation["model_sha256"][:12] in note for note in row.notes
    )


def test_a_card_that_disagrees_with_its_evaluation_shows_the_measurement_and_says_so(zoo_hub):
    hub, _ = zoo_hub
    rows = _rows(hub)
    row, honest = rows[BOASTING], rows[VERIFIED]
    assert row.verified and row.disagrees and row.card_value == 999.0
    assert row.value == honest.value and row.rank == honest.rank == 1  # ties share the rank
    assert row.notes[0].startswith("the card says 999.00 +/- 0.00; zoo measured ")


def test_card_only_repo_is_self_reported_and_listed_after_the_verified(zoo_hub):
    hub, _ = zoo_hub
    board = scores.board(hub, ENV, None)
    row = next(r for r in board if r.repo_id == CARD_ONLY)
    assert row.self_reported and not row.verified and (row.value, row.std) == (321.0, 1.5)
    assert row.rank == 0 and row.notes == ()
    first_reported = next(i for i, r in enumerate(board) if not r.verified)
    assert all(r.verified for r in board[:first_reported]) and not any(
        r.verified for r in board[first_reported:]
    )
    assert [r.repo_id for r in board[first_reported:]] == [REPLACED, CARD_ONLY]  # highest card value first


def test_private_repos_are_left_out_except_for_who_may_read_them(zoo_hub):
    hub, _ = zoo_hub
    assert PRIVATE not in _rows(hub) and set(_rows(hub)) == {VERIFIED, REPLACED, BOASTING, CARD_ONLY}
    assert PRIVATE not in _rows(hub, TokenInfo("mallory"))
    mine = _rows(hub, TokenInfo("alice", ("lab",)))[PRIVATE]
    assert mine.private and mine.verified
    assert scores.env_ids(hub, None) == [ENV] and scores.board(hub, "Acrobot-v1", None) == []


def test_a_commit_is_read_once(zoo_hub, monkeypatch):
    hub, _ = zoo_hub
    scores.board(hub, ENV, None)
    reads = []
    monkeypatch.setattr(type(hub.storage), "read_blob", lambda self, entry: reads.append(entry) or b"")
    assert _rows(hub)[VERIFIED].verified and reads == []  # cached per (repo, sha): no blob read again


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("123.45 +/- 6.70", (123.45, 6.7)),
        ("-20.5 ± 3", (-20.5, 3.0)),
        (42, (42.0, None)),
        ("1e3 +/- 2", (1000.0, 2.0)),
        ("n/a", (None, None)),
        (True, (None, None)),
        ("nan +/- 1", (None, None)),
    ],
)
def test_card_values_parse_as_the_hub_writes_them(value, parsed):
    assert scores.parse_score(value) == parsed


# ---------------------------------------------------------------------------------------------- --reevaluate
@pytest.fixture
def reeval_hub(tmp_path):
    with HubServer(tmp_path / "root", reevaluate=True, reevaluate_timeout=120).start() as hub:
        yield hub


def _upload(hub: HubServer, folder: Path, repo_id: str, home: Path) -> str:
    """``upload_folder`` through the real client; returns the new main head."""
    code = (
        "import sys; from huggingface_hub import HfApi; api = HfApi(); api.create_repo(sys.argv[2]); "
        "print(api.upload_folder(repo_id=sys.argv[2], folder_path=sys.argv[1]).oid)"
    )
    return _run([sys.executable, "-c", code, str(folder), repo_id], _env(hub, home)).strip().splitlines()[-1]


def _copy_stage(stage: Path, dst: Path, *, keep_eval: bool = False) -> Path:
    shutil.copytree(stage, dst, ignore=None if keep_eval else shutil.ignore_patterns("eval.json"))
    return dst


def test_a_push_is_reevaluated_by_the_server_and_becomes_verified(zoo_hub, reeval_hub, tmp_path):
    _, stage = zoo_hub
    bare = _copy_stage(stage, tmp_path / "no-eval")  # the card's score and the model, no eval.json
    sha = _upload(reeval_hub, bare, "demo/dqn", tmp_path / "home")
    again = _upload(
        reeval_hub,
        _copy_stage(stage, tmp_path / "with-eval", keep_eval=True),
        "demo/dqn-eval",
        tmp_path / "home",
    )
    assert reeval_hub.reevaluator.wait_idle(120)
    store = EvaluationStore(reeval_hub.storage.root)
    outcome = store.get("demo/dqn", sha)
    assert outcome is not None and outcome.status == "ok" and outcome.reason is None, outcome
    row = _rows(reeval_hub)["demo/dqn"]
    assert (
        row.verified
        and not row.self_reported
        and row.eval_source == "server re-evaluation"
        and row.sha == sha
    )
    server_eval = json.loads(outcome.eval_json)
    model = reeval_hub.storage.load_commit("demo/dqn", sha).files["dqn.cleanrl_model"]
    assert (server_eval["task"], server_eval["exp_name"], server_eval["model_sha256"]) == (
        ENV,
        "dqn",
        model.sha256,
    )
    assert row.episodes == server_eval["num_episodes"] == len(server_eval["episodes"]) == 10  # the registry's
    assert row.seeds == 1 and row.value == pytest.approx(server_eval["metrics"]["return_mean"])
    assert (row.ci_low, row.ci_high) == scores.stats.bootstrap_ci(
        [e["return"] for e in server_eval["episodes"]]
    )
    assert row.disagrees == (f"{row.value:.2f}" != f"{row.card_value:.2f}")  # the card's is over 8 episodes

    # with the repo's eval.json the server reuses its settings, and zoo eval, seeded, reproduces it
    reproduced = _rows(reeval_hub)["demo/dqn-eval"]
    pushed = json.loads((stage / "eval.json").read_text())
    assert (
        reproduced.eval_source == "server re-evaluation"
        and reproduced.episodes == pushed["num_episodes"] == 8
    )
    assert reproduced.value == pytest.approx(pushed["metrics"]["return_mean"]) and not reproduced.disagrees
    assert reproduced.notes == () and store.get("demo/dqn-eval", again).status == "ok"
    assert len(store.outcomes()) == 2  # the empty initial commits of create_repo are not evaluated


def test_a_broken_or_malicious_model_is_a_recorded_failure(zoo_hub, reeval_hub, tmp_path):
    _, stage = zoo_hub
    broken = _copy_stage(stage, tmp_path / "broken")
    model = broken / "dqn.cleanrl_model"
    model.write_bytes(model.read_bytes()[: model.stat().st_size // 2])
    canary = tmp_path / "canary"
    evil = _copy_stage(stage, tmp_path / "evil")
    write_malicious(evil / "dqn.cleanrl_model", canary)
    shas = {
        repo: _upload(reeval_hub, folder, repo, tmp_path / "home")
        for repo, folder in (("demo/broken", broken), ("demo/evil", evil))
    }
    assert reeval_hub.reevaluator.wait_idle(120)
    store = EvaluationStore(reeval_hub.storage.root)
    outcomes = {repo: store.get(repo, sha) for repo, sha in shas.items()}
    assert outcomes["demo/broken"].status == "failed" and "zip archive" in outcomes["demo/broken"].reason
    assert outcomes["demo/evil"].status == "failed" and outcomes["demo/evil"].reason.startswith(
        "zoo eval exit 3: dqn.cleanrl_model: unsafe pickle, loading it would call posix.system"
    )
    assert not canary.exists()  # the pickle's code never ran
    for repo, outcome in outcomes.items():
        assert "\n" not in outcome.reason and outcome.reason.startswith("zoo eval exit ")
        assert "zoo-reevaluate" not in outcome.reason  # the server's temp folder is not the user's business
        row = _rows(reeval_hub)[repo]
        assert row.self_reported and not row.verified
        assert f"server re-evaluation failed: {outcome.reason}" in row.notes


def test_the_queue_is_bounded_and_skips_duplicates(zoo_hub):
    hub, _ = zoo_hub  # not started: nothing is evaluated, so the queue can be watched
    worker = Reevaluator(hub, max_queue=2)
    heads = {repo: hub.index.get(repo).sha for repo in (VERIFIED, REPLACED, BOASTING, CARD_ONLY)}
    for repo, sha in heads.items():
        worker.notify(repo, sha)
        worker.notify(repo, sha)  # a duplicate: still one entry
    assert worker.pending() == [(BOASTING, heads[BOASTING]), (CARD_ONLY, heads[CARD_ONLY])]
    assert worker.dropped == 2
    dropped = EvaluationStore(hub.storage.root).get(VERIFIED, heads[VERIFIED])
    assert dropped.status == "skipped" and "queue was full" in dropped.reason
    worker.notify(BOASTING, heads[VERIFIED])  # a newer head replaces the queued one
    assert worker.pending() == [(CARD_ONLY, heads[CARD_ONLY]), (BOASTING, heads[VERIFIED])]
    worker.notify(CARD_ONLY, None)  # deleted: forgotten
    assert worker.pending() == [(BOASTING, heads[VERIFIED])]
    assert _rows(hub)[
        VERIFIED
    ].verified  # still, by its eval.json, and the page says what the server did not do
    assert _rows(hub)[VERIFIED].notes == (f"server re-evaluation skipped: {dropped.reason}",)
    EvaluationStore(hub.storage.root).forget(VERIFIED)


def test_an_evaluation_past_its_timeout_is_stopped_and_recorded(zoo_hub, tmp_path):
    hub, _ = zoo_hub
    worker = Reevaluator(hub, timeout=0.5).start()
    try:
        sha = hub.index.get(VERIFIED).sha
        worker.notify(VERIFIED, sha)
        assert worker.wait_idle(120)  # a hang guard: the 0.5 s timeout stops it long before
    finally:
        worker.stop()
    store = EvaluationStore(hub.storage.root)
    outcome = store.get(VERIFIED, sha)
    assert (
        outcome.status == "failed" and outcome.reason == "zoo eval ran past the 0.5 s timeout and was stopped"
    )
    store.forget(VERIFIED)


def test_zoo_hub_serve_reevaluate_end_to_end_and_the_outcome_outlives_the_server(zoo_hub, tmp_path):
    """The real ``zoo hub serve --reevaluate`` in a subprocess: a push is evaluated, Ctrl-C stops it
    (SIGINT) cleanly, and a server started later on the same ROOT shows the row as server-verified."""
    import signal
    from types import SimpleNamespace

    _, stage = zoo_hub
    root, log = tmp_path / "root", tmp_path / "serve.log"
    proc, url = _serve_reevaluating(root, log)
    try:
        assert (
            f"re-evaluating new pushes with zoo eval (timeout 60 s); outcomes in {root / 'evaluations.sqlite'}"
            in (log.read_text())
        )
        served = SimpleNamespace(url=url)
        sha = _upload(
            served, _copy_stage(stage, tmp_path / "with-eval", keep_eval=True), "demo/dqn", tmp_path / "h"
        )
        store, deadline = EvaluationStore(root), time.monotonic() + 90
        while (outcome := store.get("demo/dqn", sha)) is None:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        assert outcome.status == "ok", outcome
        proc.send_signal(signal.SIGINT)  # Ctrl-C: requests finish, the worker stops, "stopped"
        assert proc.wait(30) == 0 and log.read_text().rstrip().endswith("stopped")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    _sigterm_kills_the_evaluation_in_flight(stage, tmp_path)
    with HubServer(root) as later:  # not started, no --reevaluate: the page data is read from ROOT alone
        row = _rows(later)["demo/dqn"]
    assert row.verified and row.eval_source == "server re-evaluation" and row.sha == sha


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _serve_reevaluating(root: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """The real ``zoo hub serve --reevaluate`` in a subprocess, its stderr in ``log``; once it answers,
    the process and its URL."""
    import re

    cmd = [
        sys.executable,
        "-m",
        "zoo",
        "hub",
        "serve",
        "--root",
        str(root),
        "--port",
        "0",
        "--reevaluate",
        "--reevaluate-timeout",
        "60",
    ]
    with log.open("w") as stderr:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr)
    deadline = time.monotonic() + 30
    while not (found := re.search(r"at (http://127\.0\.0\.1:\d+)", log.read_text())):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(log.read_text())
        time.sleep(0.05)
    while True:  # the line is printed just before uvicorn answers
        try:
            urllib.request.urlopen(found.group(1) + "/api/whoami-v2", timeout=30).close()
            return proc, found.group(1)
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(log.read_text()) from None
            time.sleep(0.05)


def _sigterm_kills_the_evaluation_in_flight(stage: Path, tmp_path: Path) -> None:
    """SIGTERM (a service manager's stop) while a push is being evaluated: the server exits 143, as a
    SIGTERM'd process does, without a traceback, and its ``zoo eval`` child does not outlive it; the
    next server with --reevaluate evaluates the commit that was cut short."""
    import signal
    from types import SimpleNamespace

    root, log = tmp_path / "root-term", tmp_path / "serve-term.log"
    proc, url = _serve_reevaluating(root, log)
    try:
        _upload(
            SimpleNamespace(url=url),
            _copy_stage(stage, tmp_path / "term", keep_eval=True),
            "demo/term",
            tmp_path / "h-term",
        )
        deadline = time.monotonic() + 30
        while not (children := _children(proc.pid)):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 128 + signal.SIGTERM
        assert "Traceback" not in log.read_text(), log.read_text()
        deadline = time.monotonic() + 60  # a hang guard: SIGKILL'd at once, gone as soon as it is reaped
        while any(Path(f"/proc/{child}").exists() for child in children):
            assert time.monotonic() < deadline, "the zoo eval child outlived the server"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert EvaluationStore(root).outcomes() == {}  # cut short: no outcome recorded...
    with HubServer(
        root, reevaluate=True, reevaluate_timeout=60
    ).start() as again:  # ...so the next start redoes it
        assert again.reevaluator is not None and again.reevaluator.wait_idle(120)
    assert [o.status for o in EvaluationStore(root).outcomes().values()] == ["ok"]
