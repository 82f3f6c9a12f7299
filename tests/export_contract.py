"""The export contract (DESIGN section 5) as a checker: what every sidecar must hold, in the contract's forms.

Used by tests/test_export_contract.py (MLP, recurrent and goal-conditioned policies) and tests/test_genesis_eval.py
(a term-structured task), each beside a golden sidecar in tests/data/sidecars/.
"""

from __future__ import annotations

import json
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent / "data" / "sidecars"
#: Every key a sidecar has (file_sha256 only beside the file, never in it).
KEYS = {
    "task",
    "env",
    "exp_name",
    "framework",
    "checkpoint",
    "format",
    "obs_dim",
    "obs_shape",
    "obs_dtype",
    "obs_groups",
    "obs_terms_baked",
    "action_type",
    "action_dim",
    "action_shape",
    "action_dtype",
    "action_range",
    "normalization_baked",
    "normalization",
    "baked",
    "left_to_caller",
    "is_recurrent",
    "recurrent",
    "inputs",
    "outputs",
    "exporter",
    "opset",
    "parity",
    "exported_at",
    "torch_version",
    "zoo_version",
    "file_sha256",
}
#: What changes from one export of the same checkpoint to the next (or between machines).
VARYING = ("exported_at", "torch_version", "zoo_version", "file_sha256", "checkpoint")


def _number_or_null(value) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def problems(meta: dict) -> list[str]:
    """What in ``meta`` departs from the contract (empty: nothing)."""
    found = []
    if set(meta) != KEYS:
        found.append(f"keys: missing {sorted(KEYS - set(meta))}, extra {sorted(set(meta) - KEYS)}")
    groups, start = meta["obs_groups"], 0
    for name in sorted(groups, key=lambda n: groups[n]["start"]):
        group = groups[name]
        if group["start"] != start:
            found.append(f"obs_groups[{name}] starts at {group['start']}, not {start}")
        terms, at = group.get("terms") or [], 0
        for term in terms:
            if set(term) != {"name", "start", "dim", "scale", "clip"} or term["start"] != at:
                found.append(f"obs_groups[{name}] term {term}")
            at += term["dim"]
        if not terms or at != group["dim"]:
            found.append(f"obs_groups[{name}]: its terms cover {at} of {group['dim']} values")
        start += group["dim"]
    if start != meta["obs_dim"]:
        found.append(f"obs_groups cover {start} of obs_dim {meta['obs_dim']}")
    if meta.get("obs_terms_baked") is not True:
        found.append("obs_terms_baked is not true: the file does not apply its terms")
    action_range = meta["action_range"]
    if not (isinstance(action_range, list) and len(action_range) == 2):
        found.append(f"action_range {action_range} is not [low, high]")
    else:
        for end in action_range:
            ok = _number_or_null(end) or (
                isinstance(end, list) and len(end) == meta["action_dim"] and all(map(_number_or_null, end))
            )
            if not ok or (isinstance(end, list) and len(set(end)) == 1):
                found.append(f"action_range end {end}: a number when uniform, else one per dimension")
    recurrent = meta["recurrent"]
    if meta["is_recurrent"] != (recurrent is not None):
        found.append("is_recurrent and recurrent disagree")
    if recurrent is not None:
        names = {
            "lstm": (["obs", "h_in", "c_in"], ["actions", "h_out", "c_out"]),
            "gru": (["obs", "h_in"], ["actions", "h_out"]),
        }
        shape = [recurrent.get("rnn_num_layers"), "batch", recurrent.get("rnn_hidden_dim")]
        if (recurrent.get("inputs"), recurrent.get("outputs")) != names.get(recurrent.get("rnn_type")):
            found.append(f"recurrent ports {recurrent.get('inputs')} -> {recurrent.get('outputs')}")
        if recurrent.get("state_shapes") != {name: shape for name in recurrent["inputs"][1:]}:
            found.append(f"recurrent state_shapes {recurrent.get('state_shapes')}, not {shape} per state")
        if any(key in recurrent for key in ("num_layers", "hidden_dim")):
            found.append("recurrent has the pre-contract keys num_layers / hidden_dim")
    elif (meta["inputs"], meta["outputs"]) != (["obs"], ["actions"]):
        found.append(f"ports {meta['inputs']} -> {meta['outputs']}")
    if not {"max_abs_diff", "samples", "tolerance"} <= set(meta["parity"]):
        found.append(f"parity {sorted(meta['parity'])}")
    return found


def stable(meta: dict) -> dict:
    """``meta`` without what varies between exports of the same checkpoint (the parity's measured difference
    too: onnxruntime's kernels differ by machine)."""
    kept = {key: value for key, value in meta.items() if key not in VARYING}
    kept["parity"] = {key: value for key, value in meta["parity"].items() if key != "max_abs_diff"}
    return kept


def assert_golden(meta: dict, kind: str) -> None:
    """``meta`` follows the contract and equals the golden sidecar of its kind, key by key."""
    assert problems(meta) == []
    golden = json.loads((GOLDEN / f"{kind}.json").read_text())
    got = stable(meta)
    assert sorted(got) == sorted(golden), kind
    for key in golden:
        assert got[key] == golden[key], f"{kind}: {key}"
