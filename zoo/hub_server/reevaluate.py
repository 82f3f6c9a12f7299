"""``zoo hub serve --reevaluate``: the server evaluates each new main head itself, so its scores are verified.

A repo's own eval.json proves which model file ``zoo eval`` measured, not that the uploader ran it honestly;
the server's own evaluation of the commit does. It is opt-in (it costs CPU) and bounded:

* **One worker thread, one evaluation at a time**, fed by ``hub.index.listeners`` (called after a repo's
  main head changes). The queue holds at most ``max_queue`` commits; a newer head of a repo replaces its
  queued older one, a commit already queued or evaluated is skipped, and when the queue is full the
  oldest waiting commit is dropped and recorded as skipped (a later push queues the repo again).
* **No user code runs.** The commit's files are copied from the blob store into a temp dir and evaluated by
  ``python -I -m zoo eval DIR --out FILE --quiet`` in a subprocess (``-I``: the repo's files are not on
  ``sys.path``, and no ``PYTHON*`` variable applies), without a token, offline, and never with
  ``--trust-pickle``, ``--trust-wrapper``, ``--policy-class`` or ``--env-module``: zoo's loaders refuse a
  pickle that would run code. An env id naming a module (``module:Env``) is refused, since gymnasium would
  import it. The subprocess gets ``timeout`` seconds, then its process group is killed; its rollouts get 4/5
  of them (``--max-seconds``, the rest for loading), so a rollout that does not end fails with zoo eval's
  own line first.
* **Outcomes are rows of ROOT/evaluations.sqlite** (its own file, beside the index; WAL, one transaction
  per outcome): ``ok`` with the eval.json text, or ``failed``/``skipped`` with a one-line reason that the
  leaderboard page shows. Nothing here raises into the server: a failure is a row, a bug a log line.
* **Each step is a line on the ``zoo.hub_server.reevaluate`` logger** (:mod:`zoo.hub_server.logs`): a commit queued,
  started, and finished with its outcome and time (WARNING when it failed or was skipped); the command
  it ran at DEBUG.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.hub_server.evaluations import EvaluationStore, Outcome
from zoo.hub_server.logs import ERRORS, REEVALUATE, printable
from zoo.rollout_guard import MAX_SECONDS_LIMIT

if TYPE_CHECKING:
    from zoo.hub_server.server import HubServer
    from zoo.hub_server.store_records import Commit

DEFAULT_TIMEOUT = 600.0
DEFAULT_QUEUE = 32
#: The most a commit may hold to be copied out and evaluated.
MAX_BYTES = 4 << 30
#: Bounds on the settings taken from a repo's eval.json: one evaluation must not hold the worker for hours.
MAX_EPISODES = 1000
MAX_ENVS = 16
STOPPED = "stopped"


class Reevaluator:
    """The bounded re-evaluation worker of one :class:`~zoo.hub_server.server.HubServer`; ``start``/``stop``."""

    def __init__(
        self,
        hub: HubServer,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_queue: int = DEFAULT_QUEUE,
        episodes: int | None = None,
        device: str = "cpu",
        max_bytes: int = MAX_BYTES,
    ):
        self.hub, self.timeout, self.max_queue = hub, float(timeout), max(1, int(max_queue))
        self.episodes, self.device, self.max_bytes = episodes, device, max_bytes
        self.store = EvaluationStore(hub.storage.root)
        self._queue: deque[tuple[str, str]] = deque()
        self._cond = threading.Condition()
        self._busy: tuple[str, str] | None = None
        self._stopping = False
        self._proc: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None
        self.dropped = 0

    # ------------------------------------------------------------------------------------------ lifecycle
    def start(self) -> Reevaluator:
        """Subscribe to the index's head changes, queue the newest heads that have no outcome yet (pushed
        while no re-evaluating server ran, or cut short by a stop), and start the worker thread."""
        if self._thread is not None:
            return self
        self._stopping = False
        listeners = self.hub.index.listeners
        if self.notify not in listeners:
            listeners.append(self.notify)
        for row in reversed(self.hub.index.newest(self.max_queue)):  # oldest first: the queue is FIFO
            if self.store.get(row.repo_id, row.sha) is None:
                self.notify(row.repo_id, row.sha)
        self._thread = threading.Thread(target=self._work, name="zoo-hub-reevaluate", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Unsubscribe, kill an evaluation in flight, and wait for the worker (queued commits are left)."""
        with contextlib.suppress(ValueError, AttributeError):
            self.hub.index.listeners.remove(self.notify)
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            proc = self._proc
        if proc is not None:
            _kill(proc)
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    # ------------------------------------------------------------------------------------------ queue
    def notify(self, repo_id: str, sha: str | None) -> None:
        """The index listener: queue a new main head (``sha`` None: the repo is gone). Never raises, and
        never blocks on an evaluation: it runs in the request that moved the head."""
        try:
            with self._cond:
                if (repo_id, sha) in self._queue or self._busy == (repo_id, sha):
                    return
                self._queue = deque(item for item in self._queue if item[0] != repo_id)  # a newer head wins
                if sha is None:
                    self.store.forget(repo_id)
                    return
                self._queue.append((repo_id, sha))
                REEVALUATE.info("queued %s@%s (%d waiting)", repo_id, sha[:12], len(self._queue))
                while len(self._queue) > self.max_queue:
                    old = self._queue.popleft()
                    self.dropped += 1
                    self._record(
                        old,
                        "skipped",
                        f"not evaluated: the re-evaluation queue was full "
                        f"(at most {self.max_queue} waiting); push again to queue it",
                        0.0,
                    )
                self._cond.notify_all()
        except Exception as exc:  # noqa: BLE001 - a listener must not fail the request that called it
            ERRORS.error(
                "--reevaluate: cannot queue %s: %s: %s", repo_id, type(exc).__name__, printable(str(exc))
            )

    def pending(self) -> list[tuple[str, str]]:
        """The commits waiting, oldest first, and the one being evaluated (first, if any)."""
        with self._cond:
            return ([self._busy] if self._busy else []) + list(self._queue)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is queued or running; False if ``timeout`` seconds pass first (for tests)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._queue or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.2))
        return True

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                item = self._busy = self._queue.popleft()
            try:
                if self.store.get(*item) is None:
                    REEVALUATE.info("started %s@%s", item[0], item[1][:12])
                    self._evaluate(*item)
            except Exception as exc:  # noqa: BLE001 - a bug here must not end the worker
                ERRORS.error(
                    "--reevaluate: %s@%s: %s: %s",
                    item[0],
                    item[1][:12],
                    type(exc).__name__,
                    printable(str(exc)),
                )
                with contextlib.suppress(Exception):  # the database itself may be what failed
                    self._record(item, "failed", f"internal error: {type(exc).__name__}", 0.0)
            finally:
                with self._cond:
                    self._busy = None
                    self._cond.notify_all()

    def _record(
        self,
        item: tuple[str, str],
        status: str,
        reason: str | None,
        seconds: float,
        eval_json: str | None = None,
    ) -> None:
        when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.store.record(Outcome(item[0], item[1], status, reason, eval_json, when, round(seconds, 3)))
        REEVALUATE.log(
            logging.INFO if status == "ok" else logging.WARNING,
            "finished %s@%s: %s in %.1f s%s",
            item[0],
            item[1][:12],
            status,
            seconds,
            f": {printable(reason)}" if reason else "",
        )

    # ------------------------------------------------------------------------------------------ one commit
    def _evaluate(self, repo_id: str, sha: str) -> None:
        from zoo.hub_server.store_records import StorageError

        started = time.monotonic()
        try:
            commit = self.hub.storage.load_commit(repo_id, sha)
        except StorageError:  # deleted or moved before its turn: nothing to record about it
            REEVALUATE.info("finished %s@%s: the repo or commit is gone", repo_id, sha[:12])
            return
        if not commit.files:  # a new repo's empty initial commit: nothing to record about it
            REEVALUATE.info("finished %s@%s: no files to evaluate", repo_id, sha[:12])
            return
        plan = evaluation_args(self.hub, repo_id, commit)
        if isinstance(plan, str):
            self._record((repo_id, sha), "failed", plan, time.monotonic() - started)
            return
        size = sum(entry.size for entry in commit.files.values())
        if size > self.max_bytes:
            self._record(
                (repo_id, sha),
                "failed",
                f"the commit holds {size >> 20} MiB, over the "
                f"{self.max_bytes >> 20} MiB a re-evaluation copies",
                time.monotonic() - started,
            )
            return
        with tempfile.TemporaryDirectory(prefix="zoo-reevaluate.") as work:
            folder, out = Path(work) / "repo", Path(work) / "eval.json"
            _copy_out(self.hub, commit, folder)
            status, reason, text = self._run([*plan, str(folder), "--out", str(out)], Path(work), out)
        if status != STOPPED:  # cut short by a stop: no outcome, so the next start queues it again
            self._record((repo_id, sha), status, reason, time.monotonic() - started, text)
        else:
            REEVALUATE.info(
                "stopped %s@%s: the server is stopping; queued again at its next start", repo_id, sha[:12]
            )

    def _run(self, args: list[str], cwd: Path, out: Path) -> tuple[str, str | None, str | None]:
        """``zoo eval`` in a subprocess: ('ok', None, eval.json text) or ('failed', reason, None)."""
        budget = min(0.8 * self.timeout, MAX_SECONDS_LIMIT)
        cmd = [
            sys.executable,
            "-I",
            "-m",
            "zoo",
            "eval",
            *args,
            "--quiet",
            "--device",
            self.device,
            "--max-seconds",
            f"{budget:g}",
        ]
        if self.episodes is not None:  # the server's own setting wins over the repo's (click: the last one)
            cmd += ["--episodes", str(self.episodes)]
        REEVALUATE.debug("running %s", printable(" ".join(cmd)))
        with self._cond:
            if self._stopping:
                return STOPPED, None, None
            self._proc = subprocess.Popen(
                cmd,
                cwd=cwd,
                env=_child_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        proc = self._proc
        try:
            _, stderr = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            proc.communicate()
            return "failed", f"zoo eval ran past the {self.timeout:g} s timeout and was stopped", None
        finally:
            with self._cond:
                self._proc = None
        if proc.returncode != 0 or not out.is_file():
            if self._stopping:
                return STOPPED, None, None
            stderr = stderr.replace(f"{cwd / 'repo'}/", "").replace(
                str(cwd / "repo"), "the repo"
            )  # no temp paths
            return "failed", _reason(stderr, proc.returncode), None
        return "ok", None, out.read_text(encoding="utf-8")


def evaluation_args(hub: HubServer, repo_id: str, commit: Commit) -> list[str] | str:
    """The ``zoo eval`` options for a commit, or the one line saying why it cannot be evaluated.

    With an eval.json in the repo, its env id, experiment and settings (episodes, envs, seed, mode, step
    bound; bounded by :data:`MAX_EPISODES` and :data:`MAX_ENVS`) are reused: zoo eval is deterministic for a seed, so the
    server reproduces that evaluation and a different result means something. Without one, the env id is
    the card's, the experiment the one zoo eval finds from the model file's name, the settings the
    registry's."""
    from zoo.hub_server.scores import EVAL_FILE, MAX_EVAL_BYTES, card_scores

    data: dict = {}
    entry = commit.files.get(EVAL_FILE)
    if entry is not None and entry.size <= MAX_EVAL_BYTES:
        with contextlib.suppress(OSError, UnicodeDecodeError, ValueError):
            loaded = json.loads(hub.storage.read_blob(entry).decode("utf-8"))
            data = loaded if isinstance(loaded, dict) else {}
    env_id = data.get("task") if isinstance(data.get("task"), str) else None
    exp_name = data.get("exp_name") if isinstance(data.get("exp_name"), str) else None
    if not env_id:
        scores = card_scores(hub.index.card(commit.files.get("README.md")))
        env_id = scores[0].env_id if scores else None
    if not env_id:
        return "no env id to evaluate on: neither an eval.json task nor a model-index result in the card"
    if ":" in env_id:
        return (
            f"env id {env_id!r} names a module to import: not re-evaluated (that would run the module's code)"
        )
    if env_id.startswith("-") or (exp_name or "").startswith("-"):
        return f"invalid env id or experiment name: {env_id!r}, {exp_name!r}"
    args = ["--env-id", env_id, *(["--exp-name", exp_name] if exp_name else [])]
    for key, flag, most in (
        ("num_episodes", "--episodes", MAX_EPISODES),
        ("num_envs", "--num-envs", MAX_ENVS),
        ("seed", "--seed", 2**31 - 1),
    ):
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= (0 if key == "seed" else 1):
            args += [flag, str(min(value, most))]
    if isinstance(data.get("deterministic"), bool):
        args.append("--deterministic" if data["deterministic"] else "--stochastic")
    steps = data["settings"].get("max_steps") if isinstance(data.get("settings"), dict) else None
    if isinstance(steps, int) and not isinstance(steps, bool) and steps >= 1:
        args += ["--max-steps", str(min(steps, 2**31 - 1))]
    return args


def _copy_out(hub: HubServer, commit: Commit, folder: Path) -> None:
    """The commit's files under ``folder`` (paths were checked when committed: relative, no '..')."""
    for path, entry in commit.files.items():
        dest = folder.joinpath(*path.split("/"))
        if not dest.resolve().is_relative_to(folder.resolve()):
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(hub.storage.blob_path(entry.sha256), dest)


def _child_env() -> dict[str, str]:
    """The server's environment without tokens or network consent, offline: zoo eval needs neither."""
    drop = ("HF_", "HUGGINGFACE_", "ZOO_ALLOW", "PYTHON")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(HF_HUB_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1", NO_COLOR="1")
    return env


def _reason(stderr: str, code: int) -> str:
    """zoo eval's own one-line error (its last ``error:`` line, with the hint), else the last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [i for i, line in enumerate(lines) if line.startswith("error:")]
    if errors:
        i = errors[-1]
        text = lines[i].removeprefix("error:").strip()
        if i + 1 < len(lines) and lines[i + 1].startswith("hint:"):
            text += f" ({lines[i + 1].removeprefix('hint:').strip()})"
    else:
        text = lines[-1] if lines else "no output"
    return f"zoo eval exit {code}: {text}"[:500]


def _kill(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
