"""``zoo export``: one file that maps raw observations to env actions, proven to act like the source.

The adapter's policy provides an :class:`~zoo.policy.ExportSpec` (a torch module with the
framework's normalizer and action head baked in, plus the facts around it). This package writes it
as TorchScript or ONNX into a private work folder next to ``--out`` (:func:`zoo.atomic.private_workdir`:
one that a killed export left behind is removed by the next), loads the written file back the way a
deployment would, and compares it with the source policy (:mod:`zoo.exporter.parity`). Only a file
that passes is stamped with its metadata, checked once more, and renamed into place together with
its sidecar; a failure leaves nothing behind.

ONNX exporter choice ("auto"): the dynamo exporter first, then the legacy TorchScript-based one if
dynamo raises or its file fails the parity check; the sidecar records which one produced the file
and why the other was passed over. An exporter that cannot write the requested opset
(:data:`zoo.exporter.writers.EXPORTER_OPSETS`) is passed over without a try, and an opset neither
writes, or one the exporter asked for cannot, is a usage error; the file's opset is always the one
asked for.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from zoo.artifacts.digest import sha256_file
from zoo.atomic import check_writable, private_workdir, renamed_into
from zoo.errors import UsageError, WriteError, ZooError
from zoo.exporter.parity import DEFAULT_TOLERANCE, Parity, check_parity, sample_batch
from zoo.exporter.runtime import open_runner, sidecar_path
from zoo.exporter.sidecar import TORCHSCRIPT_METADATA, build_sidecar, recurrent_facts
from zoo.strict_json import dumps

#: The ONNX opset ``zoo export`` writes unless told otherwise.
DEFAULT_OPSET = 17
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
    from zoo.exporter.writers import write_onnx, write_torchscript

    if fmt == "torchscript":
        write_torchscript(spec, obs, path)
    else:
        write_onnx(spec, obs, path, opset=opset, exporter=exporter)


def _stamp(path: Path, fmt: str, meta: dict) -> None:
    """Put the sidecar's facts into the file itself."""
    facts = {key: json.dumps(value) for key, value in meta.items()}
    if fmt == "onnx":
        from zoo.exporter.writers import set_onnx_metadata

        set_onnx_metadata(path, facts)
        return
    import torch

    from zoo.exporter.writers import quiet

    with quiet():
        module = torch.jit.load(str(path), map_location="cpu")
        torch.jit.save(module, str(path), _extra_files={TORCHSCRIPT_METADATA: json.dumps(meta, indent=2)})


def _parity_failure(parity: Parity) -> str:
    if parity.tolerance == 0.0:
        return f"{parity.mismatches} of {parity.samples} discrete actions differ (exact match required)"
    return (
        f"max |diff| {parity.max_abs_diff:.3g} > tolerance {parity.tolerance:g} "
        f"({parity.mismatches} values over, {parity.samples} observations)"
    )


def _span(opsets: range) -> str:
    return f"{opsets.start} to {opsets.stop - 1}"


def onnx_exporters(exporter: str, opset: int) -> tuple[list[str], dict[str, str]]:
    """The exporters for ``opset`` in the order to try them, and those among them that cannot write it.

    Raises UsageError when none can: an opset outside every exporter's range, or outside the range of
    the one exporter asked for.
    """
    from zoo.exporter.writers import EXPORTER_OPSETS, ONNX_OPSETS

    if exporter not in ("auto", *EXPORTER_OPSETS):
        raise UsageError(f"unknown ONNX exporter {exporter!r}", hint="use auto, dynamo or legacy")
    ranges = ", ".join(f"{name} {_span(opsets)}" for name, opsets in EXPORTER_OPSETS.items())
    if opset not in ONNX_OPSETS:
        raise UsageError(
            f"--opset {opset}: zoo writes ONNX opsets {_span(ONNX_OPSETS)}",
            hint=f"by exporter: {ranges}; see docs/export.md",
        )
    if exporter != "auto" and opset not in EXPORTER_OPSETS[exporter]:
        raise UsageError(
            f"--exporter {exporter} writes ONNX opsets {_span(EXPORTER_OPSETS[exporter])}, not {opset}",
            hint=f"by exporter: {ranges}; --exporter auto picks one that can",
        )
    names = list(EXPORTER_OPSETS) if exporter == "auto" else [exporter]
    skipped = {
        name: f"writes opsets {_span(EXPORTER_OPSETS[name])}, not {opset}"
        for name in names
        if opset not in EXPORTER_OPSETS[name]
    }
    return names, skipped


def _first_passing(
    policy,
    spec,
    fmt: str,
    candidates: list[str],
    tmp: Path,
    opset: int,
    tol: float,
    recurrent: dict | None,
    skipped: dict[str, str],
) -> tuple[str, Parity, dict[str, str]]:
    """Write ``tmp`` with each candidate exporter in turn until one passes the parity check.

    ``skipped``: candidates not to try, and why. ``passed_over`` names those tried or skipped before the
    one that passed (a fallback after it is not passed over), and every one in the error when none passes.
    """
    import numpy as np
    import torch

    from zoo.exporter.obs import flatten_obs

    example = sample_batch(policy.observation_space, 2, np.random.default_rng(1))
    example = torch.from_numpy(flatten_obs(example, spec.obs_groups))
    from zoo.exporter.writers import OpsetError

    passed_over: dict[str, str] = {}
    opset_only = True  # every exporter tried failed to write the opset: the user's choice, not a bug
    for name in candidates:
        if name in skipped:
            passed_over[name] = skipped[name]
            continue
        tmp.unlink(missing_ok=True)
        try:
            _write(spec, fmt, name, example, tmp, opset)
        except ZooError:
            raise
        except Exception as exc:  # noqa: BLE001 - an exporter failing is a finding; the next may work
            passed_over[name] = f"export failed: {_first_line(exc)}"
            opset_only = opset_only and isinstance(exc, OpsetError)
            continue
        try:
            runner = open_runner(tmp, fmt, recurrent)
        except ZooError:
            raise
        except Exception as exc:  # noqa: BLE001 - the runtime cannot run what was written (an older onnxruntime)
            passed_over[name] = (
                f"the written file does not run here ({_runtime_name(fmt)}): {_first_line(exc)}"
            )
            continue
        parity = check_parity(policy, runner, spec.obs_groups, tolerance=tol, scales=term_scales(spec))
        if parity.ok:
            return name, parity, passed_over
        passed_over[name] = f"parity check failed: {_parity_failure(parity)}"
        opset_only = False
    detail = "; ".join(f"{k}: {v}" for k, v in passed_over.items())
    if any("does not run here" in v for v in passed_over.values()):
        hint = "choose a lower --opset, or upgrade onnxruntime (an older release runs fewer opsets)"
    elif opset_only:
        hint = "choose another --opset or --exporter; docs/export.md says what each writes"
    else:
        hint = "this is a bug in zoo's exporter for this policy; please report it"
    raise ZooError(f"export failed, no file written: {detail}", hint=hint)


def _runtime_name(fmt: str) -> str:
    from importlib.metadata import version

    return f"onnxruntime {version('onnxruntime')}" if fmt == "onnx" else "torch.jit"


def with_obs_terms(spec, obs_terms: dict):
    """``spec`` with every group's terms recorded (:func:`zoo.exporter.terms.record_terms`) and their scale and
    clip applied inside its module, so that the file takes raw observations; a spec that has them already is
    returned as it is (a release writes every form from one)."""
    import copy
    import dataclasses

    from zoo.exporter.terms import BAKED, TermScales, record_terms

    if all("terms" in group for group in spec.obs_groups.values()):
        return spec
    groups = copy.deepcopy(spec.obs_groups)
    record_terms(groups, obs_terms)
    scales = TermScales.of(groups, _obs_dim(spec))
    if scales is None:
        return dataclasses.replace(spec, obs_groups=groups)
    return dataclasses.replace(
        spec, module=scales.module(spec.module).eval(), obs_groups=groups, baked=[BAKED, *spec.baked]
    )


def term_scales(spec):
    """The terms a spec's module applies (None: none but the identity), for the parity check's raw input."""
    from zoo.exporter.terms import TermScales

    return TermScales.of(spec.obs_groups, _obs_dim(spec))


def _obs_dim(spec) -> int:
    import math

    return math.prod(spec.obs_shape)


def export_policy(
    policy,
    *,
    target: dict,
    preset_notes: list[str],
    fmt: str,
    out: Path,
    opset: int = DEFAULT_OPSET,
    exporter: str = "auto",
    tolerance: float | None = None,
    obs_terms: dict | None = None,
    exported_at: str | None = None,
    spec=None,
) -> ExportResult:
    """Write ``policy`` to ``out`` (+ sidecar) in ``fmt``, or raise ZooError leaving nothing behind.

    ``target`` holds the facts about the source (task, env, exp_name, framework, checkpoint) that the
    sidecar records; ``preset_notes`` what the eval env's wrappers do that a deployment must redo;
    ``obs_terms`` the terms of each observation group (:class:`zoo.tensor_env.Term`), which the task
    definition knows: recorded as ``obs_groups[group]["terms"]`` and applied inside the file
    (:func:`with_obs_terms`), so that it takes raw observations;
    ``exported_at`` the time recorded (default now; a release gives its checkpoint's, so that re-pushing an
    unchanged run writes the same bytes); ``spec`` the policy's :class:`~zoo.policy.ExportSpec` when the caller
    has it already (else it is made here).
    """
    import numpy as np

    from zoo.exporter.writers import io_names, onnx_opset

    candidates, skipped = (["torchscript"], {}) if fmt == "torchscript" else onnx_exporters(exporter, opset)
    spec = with_obs_terms(spec or _spec(policy, target.get("framework", "this framework's")), obs_terms or {})
    tol = 0.0 if not _is_box(policy.action_space) else (DEFAULT_TOLERANCE if tolerance is None else tolerance)
    inputs, outputs = io_names(spec)
    recurrent = recurrent_facts(spec, inputs, outputs)  # what a runner needs to carry the state, too
    created = [d for d in (out.parent, *out.parent.parents) if not d.exists()]
    check_writable(out, "--out")
    dest = renamed_into(out, "--out")  # a link's target: the link stays
    sidecar = renamed_into(sidecar_path(out), "--out's sidecar")  # beside the name the user gave
    done = False
    try:
        with private_workdir(dest.parent, f".{dest.name}.") as workdir:
            tmp = workdir / out.name
            name, parity, passed_over = _first_passing(
                policy, spec, fmt, candidates, tmp, opset, tol, recurrent, skipped
            )
            used = name if fmt == "onnx" else "torch.jit.trace"
            meta = build_sidecar(
                spec,
                target=target,
                fmt=fmt,
                opset=onnx_opset(tmp) if fmt == "onnx" else None,
                exporter={
                    "name": used,
                    "requested": exporter if fmt == "onnx" else None,
                    "passed_over": passed_over,
                },
                recurrent=recurrent,
                inputs=inputs,
                outputs=outputs,
                action_space=policy.action_space,
                parity=parity.to_json(),
                left_to_caller=[*preset_notes, *spec.left_to_caller],
                exported_at=exported_at,
            )
            _stamp(tmp, fmt, meta)
            again = check_parity(
                policy,
                open_runner(tmp, fmt, recurrent),
                spec.obs_groups,
                tolerance=tol,
                scales=term_scales(spec),
            )
            if not all(np.array_equal(a, b) for a, b in zip(again.outputs, parity.outputs, strict=True)):
                raise ZooError(
                    "export failed, no file written: the file changed its outputs when its metadata was added"
                )
            meta["file_sha256"] = sha256_file(tmp)
            side_tmp = workdir / "sidecar.json"
            side_tmp.write_text(dumps(meta, what="the sidecar", indent=2) + "\n", encoding="utf-8")
            os.replace(tmp, dest)
            os.replace(side_tmp, sidecar)
            done = True
    except OSError as exc:
        raise WriteError.of(exc, out) from None
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
    """The format (flag, else --out's suffix, else onnx) and the output path (default: beside the model).

    A ``--out`` whose suffix names the other format than ``--format`` is a usage error: a TorchScript
    file called ``.onnx`` (or the reverse) would fool whoever loads it. Suffixes are matched ignoring case.
    """
    named = SUFFIX_FORMAT.get(out.suffix.lower()) if out is not None else None
    if fmt is not None and named is not None and named != fmt:
        raise UsageError(
            f"--out {out.name}: {out.suffix} is the suffix of {named} files, but --format is {fmt}",
            hint=f"name it {out.stem}{DEFAULT_SUFFIX[fmt]}, or drop --format",
        )
    fmt = fmt or named or "onnx"
    if out is None:
        out = model_file.with_name(model_file.stem + DEFAULT_SUFFIX[fmt])
    if out.is_dir():
        raise ZooError(
            f"--out {out} is a folder",
            hint=f"give a file name, e.g. {out / ('policy' + DEFAULT_SUFFIX[fmt])}",
        )
    return fmt, out
