"""``zoo eval --engine onnxruntime``: the policy exported in memory and run by onnxruntime, once it is proven
to act like the torch policy on the run's own observations.

At eval's batch sizes (one observation per env) a small MLP's torch forward pass is mostly Python and
dispatch overhead; onnxruntime runs the same graph in a few microseconds. The engine is opt-in and never
exact by construction, so before a single episode counts it is checked: the torch policy plays
:data:`PARITY_STEPS` vector steps of the eval env (seeded with the evaluation seed), and on every
observation it met the onnxruntime policy must give the same actions (discrete: equal; continuous: within
the exporter's tolerance). A mismatch is an error, never a silent fallback. eval.json then records
``settings.engine`` and the evidence, ``settings.engine_parity``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from zoo.errors import UnsupportedError, ZooError

ENGINES = ("torch", "onnxruntime")
#: Vector steps of the torch policy whose observations the onnxruntime policy must match.
PARITY_STEPS = 128


def onnxruntime_policy(policy, target, spec, seed: int):
    """``policy`` (torch) as an onnxruntime policy of the same actions, with ``engine_record`` (what eval.json's
    settings record); raises ZooError when the export or the parity check fails."""
    from zoo.envs import EnvSpec
    from zoo.exporter import export_policy
    from zoo.exporter.runtime import load_exported

    if not isinstance(spec, EnvSpec):
        raise UnsupportedError(
            "--engine onnxruntime: zoo checks the engine on a gymnasium env; tensor envs run "
            "the torch policy on their device",
            hint="drop --engine",
        )
    if policy.is_recurrent:
        raise UnsupportedError(
            "--engine onnxruntime: recurrent policies are evaluated with torch", hint="drop --engine"
        )
    facts = {
        "task": target.env_id,
        "env": spec.to_json(),
        "exp_name": target.entry.name,
        "framework": target.entry.framework,
        "checkpoint": str(target.model_file),
    }
    with tempfile.TemporaryDirectory(prefix="zoo-engine-") as tmp:
        # the legacy exporter writes these small graphs in a fraction of dynamo's time; parity decides either way
        exported = export_policy(
            policy,
            target=facts,
            preset_notes=[],
            fmt="onnx",
            out=Path(tmp) / "policy.onnx",
            exporter="legacy",
        )
        engine = load_exported(exported.path, exported.meta, target.entry, target.env_id, spec)
    tolerance = exported.meta["parity"]["tolerance"]
    engine.engine_record = {
        "engine": "onnxruntime",
        "engine_parity": prove_parity(policy, engine, spec, seed, tolerance),
    }
    return engine


def prove_parity(policy, engine, spec, seed: int, tolerance: float) -> dict:
    """Roll ``policy`` out on the eval env and compare ``engine``'s actions on every observation it met: the
    evidence (observations, max |diff|, tolerance), or ZooError naming the first mismatch."""
    from zoo.envs import make_vector_env

    envs = make_vector_env(spec, 8)
    worst, count = 0.0, 0
    try:
        obs, _ = envs.reset(seed=seed)
        for step in range(PARITY_STEPS):
            expected, _ = policy.act(obs, None, True)
            got, _ = engine.act(obs, None, True)
            expected, got = np.asarray(expected), np.asarray(got)
            if expected.shape != got.shape:
                raise ZooError(
                    f"--engine onnxruntime: actions of shape {got.shape}, the torch policy's {expected.shape}",
                    hint="drop --engine (and report it)",
                )
            diff = float(np.max(np.abs(expected.astype(np.float64) - got.astype(np.float64)), initial=0.0))
            if diff > tolerance:
                raise ZooError(
                    f"--engine onnxruntime does not act like the torch policy: max |diff| {diff:.3g} > "
                    f"{tolerance:g} at step {step} of the parity rollout",
                    hint="drop --engine: the torch engine is exact",
                )
            worst, count = max(worst, diff), count + len(obs)
            obs, *_ = envs.step(expected)
    finally:
        envs.close()
    return {"observations": count, "max_abs_diff": worst, "tolerance": tolerance, "exact": worst == 0.0}
