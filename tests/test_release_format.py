"""A release's config.json is someone else's file: read bounded and checked, and a hostile or broken one is one error
line, before anything runs. Each case mutates a real release (the bundled CleanRL DQN run's forms)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import EXAMPLES, zoo


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    from zoo import api
    from zoo.release.forms import forms_for_target

    folder = tmp_path_factory.mktemp("release") / "release"
    forms_for_target(api.resolve(next(EXAMPLES.glob("CartPole-v1__dqn__*"))), folder, exporter="legacy")
    return folder


@pytest.fixture
def copy(release, tmp_path) -> Path:
    shutil.copytree(release, tmp_path / "release")
    return tmp_path / "release"


def _config(folder: Path) -> dict:
    return json.loads((folder / "config.json").read_text())


def _write(folder: Path, config: dict) -> None:
    (folder / "config.json").write_text(json.dumps(config))


def _eval_error(folder: Path) -> str:
    result = zoo("eval", folder, "--deterministic", "-n", "1", "--out", folder / "e.json")
    assert (
        result.exit_code == 1 and "Traceback" not in result.stderr and "internal error" not in result.stderr
    )
    assert not (folder / "e.json").exists()
    return result.stderr.splitlines()[0]


def test_the_untouched_release_evaluates(copy):
    result = zoo("eval", copy, "--deterministic", "-n", "2", "-q", "--out", copy / "e.json")
    assert result.exit_code == 0, result.stderr
    assert json.loads((copy / "e.json").read_text())["checkpoint"].endswith("model.safetensors")


@pytest.mark.parametrize(
    "op", ["aten.empty.memory_format", "builtins.eval", "aten.linear.nonexistent", "os.system"]
)
def test_an_operator_off_the_allowlist_is_refused(copy, op):
    config = _config(copy)
    config["graph"]["nodes"][0]["op"] = op
    _write(copy, config)
    assert "config.json: op" in _eval_error(copy)


def test_a_size_no_policy_needs_is_refused_before_anything_is_allocated(copy):
    """A one_hot of 2**36 classes would ask for 512 GiB: the graph runs on the meta device first."""
    config = _config(copy)
    nodes = config["graph"]["nodes"]
    first = nodes[0]["name"]
    nodes.insert(
        1, {"name": "huge", "op": "aten.one_hot.default", "args": [{"node": "obs"}, 1 << 36], "kwargs": {}}
    )
    nodes[1]["args"][0] = {"node": "argmax_obs"}
    nodes.insert(
        1, {"name": "argmax_obs", "op": "aten.argmax.default", "args": [{"node": "obs"}, 1], "kwargs": {}}
    )
    assert nodes[0]["name"] == first
    _write(copy, config)
    line = _eval_error(copy)
    assert "'huge'" in line and "over" in line


def test_a_reshape_to_a_huge_literal_size_is_refused_by_the_checker(copy):
    config = _config(copy)
    config["graph"]["nodes"].append(
        {
            "name": "big",
            "op": "aten.expand.default",
            "args": [{"node": "obs"}, [1 << 20, 1 << 20]],
            "kwargs": {},
        }
    )
    _write(copy, config)
    assert "sizes over zoo's bounds" in _eval_error(copy)


def test_a_reference_to_nothing_is_refused(copy):
    config = _config(copy)
    config["graph"]["nodes"][0]["args"][1] = {"tensor": "not.in.the.weights"}
    _write(copy, config)
    assert "names nothing defined before it" in _eval_error(copy)


def test_weights_of_another_release_are_refused(copy):
    (copy / "model.safetensors").write_bytes((copy / "model.safetensors").read_bytes()[:-4] + b"\0\0\0\0")
    assert "does not match" in _eval_error(copy)


def test_a_newer_format_version_says_to_upgrade(copy):
    config = _config(copy)
    config["format_version"] = 99
    _write(copy, config)
    assert "this zoo reads up to 1" in _eval_error(copy)


def test_too_many_nodes_are_refused_before_they_are_checked(copy):
    from zoo.release.graph import MAX_NODES

    config = _config(copy)
    node = {"name": "n", "op": "aten.relu.default", "args": [{"node": "obs"}], "kwargs": {}}
    config["graph"]["nodes"] += [dict(node, name=f"n{i}") for i in range(MAX_NODES + 1)]
    _write(copy, config)
    assert f"over {MAX_NODES}" in _eval_error(copy)


def test_an_oversized_config_is_not_parsed(copy):
    from zoo.release.config import MAX_CONFIG_BYTES

    config = _config(copy)
    config["padding"] = "x" * MAX_CONFIG_BYTES
    _write(copy, config)
    assert f"config.json is over {MAX_CONFIG_BYTES >> 20} MiB; not reading it" in _eval_error(copy)
