"""LFS objects are stored once but visible per repo: knowing a file's sha256 and size gives nothing.

Alice and Bob on one token-protected server, each with their own namespace. Alice's LFS files are in a
private repo and a public one. Bob tries what the issue reproduced (a commit of his own whose ``lfsFile``
line names Alice's object, then a download), asks the LFS batch and verify endpoints about it (they must
answer as for an object nobody stored), and copies across repos with the real client's
``CommitOperationCopy(src_repo_id=...)``: from the repo he cannot read it fails, from the public one it
works without a byte uploaded. Content stays deduplicated on disk throughout.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import shutil
from pathlib import Path

import pytest
from test_hub_server import ALICE, BOB, hub_log, requests_in, run_client

from zoo.hub_server.maintenance import verify_blobs
from zoo.hub_server.server import HubServer

SECRET, PUBLIC = os.urandom(6000), os.urandom(5000)  # *.bin: the client sends them through LFS


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def log():
    with hub_log() as stream:
        yield stream


@pytest.fixture
def hub(tmp_path, log):
    """Alice's private ``alice/secret`` (secret.bin) and public ``alice/open`` (public.bin), pushed with the
    real client; Bob's empty ``bob/mine``."""
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"{ALICE} alice\n{BOB} bob\n")
    (tmp_path / "secret.bin").write_bytes(SECRET)
    (tmp_path / "public.bin").write_bytes(PUBLIC)
    with HubServer(tmp_path / "root", token_file=tokens).start() as server:
        run_client(
            server,
            """
            api.create_repo("alice/secret", private=True)
            api.upload_file(path_or_fileobj="secret.bin", path_in_repo="secret.bin", repo_id="alice/secret")
            api.create_repo("alice/open")
            api.upload_file(path_or_fileobj="public.bin", path_in_repo="public.bin", repo_id="alice/open")
        """,
            tmp_path,
            ALICE,
        )
        run_client(server, 'api.create_repo("bob/mine")', tmp_path, BOB)
        yield server


def request(
    hub: HubServer, method: str, path: str, body: bytes | dict | None = None, token: str | None = None
) -> tuple[int, dict | list | bytes]:
    """One raw HTTP request: status and the JSON answer (bytes if it is not JSON)."""
    conn = http.client.HTTPConnection(hub.url.removeprefix("http://"), timeout=60)
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        raw = response.read()
    finally:
        conn.close()
    try:
        return response.status, json.loads(raw)
    except ValueError:
        return response.status, raw


def commit_lfs(hub: HubServer, repo_id: str, data: bytes, token: str, **extra) -> tuple[int, dict]:
    """A raw ndjson commit whose one line names ``data`` as an LFS object: sha256 and size, no bytes."""
    line = {"key": "lfsFile", "value": {"path": "stolen.bin", "algo": "sha256", "oid": sha(data), **extra}}
    body = json.dumps({"key": "header", "value": {"summary": "mine now"}}) + "\n" + json.dumps(line) + "\n"
    return request(hub, "POST", f"/api/models/{repo_id}/commit/main", body.encode(), token)  # type: ignore[return-value]


def batch(hub: HubServer, repo_id: str, data: bytes, token: str) -> dict:
    """The LFS batch endpoint's answer for one upload of ``data`` (its one object)."""
    body = {
        "operation": "upload",
        "transfers": ["basic", "multipart"],
        "hash_algo": "sha256",
        "objects": [{"oid": sha(data), "size": len(data)}],
    }
    status, answer = request(hub, "POST", f"/{repo_id}.git/info/lfs/objects/batch", body, token)
    assert status == 200, answer
    (obj,) = answer["objects"]  # type: ignore[index]
    return obj


def test_a_forged_lfs_line_does_not_reach_another_users_private_file(hub):
    for data, extra in ((SECRET, {"size": len(SECRET)}), (SECRET, {}), (PUBLIC, {"size": len(PUBLIC)})):
        status, answer = commit_lfs(hub, "bob/mine", data, BOB, **extra)
        assert status == 400, answer
        assert answer["error"] == (
            f"LFS object {sha(data)} was not uploaded to bob/mine; upload it (or copy it "
            "from a repo you can read) before committing"
        )
    # the same answer as for content that is stored nowhere: nothing tells Bob that Alice has it
    nowhere = commit_lfs(hub, "bob/mine", b"stored nowhere", BOB, size=14)[1]["error"]
    assert nowhere.replace(sha(b"stored nowhere"), "X") == answer["error"].replace(sha(PUBLIC), "X")
    assert hub.storage.resolve("bob/mine", "main").files == {}
    status, _ = request(hub, "GET", "/bob/mine/resolve/main/stolen.bin", token=BOB)
    assert status == 404
    # Alice's own commit naming her object again (a revert, a second path) needs no upload
    status, answer = commit_lfs(hub, "alice/secret", SECRET, ALICE, size=len(SECRET))
    assert status == 200, answer


def test_batch_and_verify_answer_as_if_another_repos_object_were_absent(hub, log, tmp_path):
    for data in (SECRET, PUBLIC, b"stored nowhere"):
        obj = batch(hub, "bob/mine", data, BOB)
        assert set(obj) == {"oid", "size", "authenticated", "actions"}  # upload it: the same for all three
        assert set(obj["actions"]) == {"upload", "verify"}
        status, _ = request(
            hub, "POST", "/bob/mine.git/info/lfs/objects/verify", {"oid": sha(data), "size": len(data)}, BOB
        )
        assert status == 404
    assert batch(hub, "alice/secret", SECRET, ALICE) == {"oid": sha(SECRET), "size": len(SECRET)}  # stored
    # Bob uploads bytes he has anyway (the same content): verified, his to commit, stored once
    (tmp_path / "mine.bin").write_bytes(PUBLIC)
    log.truncate(0)
    log.seek(0)
    run_client(
        hub,
        """
        api.upload_file(path_or_fileobj="mine.bin", path_in_repo="w.bin", repo_id="bob/mine")
        import hashlib
        out["got"] = hashlib.sha256(open(hf_hub_download("bob/mine", "w.bin"), "rb").read()).hexdigest()
    """,
        tmp_path,
        BOB,
    )
    assert f"PUT /bob/mine.git/info/lfs/objects/{sha(PUBLIC)} 200" in requests_in(log.getvalue())
    assert [sha256 for sha256, _ in hub.storage.iter_blobs()].count(sha(PUBLIC)) == 1
    assert batch(hub, "bob/mine", PUBLIC, BOB) == {"oid": sha(PUBLIC), "size": len(PUBLIC)}  # now it is his


def test_an_upload_url_of_one_repo_does_not_grant_another(hub):
    """The signed URL names the repo: Bob's URL for bob/mine cannot be replayed as one for alice/open."""
    href = batch(hub, "bob/mine", b"bob's bytes", BOB)["actions"]["upload"]["href"]
    path = href.removeprefix(hub.url)
    status, _ = request(hub, "PUT", path.replace("/bob/mine.git/", "/alice/open.git/"), b"bob's bytes")
    assert status == 403
    status, _ = request(hub, "PUT", path, b"bob's bytes")
    assert status == 200 and hub.storage.lfs_granted("bob/mine", sha(b"bob's bytes"))
    assert not hub.storage.lfs_granted("alice/open", sha(b"bob's bytes"))


COPY = """
    from huggingface_hub import CommitOperationCopy
    copy = lambda src: CommitOperationCopy(src_path_in_repo=src.split("/")[-1], path_in_repo="copied.bin",
                                           src_repo_id=src.rsplit("/", 1)[0], src_repo_type="model")
    out["private"] = caught(api.create_commit, "bob/mine", [copy("alice/secret/secret.bin")], commit_message="c")
    out["public"] = api.create_commit("bob/mine", [copy("alice/open/public.bin")], commit_message="c").oid
    import hashlib
    out["got"] = hashlib.sha256(open(hf_hub_download("bob/mine", "copied.bin"), "rb").read()).hexdigest()
"""


def test_copy_operations_across_repos_work_from_readable_repos_only(hub, log, tmp_path):
    log.truncate(0)
    log.seek(0)
    out = run_client(hub, COPY, tmp_path, BOB)
    assert "RepositoryNotFoundError" in out["private"]["classes"], out["private"]
    assert out["got"] == sha(PUBLIC)
    files = hub.storage.resolve("bob/mine", "main").files
    assert (
        list(files) == ["copied.bin"]
        and files["copied.bin"].sha256 == sha(PUBLIC)
        and files["copied.bin"].lfs
    )
    sent = requests_in(log.getvalue())
    assert "POST /api/models/alice/open/lfs-files/duplicate 200" in sent
    assert not any(line.startswith("PUT ") for line in sent)  # copied, not re-uploaded
    assert verify_blobs(hub.storage.root).ok and len(list(hub.storage.iter_blobs())) == 2


def test_the_duplicate_endpoint_refuses_what_the_caller_may_not_copy(hub):
    def duplicate(src: str, target: str, data: bytes, token: str | None) -> tuple[int, dict]:
        body = {
            "target": {"type": "model", "name": target},
            "files": [{"sha256": sha(data), "xetHash": sha(data)}],
        }
        return request(hub, "POST", f"/api/models/{src}/lfs-files/duplicate", body, token)  # type: ignore[return-value]

    assert duplicate("alice/secret", "bob/mine", SECRET, BOB)[0] == 404  # as if it did not exist
    assert duplicate("alice/open", "alice/open", PUBLIC, BOB)[0] == 403  # Bob may not write there
    assert duplicate("alice/open", "bob/mine", PUBLIC, None)[0] == 401
    # an object stored for another repo is not one of alice/open's, whatever its size or name
    status, answer = duplicate("alice/open", "bob/mine", SECRET, BOB)
    assert status == 200 and answer == {
        "failed": [{"sha256": sha(SECRET), "error": "not an LFS file of alice/open"}]
    }
    assert commit_lfs(hub, "bob/mine", SECRET, BOB)[0] == 400
    status, answer = duplicate("alice/open", "bob/mine", PUBLIC, BOB)
    assert status == 200 and answer == {"failed": []}
    assert commit_lfs(hub, "bob/mine", PUBLIC, BOB)[0] == 200
    # Alice copies from her own private repo: she can read it
    assert duplicate("alice/secret", "alice/open", SECRET, ALICE) == (200, {"failed": []})


def test_committed_objects_need_no_record_so_old_stores_and_backups_lose_nothing(hub, tmp_path):
    """Stores of earlier releases have no ``lfs/`` folders, and a backup may leave them out: a repo's
    committed LFS files stay committable again (a revert, a copy within the repo) and copyable to
    other repos, nobody else's become committable, and a new upload makes the folder."""
    root = hub.storage.root
    for repo in (root / "repos").glob("*/*"):
        shutil.rmtree(repo / "lfs")
    assert commit_lfs(hub, "bob/mine", PUBLIC, BOB)[0] == 400
    assert commit_lfs(hub, "alice/open", PUBLIC, ALICE)[0] == 200
    out = run_client(hub, COPY, tmp_path, BOB)
    assert out["got"] == sha(PUBLIC) and "RepositoryNotFoundError" in out["private"]["classes"]
    assert [p.name for p in (root / "repos" / "bob" / "mine" / "lfs").iterdir()] == [sha(PUBLIC)]
    assert not (root / "repos" / "alice" / "open" / "lfs").exists()  # reading made nothing


def test_moved_and_deleted_repos_take_their_records_with_them(hub, tmp_path):
    run_client(hub, 'api.move_repo("alice/open", "alice/moved")', tmp_path, ALICE)
    assert commit_lfs(hub, "alice/moved", PUBLIC, ALICE)[0] == 200
    run_client(hub, 'api.create_repo("alice/open")', tmp_path, ALICE)  # the old name, a new repo
    assert commit_lfs(hub, "alice/open", PUBLIC, ALICE)[0] == 400
    assert [p.name for p in (Path(hub.storage.root) / "repos" / "alice" / "open" / "lfs").iterdir()] == []
