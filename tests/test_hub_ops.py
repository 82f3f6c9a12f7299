"""``zoo hub gc`` and ``zoo hub verify`` on roots written by a real server and the real huggingface_hub client.

Blobs become unreferenced in two ways a user meets: an LFS upload whose commit never came (the client's
``preupload_lfs_files`` without ``create_commit``, or a client killed between the two), and a deleted repo.
Age is set with ``os.utime``: the grace period is an hour, and a test cannot wait one.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from helpers import zoo
from test_hub_server import PRELUDE, run_client

from zoo.errors import ZooError
from zoo.hub_server.maintenance import collect_garbage, verify_blobs
from zoo.hub_server.server import HubServer
from zoo.hub_server.storage import HubStorage

HOURS_AGO = time.time() - 7200


@pytest.fixture
def hub(tmp_path):
    with HubServer(tmp_path / "root").start() as server:
        yield server


def blob(hub: HubServer, sha256: str) -> Path:
    return hub.storage.blob_path(sha256)


def age_all_blobs(hub: HubServer) -> None:
    """Make every stored blob two hours old: only references can keep it now."""
    for _, path in hub.storage.iter_blobs():
        os.utime(path, (HOURS_AGO, HOURS_AGO))


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


UPLOAD_AND_ORPHAN = """
    import hashlib
    api.create_repo("alice/gc")
    weights, config = b"W" * 5000, b'{"lr": 0.1}'
    first = api.create_commit("alice/gc", [CommitOperationAdd("weights.bin", weights),
                                           CommitOperationAdd("config.json", config)], commit_message="run")
    api.create_commit("alice/gc", [CommitOperationDelete("weights.bin")], commit_message="drop weights")
    # LFS uploads whose commit never comes: the blobs land, no commit names them
    orphans = [CommitOperationAdd("old.bin", b"O" * 3000), CommitOperationAdd("fresh.bin", b"F" * 2000)]
    api.preupload_lfs_files("alice/gc", additions=orphans)
    out["first"] = first.oid
"""

DOWNLOAD_ALL = """
    import hashlib
    out["got"] = {{}}
    for path in ["weights.bin", "config.json"]:
        out["got"][path] = hashlib.sha256(open(hf_hub_download("alice/gc", path, revision={first!r}),
                                               "rb").read()).hexdigest()
"""


def test_gc_removes_old_orphans_and_dead_uploads_and_keeps_fresh_and_referenced(hub, tmp_path):
    out = run_client(hub, UPLOAD_AND_ORPHAN, tmp_path)
    root = hub.storage.root
    old, fresh = blob(hub, sha(b"O" * 3000)), blob(hub, sha(b"F" * 2000))
    referenced = [blob(hub, sha(b"W" * 5000)), blob(hub, sha(b'{"lr": 0.1}'))]
    assert old.is_file() and fresh.is_file() and all(p.is_file() for p in referenced)
    age_all_blobs(hub)
    os.utime(fresh)  # uploaded a moment ago: its commit may be on its way
    dead = root / "tmp" / "upload.killed"
    dead.write_bytes(b"x" * 777)  # what a server killed mid-upload leaves: nobody holds its lock
    abandoned, recent = root / "parts" / f"{'a' * 64}-1", root / "parts" / f"{'b' * 64}-2"
    for folder, when in ((abandoned, time.time() - 3 * 3600), (recent, time.time())):
        folder.mkdir(parents=True)  # a multipart upload's parts, the oldest long past its URLs' expiry
        (folder / "1").write_bytes(b"part")
        os.utime(folder, (when, when))

    dry = collect_garbage(root, dry_run=True)
    assert (dry.removed, dry.removed_bytes, dry.kept_fresh, dry.referenced) == (1, 3000, 1, 2)
    assert (dry.uploads_removed, dry.uploads_bytes, dry.parts_removed, dry.records_removed) == (1, 777, 1, 1)
    assert old.is_file() and dead.is_file() and abandoned.is_dir()  # a dry run removes nothing
    records = root / "repos" / "alice" / "gc" / "lfs"
    assert {p.name for p in records.iterdir()} == {
        sha(b"W" * 5000),
        old.parent.name + old.name,
        fresh.parent.name + fresh.name,
    }

    report = collect_garbage(root)
    assert report.to_json() == {**dry.to_json(), "dry_run": False}
    assert not old.exists() and not dead.exists() and not abandoned.exists() and recent.is_dir()
    assert {p.name for p in records.iterdir()} == {sha(b"W" * 5000), sha(b"F" * 2000)}  # old.bin's is gone
    assert fresh.is_file() and all(p.is_file() for p in referenced)  # "weights.bin" is gone from main only
    got = run_client(hub, DOWNLOAD_ALL.format(first=out["first"]), tmp_path)["got"]
    assert got == {"weights.bin": sha(b"W" * 5000), "config.json": sha(b'{"lr": 0.1}')}
    again = collect_garbage(root)
    assert (again.removed, again.uploads_removed, again.parts_removed, again.records_removed) == (0, 0, 0, 0)
    assert again.referenced == 2


def test_gc_removes_the_blobs_of_a_deleted_repo_but_not_those_another_repo_shares(hub, tmp_path):
    run_client(
        hub,
        """
        for name in ["alice/keep", "alice/doomed"]:
            api.create_repo(name)
            api.upload_file(path_or_fileobj=b"shared weights", path_in_repo="w.bin", repo_id=name)
        api.upload_file(path_or_fileobj=b"only in doomed", path_in_repo="x.bin", repo_id="alice/doomed")
        api.delete_repo("alice/doomed")
    """,
        tmp_path,
    )
    age_all_blobs(hub)
    report = collect_garbage(hub.storage.root)
    assert (report.repos, report.removed, report.removed_bytes) == (1, 1, len(b"only in doomed"))
    assert blob(hub, sha(b"shared weights")).is_file() and not blob(hub, sha(b"only in doomed")).exists()


CONCURRENT_UPLOADS = """
    import hashlib, threading
    api.create_repo("alice/busy")
    committed, errors = [], []
    def client(k):
        for i in range(8):
            # half re-use content stored hours ago that no commit names: the race gc must not lose
            data = (b"old-%d" % (k * 8 + i)) * 300 if i % 2 else b"new-%d-%d" % (k, i) * 300
            path = f"c{k}/f{i}." + ("bin" if k % 2 else "txt")
            try:
                info = api.upload_file(path_or_fileobj=data, path_in_repo=path, repo_id="alice/busy")
                committed.append([info.oid, path, hashlib.sha256(data).hexdigest()])
            except Exception as exc:
                errors.append(repr(exc))
    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
    out["committed"], out["errors"] = committed, errors
"""


def test_gc_running_while_clients_commit_loses_nothing(hub, tmp_path):
    olds = [(b"old-%d" % n) * 300 for n in range(32)] + [b"never used" * 300]
    run_client(
        hub,
        f"""
        api.create_repo("alice/seed")
        api.preupload_lfs_files("alice/seed", additions=[CommitOperationAdd(f"{{i}}.bin", data)
                                                         for i, data in enumerate({olds!r})])
    """,
        tmp_path,
    )
    age_all_blobs(hub)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env.update(
        HF_ENDPOINT=hub.url,
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        HF_HOME=str(tmp_path / "hf-home"),
    )
    code = PRELUDE + textwrap.dedent(CONCURRENT_UPLOADS) + "\nprint(json.dumps(out))\n"
    client = subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    removed, rounds = 0, 0
    while client.poll() is None:
        removed += collect_garbage(hub.storage.root).removed
        rounds += 1
        time.sleep(0.05)
    stdout, stderr = client.communicate()
    assert client.returncode == 0, stderr[-3000:]
    out = json.loads(stdout.strip().splitlines()[-1])
    assert out["errors"] == [] and len(out["committed"]) == 32
    assert rounds > 1 and removed >= 1  # gc ran alongside, and took at least the blob nobody re-used
    assert not blob(hub, sha(b"never used" * 300)).exists()
    check = run_client(
        hub,
        f"""
        import hashlib
        out["bad"] = [[c, p] for c, p, s in {out["committed"]!r}
                      if hashlib.sha256(open(hf_hub_download("alice/busy", p, revision=c), "rb").read()).hexdigest() != s]
    """,
        tmp_path,
    )
    assert check["bad"] == []
    report = verify_blobs(hub.storage.root)
    assert report.ok, report.problems


def test_verify_names_a_flipped_byte_and_a_missing_blob_in_one_line_each(hub, tmp_path):
    out = run_client(
        hub,
        """
        api.create_repo("alice/v")
        commit = api.create_commit("alice/v", [CommitOperationAdd("weights.bin", b"A" * 4096),
                                               CommitOperationAdd("notes.txt", b"hello")], commit_message="x")
        out["commit"] = commit.oid
    """,
        tmp_path,
    )
    root = hub.storage.root
    sound = zoo("hub", "verify", "--root", root)
    assert sound.exit_code == 0, sound.stderr
    assert (
        sound.stdout.strip()
        == "verified 2 blobs (4.0 KiB) of 1 repo, 2 commits: all sound; no unreferenced blobs"
    )

    weights, notes = blob(hub, sha(b"A" * 4096)), blob(hub, sha(b"hello"))
    data = bytearray(weights.read_bytes())
    data[100] ^= 0x01
    weights.write_bytes(bytes(data))
    notes.unlink()
    result = zoo("hub", "verify", "--root", root)
    assert result.exit_code == 1
    lines = result.stdout.strip().splitlines()
    assert lines[0] == (
        f"corrupt blob {weights}: its content's sha256 is {sha(bytes(data))} "
        f"(alice/v@{out['commit'][:12]} weights.bin)"
    )
    assert lines[1] == f"missing blob {sha(b'hello')}: alice/v@{out['commit'][:12]} notes.txt"
    assert lines[2].endswith(": 1 corrupt, 1 missing; no unreferenced blobs") and len(lines) == 3
    assert "restore the named files from a backup" in result.stderr and "Traceback" not in result.stderr

    as_json = zoo("hub", "verify", "--root", root, "--json")
    assert as_json.exit_code == 1
    report = as_json.json()
    assert report["ok"] is False and report["blobs"] == 1
    assert [(p["kind"], p["what"]) for p in report["problems"]] == [
        ("corrupt", sha(b"A" * 4096)),
        ("missing", sha(b"hello")),
    ]


def test_gc_cli_prints_a_summary_and_json_and_refuses_a_wrong_root_in_one_line(hub, tmp_path):
    run_client(hub, UPLOAD_AND_ORPHAN, tmp_path)
    age_all_blobs(hub)
    root = hub.storage.root
    dry = zoo("hub", "gc", "--root", root, "--dry-run")
    assert dry.exit_code == 0, dry.stderr
    assert dry.stdout.strip() == (
        "would remove 2 unreferenced blobs (4.9 KiB), 0 dead uploads (0 B) and 0 "
        "abandoned multipart uploads; kept 2 referenced and 0 younger than 3600 s, "
        "of 4 blobs in 1 repo"
    )
    assert len(list(hub.storage.iter_blobs())) == 4
    done = zoo("hub", "gc", "--root", root, "--json")
    assert done.exit_code == 0
    assert done.json() == {
        "dry_run": False,
        "grace_seconds": 3600.0,
        "repos": 1,
        "commits": 3,
        "blobs": 4,
        "referenced": 2,
        "kept_fresh": 0,
        "removed": 2,
        "removed_bytes": 5000,
        "uploads_removed": 0,
        "uploads_bytes": 0,
        "parts_removed": 0,
        "records_removed": 2,
    }
    assert len(list(hub.storage.iter_blobs())) == 2

    for command in ("gc", "verify"):
        wrong = zoo("hub", command, "--root", tmp_path / "no-such-root")
        assert wrong.exit_code == 1 and wrong.stdout == ""
        assert (
            wrong.stderr.splitlines()[0]
            == f"error: {tmp_path / 'no-such-root'} is not a zoo hub root (no blobs/sha256/ and repos/ in it)"
        )
        assert not (tmp_path / "no-such-root").exists()  # nothing created on a typo


def test_gc_refuses_to_run_over_a_commit_it_cannot_read(hub, tmp_path):
    out = run_client(hub, UPLOAD_AND_ORPHAN, tmp_path)
    age_all_blobs(hub)
    commit_file = hub.storage.root / "repos" / "alice" / "gc" / "commits" / f"{out['first']}.json"
    commit_file.write_text("{not json")
    with pytest.raises(
        ZooError,
        match=r"unreadable commit alice/gc/commits/.*\.json: not the JSON zoo writes \(under .*\); gc removed nothing",
    ):
        collect_garbage(hub.storage.root)
    assert len(list(hub.storage.iter_blobs())) == 4
    report = verify_blobs(hub.storage.root)
    assert [p.message for p in report.problems] == [
        f"unreadable commit alice/gc/commits/{out['first']}.json: not the JSON zoo writes"
    ]


def test_gc_finds_a_repo_moved_while_it_lists(hub, tmp_path, monkeypatch):
    """A rename between two listings must not hide a repo's references (its blobs are hours old)."""
    run_client(
        hub,
        """
        api.create_repo("alice/a")
        api.upload_file(path_or_fileobj=b"precious" * 100, path_in_repo="w.bin", repo_id="alice/a")
    """,
        tmp_path,
    )
    age_all_blobs(hub)
    storage_cls = type(hub.storage)
    real = storage_cls.iter_repos
    moved = threading.Event()

    def iter_repos_moving(self):
        ids = list(real(self))
        if not moved.is_set():  # the first listing sees the old name; the repo moves before it is read
            hub.storage.move_repo("alice/a", "bob/a")
            moved.set()
        yield from ids

    monkeypatch.setattr(storage_cls, "iter_repos", iter_repos_moving)
    report = collect_garbage(hub.storage.root)
    assert moved.is_set() and report.removed == 0 and report.referenced == 1
    assert blob(hub, sha(b"precious" * 100)).is_file()


def test_public_url_is_where_lfs_uploads_go_behind_a_tls_proxy(tmp_path):
    """Behind a TLS proxy the request reaches the server as http://; the upload URLs it hands out must
    name the proxy's https:// address, which only the operator can state (X-Forwarded-* is not trusted)."""
    with HubServer(tmp_path / "root", public_url="https://hub.lab.example/").start() as server:
        server.storage.create_repo("alice/tls", "alice", private=False)  # the client's would get an https URL
        out = run_client(
            server,
            """
            from huggingface_hub.lfs import UploadInfo, post_lfs_batch_info
            info = UploadInfo.from_bytes(b"weights" * 1000)
            objects, errors, transfer = post_lfs_batch_info([info], token=None, repo_type="model",
                                                            repo_id="alice/tls", headers={"X-Forwarded-Proto": "http",
                                                            "X-Forwarded-Host": "evil.example"})
            out["href"], out["verify"] = objects[0]["actions"]["upload"]["href"], objects[0]["actions"]["verify"]["href"]
        """,
            tmp_path,
        )
    assert out["href"].startswith("https://hub.lab.example/alice/tls.git/info/lfs/objects/")
    assert out["verify"] == "https://hub.lab.example/alice/tls.git/info/lfs/objects/verify"
    bad = zoo("hub", "serve", "--root", tmp_path / "root", "--public-url", "https://hub.lab.example/zoo")
    assert bad.exit_code == 1 and bad.stderr.splitlines()[0] == (
        "error: invalid public URL 'https://hub.lab.example/zoo': give the scheme, host and port only"
    )


def test_a_repo_missing_its_refs_is_reported_not_mistaken_for_a_move(hub, tmp_path):
    run_client(hub, UPLOAD_AND_ORPHAN, tmp_path)
    age_all_blobs(hub)
    (hub.storage.root / "repos" / "alice" / "gc" / "refs.json").unlink()  # by hand: the repo stays put
    with pytest.raises(
        ZooError, match=r"unreadable repo alice/gc: alice/gc/refs.json is missing .*gc removed nothing"
    ):
        collect_garbage(hub.storage.root)
    assert len(list(hub.storage.iter_blobs())) == 4
    result = zoo("hub", "verify", "--root", hub.storage.root)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == "unreadable repo alice/gc: alice/gc/refs.json is missing"


def test_hub_serve_without_the_server_extra_says_what_to_install_and_writes_nothing(tmp_path):
    """A base install (no ``server`` extra: starlette cannot be imported) gets one line naming the install
    command and a non-zero exit, before the storage folder is made; ``zoo hub verify`` and ``gc``, which
    read and clean a root without serving it, still work there."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        textwrap.dedent(
            """
            import importlib.abc
            import sys

            class NotInstalled(importlib.abc.MetaPathFinder):
                def find_spec(self, name, path=None, target=None):
                    if name == "starlette" or name.startswith("starlette."):
                        raise ImportError(f"No module named {name!r} (blocked)", name=name)
                    return None

            sys.meta_path.insert(0, NotInstalled())
            """
        )
    )
    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(repo)])}

    def cli(*args: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "zoo", "hub", *args]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)

    root = tmp_path / "hub"
    served = cli("serve", "--root", str(root), "--port", "0")
    assert served.returncode != 0
    assert served.stderr.strip().splitlines() == [
        "error: zoo hub serve needs the server extra (starlette is not installed): "
        "pip install 'rl-zoo-hub[server]'"
    ]
    assert not root.exists()
    HubStorage(root)  # a root made with the extra (the storage itself needs none)
    assert cli("verify", "--root", str(root)).returncode == 0
    assert cli("gc", "--root", str(root), "--dry-run").returncode == 0
