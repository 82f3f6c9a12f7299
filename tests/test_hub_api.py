"""The rest of the Hub API that a model-zoo user touches, through the real ``huggingface_hub`` client and
the real ``hf`` CLI: list_models, ``hf repos ls``, branches and tags, commit history, get_paths_info,
copy operations, delete/move/settings, /raw/, multipart LFS uploads, the 501s, and the SQLite index
rebuilt from the store."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from test_hub_server import ALICE, BOB, hub_log, requests_in, run_client

from zoo.hub_server import repo_api
from zoo.hub_server.http_limits import Limits
from zoo.hub_server.server import HubServer

SETUP = """
def card(tags, library="cleanrl", env="CartPole-v1"):
    return ("---\\nlibrary_name: " + library + "\\ntags: [" + ", ".join(tags) + "]\\n"
            "model-index:\\n- name: x\\n  results:\\n  - task: {type: reinforcement-learning}\\n"
            "    dataset: {name: " + env + ", type: " + env + "}\\n"
            "    metrics: [{type: mean_reward, value: 1.0 +/- 0.0, name: mean_reward}]\\n---\\n# model\\n").encode()

def repo(repo_id, tags, private=False, **kw):
    api.create_repo(repo_id, private=private)
    api.upload_file(path_or_fileobj=card(tags, **kw), path_in_repo="README.md", repo_id=repo_id)

repo("alice/cartpole-dqn", ["reinforcement-learning", "CartPole-v1"])
repo("alice/pendulum-sac", ["reinforcement-learning", "Pendulum-v1"], library="stable-baselines3", env="Pendulum-v1")
repo("lab/cartpole-ppo", ["reinforcement-learning", "CartPole-v1"])
repo("alice/secret-dqn", ["reinforcement-learning", "CartPole-v1"], private=True)
"""


@pytest.fixture
def secured(tmp_path):
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"{ALICE} alice lab\n{BOB} bob\n")
    with HubServer(tmp_path / "root", token_file=tokens).start() as server:
        yield server


def hf_cli(hub: HubServer, home: Path, *args: str, token: str | None = ALICE) -> subprocess.CompletedProcess:
    """The real ``hf`` command line against ``hub``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env.update(
        HF_ENDPOINT=hub.url,
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HOME=str(home / "hf-home"),
        NO_COLOR="1",
        COLUMNS="200",
    )
    if token:
        env["HF_TOKEN"] = token
    hf = Path(sys.executable).parent / "hf"
    return subprocess.run([str(hf), *args], env=env, capture_output=True, text=True, timeout=120)


def test_list_models_filters_sorts_limits_and_hides_private_repos(secured, tmp_path, monkeypatch):
    monkeypatch.setattr(repo_api, "MODELS_PAGE", 2)  # three pages of two: the client follows the Link header
    run_client(secured, SETUP, tmp_path, ALICE)
    out = run_client(
        secured,
        """
        ids = lambda models: [m.id for m in models]
        out["alice"] = sorted(ids(api.list_models(author="alice")))
        out["search"] = sorted(ids(api.list_models(search="CARTPOLE")))
        out["tag"] = sorted(ids(api.list_models(filter="CartPole-v1")))
        out["two_tags"] = ids(api.list_models(filter=["reinforcement-learning", "Pendulum-v1"]))
        out["library"] = ids(api.list_models(filter="stable-baselines3"))
        out["created"] = ids(api.list_models(sort="created_at"))
        out["limit"] = ids(api.list_models(sort="created_at", limit=1))
        full = list(api.list_models(author="lab", full=True, cardData=True))[0]
        out["siblings"] = [s.rfilename for s in full.siblings]
        out["card_library"] = full.card_data.library_name
        out["card_env"] = full.card_data.eval_results[0].dataset_type
        out["lean_has_card"] = list(api.list_models(author="lab"))[0].card_data is not None
    """,
        tmp_path,
    )  # anonymous: no private repos
    assert out["alice"] == ["alice/cartpole-dqn", "alice/pendulum-sac"]
    assert out["search"] == ["alice/cartpole-dqn", "lab/cartpole-ppo"]
    assert out["tag"] == ["alice/cartpole-dqn", "lab/cartpole-ppo"]
    assert out["two_tags"] == ["alice/pendulum-sac"] and out["library"] == ["alice/pendulum-sac"]
    assert out["created"] == ["lab/cartpole-ppo", "alice/pendulum-sac", "alice/cartpole-dqn"]  # newest first
    assert out["limit"] == ["lab/cartpole-ppo"]
    assert (
        out["siblings"] == ["README.md"]
        and out["card_library"] == "cleanrl"
        and out["card_env"] == "CartPole-v1"
    )
    assert out["lean_has_card"] is False
    mine = run_client(
        secured, 'out["ids"] = sorted(m.id for m in api.list_models(author="alice"))', tmp_path, ALICE
    )
    assert mine["ids"] == ["alice/cartpole-dqn", "alice/pendulum-sac", "alice/secret-dqn"]
    bob = run_client(
        secured, 'out["ids"] = sorted(m.id for m in api.list_models(author="alice"))', tmp_path, BOB
    )
    assert bob["ids"] == ["alice/cartpole-dqn", "alice/pendulum-sac"]


def test_hf_cli_lists_models_and_repos(secured, tmp_path):
    run_client(secured, SETUP, tmp_path, ALICE)
    models = hf_cli(secured, tmp_path, "models", "ls", "--author", "alice", "--format", "json", token=None)
    assert models.returncode == 0, models.stderr
    assert sorted(m["id"] for m in json.loads(models.stdout)) == ["alice/cartpole-dqn", "alice/pendulum-sac"]
    repos = hf_cli(secured, tmp_path, "repos", "ls", "--format", "json")
    assert repos.returncode == 0, repos.stderr
    listed = {r["id"]: r for r in json.loads(repos.stdout)}
    assert sorted(listed) == ["alice/cartpole-dqn", "alice/pendulum-sac", "alice/secret-dqn"]
    assert listed["alice/secret-dqn"]["visibility"] == "private"
    org = hf_cli(secured, tmp_path, "repos", "ls", "--namespace", "lab", "--format", "json")
    assert [r["id"] for r in json.loads(org.stdout)] == ["lab/cartpole-ppo"]
    anonymous = hf_cli(secured, tmp_path, "repos", "ls", token=None)
    assert anonymous.returncode != 0


def test_branches_and_tags_are_created_resolved_listed_and_deleted(secured, tmp_path):
    out = run_client(
        secured,
        """
        api.create_repo("alice/m")
        first = api.upload_file(path_or_fileobj=b"v1", path_in_repo="w.txt", repo_id="alice/m").oid
        api.create_tag("alice/m", tag="v1.0", tag_message="first release")
        out["dup_tag"] = caught(api.create_tag, "alice/m", tag="v1.0")
        api.create_tag("alice/m", tag="v1.0", exist_ok=True)
        api.create_branch("alice/m", branch="dev")
        api.upload_file(path_or_fileobj=b"v2", path_in_repo="w.txt", repo_id="alice/m", revision="dev")
        api.upload_file(path_or_fileobj=b"v3", path_in_repo="w.txt", repo_id="alice/m")
        refs = api.list_repo_refs("alice/m")
        out["branches"] = sorted(b.name for b in refs.branches)
        out["tags"] = [(t.name, t.ref, t.target_commit) for t in refs.tags]
        out["first"] = first
        out["at_tag"] = open(hf_hub_download("alice/m", "w.txt", revision="v1.0")).read()
        out["at_dev"] = open(hf_hub_download("alice/m", "w.txt", revision="dev")).read()
        out["commit_to_tag"] = caught(api.upload_file, path_or_fileobj=b"x", path_in_repo="x", repo_id="alice/m",
                                      revision="v1.0")
        out["bob_tags"] = caught(api.delete_tag, "alice/m", tag="v1.0", token=BOB_TOKEN)
        api.delete_tag("alice/m", tag="v1.0")
        api.delete_branch("alice/m", branch="dev")
        out["main"] = caught(api.delete_branch, "alice/m", branch="main")
        out["gone"] = caught(api.delete_branch, "alice/m", branch="dev")
        refs = api.list_repo_refs("alice/m")
        out["after"] = [[b.name for b in refs.branches], [t.name for t in refs.tags]]
    """.replace("BOB_TOKEN", repr(BOB)),
        tmp_path,
        ALICE,
    )
    assert out["dup_tag"]["status"] == 409
    assert out["branches"] == ["dev", "main"]
    assert out["tags"] == [["v1.0", "refs/tags/v1.0", out["first"]]]
    assert (out["at_tag"], out["at_dev"]) == ("v1", "v2")
    assert out["commit_to_tag"]["status"] == 403 and "is a tag" in out["commit_to_tag"]["message"]
    assert out["bob_tags"]["status"] == 403
    assert out["main"]["status"] == 403 and "default branch main cannot be deleted" in out["main"]["message"]
    assert "RevisionNotFoundError" in out["gone"]["classes"]
    assert out["after"] == [["main"], []]


def test_hf_cli_creates_tags_and_branches(secured, tmp_path):
    run_client(
        secured,
        'api.create_repo("alice/m"); api.upload_file(path_or_fileobj=b"1", path_in_repo="a",'
        ' repo_id="alice/m")',
        tmp_path,
        ALICE,
    )
    for args in (
        ["repos", "tag", "create", "alice/m", "v1"],
        ["repos", "branch", "create", "alice/m", "dev"],
    ):
        done = hf_cli(secured, tmp_path, *args)
        assert done.returncode == 0, done.stderr
    listed = hf_cli(secured, tmp_path, "repos", "tag", "list", "alice/m")
    assert listed.returncode == 0 and "v1" in listed.stdout
    refs = secured.storage.refs("alice/m")
    assert refs["tags"]["v1"] == refs["heads"]["main"] == refs["heads"]["dev"]
    assert hf_cli(secured, tmp_path, "repos", "branch", "delete", "alice/m", "dev").returncode == 0
    assert "dev" not in secured.storage.refs("alice/m")["heads"]


def test_commit_history_is_listed_newest_first_and_paged(hub_open, tmp_path, monkeypatch):
    monkeypatch.setattr(repo_api, "COMMITS_PAGE", 2)
    out = run_client(
        hub_open,
        """
        api.create_repo("anonymous/m")
        for i in range(4):
            api.upload_file(path_or_fileobj=str(i).encode(), path_in_repo="f.txt", repo_id="anonymous/m",
                            commit_message=f"step {i}", commit_description="<b>why</b>" if i == 3 else None)
        commits = api.list_repo_commits("anonymous/m")
        out["titles"] = [c.title for c in commits]
        out["authors"] = commits[0].authors
        out["message"] = commits[0].message
        out["formatted"] = api.list_repo_commits("anonymous/m", formatted=True)[0].formatted_message
        out["ids"] = [c.commit_id for c in commits]
    """,
        tmp_path,
    )
    assert out["titles"] == ["step 3", "step 2", "step 1", "step 0", "initial commit"]
    assert out["authors"] == ["anonymous"] and out["message"] == "<b>why</b>"
    assert out["formatted"] == "&lt;b&gt;why&lt;/b&gt;"
    head = hub_open.storage.resolve("anonymous/m", "main")
    assert out["ids"] == [c.id for c in hub_open.storage.history("anonymous/m", head)]


@pytest.fixture
def hub_open(tmp_path):
    with HubServer(tmp_path / "root").start() as server:
        yield server


def test_paths_info_and_copies_within_and_across_repos(hub_open, tmp_path):
    """Copies within a repo, LFS or not, and of regular files across repos (LFS files across repos, and who
    may copy them: tests/test_hub_lfs_access.py)."""
    out = run_client(
        hub_open,
        """
        api.create_repo("anonymous/src")
        api.upload_folder(folder_path="src", repo_id="anonymous/src")
        info = api.get_paths_info("anonymous/src", ["model.safetensors", "cfg/a.json", "cfg", "missing.txt"],
                                  expand=True)
        out["info"] = [(type(i).__name__, i.path, getattr(i, "size", None), bool(getattr(i, "lfs", None)),
                        i.last_commit.title if i.last_commit else None) for i in info]
        api.create_commit("anonymous/src", operations=[
            CommitOperationCopy(src_path_in_repo="model.safetensors", path_in_repo="backup/model.safetensors"),
            CommitOperationCopy(src_path_in_repo="cfg/a.json", path_in_repo="a-copy.json"),
        ], commit_message="copies")
        api.create_repo("anonymous/dst")
        api.create_commit("anonymous/dst", operations=[
            CommitOperationCopy(src_path_in_repo="cfg/a.json", path_in_repo="a.json",
                                src_repo_id="anonymous/src", src_repo_type="model"),
        ], commit_message="from src")
        out["copies"] = [open(hf_hub_download("anonymous/src", p), "rb").read().hex()
                         for p in ("backup/model.safetensors", "a-copy.json")]
        out["cross"] = open(hf_hub_download("anonymous/dst", "a.json"), "rb").read().hex()
    """.replace("CommitOperationCopy", "__import__('huggingface_hub').CommitOperationCopy"),
        _src(tmp_path),
    )
    weights, config = (tmp_path / "src" / "model.safetensors").read_bytes(), b'{"a": 1}'
    title = "Upload folder using huggingface_hub"
    assert out["info"] == [
        ["RepoFile", "model.safetensors", len(weights), True, title],
        ["RepoFile", "cfg/a.json", len(config), False, title],
        ["RepoFolder", "cfg", None, False, title],
    ]
    assert out["copies"] == [weights.hex(), config.hex()] and out["cross"] == config.hex()
    files = hub_open.storage.resolve("anonymous/src", "main").files
    assert files["backup/model.safetensors"] == files["model.safetensors"]  # the same blob, not a re-upload


def _src(tmp_path: Path) -> Path:
    (tmp_path / "src" / "cfg").mkdir(parents=True)
    (tmp_path / "src" / "model.safetensors").write_bytes(os.urandom(4096))
    (tmp_path / "src" / "cfg" / "a.json").write_bytes(b'{"a": 1}')
    return tmp_path


def test_delete_move_and_visibility_settings(secured, tmp_path):
    run_client(secured, SETUP, tmp_path, ALICE)
    out = run_client(
        secured,
        """
        api.move_repo("alice/cartpole-dqn", "lab/cartpole-dqn")
        out["moved"] = api.model_info("lab/cartpole-dqn").id
        out["old"] = caught(api.model_info, "alice/cartpole-dqn")
        out["taken"] = caught(api.move_repo, "lab/cartpole-dqn", "lab/cartpole-ppo")
        out["foreign"] = caught(api.move_repo, "lab/cartpole-dqn", "bob/cartpole-dqn")
        api.update_repo_settings("alice/pendulum-sac", private=True)
        api.delete_repo("lab/cartpole-ppo")
        out["deleted"] = caught(api.model_info, "lab/cartpole-ppo")
        out["again"] = caught(api.delete_repo, "lab/cartpole-ppo")
        api.delete_repo("lab/cartpole-ppo", missing_ok=True)
        out["listed"] = sorted(m.id for m in api.list_models())
    """,
        tmp_path,
        ALICE,
    )
    assert out["moved"] == "lab/cartpole-dqn" and "RepositoryNotFoundError" in out["old"]["classes"]
    assert out["taken"]["status"] == 409 and out["foreign"]["status"] == 403
    assert "RepositoryNotFoundError" in out["deleted"]["classes"] and out["again"]["status"] == 404
    assert out["listed"] == ["alice/pendulum-sac", "alice/secret-dqn", "lab/cartpole-dqn"]
    anonymous = run_client(
        secured,
        """
        out["listed"] = sorted(m.id for m in api.list_models())
        out["private"] = caught(api.model_info, "alice/pendulum-sac")
        out["bob_deletes"] = caught(api.delete_repo, "alice/pendulum-sac", token=BOB_TOKEN)
    """.replace("BOB_TOKEN", repr(BOB)),
        tmp_path,
    )
    assert anonymous["listed"] == ["lab/cartpole-dqn"]
    assert "RepositoryNotFoundError" in anonymous["private"]["classes"]
    assert anonymous["bob_deletes"]["status"] == 404  # a private repo does not exist for bob
    assert not list((secured.storage.root / "trash").iterdir())  # deletion finished, nothing left behind


def test_hf_cli_moves_deletes_and_makes_private(secured, tmp_path):
    run_client(secured, SETUP, tmp_path, ALICE)
    for args in (
        ["repos", "move", "alice/cartpole-dqn", "lab/dqn"],
        ["repos", "settings", "lab/dqn", "--private"],
        ["repos", "delete", "alice/pendulum-sac", "--yes"],
    ):
        done = hf_cli(secured, tmp_path, *args)
        assert done.returncode == 0, done.stderr
    assert secured.storage.repo_meta("lab/dqn").private
    assert sorted(secured.storage.iter_repos()) == ["alice/secret-dqn", "lab/cartpole-ppo", "lab/dqn"]


def test_raw_serves_git_content_and_resolve_types_are_safe(hub_open, tmp_path):
    out = run_client(
        hub_open,
        """
        api.create_repo("anonymous/m")
        api.upload_file(path_or_fileobj=b"<script>alert(1)</script>", path_in_repo="page.html", repo_id="anonymous/m")
        api.upload_file(path_or_fileobj=b"\\x89PNG\\r\\n\\x1a\\n" + bytes(64), path_in_repo="images/c.png",
                        repo_id="anonymous/m")
        base = api.endpoint + "/anonymous/m"
        raw_html = get_session().get(base + "/raw/main/page.html")
        raw_png = get_session().get(base + "/raw/main/images/c.png")
        out["raw_html"] = [raw_html.text, raw_html.headers["content-type"], raw_html.headers["x-content-type-options"]]
        out["raw_png"] = raw_png.text
        out["types"] = [get_session().get(base + "/resolve/main/" + p).headers["content-type"]
                        for p in ("page.html", "images/c.png")]
        out["missing"] = get_session().get(base + "/raw/main/nope.txt").status_code
    """,
        tmp_path,
    )
    assert out["raw_html"] == ["<script>alert(1)</script>", "text/plain; charset=utf-8", "nosniff"]
    png = hub_open.storage.resolve("anonymous/m", "main").files["images/c.png"]
    assert out["raw_png"] == f"version https://git-lfs.github.com/spec/v1\noid sha256:{png.sha256}\nsize 72\n"
    assert out["types"] == ["application/octet-stream", "image/png"]  # an uploaded page never renders
    assert out["missing"] == 404


def test_large_files_upload_in_parts_and_a_bad_part_is_refused(tmp_path):
    data = os.urandom((5 << 19) + 123)  # 2.5 MiB and a bit: three parts of 1 MiB
    (tmp_path / "big.bin").write_bytes(data)
    with hub_log() as log, HubServer(tmp_path / "root", limits=Limits(lfs_part_size=1 << 20)).start() as hub:
        out = run_client(
            hub,
            """
            api.create_repo("anonymous/big")
            api.upload_file(path_or_fileobj="big.bin", path_in_repo="big.bin", repo_id="anonymous/big")
            out["sha"] = __import__("hashlib").sha256(open(hf_hub_download("anonymous/big", "big.bin"), "rb").read()).hexdigest()
        """,
            tmp_path,
        )
        parts_left = list((hub.storage.root / "parts").iterdir())
    lines = requests_in(log.getvalue())
    assert out["sha"] == hashlib.sha256(data).hexdigest()
    assert sum("/part/" in line for line in lines if line.startswith("PUT")) == 3
    assert any(line.startswith("POST") and "/complete/" in line and line.endswith(" 200") for line in lines)
    assert parts_left == []  # the parts are gone once the blob is written


def test_an_object_over_the_part_cap_goes_up_in_larger_parts(tmp_path):
    """At most ``lfs_max_parts`` parts per object, as the Hub caps them: past that, the batch answer's
    ``chunk_size`` grows (whole MiB), which the real client reads, and the object still arrives whole."""
    data = os.urandom((5 << 19) + 123)  # 2.5 MiB: 3 parts of 1 MiB, over a cap of 2 -> 2 parts of 2 MiB
    (tmp_path / "big.bin").write_bytes(data)
    limits = Limits(lfs_part_size=1 << 20, lfs_max_parts=2)
    with hub_log() as log, HubServer(tmp_path / "root", limits=limits).start() as hub:
        out = run_client(
            hub,
            """
            api.create_repo("anonymous/big")
            api.upload_file(path_or_fileobj="big.bin", path_in_repo="big.bin", repo_id="anonymous/big")
            out["sha"] = __import__("hashlib").sha256(open(hf_hub_download("anonymous/big", "big.bin"), "rb").read()).hexdigest()
        """,
            tmp_path,
        )
    assert out["sha"] == hashlib.sha256(data).hexdigest()
    assert sum("/part/" in line for line in requests_in(log.getvalue()) if line.startswith("PUT")) == 2


def test_calls_left_out_answer_501_with_their_name(hub_open, tmp_path):
    out = run_client(
        hub_open,
        """
        api.create_repo("anonymous/m")
        out["discussions"] = caught(lambda: list(api.get_repo_discussions("anonymous/m")))
        out["squash"] = caught(api.super_squash_history, "anonymous/m")
        out["likers"] = caught(lambda: list(api.list_repo_likers("anonymous/m")))
        out["unknown"] = get_session().get(api.endpoint + "/api/quux/1").json()
    """,
        tmp_path,
    )
    for key, name in (
        ("discussions", "HfApi.get_repo_discussions"),
        ("squash", "HfApi.super_squash_history"),
        ("likers", "HfApi.list_repo_likers"),
    ):
        assert out[key]["status"] == 501 and f"{name}" in out[key]["message"], out[key]
        assert "not supported by zoo hub serve" in out[key]["message"]
    assert out["unknown"] == {"error": "GET /api/quux/1 is not a call zoo hub serve implements"}


def test_the_index_is_rebuilt_from_the_store_and_reconciled_after_a_crash(tmp_path):
    root = tmp_path / "root"
    with HubServer(root).start() as hub:
        run_client(hub, SETUP.replace("alice/", "anonymous/").replace("lab/", "anonymous/"), tmp_path)
        before = [(r.repo_id, r.sha, r.tags) for r in hub.index.search(None, sort="id", direction=1)]
    (root / "index.sqlite").unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{root}/index.sqlite{suffix}").unlink(missing_ok=True)
    rebuilt = HubServer(root)
    assert rebuilt.index.rebuilt
    assert [(r.repo_id, r.sha, r.tags) for r in rebuilt.index.search(None, sort="id", direction=1)] == before
    # a commit that reached the store but not the index (a crash between the two)
    from zoo.hub_server.store_records import Put

    entry = rebuilt.storage.regular_file(b"---\ntags: [late]\n---\n")
    commit, _ = rebuilt.storage.commit(
        "anonymous/cartpole-ppo",
        "main",
        [Put("README.md", entry)],
        message="behind the index's back",
        author="x",
    )
    rebuilt.index.close()
    reopened = HubServer(root)
    assert not reopened.index.rebuilt
    row = reopened.index.get("anonymous/cartpole-ppo")
    assert row is not None and row.sha == commit.id and row.tags == ["late"]
    # a damaged file is rebuilt, not trusted
    reopened.index.close()
    (root / "index.sqlite").write_bytes(b"not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{root}/index.sqlite{suffix}").unlink(missing_ok=True)
    damaged = HubServer(root)
    assert damaged.index.rebuilt and len(damaged.index.all_public()) == 3  # one is private
    with sqlite3.connect(root / "index.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 1
