"""``zoo hub serve`` under load: N clients uploading and downloading at once, next to raw file copies.

The server is ``zoo hub serve`` in a process of its own on 127.0.0.1 (port 0, a fresh root). N client
threads in this process drive it through the real huggingface_hub client (``HF_ENDPOINT`` set before it
is imported): each client runs ``--ops`` operations, a mix of

  upload    ``HfApi.upload_file`` of a fresh random file (half of them ``*.bin``, which the client sends
            through git-LFS: preupload, LFS batch, PUT, verify, commit; half ``*.txt``, inline in the
            ndjson commit), to one of ``--repos`` repos that several clients commit to at once;
  download  a GET of ``/NS/NAME/resolve/COMMIT/PATH`` with the client's own session (``get_session``,
            ``hf_hub_url``) of a file some client uploaded earlier, pinned to the commit the upload
            returned, its sha256 compared with the uploaded bytes'.

A download whose sha256 differs from the bytes uploaded at that commit is an inconsistent read. Before
the server starts, the same N threads run the same operations against plain files, the limit (what the
disk and Python's threads allow without HTTP): an upload writes the bytes to a temp file, fsyncs it and
copies it with ``shutil.copyfile`` into a store folder, a download reads a stored file back and hashes it.

Printed per variant: operations per second and their ratio to the raw copies' (the fastest of
``--limit-rounds`` runs: the limit is the best case, and one fsync stall of the disk would halve it),
HTTP requests per second (counted by a response hook on the client's session), p50/p99 latency per
kind, errors and inconsistent reads; then the CPU time the server and the clients used, and what
``zoo hub verify`` says of the root afterwards. Bounded: ``--ops`` per client and ``--max-seconds`` in
all (clients stop starting operations after it). Exit 1 on any error, inconsistent read, operation
left undone or verify finding.

    python benchmarks/hub_load.py [--clients 32] [--ops 40] [--repos 8] [--size 65536] [--max-seconds 90]
                                  [--limit-rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Tally:
    """What one variant's clients measured; appended to from several threads under ``lock``."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {"upload": [], "download": []})
    errors: list[str] = field(default_factory=list)
    inconsistent: int = 0
    requests: int = 0  # HTTP requests the client sent (the hub); one per operation for plain files
    wall: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, kind: str, seconds: float) -> None:
        with self.lock:
            self.latencies[kind].append(seconds)

    @property
    def ops(self) -> int:
        return sum(len(v) for v in self.latencies.values())


@dataclass
class Uploaded:
    """A file as it was uploaded: where, at which commit, and the sha256 of its bytes."""

    key: tuple[str, str, str]  # repo_id, commit id (or store name), path
    sha256: str


class Workload:
    """The same random plan for both variants: which client uploads what and reads which earlier file."""

    def __init__(self, clients: int, ops: int, size: int, seed: int):
        rng = random.Random(seed)
        self.plans: list[list[tuple[str, bytes | None]]] = []
        for c in range(clients):
            plan: list[tuple[str, bytes | None]] = []
            for i in range(ops):
                if (
                    i < 2 or rng.random() < 0.5
                ):  # every client uploads first, so that there is something to read
                    name = f"c{c:02d}/f{i:03d}.{'bin' if rng.random() < 0.5 else 'txt'}"
                    data = (
                        rng.randbytes(size)
                        if name.endswith(".bin")
                        else rng.randbytes(size // 2).hex()[:size].encode()
                    )
                    plan.append((name, data))
                else:
                    plan.append(("download", None))
            self.plans.append(plan)


def run_clients(
    workload: Workload,
    upload: Callable[[int, str, bytes], Uploaded],
    download: Callable[[Uploaded], str],
    max_seconds: float,
) -> Tally:
    """Run every client's plan in a thread of its own; downloads pick a random file uploaded so far."""
    tally = Tally()
    done: list[Uploaded] = []
    done_lock = threading.Lock()
    start = threading.Event()
    deadline = [0.0]

    def client(c: int) -> None:
        rng = random.Random(1000 + c)
        start.wait()
        for name, data in workload.plans[c]:
            if time.perf_counter() > deadline[0]:
                return
            began = time.perf_counter()
            try:
                if data is not None:
                    item = upload(c, name, data)
                    if item.sha256 != hashlib.sha256(data).hexdigest():
                        raise AssertionError(f"upload of {name} reported another sha256")
                    tally.record("upload", time.perf_counter() - began)
                    with done_lock:
                        done.append(item)
                else:
                    with done_lock:
                        item = rng.choice(done)
                    got = download(item)
                    tally.record("download", time.perf_counter() - began)
                    if got != item.sha256:
                        with tally.lock:
                            tally.inconsistent += 1
            except Exception as exc:  # counted and shown, the load goes on
                with tally.lock:
                    tally.errors.append(f"{type(exc).__name__}: {exc}"[:300])

    threads = [threading.Thread(target=client, args=(c,)) for c in range(len(workload.plans))]
    for thread in threads:
        thread.start()
    began = time.perf_counter()
    deadline[0] = began + max_seconds
    start.set()
    for thread in threads:
        thread.join()
    tally.wall = time.perf_counter() - began
    return tally


# ------------------------------------------------------------------------------------------ the hub
def start_server(root: Path) -> tuple[subprocess.Popen, str]:
    """``zoo hub serve --port 0`` in a process of its own; returns it and its URL (from its first lines)."""
    cmd = [sys.executable, "-m", "zoo", "hub", "serve", "--root", str(root), "--port", "0"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        match = re.search(r" at (http://\S+)", line)
        if match:
            threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep the pipe drained
            return proc, match.group(1)
    raise SystemExit(f"zoo hub serve did not start (exit {proc.wait()})")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def hub_variant(url: str, workload: Workload, repos: int, max_seconds: float, hf_home: Path) -> Tally:
    os.environ.update(
        HF_ENDPOINT=url,
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        HF_HOME=str(hf_home),
    )
    from huggingface_hub import HfApi, hf_hub_url
    from huggingface_hub.utils import get_session

    api = HfApi()
    http = {"requests": 0}
    counted = threading.Lock()

    def count(_response: object) -> None:
        with counted:
            http["requests"] += 1

    get_session().event_hooks["response"].append(count)  # the one client session every call goes through
    repo_ids = [f"load/repo-{r:02d}" for r in range(repos)]
    for repo_id in repo_ids:
        api.create_repo(repo_id)

    def upload(c: int, name: str, data: bytes) -> Uploaded:
        repo_id = repo_ids[c % repos]
        info = api.upload_file(path_or_fileobj=data, path_in_repo=name, repo_id=repo_id, commit_message=name)
        return Uploaded((repo_id, info.oid, name), hashlib.sha256(data).hexdigest())

    def download(item: Uploaded) -> str:
        repo_id, commit, path = item.key
        digest = hashlib.sha256()
        with get_session().stream("GET", hf_hub_url(repo_id, path, revision=commit)) as response:
            response.raise_for_status()
            for chunk in response.iter_bytes(1 << 16):
                digest.update(chunk)
        return digest.hexdigest()

    before = http["requests"]
    tally = run_clients(workload, upload, download, max_seconds)
    tally.requests = http["requests"] - before
    return tally


# ------------------------------------------------------------------------------------------ the limit
def files_variant(folder: Path, workload: Workload, max_seconds: float) -> Tally:
    store, scratch = folder / "store", folder / "scratch"
    store.mkdir(parents=True)
    scratch.mkdir()

    def upload(c: int, name: str, data: bytes) -> Uploaded:
        flat = name.replace("/", "_")
        tmp = scratch / flat
        with tmp.open("wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        shutil.copyfile(tmp, store / flat)
        return Uploaded(("files", "-", flat), hashlib.sha256(data).hexdigest())

    def download(item: Uploaded) -> str:
        digest = hashlib.sha256()
        with (store / item.key[2]).open("rb") as fh:
            while chunk := fh.read(1 << 16):
                digest.update(chunk)
        return digest.hexdigest()

    tally = run_clients(workload, upload, download, max_seconds)
    tally.requests = tally.ops
    return tally


# ------------------------------------------------------------------------------------------ report
def _ms(values: list[float], q: float) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:.1f}"


def report(name: str, tally: Tally, limit: Tally | None) -> str:
    rate = tally.ops / tally.wall if tally.wall else 0.0
    ratio = f"{rate / (limit.ops / limit.wall):.3f}x" if limit and limit.wall else "1.000x"
    up, down = tally.latencies["upload"], tally.latencies["download"]
    return (
        f"{name:<20} {tally.ops:>5} ops {tally.wall:6.2f} s {rate:7.1f} ops/s {ratio:>7} "
        f"{tally.requests / tally.wall if tally.wall else 0:7.1f} req/s  "
        f"upload p50/p99 {_ms(up, 0.5):>6}/{_ms(up, 0.99):>6} ms  "
        f"download p50/p99 {_ms(down, 0.5):>5}/{_ms(down, 0.99):>5} ms  "
        f"errors {len(tally.errors)}  inconsistent {tally.inconsistent}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--ops", type=int, default=40, help="operations per client")
    parser.add_argument("--repos", type=int, default=8, help="repos the clients share (commits race)")
    parser.add_argument("--size", type=int, default=65536, help="bytes per uploaded file")
    parser.add_argument("--max-seconds", type=float, default=90.0, help="stop starting operations after")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit-rounds", type=int, default=3, help="raw-copy runs; the fastest is the limit")
    args = parser.parse_args()

    workload = Workload(args.clients, args.ops, args.size, args.seed)
    uploads = sum(data is not None for plan in workload.plans for _, data in plan)
    print(
        f"{args.clients} clients x {args.ops} operations ({uploads} uploads of {args.size} bytes, "
        f"{args.clients * args.ops - uploads} downloads), {args.repos} shared repos, {os.cpu_count()} cores"
    )
    with tempfile.TemporaryDirectory(prefix="zoo-hub-load-") as tmp:
        folder = Path(tmp)
        rounds = [
            files_variant(folder / f"files-{r}", workload, args.max_seconds) for r in range(args.limit_rounds)
        ]
        limit = min(
            rounds, key=lambda tally: tally.wall
        )  # the limit is the best case; one fsync stall is noise
        proc, url = start_server(folder / "root")
        try:
            server_before, clients_before = cpu_seconds(proc.pid), time.process_time()
            hub = hub_variant(url, workload, args.repos, args.max_seconds, folder / "hf-home")
            server_cpu, clients_cpu = (
                cpu_seconds(proc.pid) - server_before,
                time.process_time() - clients_before,
            )
        finally:
            proc.terminate()
            proc.wait(30)
        print(report(f"raw copies (best {args.limit_rounds})", limit, None))
        print(report("zoo hub serve", hub, limit))
        print(
            f"{'':<20} CPU during the hub run: server {server_cpu:.1f} s, clients {clients_cpu:.1f} s "
            f"({(server_cpu + clients_cpu) / hub.wall:.2f} of {os.cpu_count()} cores)"
        )
        for line in dict.fromkeys(hub.errors + limit.errors):
            print(f"  error: {line}")
        verify = subprocess.run(
            [sys.executable, "-m", "zoo", "hub", "verify", "--root", str(folder / "root")],
            capture_output=True,
            text=True,
        )
        print(
            f"zoo hub verify (exit {verify.returncode}): {(verify.stdout + verify.stderr).strip().splitlines()[-1]}"
        )
        planned = args.clients * args.ops
        bad = hub.errors or hub.inconsistent or limit.errors or hub.ops < planned or verify.returncode
        if hub.ops < planned:
            print(f"only {hub.ops} of {planned} operations ran within --max-seconds {args.max_seconds:g}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
