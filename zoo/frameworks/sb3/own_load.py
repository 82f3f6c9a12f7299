"""What SB3's own ``{Algo}.load`` would do with a zip that zoo reads statically: code it would run, and
members it cannot load.

zoo decodes only the values it needs (:mod:`zoo.frameworks.sb3.archive`), so a malicious ``lr_schedule``
never runs in zoo. Whoever downloads the zip runs SB3's load (``stable_baselines3/common/save_util.py``,
``load_from_zip_file``, 2.9.2) instead:

- ``data``: ``json_to_data`` cloudpickle-loads every top-level value that has ``":serialized:"`` (a failing
  one is skipped only for ``RuntimeError``/``TypeError``/``AttributeError``; anything else fails the load).
  Every such pickle is scanned (:func:`zoo.artifacts.pickles.scan_pickles`, nothing imported) and held to
  :data:`~zoo.frameworks.sb3.allowlist.SERIALIZED`; the torch file a pickled tensor hands
  ``torch.storage._load_from_bytes`` (``torch.load(weights_only=False)``) is held to zoo's weights-only
  verification;
- every ``*.pth`` member goes through ``torch.load(weights_only=True)``: one that does not load fails the
  whole load. Older SB3 with torch before 2.6 loaded them without ``weights_only``: a pickle naming a
  global that runs code is code there;
- ``set_parameters(exact_match=True)`` wants exactly the state dicts the algorithm saves (its policy and
  optimizers, :func:`state_dicts`): a missing ``policy.optimizer.pth`` fails with ``KeyError``. A missing
  ``pytorch_variables.pth`` is accepted (SB3 keeps fresh values, such as SAC's entropy coefficient).

Each is a :class:`~zoo.artifacts.findings.Finding`; :func:`strip` writes the zip without the ``data``
values that hold code, which SB3's load then takes from the algorithm's defaults (``lr_schedule`` and
``clip_range`` are rebuilt from ``learning_rate`` and the defaults by ``_setup_model``).
"""

from __future__ import annotations

import base64
import io
import json
import zipfile
from pathlib import Path

from zoo.artifacts import limits
from zoo.artifacts.findings import STRIP_HINT, Finding
from zoo.artifacts.report import ERROR, WARNING
from zoo.frameworks.sb3.archive import SB3Archive, read_entry

#: ``data`` values zoo decodes itself (with its stricter allowlist) and SB3's load cannot do without: they
#: are never stripped, and ``zoo check`` reports them through zoo's own decoding.
ZOO_DECODES = ("policy_class", "observation_space", "action_space", "policy_kwargs")
#: The ``.pth`` members that hold variables, not state dicts (``tensors.pth`` before SB3 0.9).
VARIABLES = ("pytorch_variables.pth", "tensors.pth")
#: The hint of a member SB3's load fails on: zoo reads the policy all the same.
LOAD_FAILS_HINT = "zoo evaluates it; for SB3's own load, re-save the model with model.save()"
#: Cloudpickle's function builders: a value naming them is a function pickled by value (bytecode).
_BY_VALUE = "cloudpickle"


def state_dicts(archive: SB3Archive) -> set[str] | None:
    """The state dicts the algorithm's ``_get_torch_save_params`` names (SB3 2.9, sb3-contrib 2.9); None
    for an unknown algorithm."""
    algorithm = archive.algorithm
    if algorithm is None:
        return None
    if algorithm in ("SAC", "TQC", "CrossQ"):
        ent_coef = archive.data.get("ent_coef")
        auto = isinstance(ent_coef, str) and ent_coef.startswith("auto")
        return {"policy", "actor.optimizer", "critic.optimizer"} | ({"ent_coef_optimizer"} if auto else set())
    if algorithm in ("TD3", "DDPG"):
        return {"policy", "actor.optimizer", "critic.optimizer"}
    if algorithm == "ARS":
        return {"policy"}
    return {"policy", "policy.optimizer"}


def findings(archive: SB3Archive, *, zoo_reads: bool = False) -> list[Finding]:
    """Everything SB3's load would run or fail on. ``zoo_reads``: leave out what zoo's own reading of the
    zip reports anyway (the values it decodes, ``policy.pth``), as ``zoo check`` does."""
    return _serialized(archive, zoo_reads) + _members(archive, zoo_reads)


def _serialized(archive: SB3Archive, zoo_reads: bool) -> list[Finding]:
    from zoo.artifacts.pickles import classify, scan_pickles
    from zoo.frameworks.sb3.allowlist import LOAD_FROM_BYTES, SERIALIZED

    found = []
    for key, value in archive.data.items():
        if not (isinstance(value, dict) and isinstance(value.get(":serialized:"), str)):
            continue  # plain JSON, or a value SB3's load skips with a warning (AttributeError)
        if zoo_reads and key in ZOO_DECODES:
            continue
        where, strippable = f"{archive.path.name}: data[{key!r}]", key not in ZOO_DECODES
        hint = (
            STRIP_HINT
            if strippable
            else "SB3's load needs this value, so it cannot be stripped (docs/frameworks/sb3.md)"
        )
        try:
            raw = base64.b64decode(value[":serialized:"].encode())
        except ValueError:
            found.append(
                Finding(WARNING, where, "is not base64: SB3's load fails on it", hint, strippable, key)
            )
            continue
        scan = scan_pickles(raw, capture=frozenset({LOAD_FROM_BYTES}))
        verdict = classify(scan.globals, SERIALIZED)
        calls = [name for name in verdict.dangerous if name.split(".")[0] != _BY_VALUE]
        if calls:
            what = f"is an unsafe pickle: SB3's load would call {', '.join(calls)}"
        elif any(module.split(".")[0] == _BY_VALUE for module, _ in scan.globals):
            what = (
                "is a function pickled by value (Python bytecode: older SB3 saved its schedules so, and any "
                "lambda is one): SB3's load rebuilds it, and training calls it"
            )
        elif verdict.unknown:
            what = f"names {', '.join(verdict.unknown)}, which SB3's load would import and zoo cannot check"
        elif not scan.complete:
            what = f"is a pickle zoo cannot follow to its end ({scan.error}): what SB3's load runs is unknown"
        else:
            what = _stored_tensors(scan.calls)
        if what:
            found.append(Finding(ERROR, where, what, hint, strippable, key))
    return found


def _stored_tensors(calls: list) -> str | None:
    """Why a torch file handed to ``_load_from_bytes`` (which unpickles it in full: a storage pickles itself
    in torch's legacy format) names anything outside the weights-only allowlist, or cannot be followed to
    its end; None when every global of each one is allowed."""
    from zoo.artifacts.torchfile import inspect_torch_bytes

    for _, args in calls:
        if len(args) != 1 or not isinstance(args[0], bytes):
            return "hands torch.storage._load_from_bytes something other than a torch file's bytes"
        info = inspect_torch_bytes(args[0], Path("stored tensor"))
        if not info.is_safe or info.problem or info.kind not in ("torch-zip", "torch-legacy"):
            why = [*info.dangerous, *info.unknown] or [info.problem or info.kind]
            return f"holds a tensor that torch.load(weights_only=False) reads from a file zoo cannot verify ({why[0]})"
    return None


def _members(archive: SB3Archive, zoo_reads: bool) -> list[Finding]:
    """The ``.pth`` members SB3's load reads: each must load with ``torch.load(weights_only=True)``, and the
    state dicts must be the algorithm's."""
    label = archive.path.name
    try:
        with zipfile.ZipFile(archive.path) as zf:
            names = zf.namelist()
            found = [
                f
                for name in names
                if name.endswith(".pth") and not (zoo_reads and name == "policy.pth")
                for f in _member(archive, zf, name)
            ]
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        return [Finding(WARNING, label, f"cannot be read again ({str(exc)[:100]})", LOAD_FAILS_HINT)]
    expected = state_dicts(archive)
    present = {name.removesuffix(".pth") for name in names if name.endswith(".pth") and name not in VARIABLES}
    algo = archive.algorithm
    for name in sorted((expected or set()) - present):
        found.append(
            Finding(
                WARNING,
                f"{label}: {name}.pth",
                f"is missing: SB3's {algo}.load fails without it "
                "(it loads every state dict the algorithm saves)",
                LOAD_FAILS_HINT,
            )
        )
    for name in sorted(present - (expected or present)):
        found.append(
            Finding(
                WARNING,
                f"{label}: {name}.pth",
                f"is not a state dict {algo} saves: SB3's load fails on it",
                LOAD_FAILS_HINT,
            )
        )
    return found


def _member(archive: SB3Archive, zf: zipfile.ZipFile, name: str) -> list[Finding]:
    from zoo.artifacts.torchfile import confirm_bytes, inspect_torch_bytes
    from zoo.errors import ZooError

    where = f"{archive.path.name}: {name}"
    try:
        raw = read_entry(zf, archive.path, name, limits.MAX_ENTRY_BYTES)
    except ZooError as exc:
        return [Finding(WARNING, where, f"cannot be read: {exc.message}", LOAD_FAILS_HINT)]
    info = inspect_torch_bytes(raw, Path(name))
    if info.dangerous:
        return [
            Finding(
                ERROR,
                where,
                f"is an unsafe pickle: torch.load without weights_only (older SB3 with torch "
                f"before 2.6) would call {', '.join(info.dangerous)}",
                "do not publish it: re-save the model with SB3 2.x",
            )
        ]
    problem = (
        (info.unknown and f"holds {', '.join(info.unknown)}, which torch's weights-only loader refuses")
        or info.problem
        or (info.kind in ("empty", "not-torch", "truncated", "pickle") and info.kind)
        or (info.confirm and confirm_bytes(raw))
    )
    if problem:
        return [
            Finding(
                WARNING,
                where,
                f"does not load with torch.load(weights_only=True), so SB3's load fails: {problem}",
                LOAD_FAILS_HINT,
            )
        ]
    return []


def strip(path: Path, found: list[Finding]) -> bytes:
    """The zip without the ``data`` values of the strippable findings; every other member as it was."""
    keys = {f.part for f in found if f.strippable and f.part}
    out = io.BytesIO()
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            content = read_entry(zin, path, info.filename, limits.MAX_ENTRY_BYTES)
            if info.filename == "data" and keys:
                data = json.loads(content)
                content = json.dumps({k: v for k, v in data.items() if k not in keys}, indent=4).encode()
            zout.writestr(info, content)
    return out.getvalue()
