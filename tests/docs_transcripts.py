"""The commands of README.md and docs/, read from the pages and run as a reader runs them.

What the pages say, and how it is read (the conventions are the pages' own, so nothing is guessed):

- A ```console block is a transcript: a line ``$ COMMAND`` is a command (a line ending in ``\\`` goes on
  on the next), and the lines under it, up to the next ``$``, are what it printed. ``$ echo $?`` and the
  number under it are the exit status of the command before (that line is read, not run); without it,
  a shown line starting with ``error:`` means a non-zero exit, and otherwise the command exits 0.
- A ```bash block is commands, one per line (``\\`` continues one), each expected to exit 0; its lines
  starting with ``#`` are comments.
- A ```python block runs; consecutive python blocks (no command between) run in one interpreter, in
  order, sharing their names, and a ```text block right after one (only blank lines between) is what it
  prints. A python block whose first line is ``# path/of/a/repo/file.py`` shows that file: it is not run,
  and the file must contain it. One whose first line starts with ``# fragment:`` is code to adapt (it
  names what the reader supplies), listed as not run.
- Every other block (```text, ```json, ```yaml, ...) is never run: usage synopses, file contents,
  output. A fence with no language is refused, so no block is ambiguous.
- A command whose line ends in ``# not run here: REASON`` is not run; the test lists each one (and its
  source names them all).
- ``zoo hub serve`` runs in the background until the page ends (then SIGTERM: exit 143). When its line
  has ``--port N`` and says ``any free port`` in its comment, the page runs on a free port instead of N
  (every ``N`` after ``127.0.0.1:`` or ``--port`` in the page's commands), and the output shows N again.

A shown line matches a printed one when they are equal once durations (``0.7s``) are masked and runs of
spaces and of a table rule's character are collapsed (a table's widths follow its durations); a ``…`` in a
shown line stands for any text (a value that changes from run to run: the page should say so).

Each page runs in order, in one bash session (so ``cd``, ``export`` and ``$?`` work as written), in a
scratch folder holding a copy of the repo's ``COPIED`` paths; ``zoo`` and ``python`` are this
interpreter with this checkout's zoo, each command a fork of a process that imported torch already
(tests/docs_forkserver.py; ``ZOO_DOCS_FORKSERVER=0`` starts real processes instead). The environment: a private zoo cache and ``HF_HOME``,
``HF_HUB_DISABLE_XET=1``, ``HF_HUB_DISABLE_TELEMETRY=1``, no ``HF_TOKEN``, no ``COLUMNS`` (zoo's tables
are then 160 wide, as in a pipe); a page that uses the network (``--allow-download``, ``push --yes``,
``HF_ENDPOINT``, ``allow_download=True``, ``dry_run=False``) gets ``HF_ENDPOINT`` set to a local
``zoo hub serve`` (:class:`LocalHub`), shown as http://127.0.0.1:8000 in the output.

Run as a script, this module records a page: ``python tests/docs_transcripts.py docs/x.md`` runs it and
prints each command with what it printed; ``--write`` puts that output into the page's blocks (review the
diff: the page's prose must still say what the output shows).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FORK_SERVER = Path(__file__).resolve().parent / "docs_forkserver.py"
#: What a page's scratch folder holds, copied from the repo: what the pages' commands may name.
COPIED = (
    "examples",
    "registry.yaml",
    "tests/data/rsl_rl_legacy",
    "tests/data/sidecars",
    "tests/data/trainer_runs",
)
#: A command that runs longer than this is a hang (generous: training pages run minutes).
COMMAND_TIMEOUT = 900
#: How long a background command may take to print its first line (zoo hub serve: its banner).
READY_TIMEOUT = 120
#: The hub the pages show: the local hub's address and any rewritten port are shown as this.
SHOWN_HUB = "http://127.0.0.1:8000"
#: The repos a page's local hub holds before the page starts: (repo id, bundled example run).
HUB_SEED = (("cleanrl/CartPole-v1-dqn-seed1", "CartPole-v1__dqn__1__1796029650"),)

_NOT_RUN = re.compile(r"#\s*not run here:\s*(?P<reason>.+?)\s*$")
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)(?P<lang>[^`\s]*)\s*$")
_DURATION = re.compile(r"\b\d+(\.\d+)?\s?m?s\b")
_RULE = re.compile(r"([━─═])\1+")
_NETWORK = re.compile(r"--allow-download|\bzoo push\b.*--yes|HF_ENDPOINT|allow_download=True|dry_run=False")
_FREE_PORT = re.compile(r"--port (?P<port>\d+)\b.*#.*any free port")
_EXCERPT = re.compile(r"^# (?P<path>[\w./-]+\.\w+)\s*$")


class PageError(ValueError):
    """A page that breaks the conventions above (at a line)."""


@dataclass
class Step:
    """One thing a page asks the reader to run (or shows as not run)."""

    page: str
    line: int  # 1-based, of the command or the block's first line
    kind: str  # "shell" or "python" or "excerpt"
    text: str
    shown: list[str] = field(default_factory=list)
    exit: int | None = 0  # None: non-zero (an error: line shown)
    not_run: str | None = None
    background: bool = False
    shown_span: tuple[int, int] | None = (
        None  # the shown output's line range in the page (0-based, end excluded)
    )
    exit_line: int | None = None  # the 0-based line holding the number under `$ echo $?`
    indent: str = ""

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def expected(self) -> str:
        return "non-zero" if self.exit is None else str(self.exit)


def _blocks(lines: list[str], page: str) -> Iterator[tuple[str, int, int, str]]:
    """(language, first content line, end line, indent) of every fenced block, 0-based, end excluded."""
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, lang = match["indent"], match["fence"], match["lang"]
        end = i + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        if end == len(lines):
            raise PageError(f"{page}:{i + 1}: a {fence} block that is never closed")
        yield lang, i + 1, end, indent
        i = end + 1


def _dedent(line: str, indent: str) -> str:
    return line[len(indent) :] if line.startswith(indent) else line.lstrip()


def _not_run(command: str) -> str | None:
    match = _NOT_RUN.search(command.splitlines()[-1])
    return match["reason"] if match else None


def _command(lines: list[str], i: int, end: int, indent: str, prefix: str) -> tuple[str, int]:
    """The command starting at line i (``prefix`` stripped) with its ``\\`` continuations, and the line after it."""
    parts = [_dedent(lines[i], indent)[len(prefix) :]]
    i += 1
    while parts[-1].rstrip().endswith("\\") and i < end:
        parts.append(_dedent(lines[i], indent))
        i += 1
    return "\n".join(parts), i


def _is_background(command: str) -> bool:
    return bool(re.match(r"^(\w+=\S*\s+)*zoo hub serve\b", command))


def _console(lines: list[str], start: int, end: int, indent: str, page: str) -> list[Step]:
    steps: list[Step] = []
    i = start
    while i < end:
        text = _dedent(lines[i], indent)
        if not text.startswith("$ "):
            raise PageError(
                f"{page}:{i + 1}: a console block's lines are commands ($ ...) and what they print; "
                f"this one comes before any command: {text!r}"
            )
        command, i = _command(lines, i, end, indent, "$ ")
        out_start = i
        while i < end and not _dedent(lines[i], indent).startswith("$ "):
            i += 1
        shown = [_dedent(line, indent) for line in lines[out_start:i]]
        if command.strip() == "echo $?":
            numbers = [s for s in shown if s.strip()]
            if not steps or len(numbers) != 1 or not numbers[0].strip().isdigit():
                raise PageError(f"{page}:{out_start}: `$ echo $?` must follow a command and show one number")
            steps[-1].exit = int(numbers[0])
            steps[-1].exit_line = next(j for j in range(out_start, i) if lines[j].strip())
            continue
        step = Step(
            page,
            out_start - (command.count("\n") + 1) + 1,
            "shell",
            command,
            shown,
            exit=None if any(s.startswith("error:") for s in shown) else 0,
            not_run=_not_run(command),
            background=_is_background(command),
            shown_span=(out_start, i),
            indent=indent,
        )
        steps.append(step)
    return steps


def _bash(lines: list[str], start: int, end: int, indent: str, page: str) -> list[Step]:
    steps = []
    i = start
    while i < end:
        text = _dedent(lines[i], indent).strip()
        if not text or text.startswith("#"):
            i += 1
            continue
        line = i + 1
        command, i = _command(lines, i, end, indent, "")
        steps.append(
            Step(
                page,
                line,
                "shell",
                command.strip(),
                not_run=_not_run(command),
                background=_is_background(command.strip()),
                indent=indent,
            )
        )
    return steps


def parse(page: Path) -> list[Step]:
    """Every step of a page, in order."""
    name = page.relative_to(REPO).as_posix() if page.is_relative_to(REPO) else str(page)
    lines = page.read_text().splitlines()
    blocks = list(_blocks(lines, name))
    steps: list[Step] = []
    for n, (lang, start, end, indent) in enumerate(blocks):
        if lang == "":
            raise PageError(
                f"{name}:{start}: a fenced block without a language: say console, bash, python or "
                "text (a usage synopsis is text)"
            )
        body = [_dedent(line, indent) for line in lines[start:end]]
        if lang != "console" and any(b.startswith("$ ") for b in body):
            raise PageError(
                f"{name}:{start}: `$ ` commands in a ```{lang} block: a transcript is a console block"
            )
        if lang == "console":
            steps += _console(lines, start, end, indent, name)
        elif lang in ("bash", "sh", "shell"):
            steps += _bash(lines, start, end, indent, name)
        elif lang == "python":
            steps.append(_python(lines, blocks, n, name))
    return steps


def _python(lines: list[str], blocks: list[tuple[str, int, int, str]], n: int, page: str) -> Step:
    lang, start, end, indent = blocks[n]
    code = "\n".join(_dedent(line, indent) for line in lines[start:end]) + "\n"
    first = code.splitlines()[0] if code.strip() else ""
    if excerpt := _EXCERPT.match(first):
        if not (REPO / excerpt["path"]).is_file():
            raise PageError(
                f"{page}:{start + 1}: the block shows {excerpt['path']}, which is not in the repo; "
                "code to adapt starts with `# fragment: ...`"
            )
        return Step(page, start + 1, "excerpt", code, not_run=None)
    step = Step(
        page,
        start + 1,
        "python",
        code,
        not_run=first[2:].strip() if first.startswith("# fragment:") else None,
    )
    following = blocks[n + 1] if n + 1 < len(blocks) else None
    if (
        following
        and following[0] == "text"
        and not any(line.strip() for line in lines[end + 1 : following[1] - 1])
    ):
        step.shown = [_dedent(line, following[3]) for line in lines[following[1] : following[2]]]
        step.shown_span, step.indent = (following[1], following[2]), following[3]
    return step


# ------------------------------------------------------------------------------------------------ running
def normalize(line: str) -> str:
    """A line as compared: durations masked, runs of spaces and of a table rule's character as one (a table's
    padding and widths, trailing blanks)."""
    return re.sub(r"\s+", " ", _RULE.sub(r"\1", _DURATION.sub("<time>", line))).strip()


def matches(shown: str, printed: str) -> bool:
    """Whether a printed line is the shown one, normalized; a ``…`` in the shown line stands for any text."""
    want, got = normalize(shown), normalize(printed)
    if "…" not in want:
        return want == got
    return re.fullmatch(".*?".join(re.escape(part) for part in want.split("…")), got) is not None


def missing_lines(shown: list[str], printed: str) -> list[str]:
    """The shown lines that are not in the printed output in their order (blank lines aside)."""
    actual = printed.splitlines()
    at, missing = 0, []
    for line in shown:
        if not normalize(line):
            continue
        found = next((i for i in range(at, len(actual)) if matches(line, actual[i])), None)
        if found is None:
            missing.append(line)
        else:
            at = found + 1
    return missing


@dataclass
class Outcome:
    step: Step
    exit: int | None = None
    output: str = ""
    problem: str | None = None  # None: as the page says
    fatal: bool = False  # the page cannot go on: a command failed, hung or did not start


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _shims(bin_dir: Path, fork_server: Path | None) -> None:
    """``zoo`` and ``python``: this interpreter, this checkout's zoo first on the path (whatever PYTHONPATH a
    command sets, and for the processes zoo starts); with ``fork_server``, its clients (docs_forkserver.py)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = f'PYTHONPATH={shlex.quote(str(REPO))}"${{PYTHONPATH:+:$PYTHONPATH}}"; export PYTHONPATH\n'
    python = shlex.quote(sys.executable)
    for name, args in (("zoo", "-m zoo"), ("python", ""), ("python3", "")):
        if fork_server is None:
            text = f'#!/bin/sh\n{path}exec {python} {args} "$@"\n'
        else:
            client = f"{python} -I -S {shlex.quote(str(FORK_SERVER))} client {shlex.quote(str(fork_server))}"
            text = f'#!/bin/sh\nexec {client} {"zoo" if name == "zoo" else "python"} "$@"\n'
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)


def _terminal_signals() -> None:
    """Ctrl-C and Ctrl-\\ as a user's terminal delivers them, whatever the test run inherited: a run started in the
    background of a non-interactive shell (``nohup python3 dev.py test &``) ignores SIGINT and SIGQUIT, its children
    inherit that, and a page's ``timeout -s INT 5 zoo watch ...`` would then wait forever."""
    import signal

    for sig in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)


class Shell:
    """One bash session: each command's output (stdout and stderr together) and status read from files."""

    def __init__(self, cwd: Path, env: dict[str, str], work: Path):
        self.work, self.count = work, 0
        self.proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            text=True,
            start_new_session=True,
            preexec_fn=_terminal_signals,
        )

    def _files(self) -> tuple[Path, Path]:
        self.count += 1
        return self.work / f"{self.count}.out", self.work / f"{self.count}.status"

    def _send(self, script: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(script)
        self.proc.stdin.flush()

    def _wait_file(self, path: Path, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if path.exists():
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.05)
        return False

    def run(self, command: str, timeout: float = COMMAND_TIMEOUT) -> tuple[int | None, str]:
        """(exit status, output); status None: a hang (past ``timeout``) or the session ended."""
        out, status = self._files()
        q_out, q_status = shlex.quote(str(out)), shlex.quote(str(status))
        self._send(
            f"{{\n{command}\n}} >{q_out} 2>&1 </dev/null\n"
            f"__rc=$?; echo $__rc >{q_status}.tmp; mv {q_status}.tmp {q_status}; (exit $__rc)\n"
        )
        done = self._wait_file(status, timeout)
        output = out.read_text(errors="replace") if out.exists() else ""
        if not done:
            return None, output
        return int(status.read_text()), output

    def start(self, command: str, ready: str | None) -> tuple[int | None, Path, str]:
        """Start a simple command in the background: (pid, its output file, a problem or '')."""
        if re.search(r"[;&|]", command.split("#")[0]):
            return None, Path(), "a background command must be one simple command"
        out, pid_file = self._files()
        self._send(
            f"{command.split(' #')[0]} >{shlex.quote(str(out))} 2>&1 </dev/null &\n"
            f"echo $! >{shlex.quote(str(pid_file))}.tmp; mv {shlex.quote(str(pid_file))}.tmp {shlex.quote(str(pid_file))}\n"
        )
        if not self._wait_file(pid_file, 30):
            return None, out, "the shell did not start it"
        pid = int(pid_file.read_text())
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            text = out.read_text(errors="replace") if out.exists() else ""
            if (ready and normalize(ready) in {normalize(line) for line in text.splitlines()}) or (
                not ready and text
            ):
                return pid, out, ""
            if not _alive(pid):
                return pid, out, "it ended before it was ready"
            time.sleep(0.1)
        return pid, out, f"not ready after {READY_TIMEOUT} s"

    def stop(self, pid: int) -> int | None:
        """SIGTERM a background command and its exit status (143: it was running and stopped on the signal)."""
        status, _ = self.run(f"kill -TERM {pid} 2>/dev/null; wait {pid}", timeout=60)
        return status

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()  # type: ignore[union-attr]
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # anything the page left running


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


_PY_DRIVER = r"""
import contextlib, io, json, sys, traceback
blocks, results, namespace = json.load(open(sys.argv[1])), [], {"__name__": "__main__"}
for block in blocks:
    printed = io.StringIO()
    error = None
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            exec(compile(block["code"], block["where"], "exec"), namespace)
    except BaseException:
        error = traceback.format_exc()
    results.append({"output": printed.getvalue(), "error": error})
    with open(sys.argv[2], "w") as out:
        json.dump(results, out)
    if error:
        break
"""


def _with_zoo(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a ``python -m zoo`` of this checkout (the test's own processes, not the page's)."""
    return dict(env, PYTHONPATH=str(REPO))


class LocalHub:
    """``zoo hub serve --port 0`` on a copy of ``store`` (open access), for a page that uses the network."""

    def __init__(self, root: Path, env: dict[str, str]):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "zoo", "hub", "serve", "--root", str(root), "--port", "0"],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env=_with_zoo(env),
            text=True,
        )
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if match := re.search(r"at (http://127\.0\.0\.1:\d+)", line):
                self.url = match[1]
                break
        else:
            raise RuntimeError(f"zoo hub serve did not start (exit {self.proc.wait()})")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)


def seed_hub(store: Path, env: dict[str, str]) -> None:
    """Fill a hub store with ``HUB_SEED``: each bundled run pushed as its repo (evaluated for its card)."""
    work = Path(tempfile.mkdtemp(prefix="hub-seed-"))
    hub = LocalHub(store, env)
    try:
        for repo_id, run in HUB_SEED:
            shutil.copytree(REPO / "examples" / "runs" / run, work / run)
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "zoo",
                    "push",
                    str(work / run),
                    "--repo-id",
                    repo_id,
                    "--yes",
                    "--episodes",
                    "10",
                    "--stage-dir",
                    str(work / "stage"),
                ],
                env=_with_zoo(dict(env, HF_ENDPOINT=hub.url)),
                check=True,
                capture_output=True,
            )
    finally:
        hub.stop()
        shutil.rmtree(work, ignore_errors=True)


def base_env(tmp: Path) -> dict[str, str]:
    dropped = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT", "COLUMNS", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HOME=str(tmp / "hf-home"),
        ZOO_CACHE_DIR=str(tmp / "zoo-cache"),
        MUJOCO_GL=env.get("MUJOCO_GL", "egl"),
        PATH=os.pathsep.join([str(tmp / "bin"), str(Path(sys.executable).parent), env.get("PATH", "")]),
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


class PageRun:
    """A page's steps run in order in a scratch copy of the repo; each outcome says whether it is as shown."""

    def __init__(self, page: Path, tmp: Path, hub_store: Callable[[], Path] | None = None):
        self.steps = parse(page)
        self.tmp, self.root = tmp, tmp / "repo"
        for name in COPIED:
            src = REPO / name
            if src.is_dir():
                shutil.copytree(src, self.root / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                self.root.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, self.root / name)
        self.env = base_env(tmp)
        self.fork_server: subprocess.Popen | None = None
        self.sockets: Path | None = None
        if os.environ.get("ZOO_DOCS_FORKSERVER", "1") != "0":
            self.sockets = Path(
                tempfile.mkdtemp(prefix="zoo-docs-")
            )  # short: a socket path is at most 107 bytes
            with open(tmp / "fork-server.log", "wb") as log:
                self.fork_server = subprocess.Popen(
                    [sys.executable, str(FORK_SERVER), "serve", str(self.sockets / "s"), str(REPO)],
                    env=_with_zoo(self.env),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    start_new_session=True,
                    preexec_fn=_terminal_signals,
                )
        _shims(tmp / "bin", self.sockets / "s" if self.sockets else None)
        self.shown_ports: dict[str, str] = {}
        self.hub: LocalHub | None = None
        if hub_store is not None and any(_NETWORK.search(s.text) for s in self.steps if s.not_run is None):
            shutil.copytree(hub_store(), tmp / "hub-store")
            self.hub = LocalHub(tmp / "hub-store", self.env)
            self.env["HF_ENDPOINT"] = self.hub.url
            self.shown_ports[self.hub.url] = SHOWN_HUB
        for step in self.steps:
            if step.not_run is None and (match := _FREE_PORT.search(step.text)):
                port = match["port"]
                free = str(_free_port())
                for other in self.steps:
                    other.text = re.sub(rf"(127\.0\.0\.1:|--port ){port}\b", rf"\g<1>{free}", other.text)
                self.shown_ports[f"127.0.0.1:{free}"] = f"127.0.0.1:{port}"

    def shown_as(self, output: str) -> str:
        """The output as the page would show it: the rewritten ports and the local hub's address as shown."""
        for actual, shown in self.shown_ports.items():
            output = output.replace(actual, shown)
        return output

    def run(self, keep_going: bool = False) -> list[Outcome]:
        """Each step's outcome, in order; without ``keep_going``, none after a command that failed."""
        (self.tmp / "shell").mkdir(exist_ok=True)
        shell = Shell(self.root, self.env, self.tmp / "shell")
        outcomes: list[Outcome] = []
        background: list[tuple[Outcome, int]] = []
        try:
            i = 0
            while i < len(self.steps):
                step = self.steps[i]
                if step.not_run is not None:
                    outcomes.append(Outcome(step))
                    i += 1
                elif step.kind == "excerpt":
                    outcomes.append(self._excerpt(step))
                    i += 1
                elif step.kind == "python":
                    group = [step]
                    while (
                        i + len(group) < len(self.steps)
                        and self.steps[i + len(group)].kind == "python"
                        and self.steps[i + len(group)].not_run is None
                    ):
                        group.append(self.steps[i + len(group)])
                    outcomes += self._python(shell, group)
                    i += len(group)
                elif step.background:
                    outcome = Outcome(step)
                    first = next((line for line in step.shown if line.strip()), None)
                    pid, out, problem = shell.start(step.text, first and self._actual(first))
                    outcome.output = self.shown_as(out.read_text(errors="replace")) if out.is_file() else ""
                    outcome.problem, outcome.fatal = problem or None, bool(problem)
                    outcomes.append(outcome)
                    if pid is not None and not problem:
                        background.append((outcome, pid))
                    i += 1
                else:
                    outcomes.append(self._shell(shell, step))
                    i += 1
                if not keep_going and any(o.fatal for o in outcomes):
                    break  # a command that failed leaves the page in a state its later commands do not expect
        finally:
            for outcome, pid in background:
                status = shell.stop(pid)
                if status != 143 and outcome.problem is None:
                    outcome.problem = (
                        f"it stopped before the page ended (exit {status}), not on SIGTERM (143)"
                    )
            shell.close()
            if self.hub is not None:
                self.hub.stop()
            if self.fork_server is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.fork_server.pid, signal.SIGKILL)  # the server and any child left
                self.fork_server.wait()
            if self.sockets is not None:
                shutil.rmtree(self.sockets, ignore_errors=True)
        return outcomes

    def _actual(self, shown_line: str) -> str:
        """A shown line as the run prints it (the ports the page shows, rewritten)."""
        for actual, shown in self.shown_ports.items():
            shown_line = shown_line.replace(shown, actual)
        return shown_line

    def _shell(self, shell: Shell, step: Step) -> Outcome:
        status, output = shell.run(step.text)
        outcome = Outcome(step, status, self.shown_as(output))
        if status is None:
            outcome.problem, outcome.fatal = (
                f"no exit status after {COMMAND_TIMEOUT} s (a hang), or the shell ended",
                True,
            )
        elif (step.exit is None and status == 0) or (step.exit is not None and status != step.exit):
            outcome.problem, outcome.fatal = f"exit {status}, the page says {step.expected}", True
        elif missing := missing_lines(step.shown, outcome.output):
            outcome.problem = "shown but not printed:\n" + "\n".join(f"    {line}" for line in missing)
        return outcome

    def _python(self, shell: Shell, group: list[Step]) -> list[Outcome]:
        n = shell.count + 1
        blocks, results = self.tmp / "shell" / f"py{n}.json", self.tmp / "shell" / f"py{n}.results.json"
        blocks.write_text(json.dumps([{"code": s.text, "where": s.where} for s in group]))
        (self.tmp / "shell" / "driver.py").write_text(_PY_DRIVER)
        driver = self.tmp / "shell" / "driver.py"
        status, output = shell.run(
            f"python {shlex.quote(str(driver))} {shlex.quote(str(blocks))} {shlex.quote(str(results))}"
        )
        done = json.loads(results.read_text()) if results.exists() else []
        outcomes = []
        for k, step in enumerate(group):
            if k >= len(done):
                problem = (
                    None
                    if k > len(done) or status is None
                    else f"the interpreter ended (exit {status}):\n{output}"
                )
                outcomes.append(
                    Outcome(step, None, "", problem or "not run: an earlier block failed", fatal=True)
                )
                break
            outcome = Outcome(step, 1 if done[k]["error"] else 0, self.shown_as(done[k]["output"]))
            if done[k]["error"]:
                outcome.problem, outcome.fatal = f"raised:\n{done[k]['error']}", True
            elif missing := missing_lines(step.shown, outcome.output):
                outcome.problem = "shown but not printed:\n" + "\n".join(f"    {line}" for line in missing)
            outcomes.append(outcome)
        return outcomes

    def _excerpt(self, step: Step) -> Outcome:
        first, _, rest = step.text.partition("\n")
        path = REPO / first[2:].strip()
        if rest.strip() not in path.read_text():
            return Outcome(step, problem=f"the block is not in {path.relative_to(REPO)} as shown")
        return Outcome(step, 0)


def describe(outcome: Outcome, tail: int = 40) -> str:
    """A failure as the test prints it: page, line, command, expected vs got, the output's tail."""
    step = outcome.step
    lines = outcome.output.rstrip().splitlines()[-tail:]
    return (
        f"{step.where}: {step.text.splitlines()[0] if step.kind != 'python' else 'python block'}\n"
        f"  {outcome.problem}\n"
        f"  output (last {len(lines)} lines):\n" + "\n".join(f"  | {line}" for line in lines)
    )


# ------------------------------------------------------------------------------------------------ recording
def record(page: Path, outcomes: list[Outcome]) -> str:
    """The page with each transcript's and python block's shown output replaced by what the run printed, each
    ``echo $?`` by the real status, and an ``echo $?`` added where the output alone would not say it."""
    lines = page.read_text().splitlines()
    edits: list[tuple[int, int, list[str]]] = []
    for outcome in outcomes:
        step = outcome.step
        if step.not_run is not None or outcome.exit is None or step.shown_span is None or step.background:
            continue
        elided = [line for line in step.shown if "…" in line]  # kept where they match: the page elides there
        printed = [
            step.indent + next((e for e in elided if matches(e, line)), line).rstrip()
            for line in outcome.output.rstrip("\n").splitlines()
        ]
        says_error = any(line.startswith("error:") for line in outcome.output.splitlines())
        if step.exit_line is not None:
            edits.append((step.exit_line, step.exit_line + 1, [step.indent + str(outcome.exit)]))
        elif (
            step.kind == "shell" and (outcome.exit != 0) != says_error
        ):  # the output alone would say otherwise
            printed += [f"{step.indent}$ echo $?", f"{step.indent}{outcome.exit}"]
        edits.append((*step.shown_span, printed))
    for start, end, new in sorted(edits, reverse=True):
        lines[start:end] = new
    return "\n".join(lines) + "\n"


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(
        description="Run a docs page's commands; print or write what they print."
    )
    parser.add_argument("page", type=Path)
    parser.add_argument("--write", action="store_true", help="put the real output into the page's blocks")
    args = parser.parse_args()
    page = args.page.resolve()
    with tempfile.TemporaryDirectory(prefix="docs-run-") as tmp:
        store = Path(tmp) / "seed-store"

        def seeded() -> Path:
            seed_hub(store, base_env(Path(tmp)))
            return store

        outcomes = PageRun(page, Path(tmp) / "page", seeded).run(keep_going=True)
    for outcome in outcomes:
        step = outcome.step
        print(f"--- {step.where} [{'not run: ' + step.not_run if step.not_run else f'exit {outcome.exit}'}]")
        print(("$ " if step.kind == "shell" else "") + step.text.rstrip())
        print(outcome.output.rstrip())
        if outcome.problem:
            print(f"!!! {outcome.problem}")
    if args.write:
        page.write_text(record(page, outcomes))
    return 1 if any(o.problem for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
