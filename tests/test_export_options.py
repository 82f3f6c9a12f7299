"""``zoo export --opset`` and ``--out``'s suffix: the file is what was asked for, or nothing is written.

The file's opset is read back from the file with ``onnx.load``; the ranges are those measured for
torch 2.13 (docs/export.md, "Opsets"): legacy 7 to 23, dynamo 13 to 28 as the graph allows.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import EXAMPLES, zoo

DQN = EXAMPLES / "CartPole-v1__dqn__1__1796029650"
FACTS = {
    "task": "Pendulum-v1",
    "env": {"id": "Pendulum-v1", "preset": "classic"},
    "exp_name": "rsl_ppo",
    "framework": "rsl_rl",
    "checkpoint": "untrained",
}


def _file_opset(path: Path) -> int:
    import onnx

    model = onnx.load(str(path))
    return next(int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx"))


def _one_error_line(result) -> str:
    assert result.stderr.count("error:") == 1 and "Traceback" not in result.stderr, result.stderr
    return " ".join(result.stderr.split())


def _rsl_rl_mlp():
    """An rsl_rl MLP actor with its normalizer (ELU, Sub, Div): dynamo's own conversion to 14 fails on it."""
    import gymnasium as gym
    import torch

    from zoo.frameworks.rsl_rl.checkpoint import Architecture, build_model
    from zoo.frameworks.rsl_rl.policy import RslRlPolicy

    torch.manual_seed(0)
    arch = Architecture(
        obs_dim=3,
        action_dim=1,
        hidden_dims=(16, 16),
        activation="elu",
        obs_normalization=True,
        distribution=None,
    )
    policy = RslRlPolicy(
        build_model(arch),
        gym.spaces.Box(-3.0, 3.0, (3,), np.float32),
        gym.spaces.Box(-1, 1, (1,)),
        clip_actions=None,
        device="cpu",
        seed=0,
    )
    with torch.no_grad():
        policy.model.obs_normalizer._mean.normal_()
    return policy


# ----------------------------------------------------------------------------- --out's suffix
@pytest.mark.parametrize(
    "fmt, name, named",
    [
        ("torchscript", "x.onnx", "onnx"),
        ("onnx", "x.ts", "torchscript"),
        ("onnx", "x.PT", "torchscript"),
        ("onnx", "x.jit", "torchscript"),
    ],
)
def test_out_suffix_naming_the_other_format_is_refused_before_the_checkpoint_is_loaded(
    fmt, name, named, tmp_path
):
    run = tmp_path / "runs" / DQN.name
    shutil.copytree(DQN, run)
    (run / "dqn.cleanrl_model").write_bytes(b"not a torch file")  # loading it would fail with exit 1
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    result = zoo("export", run, "--format", fmt, "--out", tmp_path / "out" / name)
    assert result.exit_code == 2, result.stderr
    line = _one_error_line(result)
    assert f"--out {name}: {Path(name).suffix} is the suffix of {named} files, but --format is {fmt}" in line
    assert "not a torch file" not in line
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # not even out/


def test_out_suffix_that_agrees_or_names_no_format_still_exports(tmp_path):
    import torch

    upper = zoo("export", DQN, "--out", tmp_path / "policy.TS", "-q")  # the suffix picks the format, any case
    assert upper.exit_code == 0, upper.stderr
    assert json.loads((tmp_path / "policy.TS.metadata.json").read_text())["format"] == "torchscript"
    other = zoo("export", DQN, "--format", "torchscript", "--out", tmp_path / "policy.bin", "-q")
    assert other.exit_code == 0, other.stderr
    torch.jit.load(str(tmp_path / "policy.bin"))  # a TorchScript file, as --format said
    same = zoo("export", DQN, "--format", "onnx", "--out", tmp_path / "policy.onnx", "-q")
    assert same.exit_code == 0 and _file_opset(tmp_path / "policy.onnx") == 17


# ----------------------------------------------------------------------------- --opset
@pytest.mark.parametrize(
    "args, message",
    [
        (("--opset", "99"), "--opset 99: zoo writes ONNX opsets 7 to 28"),
        (("--opset", "29"), "--opset 29: zoo writes ONNX opsets 7 to 28"),
        (("--opset", "24", "--exporter", "legacy"), "--exporter legacy writes ONNX opsets 7 to 23, not 24"),
        (("--opset", "12", "--exporter", "dynamo"), "--exporter dynamo writes ONNX opsets 13 to 28, not 12"),
    ],
)
def test_opset_no_exporter_can_write_is_one_usage_line_and_nothing_is_written(args, message, tmp_path):
    result = zoo("export", DQN, "--out", tmp_path / "out" / "p.onnx", *args)
    assert result.exit_code == 2, result.stderr
    line = _one_error_line(result)
    assert message in line and "dynamo 13 to 28, legacy 7 to 23" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("opset", [0, 6])
def test_opset_below_7_is_refused_by_the_library_too(opset, tmp_path):
    from zoo.errors import EXIT_USAGE, ZooError
    from zoo.exporter import export_policy

    with pytest.raises(ZooError, match=f"--opset {opset}: zoo writes ONNX opsets 7 to 28") as caught:
        export_policy(
            _rsl_rl_mlp(), target=FACTS, preset_notes=[], fmt="onnx", out=tmp_path / "p.onnx", opset=opset
        )
    assert caught.value.exit_code == EXIT_USAGE
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "opset, exporter, used, passed_over",
    [
        (7, "auto", "legacy", {"dynamo": "writes opsets 13 to 28, not 7"}),
        (11, "legacy", "legacy", {}),
        (
            13,
            "auto",
            "legacy",
            {"dynamo": "No Adapter From Version $14 for Relu"},
        ),  # dynamo tried, and says why
        (15, "dynamo", "dynamo", {}),
        (23, "auto", "dynamo", {}),
        (25, "auto", "dynamo", {}),  # legacy cannot, but it was never needed: not passed over
        (28, "auto", "dynamo", {}),
    ],
)
def test_requested_opset_is_the_files_and_the_sidecars(opset, exporter, used, passed_over, tmp_path):
    import onnx
    import onnxruntime as ort

    out = tmp_path / "p.onnx"
    result = zoo("export", DQN, "--out", out, "--opset", str(opset), "--exporter", exporter, "--json")
    assert result.exit_code == 0, result.stderr
    meta = result.json()
    assert _file_opset(out) == opset
    assert meta["opset"] == opset and json.loads((tmp_path / "p.onnx.metadata.json").read_text()) == meta
    props = {p.key: json.loads(p.value) for p in onnx.load(str(out)).metadata_props}
    assert props["opset"] == opset
    assert meta["exporter"]["name"] == used and meta["exporter"]["requested"] == exporter
    assert set(meta["exporter"]["passed_over"]) == set(passed_over)
    for name, why in passed_over.items():
        assert why in meta["exporter"]["passed_over"][name]
        assert f"{name} exporter passed over" in " ".join(result.stderr.split())
    assert f"opset {opset}, {used} exporter" in result.stderr
    assert meta["parity"]["samples"] == 257 and meta["parity"]["exact"] is True  # checked on this file
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert session.run(None, {"obs": np.zeros((3, 4), np.float32)})[0].shape == (3,)


def test_dynamo_asked_for_an_opset_this_graph_cannot_reach_fails_in_one_line(tmp_path):
    result = zoo("export", DQN, "--out", tmp_path / "out" / "p.onnx", "--opset", "13", "--exporter", "dynamo")
    assert result.exit_code == 1, result.stderr
    line = _one_error_line(result)
    assert (
        "dynamo: export failed: OpsetError: onnx's converter cannot take the graph from opset 18 to 13"
        in line
    )
    assert "for Relu" in line and "choose another --opset or --exporter" in line and "bug" not in line
    assert list(tmp_path.iterdir()) == []


def test_zoo_converts_where_dynamo_gave_up_and_parity_checks_the_converted_file(tmp_path, monkeypatch):
    """torch's own conversion of this graph to 14 fails (it keeps 18); zoo's, after torch's optimizer, works."""
    from onnx import numpy_helper, version_converter

    from zoo.errors import ZooError
    from zoo.exporter import export_policy

    policy = _rsl_rl_mlp()
    result = export_policy(
        policy,
        target=FACTS,
        preset_notes=[],
        fmt="onnx",
        out=tmp_path / "p.onnx",
        opset=14,
        exporter="dynamo",
    )
    assert _file_opset(tmp_path / "p.onnx") == 14 and result.meta["opset"] == 14
    assert result.meta["exporter"]["name"] == "dynamo" and result.meta["parity"]["max_abs_diff"] <= 1e-5

    real = version_converter.convert_version

    def off(model, target_version):  # the converted graph acts differently: parity must see it
        converted = real(model, target_version)
        first = converted.graph.initializer[0]
        first.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(first) * 1.5, first.name))
        return converted

    monkeypatch.setattr(version_converter, "convert_version", off)
    out = tmp_path / "off" / "p.onnx"
    with pytest.raises(ZooError, match="dynamo: parity check failed: max \\|diff\\|"):
        export_policy(policy, target=FACTS, preset_notes=[], fmt="onnx", out=out, opset=14, exporter="dynamo")
    assert not out.parent.exists()
