"""Per-call latency (batch 1) and throughput (batch 1024) of exported policies, side by side.

For each bundled example run (CleanRL dqn, c51 on CartPole; td3 on Pendulum: MLP policies) this
exports the policy with ``zoo export`` (TorchScript and ONNX, parity-checked as always), then times
in one run, interleaved round by round so that machine noise hits every variant alike:

  eager        the source torch module (``ExportSpec.module``) under ``torch.inference_mode``
  act()        the zoo Policy's ``act`` on a numpy batch (what ``zoo eval`` calls; numpy in and out)
  torchscript  ``torch.jit.load`` of the exported file, on a torch tensor
  onnxruntime  an ``InferenceSession`` of the exported file, numpy in and out

Every variant uses one intra-op thread (the deployment setting on a robot's CPU, and the fair one on
a 2-core machine). Latency is the median over rounds of the mean per-call time at batch 1;
throughput is observations per second at batch 1024. Target: onnxruntime batch-1 latency at most
half of eager torch's.

    python benchmarks/export_latency.py [--rounds 15] [--calls 2000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import zoo
from zoo.exporter import export_policy
from zoo.exporter.obs import flatten_obs
from zoo.exporter.parity import sample_batch

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "runs"
VARIANTS = ("eager", "act()", "torchscript", "onnxruntime")


def _callables(run: Path, workdir: Path):
    """The four ways to run the run's policy, each taking a float32 numpy batch."""
    import onnxruntime as ort

    target = zoo.resolve(run)
    policy = zoo.load_policy(target)
    facts = {
        "task": target.env_id,
        "env": {"id": target.env_id, "preset": "classic"},
        "exp_name": target.entry.name,
        "framework": target.entry.framework,
        "checkpoint": str(run),
    }
    for fmt, suffix in (("torchscript", ".ts"), ("onnx", ".onnx")):
        export_policy(policy, target=facts, preset_notes=[], fmt=fmt, out=workdir / f"{run.name}{suffix}")
    module = policy.export_spec().module
    scripted = torch.jit.load(str(workdir / f"{run.name}.ts"))
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
    session = ort.InferenceSession(
        str(workdir / f"{run.name}.onnx"), options, providers=["CPUExecutionProvider"]
    )

    def eager(x):
        with torch.inference_mode():
            return module(torch.from_numpy(x))

    def script(x):
        with torch.inference_mode():
            return scripted(torch.from_numpy(x))

    calls = {
        "eager": eager,
        "act()": lambda x: policy.act(x, None, True),
        "torchscript": script,
        "onnxruntime": lambda x: session.run(["actions"], {"obs": x}),
    }
    return policy, calls


def _time(fn, x: np.ndarray, calls: int) -> float:
    fn(x)
    start = time.perf_counter()
    for _ in range(calls):
        fn(x)
    return (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000, help="calls per round at batch 1")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 intra-op thread everywhere; {args.rounds} interleaved rounds\n")
    header = f"{'run':<50} {'variant':<12} {'batch-1 us':>11} {'vs eager':>9} {'batch-1024 obs/s':>17} {'vs eager':>9}"
    print(header)
    print("-" * len(header))
    met = []
    with tempfile.TemporaryDirectory() as tmp:
        for run in sorted(p for p in EXAMPLES.iterdir() if p.is_dir()):
            policy, calls = _callables(run, Path(tmp))
            rng = np.random.default_rng(0)
            one = flatten_obs(sample_batch(policy.observation_space, 1, rng), {"obs": {}})
            big = flatten_obs(sample_batch(policy.observation_space, 1024, rng), {"obs": {}})
            latency = {v: [] for v in VARIANTS}
            throughput = {v: [] for v in VARIANTS}
            for _ in range(args.rounds):
                for variant, fn in calls.items():
                    latency[variant].append(_time(fn, one, args.calls))
                    throughput[variant].append(1024 / _time(fn, big, max(1, args.calls // 100)))
            lat = {v: statistics.median(t) for v, t in latency.items()}
            thr = {v: statistics.median(t) for v, t in throughput.items()}
            for variant in VARIANTS:
                print(
                    f"{run.name:<50} {variant:<12} {lat[variant] * 1e6:>11.1f} {lat[variant] / lat['eager']:>8.2f}x "
                    f"{thr[variant]:>17,.0f} {thr[variant] / thr['eager']:>8.2f}x"
                )
            ratio = lat["onnxruntime"] / lat["eager"]
            met.append(ratio <= 0.5)
            print(
                f"{'':<50} target onnxruntime/eager batch-1 latency <= 0.50: {ratio:.2f} "
                f"({'met' if ratio <= 0.5 else 'MISSED'})\n"
            )
    print(f"target met for {sum(met)} of {len(met)} bundled policies")


if __name__ == "__main__":
    main()
