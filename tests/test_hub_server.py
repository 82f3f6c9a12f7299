"""``zoo hub serve`` driven only by the real huggingface_hub client.

The server runs in this process (a thread on port 0). Each client scenario runs in a fresh Python
subprocess: huggingface_hub reads HF_ENDPOINT, HF_HUB_DISABLE_XET and HF_HOME once, at import, and
another test module of this pytest process may have imported it already with other values. A scenario
script fills a dict ``out`` that comes back as JSON; ``caught(fn, ...)`` records the exception a call
raised (its class hierarchy and HTTP status), so that tests can assert the client's exception classes.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from zoo.errors import ZooError
from zoo.hub_server.server import HubServer, TokenInfo, load_tokens

ALICE, BOB = "alice-secret-token-1234", "bob-secret-token-5678"

PRELUDE = """
import base64
import json
from huggingface_hub import (CommitOperationAdd, CommitOperationDelete, HfApi, ModelCard,
                             get_hf_file_metadata, hf_hub_download, hf_hub_url, snapshot_download)
from huggingface_hub.utils import get_session

api = HfApi()
out = {}

def caught(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except Exception as exc:
        response = getattr(exc, "response", None)
        return {"classes": [c.__name__ for c in type(exc).__mro__],
                "status": getattr(response, "status_code", None), "message": str(exc)}
    return None
"""


def run_client(hub: HubServer, script: str, home: Path, token: str | None = None) -> dict:
    """Run ``script`` against ``hub`` in a clean interpreter; returns its ``out`` dict."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env.update(
        HF_ENDPOINT=hub.url,
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        HF_HOME=str(home / "hf-home"),
    )
    if token:
        env["HF_TOKEN"] = token
    code = PRELUDE + textwrap.dedent(script) + "\nprint(json.dumps(out))\n"
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=home, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def hub_log(level: int = logging.INFO) -> Iterator[io.StringIO]:
    """What the ``zoo.hub`` loggers say while the block runs, ``LOGGER MESSAGE`` per record: the lines
    ``zoo hub serve --log-level`` prints, without their time stamp."""
    stream, logger = io.StringIO(), logging.getLogger("zoo.hub")
    handler, before = logging.StreamHandler(stream), logger.level
    handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before)


def requests_in(log: str) -> list[str]:
    """``METHOD PATH STATUS`` of each access log line (without the time taken and the user)."""
    return [" ".join(line.split()[1:4]) for line in log.splitlines() if line.startswith("zoo.hub.access ")]


@pytest.fixture
def log() -> Iterator[io.StringIO]:
    with hub_log() as stream:
        yield stream


@pytest.fixture
def hub(tmp_path, log):
    with HubServer(tmp_path / "root").start() as server:
        yield server


@pytest.fixture
def secured(tmp_path, log):
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"# lab tokens\n{ALICE} alice lab   # alice writes alice/* and lab/*\n{BOB} bob\n")
    with HubServer(tmp_path / "root", token_file=tokens).start() as server:
        yield server


def history(hub: HubServer, repo_id: str, revision: str = "main") -> list:
    """Commits from ``revision`` back to the repo's initial commit."""
    commits = [hub.storage.resolve(repo_id, revision)]
    while commits[-1].parent:
        commits.append(hub.storage.load_commit(repo_id, commits[-1].parent))
    return commits


def test_create_repo_whoami_and_exist_ok(hub, tmp_path):
    out = run_client(
        hub,
        """
        out["url"] = str(api.create_repo("alice/demo"))
        out["again"] = caught(api.create_repo, "alice/demo")
        out["exist_ok"] = str(api.create_repo("alice/demo", exist_ok=True))
        out["me"] = api.whoami(token="any-token-works-on-an-open-server")["name"]
        out["dataset"] = caught(api.create_repo, "alice/data", repo_type="dataset")
    """,
        tmp_path,
    )
    assert hub.open_access
    assert out["url"] == out["exist_ok"] == f"{hub.url}/alice/demo"
    assert out["again"]["status"] == 409
    assert out["me"] == "anonymous"
    assert "BadRequestError" in out["dataset"]["classes"] and "model repos only" in out["dataset"]["message"]
    assert (tmp_path / "root" / "repos" / "alice" / "demo" / "repo.json").is_file()


def test_upload_folder_is_one_commit_and_reads_back(hub, tmp_path):
    folder = tmp_path / "run"
    (folder / "logs").mkdir(parents=True)
    (folder / "README.md").write_text(
        "---\nlibrary_name: cleanrl\nlicense: mit\ntags: [CartPole-v1, zoo]\n---\n# DQN\n"
    )
    (folder / "config.json").write_text('{"lr": 0.001}')
    (folder / "logs" / "notes.txt").write_text("step 1\n")
    (folder / "dqn.cleanrl_model").write_bytes(bytes(range(256)) * 4)
    out = run_client(
        hub,
        f"""
        api.create_repo("alice/dqn")
        commit = api.upload_folder(repo_id="alice/dqn", folder_path={str(folder)!r}, commit_message="add run")
        info = api.model_info("alice/dqn", files_metadata=True)
        out["oid"], out["sha"], out["card"] = commit.oid, info.sha, info.card_data.to_dict()
        out["library"], out["tags"] = info.library_name, info.tags
        out["siblings"] = {{s.rfilename: [s.size, s.lfs is not None] for s in info.siblings}}
        out["files"] = api.list_repo_files("alice/dqn")
        out["top"] = sorted((type(e).__name__, e.path) for e in api.list_repo_tree("alice/dqn"))
        out["model_card"] = ModelCard.load("alice/dqn").data.to_dict()
        snapshot = snapshot_download("alice/dqn")
        out["snapshot"] = {{p: open(f"{{snapshot}}/{{p}}", "rb").read().hex() for p in out["files"]}}
        out["main"] = api.list_repo_refs("alice/dqn").branches[0].target_commit
    """,
        tmp_path,
    )
    files = ["README.md", "config.json", "dqn.cleanrl_model", "logs/notes.txt"]
    assert out["files"] == files
    assert out["oid"] == out["sha"] == out["main"]
    commits = history(hub, "alice/dqn")
    assert [c.message for c in commits] == ["add run", "initial commit"]  # upload_folder made one commit
    assert (
        out["card"]
        == out["model_card"]
        == {"library_name": "cleanrl", "license": "mit", "tags": ["CartPole-v1", "zoo"]}
    )
    assert out["library"] == "cleanrl" and {"CartPole-v1", "license:mit"} <= set(out["tags"])
    assert out["siblings"]["dqn.cleanrl_model"] == [1024, True]  # weights go through LFS, even small ones
    assert out["siblings"]["config.json"] == [13, False]
    assert out["top"] == [["RepoFile", p] for p in files[:3]] + [["RepoFolder", "logs"]]
    assert {p: bytes.fromhex(h) for p, h in out["snapshot"].items()} == {
        p: (folder / p).read_bytes() for p in files
    }


def test_create_commit_adds_deletes_and_tracks_last_commits(hub, tmp_path):
    out = run_client(
        hub,
        """
        api.create_repo("alice/ops")
        adds = [CommitOperationAdd("a.txt", b"a"), CommitOperationAdd("b.txt", b"b")]
        first = api.create_commit("alice/ops", adds, commit_message="first")
        ops = [CommitOperationAdd("c/d.txt", b"d"), CommitOperationDelete("a.txt")]
        second = api.create_commit("alice/ops", ops, commit_message="second")
        out["first"], out["second"] = first.oid, second.oid
        out["files"] = api.list_repo_files("alice/ops")
        out["last"] = {e.path: e.last_commit.oid for e in api.list_repo_tree("alice/ops", expand=True)}
        out["missing"] = caught(api.create_commit, "alice/ops", [CommitOperationDelete("nope.txt")],
                                commit_message="x")
        out["old_a"] = open(hf_hub_download("alice/ops", "a.txt", revision=first.oid)).read()
        api.create_commit("alice/ops", [CommitOperationDelete("c/")], commit_message="drop folder")
        out["after_folder"] = api.list_repo_files("alice/ops")
    """,
        tmp_path,
    )
    assert out["files"] == ["b.txt", "c/d.txt"]
    assert out["last"] == {"b.txt": out["first"], "c": out["second"]}
    assert "EntryNotFoundError" in out["missing"]["classes"]
    assert out["old_a"] == "a"  # old commits stay readable by id
    assert out["after_folder"] == ["b.txt"]


def test_second_download_is_served_from_cache(hub, tmp_path, log):
    out = run_client(
        hub,
        """
        api.create_repo("alice/cache")
        api.upload_file(path_or_fileobj=b'{"x": 1}', path_in_repo="config.json", repo_id="alice/cache")
        first = hf_hub_download("alice/cache", "config.json")
        second = hf_hub_download("alice/cache", "config.json")
        out["same"], out["content"] = first == second, open(second).read()
        out["etag"] = get_hf_file_metadata(hf_hub_url("alice/cache", "config.json")).etag
    """,
        tmp_path,
    )
    lines = requests_in(log.getvalue())
    git_sha1 = hashlib.sha1(b'blob 8\0{"x": 1}').hexdigest()  # a regular file's ETag is its git blob id
    assert out == {"same": True, "content": '{"x": 1}', "etag": git_sha1}
    assert lines.count("HEAD /alice/cache/resolve/main/config.json 200") == 3  # 2 downloads, 1 metadata
    assert lines.count("GET /alice/cache/resolve/main/config.json 200") == 1  # bytes fetched once


def test_large_file_goes_through_lfs(hub, tmp_path, log):
    big = tmp_path / "weights.bin"
    big.write_bytes(os.urandom(1 << 20) * 11)  # 11 MiB: over the 10 MiB threshold
    sha256 = hashlib.sha256(big.read_bytes()).hexdigest()
    out = run_client(
        hub,
        f"""
        api.create_repo("alice/big")
        api.upload_file(path_or_fileobj={str(big)!r}, path_in_repo="weights.bin", repo_id="alice/big")
        meta = get_hf_file_metadata(hf_hub_url("alice/big", "weights.bin"))
        out["etag"], out["size"], out["commit"] = meta.etag, meta.size, meta.commit_hash
        head = get_session().head(hf_hub_url("alice/big", "weights.bin"))
        out["linked"] = [head.headers["X-Linked-Etag"], head.headers["X-Linked-Size"], head.headers["ETag"]]
        sibling = api.model_info("alice/big", files_metadata=True).siblings[0]
        out["lfs"] = [sibling.lfs.sha256, sibling.lfs.size]
        import hashlib
        downloaded = open(hf_hub_download("alice/big", "weights.bin"), "rb").read()
        out["downloaded"] = hashlib.sha256(downloaded).hexdigest()
    """,
        tmp_path,
    )
    size = 11 << 20
    assert hub.storage.blob_path(sha256) == tmp_path / "root" / "blobs" / "sha256" / sha256[:2] / sha256[2:]
    assert hub.storage.blob_path(sha256).stat().st_size == size
    assert f"PUT /alice/big.git/info/lfs/objects/{sha256} 200" in requests_in(log.getvalue())
    assert out["etag"] == sha256 and out["size"] == size
    assert out["commit"] == hub.storage.resolve("alice/big", "main").id
    assert out["linked"] == [f'"{sha256}"', str(size), f'"{sha256}"']
    assert out["lfs"] == [sha256, size]
    assert out["downloaded"] == sha256
    assert not any((tmp_path / "root" / "tmp").iterdir())


def test_range_requests(hub, tmp_path):
    out = run_client(
        hub,
        """
        api.create_repo("alice/range")
        api.upload_file(path_or_fileobj=b"0123456789", path_in_repo="digits.txt", repo_id="alice/range")
        url = hf_hub_url("alice/range", "digits.txt")
        specs = {"middle": "bytes=2-5", "suffix": "bytes=-3", "open": "bytes=7-", "past": "bytes=20-"}
        for name, spec in specs.items():
            r = get_session().get(url, headers={"Range": spec})
            out[name] = [r.status_code, r.content.decode() if r.status_code == 206 else None,
                         r.headers.get("Content-Range")]
    """,
        tmp_path,
    )
    assert out["middle"] == [206, "2345", "bytes 2-5/10"]
    assert out["suffix"] == [206, "789", "bytes 7-9/10"]
    assert out["open"] == [206, "789", "bytes 7-9/10"]
    assert out["past"] == [416, None, "bytes */10"]


def test_missing_repo_revision_and_entry_map_to_client_errors(hub, tmp_path):
    out = run_client(
        hub,
        """
        api.create_repo("alice/here")
        api.upload_file(path_or_fileobj=b"x", path_in_repo="x.txt", repo_id="alice/here")
        out["repo"] = caught(hf_hub_download, "alice/absent", "x.txt")
        out["repo_info"] = caught(api.model_info, "alice/absent")
        out["revision"] = caught(hf_hub_download, "alice/here", "x.txt", revision="v9")
        out["revision_info"] = caught(api.model_info, "alice/here", revision="v9")
        out["entry"] = caught(hf_hub_download, "alice/here", "absent.txt")
    """,
        tmp_path,
    )
    assert "RepositoryNotFoundError" in out["repo"]["classes"]
    assert "RepositoryNotFoundError" in out["repo_info"]["classes"]
    assert "RevisionNotFoundError" in out["revision"]["classes"]
    assert "RevisionNotFoundError" in out["revision_info"]["classes"]
    assert "EntryNotFoundError" in out["entry"]["classes"]


def test_private_repos_and_tokens(secured, tmp_path, log, capfd):
    out = run_client(
        secured,
        f"""
        alice, bob = {ALICE!r}, {BOB!r}
        out["me"] = api.whoami(token=alice)
        api.create_repo("lab/secret", private=True, token=alice)
        api.upload_file(path_or_fileobj=b"s3cr3t", path_in_repo="w.txt", repo_id="lab/secret", token=alice)
        api.create_repo("alice/open", token=alice)
        api.upload_file(path_or_fileobj=b"hello", path_in_repo="w.txt", repo_id="alice/open", token=alice)
        out["owner"] = open(hf_hub_download("lab/secret", "w.txt", token=alice)).read()
        out["anon_info"] = caught(api.model_info, "lab/secret", token=False)
        out["anon_download"] = caught(hf_hub_download, "lab/secret", "w.txt", token=False, cache_dir="anon")
        out["bob_info"] = caught(api.model_info, "lab/secret", token=bob)
        public = hf_hub_download("alice/open", "w.txt", token=False, cache_dir="anon")
        out["anon_public"] = open(public).read()
        write = dict(path_or_fileobj=b"x", path_in_repo="x", repo_id="alice/open")
        out["anon_write"] = caught(api.upload_file, **write, token=False)
        out["anon_create"] = caught(api.create_repo, "alice/new", token=False)
        out["bob_write"] = caught(api.upload_file, **write, token=bob)
        out["bad_token"] = caught(api.model_info, "alice/open", token="not-a-real-token")
    """,
        tmp_path,
    )
    assert not secured.open_access
    assert out["me"]["name"] == "alice" and [o["name"] for o in out["me"]["orgs"]] == ["lab"]
    assert out["owner"] == "s3cr3t" and out["anon_public"] == "hello"
    for key in ("anon_info", "anon_download", "bob_info"):
        assert "RepositoryNotFoundError" in out[key]["classes"], key
        assert "s3cr3t" not in out[key]["message"]
    assert out["anon_write"]["status"] == out["anon_create"]["status"] == 401
    assert out["bob_write"]["status"] == 403
    assert out["bad_token"]["status"] == 401
    assert "RepositoryNotFoundError" not in out["bad_token"]["classes"]  # a bad token is not a missing repo
    server_output = log.getvalue() + "".join(capfd.readouterr())
    assert "POST /api/repos/create 200" in server_output
    for secret in (ALICE, BOB, "not-a-real-token", "Bearer"):
        assert secret not in server_output


def test_concurrent_commits_both_land_and_stale_parent_is_refused(hub, tmp_path):
    out = run_client(
        hub,
        """
        import threading
        api.create_repo("alice/race")
        initial = api.model_info("alice/race").sha
        barrier, errors = threading.Barrier(2), []

        def upload(name):
            barrier.wait()
            try:
                api.upload_file(path_or_fileobj=name.encode(), path_in_repo=name, repo_id="alice/race",
                                commit_message=name)
            except Exception as exc:
                errors.append(repr(exc))

        threads = [threading.Thread(target=upload, args=(f"file-{i}.txt",)) for i in range(2)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        out["errors"], out["files"] = errors, api.list_repo_files("alice/race")
        out["stale"] = caught(api.upload_file, path_or_fileobj=b"late", path_in_repo="late.txt",
                              repo_id="alice/race", parent_commit=initial)
    """,
        tmp_path,
    )
    assert out["errors"] == []
    assert out["files"] == ["file-0.txt", "file-1.txt"]
    messages = [c.message for c in history(hub, "alice/race")]
    assert sorted(messages[:2]) == ["file-0.txt", "file-1.txt"] and messages[2:] == ["initial commit"]
    assert out["stale"]["status"] == 412 and "moved" in out["stale"]["message"]


def test_pull_request_commit_creates_a_pr_ref(hub, tmp_path):
    out = run_client(
        hub,
        """
        api.create_repo("alice/pr")
        add = [CommitOperationAdd("new.txt", b"proposal")]
        info = api.create_commit("alice/pr", add, commit_message="propose", create_pr=True)
        out["pr"], out["revision"] = info.pr_num, info.pr_revision
        out["content"] = open(hf_hub_download("alice/pr", "new.txt", revision="refs/pr/1")).read()
        out["on_main"] = caught(hf_hub_download, "alice/pr", "new.txt")
        refs = api.list_repo_refs("alice/pr", include_pull_requests=True)
        out["prs"] = [[r.ref, r.target_commit] for r in refs.pull_requests]
        out["oid"] = info.oid
    """,
        tmp_path,
    )
    assert out["pr"] == 1 and out["revision"] == "refs/pr/1"
    assert out["content"] == "proposal"
    assert "EntryNotFoundError" in out["on_main"]["classes"]
    assert out["prs"] == [["refs/pr/1", out["oid"]]]


def test_create_branch_answers_as_the_hub_does(secured, tmp_path):
    out = run_client(
        secured,
        f"""
        alice, bob = {ALICE!r}, {BOB!r}
        api.create_repo("alice/br", token=alice)
        first = api.upload_file(path_or_fileobj=b"one", path_in_repo="a.txt", repo_id="alice/br", token=alice)
        api.upload_file(path_or_fileobj=b"two", path_in_repo="a.txt", repo_id="alice/br", token=alice)
        api.create_branch("alice/br", branch="exp/1", token=alice)
        api.create_branch("alice/br", branch="old", revision=first.oid, token=alice)
        api.create_branch("alice/br", branch="exp/1", exist_ok=True, token=alice)
        out["again"] = caught(api.create_branch, "alice/br", branch="exp/1", token=alice)
        out["start"] = caught(api.create_branch, "alice/br", branch="x", revision="nope", token=alice)
        out["bad"] = caught(api.create_branch, "alice/br", branch="a..b", token=alice)
        out["bob"] = caught(api.create_branch, "alice/br", branch="bobs", token=bob)
        refs = api.list_repo_refs("alice/br", token=alice)
        out["heads"] = {{r.name: r.target_commit for r in refs.branches}}
        out["main"] = api.model_info("alice/br", token=alice).sha
        out["old"] = open(hf_hub_download("alice/br", "a.txt", revision="old", token=alice)).read()
        out["first"] = first.oid
    """,
        tmp_path,
    )
    assert out["heads"] == {"main": out["main"], "exp/1": out["main"], "old": out["first"]}
    assert out["old"] == "one"
    assert out["again"]["status"] == 409
    assert out["start"]["status"] == 404 and "RevisionNotFoundError" in out["start"]["classes"]
    assert out["bad"]["status"] == 400 and "invalid branch name" in out["bad"]["message"]
    assert out["bob"]["status"] == 403


def test_invalid_readme_yaml_is_refused(hub, tmp_path):
    out = run_client(
        hub,
        """
        api.create_repo("alice/card")
        out["bad"] = caught(api.upload_file, path_or_fileobj=b"---\\ntags: [unclosed\\n---\\n# x\\n",
                            path_in_repo="README.md", repo_id="alice/card")
        readme = base64.b64encode(b"---\\nkey: [x\\n---\\n").decode()
        lines = [{"key": "header", "value": {"summary": "card"}},
                 {"key": "file", "value": {"path": "README.md", "content": readme, "encoding": "base64"}}]
        raw = get_session().post(api.endpoint + "/api/models/alice/card/commit/main",
                                 content="".join(json.dumps(line) + "\\n" for line in lines))
        out["raw"] = [raw.status_code, raw.json()["error"]]  # the server checks too, not only the client
        out["files"] = api.list_repo_files("alice/card")
        nowhere = get_session().get(api.endpoint + "/api/nowhere")
        out["nowhere"] = [nowhere.status_code, nowhere.json()]
        out["wrong_method"] = get_session().delete(api.endpoint + "/api/models/alice/card").status_code
    """,
        tmp_path,
    )
    assert "ValueError" in out["bad"]["classes"] and "Invalid metadata in README.md" in out["bad"]["message"]
    assert "invalid YAML" in out["bad"]["message"]
    assert out["raw"][0] == 400 and "invalid YAML" in out["raw"][1]
    assert out["files"] == []
    assert out["nowhere"] == [501, {"error": "GET /api/nowhere is not a call zoo hub serve implements"}]
    assert out["wrong_method"] == 405


def test_lfs_uploads_are_verified_and_never_half_visible(hub, tmp_path):
    data = b"\0model" * 1000
    sha256 = hashlib.sha256(data).hexdigest()
    out = run_client(
        hub,
        f"""
        from huggingface_hub.lfs import UploadInfo, post_lfs_batch_info
        data = {data!r}
        api.create_repo("alice/lfs")

        def batch():
            actions, _, _ = post_lfs_batch_info([UploadInfo.from_bytes(data)], token=None, repo_type="model",
                                                repo_id="alice/lfs", revision="main")
            return actions[0]

        href = batch()["actions"]["upload"]["href"]
        out["wrong_bytes"] = get_session().put(href, content=b"X" * len(data)).status_code
        forged = href.replace("signature=", "signature=0")
        out["tampered"] = get_session().put(forged, content=data).status_code

        def crash():
            yield data[:100]
            raise RuntimeError("client died mid-upload")

        length = {{"Content-Length": str(len(data))}}
        out["crash"] = caught(get_session().put, href, content=crash(), headers=length)
        lfs_file = {{"path": "w.bin", "algo": "sha256", "oid": {sha256!r}, "size": len(data)}}
        line = {{"key": "lfsFile", "value": lfs_file}}
        body = json.dumps({{"key": "header", "value": {{"summary": "w"}}}}) + "\\n" + json.dumps(line) + "\\n"
        commit_url = api.endpoint + "/api/models/alice/lfs/commit/main"
        ndjson = {{"Content-Type": "application/x-ndjson"}}
        missing = get_session().post(commit_url, content=body, headers=ndjson)
        out["commit_missing"] = [missing.status_code, missing.json()["error"]]
        verify = api.endpoint + "/alice/lfs.git/info/lfs/objects/verify"
        pointer = {{"oid": {sha256!r}, "size": len(data)}}
        out["verify_missing"] = get_session().post(verify, json=pointer).status_code
        out["good"] = get_session().put(href, content=iter([data[:999], data[999:]])).status_code  # chunked
        out["again"] = "actions" in batch()
        out["commit"] = get_session().post(commit_url, content=body).status_code
    """,
        tmp_path,
    )
    assert out["wrong_bytes"] == 400 and out["tampered"] == 403
    assert out["crash"] is not None
    assert out["commit_missing"][0] == 400 and "was not uploaded" in out["commit_missing"][1]
    assert out["verify_missing"] == 404
    assert out["good"] == 200 and out["again"] is False and out["commit"] == 200
    assert hub.storage.blob_path(sha256).read_bytes() == data
    assert hub.storage.resolve("alice/lfs", "main").files["w.bin"].lfs
    deadline = time.monotonic() + 60  # a hang guard: the server drops it once it reads the broken body
    while any((tmp_path / "root" / "tmp").iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)  # the server may still be reading the crashed upload's connection
    assert not any((tmp_path / "root" / "tmp").iterdir())


def test_load_tokens_reads_users_and_orgs(tmp_path):
    path = tmp_path / "tokens"
    path.write_text(f"# comment\n\n{ALICE} alice lab,rl-team\n{BOB} bob  # trailing comment\n")
    assert load_tokens(path) == {ALICE: TokenInfo("alice", ("lab", "rl-team")), BOB: TokenInfo("bob")}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (f"{ALICE}\n", "line 1: expected 'TOKEN USER [ORG,ORG...]'"),
        (f"{ALICE} al/ice\n", "line 1: invalid user or org name 'al/ice'"),
        (f"{ALICE} alice\n{ALICE} bob\n", "line 2: the same token appears twice"),
        ("short alice\n", "line 1: a token must be at least 8 ASCII characters"),
        ("# nothing\n", "has no tokens"),
        (None, "cannot read token file"),
    ],
)
def test_load_tokens_refuses_bad_files_in_one_line(tmp_path, content, expected):
    path = tmp_path / "tokens"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ZooError) as info:
        HubServer(tmp_path / "root", token_file=path)
    assert expected in info.value.message and "\n" not in info.value.message
    assert ALICE not in str(info.value)


def test_storage_serializes_concurrent_commits(tmp_path):
    """The client race above rarely overlaps on two cores; this one does, on the code path it exercises."""
    from concurrent.futures import ThreadPoolExecutor

    from zoo.hub_server.storage import HubStorage
    from zoo.hub_server.store_records import Put

    storage = HubStorage(tmp_path / "root")
    storage.create_repo("alice/busy", "alice", private=False)

    def commit(i: int) -> None:
        entry = storage.regular_file(f"{i}".encode())
        storage.commit("alice/busy", "main", [Put(f"f{i}.txt", entry)], message=f"c{i}", author="alice")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(commit, range(24)))
    head = storage.resolve("alice/busy", "main")
    assert sorted(head.files) == sorted(f"f{i}.txt" for i in range(24))
    depth, commit_id = 0, head.id
    while commit_id:
        depth, commit_id = depth + 1, storage.load_commit("alice/busy", commit_id).parent
    assert depth == 25  # 24 commits on top of the initial one: none lost, none forked


def test_a_repo_creation_killed_half_way_leaves_nothing_that_survives_the_next_creation(tmp_path):
    import fcntl

    from zoo.hub_server.storage import HubStorage

    storage = HubStorage(tmp_path / "root")
    parent = tmp_path / "root" / "repos" / "alice"
    left = parent / ".ops.dead1234"  # what a server killed inside create_repo leaves: its lock is free
    (left / "repo").mkdir(parents=True)
    (left / ".lock").touch()
    live = parent / ".ops.live5678"  # another process creating the same repo right now
    live.mkdir()
    fd = os.open(live / ".lock", os.O_CREAT | os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        storage.create_repo("alice/ops", "alice", private=False)
    finally:
        os.close(fd)
    assert sorted(p.name for p in parent.iterdir()) == [".ops.live5678", "ops"]
    assert (parent / "ops" / "refs.json").is_file() and not (parent / "ops" / ".lock").exists()
