"""``zoo export``: one file that maps raw observations to env actions, proven to act like the source.

The adapter's policy provides an :class:`~zoo.policy.ExportSpec` (a torch module with the
framework's normalizer and action head baked in, plus the facts around it). This package writes it
as TorchScript or ONNX into a private work folder next to ``--out`` (:func:`zoo.atomic.private_workdir`:
one that a killed export left behind is removed by the next), loads the written file back the way a
deployment would, and compares it with the source policy (:mod:`zoo.export.parity`). Only a file
that passes is stamped with its metadata, checked once more, and renamed into place together with
its sidecar; a failure leaves nothing behind.

ONNX exporter choice ("auto"): the dynamo exporter first, then the legacy TorchScript-based one if
dynamo raises or its file fails the parity check; the sidecar records which one produced the file
and why the other was passed over.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from zoo.artifacts.digest import sha256_file
from zoo.atomic import check_writable, private_workdir
from zoo.errors import ZooError
from zoo.export.parity import DEFAULT_TOLERANCE, Parity, check_parity, sample_batch
from zoo.export.runtime import open_runner, sidecar_path
from zoo.export.sidecar import TORCHSCRIPT_METADATA, build_sidecar, recurrent_facts

SUFFIX_FORMAT = {".onnx": "onnx", ".ts": "torchscript", ".pt": "torchscript", ".jit": "torchscript"}
DEFAULT_SUFFIX = {"onnx": ".onnx", "torchscript": ".ts"}


@dataclass
class ExportResult:
    path: Path
    sidecar: Path
    meta: dict
    notes: list[str] = field(default_factory=list)  # things the user should hear (a fallback)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _spec(policy, framework: str):
    make = getattr(policy, "export_spec", None)
    if make is None:
        raise ZooError(
            f"{framework} policies cannot be exported yet", hint="see docs/export.md for what is supported"
        )
    return make()


def _write(spec, fmt: str, exporter: str, obs, path: Path, opset: int) -> None:
    from zoo.export.writers import write_onnx, write_torchscript

    if fmt == "torchscript":
        write_torchscript(spec, obs, path)
    else:
        write_onnx(spec, obs, path, opset=opset, exporter=exporter)


def _stamp(path: Path, fmt: str, meta: dict) -> None:
    """Put the sidecar's facts into the file itself."""
    facts = {key: json.dumps(value) for key, value in meta.items()}
    if fmt == "onnx":
        from zoo.export.writers import set_onnx_metadata

        set_onnx_metadata(path, facts)
        return
    import torch

    from zoo.export.writers import quiet

    with quiet():
        module = torch.jit.load(str(path), map_location="cpu")
        torch.jit.save(module, str(path), _extra_files={TORCHSCRIPT_METADATA: json.dumps(meta, indent=2)})


def _parity_failure(parity: Parity) -> str:
    if parity.tolerance == 0.0:
        return f"{parity.mismatches} of {parity.samples} discrete actions differ (exact match required)"
    return (f"max |diff| {parity.max_abs_diff:.3g} > tolerance {parity.tolerance:g} "
            f"({parity.mismatches} values over, {parity.samples} observations)")  # fmt: skip


def _first_passing(policy, spec, fmt: str, candidates: list[str], tmp: Path, opset: int, tol: float,
                   recurrent: dict | None) -> tuple[str, Parity, dict[str, str]]:  # fmt: skip
    """Write ``tmp`` with each candidate exporter in turn until one passes the parity check."""
    import numpy as np
    import torch

    from zoo.export.obs import flatten_obs

    example = sample_batch(policy.observation_space, 2, np.random.default_rng(1))
    example = torch.from_numpy(flatten_obs(example, spec.obs_groups))
    passed_over: dict[str, str] = {}
    for name in candidates:
        tmp.unlink(missing_ok=True)
        try:
            _write(spec, fmt, name, example, tmp, opset)
            runner = open_runner(tmp, fmt, recurrent)
        except ZooError:
            raise
        except Exception as exc:  # noqa: BLE001 - an exporter failing is a finding; the next may work
            passed_over[name] = f"export failed: {_first_line(exc)}"
            continue
        parity = check_parity(policy, runner, spec.obs_groups, tolerance=tol)
        if parity.ok:
            return name, parity, passed_over
        passed_over[name] = f"parity check failed: {_parity_failure(parity)}"
    detail = "; ".join(f"{k}: {v}" for k, v in passed_over.items())
    raise ZooError(f"export failed, no file written: {detail}",
                   hint="this is a bug in zoo's exporter for this policy; please report it")  # fmt: skip


def export_policy(policy, *, target: dict, preset_notes: list[str], fmt: str, out: Path, opset: int = 17,
                  exporter: str = "auto", tolerance: float | None = None) -> ExportResult:  # fmt: skip
    """Write ``policy`` to ``out`` (+ sidecar) in ``fmt``, or raise ZooError leaving nothing behind.

    ``target`` holds the facts about the source (task, env, exp_name, framework, checkpoint) that the
    sidecar records; ``preset_notes`` what the eval env's wrappers do that a deployment must redo.
    """
    import numpy as np

    from zoo.export.writers import io_names, onnx_opset

    spec = _spec(policy, target.get("framework", "this framework's"))
    tol = 0.0 if not _is_box(policy.action_space) else (DEFAULT_TOLERANCE if tolerance is None else tolerance)
    if fmt == "torchscript":
        candidates = ["torchscript"]
    else:
        candidates = ["dynamo", "legacy"] if exporter == "auto" else [exporter]
    inputs, outputs = io_names(spec)
    recurrent = recurrent_facts(spec, inputs, outputs)  # what a runner needs to carry the state, too
    created = [d for d in (out.parent, *out.parent.parents) if not d.exists()]
    check_writable(out, "--out")
    done = False
    try:
        with private_workdir(out.parent, f".{out.name}.") as workdir:
            tmp = workdir / out.name
            name, parity, passed_over = _first_passing(
                policy, spec, fmt, candidates, tmp, opset, tol, recurrent
            )
            used = name if fmt == "onnx" else "torch.jit.trace"
            meta = build_sidecar(
                spec, target=target, fmt=fmt, opset=onnx_opset(tmp) if fmt == "onnx" else None,
                exporter={"name": used, "requested": exporter if fmt == "onnx" else None, "passed_over": passed_over},
                recurrent=recurrent, inputs=inputs, outputs=outputs, action_space=policy.action_space, parity=parity.to_json(),
                left_to_caller=[*preset_notes, *spec.left_to_caller],
            )  # fmt: skip
            _stamp(tmp, fmt, meta)
            again = check_parity(policy, open_runner(tmp, fmt, recurrent), spec.obs_groups, tolerance=tol)
            if not all(np.array_equal(a, b) for a, b in zip(again.outputs, parity.outputs, strict=True)):
                raise ZooError(
                    "export failed, no file written: the file changed its outputs when its metadata was added"
                )
            meta["file_sha256"] = sha256_file(tmp)
            side_tmp = workdir / "sidecar.json"
            side_tmp.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
            os.replace(tmp, out)
            os.replace(side_tmp, sidecar_path(out))
            done = True
    except OSError as exc:
        raise ZooError(
            f"cannot write into {out.parent}: {exc.strerror}", hint="choose another --out"
        ) from None
    finally:
        for folder in [] if done else created:  # leave no trace of a failed export, folders included
            with contextlib.suppress(OSError):
                folder.rmdir()
    notes = [f"{k} exporter passed over ({v}); used {used}" for k, v in passed_over.items()]
    return ExportResult(out, sidecar_path(out), meta, notes)


def _is_box(space) -> bool:
    from gymnasium import spaces

    return isinstance(space, spaces.Box)


def export_paths(model_file: Path, fmt: str | None, out: Path | None) -> tuple[str, Path]:
    """The format (flag, else --out's suffix, else onnx) and the output path (default: beside the model)."""
    if fmt is None:
        fmt = SUFFIX_FORMAT.get(out.suffix, "onnx") if out is not None else "onnx"
    if out is None:
        out = model_file.with_name(model_file.stem + DEFAULT_SUFFIX[fmt])
    if out.is_dir():
        raise ZooError(
            f"--out {out} is a folder",
            hint=f"give a file name, e.g. {out / ('policy' + DEFAULT_SUFFIX[fmt])}",
        )
    return fmt, out


def export_target(path: Path, registry, *, fmt: str | None, out: Path | None, opset: int = 17, exporter: str = "auto",
                  tolerance: float | None = None, exp_name: str | None = None, env_id: str | None = None,
                  run_seed: int | None = None, trust_pickle: bool = False,
                  model_config: Path | None = None) -> ExportResult:  # fmt: skip
    """Resolve TARGET as ``zoo eval`` does, load its policy on the CPU, and export it."""
    from zoo.envs import PRESET_DEPLOYMENT_NOTES
    from zoo.targets import resolve_target

    target = resolve_target(path, registry, exp_name=exp_name, env_id=env_id, seed=run_seed)
    if target.exported is not None:
        raise ZooError(
            f"{path} is already an exported policy", hint="export the run dir or checkpoint it came from"
        )
    fmt, out = export_paths(target.model_file, fmt, out)
    extra = {"model_config": model_config} if model_config else {}
    policy = target.adapter.load_policy(target.model_file, target.entry, target.env_id, device="cpu", seed=0,
                                        trust_pickle=trust_pickle, **extra)  # fmt: skip
    preset = target.adapter.env_spec(target.entry, target.env_id).preset
    facts = {"task": target.env_id, "env": {"id": target.env_id, "preset": preset}, "exp_name": target.entry.name,
             "framework": target.entry.framework, "checkpoint": str(target.model_file)}  # fmt: skip
    return export_policy(policy, target=facts, preset_notes=PRESET_DEPLOYMENT_NOTES.get(preset, []), fmt=fmt,
                         out=out, opset=opset, exporter=exporter, tolerance=tolerance)  # fmt: skip
