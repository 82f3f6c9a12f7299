#!/usr/bin/env python3
"""Set up a virtualenv and run zoo's demo or test suite: needs only Python 3.11 and pip.

    python3 dev.py demo   # .venv + zoo[server], then `zoo check`, `zoo eval --all`, `zoo leaderboard` and
                          # `zoo report` on the bundled example runs,
                          # `zoo export` one to ONNX and `zoo eval` the exported file, and offline
                          # sharing: a local hub, `zoo push` an example to it, `zoo enjoy` it back
    python3 dev.py test   # .venv + zoo[dev,server,atari,mujoco,sb3,skrl,rsl,rlzoo3,video,jax,envpool,genesis,ray], then the lint
                          # gate (below), then the whole test suite;
                          # (the trainers with conflicting pins, TRAINER_VENVS, get venvs of their own first:
                          # the tests train with each library there); then .venv-myosuite + zoo[dev,sb3,myosuite]
                          # and tests/test_myosuite.py in it
    python3 dev.py test --fast   # the gate, then the main venv's suite without the tests that train, build Genesis
                                 # scenes or are slow
    python3 dev.py lint   # .venv + zoo[dev], then the gate alone: `ruff check .`, `ruff format --check .` and `mypy`
                          # (pinned in the dev extra, configured in pyproject.toml); a failure stops `test` before pytest

torch is installed first and pinned (2.13.0, a CPU build): any open requirement would pull a
multi-GB CUDA build of a newer release. Re-running is cheap: pip skips what is installed.
MyoSuite gets a venv of its own: myosuite 3 pins gymnasium<1.3 and onnxruntime<1.21, the other extras want
gymnasium 1.4. Pytest arguments go to the main run; naming tests/test_myosuite.py (or a test in it) runs just
that in .venv-myosuite, naming only other tests leaves it out.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
#: MyoSuite's venv and the one test file that runs in it (the main run leaves the file out).
MYOSUITE_VENV = ROOT / ".venv-myosuite"
MYOSUITE_TESTS = "tests/test_myosuite.py"
#: Trainers whose dependencies conflict with the main venv (numpy, gymnasium, huggingface_hub, tensordict,
#: psutil pins): each venv holds torch and these pinned requirements, and no zoo. zoo reads their files without
#: them; the main run's tests train with each library in its venv and compare zoo's actions with the library's
#: own inference there (tests/trainer_venvs.py). {venv folder: (requirements, libraries it serves)}
TRAINER_VENVS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    ".venv-trainers": (
        (
            "gymnasium[classic-control]==1.4.0",
            "tianshou[eval,argparse]==2.0.1",
            "torchrl==0.14.1",
            "rl-games==1.6.5",
        ),
        ("tianshou", "torchrl", "rl_games"),
    ),
    ".venv-trainers-numpy1": (
        ("sample-factory==2.1.1", "deprl==0.3.2", "gym==0.26.2", "numpy<2"),
        ("sample_factory", "deprl"),
    ),
}
TORCH = "torch==2.13.0"
EXAMPLES = Path("examples") / "runs"  # relative to ROOT, where every command runs
#: The static checks ``dev.py lint`` runs and ``dev.py test`` runs first: (name, tool in the venv, its arguments).
#: mypy reads its files and flags from pyproject.toml and keeps its cache in .mypy_cache (a warm run takes seconds).
LINTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("ruff check", "ruff", ("check", ".")),
    ("ruff format --check", "ruff", ("format", "--check", ".")),
    ("mypy", "mypy", ()),
)


def run(*cmd: str | Path, check: bool = True) -> int:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], cwd=ROOT, check=check).returncode


def bin_dir(where: Path) -> Path:
    return where / ("Scripts" if os.name == "nt" else "bin")


def setup(extras: str = "", where: Path = VENV) -> None:
    python = bin_dir(where) / "python"
    if not python.exists():
        venv.create(where, with_pip=True)
    pip = (python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check")
    run(*pip, TORCH)
    run(*pip, "-e", f".[{extras}]" if extras else ".")


def setup_trainers() -> int:
    """Every venv of :data:`TRAINER_VENVS` (torch first, then its requirements); 1 after a line naming a venv that
    failed (its tests then fail with the reason, never skip)."""
    for folder, (requirements, _) in TRAINER_VENVS.items():
        where = ROOT / folder
        python = bin_dir(where) / "python"
        try:
            if not python.exists():
                venv.create(where, with_pip=True)
            pip = (python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check")
            run(*pip, TORCH)
            run(*pip, *requirements)
        except subprocess.CalledProcessError as exc:
            print(f"error: setting up {folder} failed ({exc})", file=sys.stderr, flush=True)
            return 1
    return 0


def demo() -> int:
    setup("server")  # the sharing loop runs zoo hub serve
    import shutil

    zoo = BIN / "zoo"
    run(zoo, "check", EXAMPLES, check=False)
    out = Path(".cache") / "demo"
    runs = out / "runs"  # a copy: the sweep writes each run's eval.json into its run dir
    shutil.rmtree(ROOT / runs, ignore_errors=True)
    shutil.copytree(ROOT / EXAMPLES, ROOT / runs, ignore=shutil.ignore_patterns("eval.json"))
    status = run(zoo, "eval", runs, "--all", "--episodes", "20", "--deterministic", check=False)
    status |= run(zoo, "leaderboard", runs, check=False)
    status |= run(zoo, "report", runs, "--out", out / "report", check=False)
    return status | export_loop(zoo, out) | hub_loop(zoo, out)


def export_loop(zoo: Path, out: Path) -> int:
    """Export the td3 example to ONNX (parity-checked) and evaluate the exported file like the checkpoint."""
    run_dir = next((ROOT / EXAMPLES).glob("Pendulum-v1__td3_continuous_action__*")).relative_to(ROOT)
    policy = out / "export" / "td3_pendulum.onnx"
    if run(zoo, "export", run_dir, "--out", policy, check=False):
        return 1
    return run(zoo, "eval", policy, "--episodes", "20", check=False)


def hub_loop(zoo: Path, out: Path) -> int:
    """Offline share-and-fetch: a local hub on 127.0.0.1, push an example to it, enjoy it back, verify the
    hub's store, stop it."""
    import shutil
    import signal
    import socket
    import time
    import urllib.request

    shutil.rmtree(ROOT / out / "hub-loop", ignore_errors=True)
    work = out / "hub-loop"
    run_dir = next((ROOT / EXAMPLES).glob("CartPole-v1__dqn__*"))
    shutil.copytree(run_dir, ROOT / work / "runs" / run_dir.name)  # push evaluates into the run dir
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    env = dict(
        os.environ,
        HF_ENDPOINT=url,
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HOME=str(ROOT / work / "hf-home"),
    )
    env.pop("HF_TOKEN", None)
    print(f"+ {zoo} hub serve --root {work / 'hub'} --port {port} &", flush=True)
    hub = subprocess.Popen(
        [str(zoo), "hub", "serve", "--root", str(work / "hub"), "--port", str(port)], cwd=ROOT
    )
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{url}/api/whoami-v2", timeout=0.5)
                break
            except OSError:
                time.sleep(0.1)
        repo = "demo/CartPole-v1-dqn-seed1"
        steps = [
            [
                zoo,
                "push",
                work / "runs" / run_dir.name,
                "--repo-id",
                repo,
                "--yes",
                "--episodes",
                "20",
                "--stage-dir",
                work / "stage",
            ],
            [
                zoo,
                "enjoy",
                "--exp-name",
                "dqn",
                "--env-id",
                "CartPole-v1",
                "--run-seed",
                "1",
                "--hf-repository",
                repo,
                "--runs-dir",
                work / "no-local-runs",
                "--allow-download",
                "--deterministic",
                "--episodes",
                "20",
                "--out",
                work / "enjoy.eval.json",
            ],
            [zoo, "hub", "verify", "--root", work / "hub"],
        ]
        for cmd in steps:
            print("+", " ".join(str(c) for c in cmd), flush=True)
            if subprocess.run([str(c) for c in cmd], cwd=ROOT, env=env).returncode:
                return 1
        return 0
    finally:
        hub.send_signal(signal.SIGINT)  # zoo hub serve stops cleanly on Ctrl-C
        hub.wait(timeout=10)
        print("+ hub stopped", flush=True)


def lint(then: str = "") -> int:
    """Every check in :data:`LINTS`, each run even when one before it failed; 1 after a line naming the ones
    that failed (and ``then``, what that stopped)."""
    failed = [name for name, tool, args in LINTS if run(BIN / tool, *args, check=False)]
    if failed:
        print(f"error: {', '.join(failed)} failed (see above){then}", file=sys.stderr, flush=True)
    return 1 if failed else 0


def ensure_chromium() -> None:
    """tests/test_report.py and tests/test_hub_web.py open their pages in a real headless Chromium: as root,
    install Debian's chromium and chromium-driver when either is missing; otherwise say what to install (the
    tests fail without them)."""
    import shutil

    if os.path.exists("/usr/bin/chromium") and os.path.exists("/usr/bin/chromedriver"):
        return
    if os.name == "posix" and os.geteuid() == 0 and shutil.which("apt-get"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for cmd in (
            ["apt-get", "update"],
            ["apt-get", "install", "-y", "--no-install-recommends", "chromium", "chromium-driver"],
        ):
            print("+", " ".join(cmd), flush=True)
            if subprocess.run(cmd, env=env).returncode:
                print(
                    "warning: installing Chromium failed; tests/test_report.py and tests/test_hub_web.py will fail",
                    flush=True,
                )
                return
    else:
        print(
            "note: tests/test_report.py and tests/test_hub_web.py need Chromium: install /usr/bin/chromium and "
            "chromedriver (Debian: sudo apt-get install chromium chromium-driver)",
            flush=True,
        )


def _is_myosuite_test(arg: str) -> bool:
    return (ROOT / arg.split("::")[0]).resolve() == (ROOT / MYOSUITE_TESTS).resolve()


def test() -> int:
    """The lint gate, the whole suite, then tests/test_myosuite.py in .venv-myosuite; ``--fast`` leaves out the
    tests that train (the MyoSuite ones too), build Genesis scenes or are slow (a development loop). Exit 0 only if
    all pass; a failing gate stops the run before pytest (seconds, not the suite's minutes)."""
    env = dict(os.environ, MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl"))
    args = sys.argv[2:]
    fast = "--fast" in args
    args = [a for a in args if a != "--fast"] + (
        ["-m", "not slow and not trains and not genesis"] if fast else []
    )
    paths = [a for a in args if not a.startswith("-") and (ROOT / a.split("::")[0]).exists()]
    myosuite_named = [a for a in paths if _is_myosuite_test(a)]
    status = 0
    if not paths or len(myosuite_named) < len(paths):
        setup("dev,server,atari,mujoco,sb3,skrl,rsl,rlzoo3,video,jax,envpool,genesis,ray")
        if lint(then="; the tests did not run"):
            return 1
        main = [a for a in args if a not in myosuite_named]
        ensure_chromium()
        if not fast:
            setup_trainers()
        cmd = [
            str(BIN / "python"),
            "-m",
            "pytest",
            "-n",
            "2",
            "--durations=10",
            f"--ignore={MYOSUITE_TESTS}",
            *main,
        ]
        print("+", " ".join(cmd), flush=True)
        status = subprocess.run(cmd, cwd=ROOT, env=env).returncode
    if myosuite_named or (not paths and not fast):
        # runs whatever the main run gave; exit 0 only if both passed
        myosuite_status = myosuite_test(env, myosuite_named or [MYOSUITE_TESTS])
        status = status or myosuite_status
    return status


def myosuite_test(env: dict, tests: list[str]) -> int:
    """tests/test_myosuite.py in .venv-myosuite (torch first, then zoo[dev,sb3,myosuite]). myosuite must import
    there: the module's importorskip would otherwise pass the run with every test skipped."""
    try:
        setup("dev,sb3,myosuite", MYOSUITE_VENV)
    except subprocess.CalledProcessError as exc:
        print(f"error: setting up {MYOSUITE_VENV.name} failed ({exc})", file=sys.stderr, flush=True)
        return 1
    python = str(bin_dir(MYOSUITE_VENV) / "python")
    if run(python, "-c", "import myosuite", check=False):
        print(f"error: myosuite does not import in {MYOSUITE_VENV.name}", file=sys.stderr, flush=True)
        return 1
    cmd = [python, "-m", "pytest", "-m", "myosuite", "--durations=5", *tests]
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    task = sys.argv[1] if len(sys.argv) > 1 else ""
    if task not in ("demo", "test", "lint"):
        sys.exit("usage: python3 dev.py demo|lint|test [pytest args]")
    if task == "lint":
        setup("dev")
    sys.exit(demo() if task == "demo" else lint() if task == "lint" else test())
