"""Release size and load time of a release's framework-free forms against the native files, side by side.

For small, real runs of each framework (trained here as the docs train them: examples/train_sb3.py, PPO behind
VecNormalize and DQN; examples/train_skrl.py; examples/train_rsl_rl.py, an MLP and an LSTM actor; the bundled
CleanRL td3 run of examples/runs), the release forms are written and proven as ``zoo push`` stages them, then:

  size   the native files a loader reads (the model and what zoo's adapter reads with it: SB3's VecNormalize
         statistics, skrl's and rsl_rl's ``params/agent.yaml``...) against ``model.safetensors`` +
         ``config.json``, ``agent.pt`` and ``policy.onnx`` (+ its sidecar)
  warm   one load in a process that has loaded it before (imports paid): ``zoo.load_policy(run)`` through the
         framework's adapter, ``zoo.load_policy(release folder)`` (the safetensors form: config checked, graph
         built), ``torch.jit.load(agent.pt)``, an onnxruntime ``InferenceSession(policy.onnx)``
  cold   the same in a fresh interpreter, from its first statement (imports included: the training framework
         for the native load, torch alone for the others): what a user waits for

Each time is the median of ``--reps`` repetitions (warm: interleaved round by round; cold: one process each).
The ratios say how many times the native file's size or load time each form takes.

    python benchmarks/release_forms.py [--reps 7] [--cold-reps 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests"), str(REPO / "examples")]

FORMS = ("native", "safetensors", "agent.pt", "onnx")
#: What each form's load is, as one statement of a fresh interpreter (PATH: the run, or the release's folder).
COLD = {
    "native": "import zoo; zoo.load_policy({run!r}, env_id={env_id!r})",
    "safetensors": "import zoo; zoo.load_policy({release!r})",
    "agent.pt": "import torch; torch.jit.load({release!r} + '/agent.pt')",
    "onnx": "import onnxruntime; onnxruntime.InferenceSession({release!r} + '/policy.onnx')",
}


def train_runs(root: Path) -> dict[str, tuple[Path, str]]:
    """``{label: (run, env id)}``, each trained as its example trains it."""
    from train_rsl_rl import configure as rsl_configure
    from train_rsl_rl import train as rsl_train
    from train_sb3 import train as sb3_train
    from train_skrl import configure as skrl_configure
    from train_skrl import train_isaac_lab_style

    runs = {
        "sb3 PPO + VecNormalize": (
            sb3_train("ppo", "Pendulum-v1", 256, 1, root / "ppo" / "ppo-Pendulum-v1.zip", normalize=True),
            "Pendulum-v1",
        ),
        "sb3 DQN": (
            sb3_train("dqn", "CartPole-v1", 300, 1, root / "dqn" / "dqn-CartPole-v1.zip"),
            "CartPole-v1",
        ),
        "CleanRL td3": (next((REPO / "examples" / "runs").glob("Pendulum-v1__td3*")), "Pendulum-v1"),
    }
    env_id, cfg, wrapper = skrl_configure("gaussian", timesteps=256)
    skrl = train_isaac_lab_style(cfg, root / "logs" / "skrl" / env_id, "bench_ppo_torch", env_id, wrapper)[0]
    runs["skrl PPO"] = (skrl, env_id)
    for kind in ("mlp", "lstm"):
        run = root / "logs" / "rsl_rl" / f"pendulum_{kind}" / "bench"
        rsl_train(run, *rsl_configure(kind), checkpoints=1, iterations=2)
        runs[f"rsl_rl {kind.upper()}"] = (run, "Pendulum-v1")
    return runs


def native_files(run: Path, env_id: str) -> list[Path]:
    """The model file and the files zoo's adapter reads with it (as ``zoo doctor`` lists a policy's companions),
    without the run's other checkpoints and its events file."""
    import zoo

    target = zoo.resolve(run, env_id=env_id)
    skip = {None, target.run.events_file, *target.run.other_model_files}
    return [p for p in dict.fromkeys(target.adapter.inputs(target.run)) if p not in skip and p.is_file()]


def sizes(run: Path, env_id: str, release: Path) -> dict[str, int]:
    return {
        "native": sum(p.stat().st_size for p in native_files(run, env_id)),
        "safetensors": sum((release / n).stat().st_size for n in ("model.safetensors", "config.json")),
        "agent.pt": (release / "agent.pt").stat().st_size,
        "onnx": sum((release / n).stat().st_size for n in ("policy.onnx", "policy.onnx.metadata.json")),
    }


def warm_loads(run: Path, env_id: str, release: Path, reps: int) -> dict[str, float]:
    """Median seconds of one load of each form, in this process, interleaved round by round after one warm-up."""
    import onnxruntime
    import torch

    import zoo

    loads = {
        "native": lambda: zoo.load_policy(run, env_id=env_id),
        "safetensors": lambda: zoo.load_policy(release),
        "agent.pt": lambda: torch.jit.load(str(release / "agent.pt")),
        "onnx": lambda: onnxruntime.InferenceSession(str(release / "policy.onnx")),
    }
    times: dict[str, list[float]] = {form: [] for form in FORMS}
    for round_ in range(reps + 1):
        for form, load in loads.items():
            start = time.perf_counter()
            load()
            if round_:  # round 0 warms up
                times[form].append(time.perf_counter() - start)
    return {form: statistics.median(t) for form, t in times.items()}


def cold_loads(run: Path, env_id: str, release: Path, reps: int, env: dict) -> dict[str, float]:
    """Median seconds of each form's load in a fresh interpreter, imports included."""
    times: dict[str, list[float]] = {form: [] for form in FORMS}
    for _ in range(reps):
        for form, statement in COLD.items():
            code = (
                "import time\nstart = time.perf_counter()\n"
                + statement.format(run=str(run), env_id=env_id, release=str(release))
                + "\nprint(time.perf_counter() - start)"
            )
            done = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
            )
            times[form].append(float(done.stdout.split()[-1]))
    return {form: statistics.median(t) for form, t in times.items()}


def _row(label: str, what: str, values: dict[str, float], unit: str, scale: float, digits: int) -> str:
    cells = [
        f"{values[f] * scale:>10,.{digits}f} {unit:<2} {values[f] / values['native']:>5.2f}x" for f in FORMS
    ]
    return f"{label:<24} {what:<11} " + " ".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7, help="warm loads per form [7]")
    parser.add_argument("--cold-reps", type=int, default=5, help="fresh processes per form [5]")
    args = parser.parse_args()
    import logging

    import torch
    from helpers import write_release
    from skrl import logger

    logger.setLevel(logging.WARNING)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="zoo-release-forms-") as tmp:
        root = Path(tmp)
        env = {
            **os.environ,
            "ZOO_CACHE_DIR": str(root / "cache"),
            "OMP_NUM_THREADS": "1",
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        }
        os.environ["ZOO_CACHE_DIR"] = env["ZOO_CACHE_DIR"]
        runs = train_runs(root / "runs")
        print(
            f"torch {torch.__version__}, 1 thread; warm: median of {args.reps}, cold: median of {args.cold_reps} "
            "fresh processes; ratios to the native files\n"
        )
        header = f"{'run':<24} {'':<11} " + " ".join(f"{form:>19}" for form in FORMS)
        print(header)
        print("-" * len(header))
        for label, (run, env_id) in runs.items():
            release = write_release(run, root / "releases" / label.replace(" ", "_"), env_id=env_id)
            names = ", ".join(p.name for p in native_files(run, env_id))
            print(_row(label, "size", sizes(run, env_id, release), "kB", 1e-3, 1))
            print(_row("", "load warm", warm_loads(run, env_id, release, args.reps), "ms", 1e3, 1))
            print(_row("", "load cold", cold_loads(run, env_id, release, args.cold_reps, env), "s", 1, 2))
            print(f"{'':<24} native: {names}\n")


if __name__ == "__main__":
    main()
