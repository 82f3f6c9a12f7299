"""The files zoo writes into a run it follows, and the one rule that picks the best model.

- ``evals.jsonl``: one JSON line per evaluation, appended (:func:`zoo.atomic.append_line`): the step, the
  checkpoint (its path in the run dir, None for a model evaluated in memory) and its sha256, the metrics,
  seed, episodes, how many the step bound cut (``truncated``) and time; a checkpoint that could not be evaluated gets a line too (``"status":
  "failed"``, the error and its hint). The sha256s are how a restarted watch knows what it has done.
- the best model: a checkpoint whose ``return_mean`` beats the best so far (strictly: of equal scores
  the earlier one stays) is copied to the files its adapter names (``best_model.zip`` and
  ``best_model_vecnormalize.pkl``, ``best_model.pt``, ...), each to a temp file renamed into place, and
  then ``best_model_meta.json`` says what they are: the step, the source checkpoint, its eval.json, seed,
  episodes and return statistics. The meta comes after the copies, and the evals.jsonl line after the
  meta, so a watch killed anywhere in between finds, when it restarts, a checkpoint it has no line for:
  it evaluates it again (same seed, same score) and, if it is the best, writes the whole set again.

``zoo watch`` and :class:`zoo.integrations.sb3.ZooEvalCallback` both write through :class:`RunRecords`;
``zoo check`` and ``zoo eval`` read through :func:`read_records` and :func:`recorded_env_id`, which
take a malformed file for a problem to report, never a reason to fail.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import signal
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.atomic import append_line, copy_file_atomic, write_json_atomic
from zoo.errors import FileChanged, ZooError
from zoo.frameworks import BEST_MODEL
from zoo.strict_json import dumps
from zoo.version import __version__

if TYPE_CHECKING:
    from zoo.evaluator import EvalResult

EVALS_FILE = "evals.jsonl"
BEST_META_FILE = "best_model_meta.json"
OK, FAILED = "ok", "failed"
#: The return statistics a best_model_meta.json repeats from its eval, so readers need not open ``eval``.
_STATS = ("return_mean", "return_std", "return_min", "return_max", "length_mean", "success_rate")


@dataclass
class Recorded:
    """A run dir's records as read: the well-formed lines, the best model's meta, and what was malformed."""

    lines: list[dict] = field(default_factory=list)
    best: dict | None = None
    problems: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """What ``zoo check`` shows: how many evaluations, how many failed, the last step, the best."""
        best = self.best
        return {
            "evaluations": len(self.lines),
            "failed": sum(line["status"] == FAILED for line in self.lines),
            "last_step": self.lines[-1].get("step") if self.lines else None,
            "best": {
                key: best.get(key) for key in ("model", "step", "return_mean", "return_std", "success_rate")
            }
            if best
            else None,
        }


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _line_problem(line: Any) -> str | None:
    """Why a parsed evals.jsonl line is not an evaluation record (None: it is one)."""
    if not isinstance(line, dict) or not isinstance(line.get("sha256"), str):
        return "not an evaluation record"
    if line.get("status") not in (OK, FAILED):
        return f"status {line.get('status')!r} is neither {OK!r} nor {FAILED!r}"
    if line["status"] == OK and not _number((line.get("metrics") or {}).get("return_mean")):
        return "an ok evaluation without metrics.return_mean"
    return None


def _is_best_name(name: Any) -> bool:
    """A best-model file name as zoo writes them: a bare name in the run dir, or a path inside a ``best_model*``
    folder there (a checkpoint that is a folder, such as TorchRL's); a meta that names a path elsewhere would
    have the next new best delete that file."""
    if not isinstance(name, str) or not name.startswith(BEST_MODEL):
        return False
    parts = name.split("/")
    return Path(name).name == name or (all(parts) and ".." not in parts and "\\" not in name)


def _meta_problem(meta: Any) -> str | None:
    if not isinstance(meta, dict) or not _is_best_name(meta.get("model")):
        return "not a best-model record (no model)"
    if not _number(meta.get("return_mean")):
        return "no return_mean"
    if not isinstance(meta.get("files"), list) or not all(map(_is_best_name, meta["files"])):
        return f"files is not a list of {BEST_MODEL}* names"
    return None


def read_records(run_dir: Path) -> Recorded:
    """The records zoo wrote into ``run_dir``; a line or a meta file that is not what zoo writes (a torn
    last line, an edit by hand) is listed in ``problems`` and otherwise ignored."""
    found = Recorded()
    try:
        text = (run_dir / EVALS_FILE).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        text = ""
    except OSError as exc:
        found.problems.append(f"cannot read {EVALS_FILE}: {exc.strerror or exc}")
        text = ""
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            line, problem = None, "not JSON"
        else:
            problem = _line_problem(line)
        if problem:
            found.problems.append(f"{EVALS_FILE} line {number}: {problem}")
        else:
            found.lines.append(line)
    meta_path = run_dir / BEST_META_FILE
    if meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            problem = _meta_problem(meta)
        except (OSError, ValueError) as exc:
            meta, problem = None, f"unreadable ({type(exc).__name__})"
        if problem:
            found.problems.append(f"{BEST_META_FILE}: {problem}")
        else:
            found.best = meta
    return found


def recorded_env_id(model_file: Path) -> str | None:
    """The env a best model was evaluated on, from the ``best_model_meta.json`` beside it (None when the
    file is not the model that meta names): ``zoo eval best_model.zip`` needs no ``--env-id`` then."""
    best = read_records(model_file.parent).best
    if best is None or best["model"] != model_file.name:
        return None
    task = (best.get("eval") or {}).get("task")
    return task if isinstance(task, str) else None


def beats(metrics: dict, best: dict | None) -> bool:
    """The best-model rule: a higher ``return_mean`` than the best so far (the first checkpoint always)."""
    return best is None or metrics["return_mean"] > best["return_mean"]


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """Ctrl-C while the records are written waits until they are consistent, then interrupts.

    Only the main thread receives signals; a watch run in another thread writes without this."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
    if caught:
        raise KeyboardInterrupt


def _unwritable(run_dir: Path, exc: OSError) -> ZooError:
    return ZooError(
        f"cannot write into {run_dir}: {exc.strerror or exc}",
        hint="free space or fix permissions; a restarted watch goes on where it stopped",
    )


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


class RunRecords:
    """The records of one run dir, read once and kept up to date as evaluations are added (one writer)."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        found = read_records(run_dir)
        self.problems = found.problems
        self.best = found.best
        self.lines = found.lines
        self._recorded = {line["sha256"] for line in found.lines}

    def is_recorded(self, sha256: str) -> bool:
        """Whether a checkpoint with this content has its line already (evaluated, or failed for good)."""
        return sha256 in self._recorded

    def check_owned(self, names: Iterable[str]) -> None:
        """Refuse to write best-model files over ones zoo did not write (rl_zoo3's EvalCallback keeps a
        ``best_model.zip`` too): a best model without ``best_model_meta.json`` beside it is someone else's."""
        if (self.run_dir / BEST_META_FILE).exists():
            return
        theirs = [name for name in names if (self.run_dir / name).exists()]
        if theirs:
            raise ZooError(
                f"{self.run_dir / theirs[0]} exists and zoo did not write it (no {BEST_META_FILE} beside it)",
                hint="move it away: zoo keeps the best checkpoint it evaluates there",
            )

    def add(
        self,
        result: EvalResult,
        *,
        step: int | None,
        source: str | None,
        sha256: str,
        files: dict[str, Path],
        digests: dict[Path, str],
    ) -> dict:
        """Record one evaluation; when it beats the best so far, keep ``files`` (``{name in the run dir:
        source}``, the model first, each copied only if it still has the digest it was evaluated with)
        as the best model. Returns the evals.jsonl line (``new_best`` says which it was)."""
        metrics = result.metrics
        line = {
            "step": step,
            "checkpoint": source,
            "sha256": sha256,
            "status": OK,
            "metrics": metrics,
            "episodes": result.num_episodes,
            "num_envs": result.num_envs,
            "seed": result.seed,
            "deterministic": result.deterministic,
            "env_id": result.task,
            "exp_name": result.exp_name,
            "framework": result.framework,
            "wall_clock_seconds": result.wall_clock_seconds,
            "truncated": sum(e.truncated for e in result.episodes),
            "evaluated_at": result.evaluated_at,
            "new_best": False,
        }
        with _interrupts_held():
            if beats(metrics, self.best):
                try:
                    self.best = self._keep_best(result, step, source, sha256, files, digests)
                    line["new_best"] = True
                except FileChanged as exc:
                    line["note"] = f"not kept as the best model: {exc.message}"
            self._append(line)
        return line

    def add_failure(
        self, error: BaseException, *, step: int | None, source: str | None, sha256: str, attempts: int
    ) -> dict:
        """Record a checkpoint that could not be evaluated in ``attempts`` tries: it is not tried again."""
        message = error.message if isinstance(error, ZooError) else f"{type(error).__name__}: {error}"
        line = {
            "step": step,
            "checkpoint": source,
            "sha256": sha256,
            "status": FAILED,
            "error": message,
            "hint": getattr(error, "hint", None),
            "attempts": attempts,
            "evaluated_at": _now(),
        }
        with _interrupts_held():
            self._append(line)
        return line

    def _append(self, line: dict) -> None:
        try:
            append_line(self.run_dir / EVALS_FILE, dumps(line, what=EVALS_FILE))
        except OSError as exc:
            raise _unwritable(self.run_dir, exc) from None
        self.lines.append(line)
        self._recorded.add(line["sha256"])

    def _keep_best(
        self,
        result: EvalResult,
        step: int | None,
        source: str | None,
        sha256: str,
        files: dict[str, Path],
        digests: dict[Path, str],
    ) -> dict:
        """Copy the best model's files (the model last of them), then write its meta."""
        model = next(iter(files))
        stale = set(self.best["files"]) - set(files) if self.best else set()
        for name in stale:  # a companion the new best has not: it must not be read with the new model
            (self.run_dir / name).unlink(missing_ok=True)
        try:
            for name, path in reversed(list(files.items())):
                copy_file_atomic(path, self.run_dir / name, digests.get(path))
        except OSError as exc:
            raise _unwritable(self.run_dir, exc) from None
        payload = result.to_json()
        if source is None:  # evaluated in memory: the copy is the one file that holds this model
            payload["checkpoint"] = str(self.run_dir / model)
        metrics = payload["metrics"]
        meta = {
            "model": model,
            "files": list(files),
            "step": step,
            "source_checkpoint": source,
            "source_sha256": sha256,
            "seed": result.seed,
            "episodes": result.num_episodes,
            **{key: metrics[key] for key in _STATS},
            "eval": payload,
            "written_at": _now(),
            "zoo_version": __version__,
        }
        try:
            write_json_atomic(self.run_dir / BEST_META_FILE, meta)
        except OSError as exc:
            raise _unwritable(self.run_dir, exc) from None
        return meta
