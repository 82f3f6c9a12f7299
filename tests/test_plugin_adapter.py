"""The acid test of the adapter contract: a framework zoo does not ship, plugged in from outside.

``examples/zoo-adapter-example`` is installed for real (pip, into a private folder: the shared venv is not
touched) and declares its adapter in the ``zoo.adapters`` entry-point group; its own trainer writes a run,
and ``zoo check``, ``eval``, ``export`` and ``doctor`` work on it in fresh processes with no file of zoo
naming it. Plug-ins that clash with a built-in name or fail to import are refused in one line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

EXAMPLE = REPO / "examples" / "zoo-adapter-example"


def _install(source: Path, target: Path) -> Path:
    """``pip install`` ``source`` (copied first: a build writes build/ and *.egg-info beside its sources) into
    ``target``, offline and with the venv's own setuptools."""
    copy = target.parent / f"{source.name}-src"
    shutil.copytree(source, copy)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index"]
        + ["--target", str(target), str(copy)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return target


def _zoo(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """The ``zoo`` command in a fresh process that sees the plug-in: its folder first on the path, then zoo."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]),
        "ZOO_CACHE_DIR": str(cwd / "cache"),
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }
    return subprocess.run(
        [sys.executable, "-m", "zoo", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> Path:
    """The example package, installed once for this module's tests: the folder to put on the path."""
    return _install(EXAMPLE, tmp_path_factory.mktemp("plugin") / "site")


@pytest.fixture(scope="module")
def tinyrl_run(plugin, tmp_path_factory) -> Path:
    """A CartPole-v1 run trained by the plug-in's own trainer (30 REINFORCE episodes): ``runs/<name>``."""
    work = tmp_path_factory.mktemp("tinyrl")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), str(REPO)])}
    done = subprocess.run(
        [sys.executable, "-m", "zoo_adapter_example.train", "--episodes", "30", "--out", "runs"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return work / done.stdout.strip()


def test_no_file_of_zoo_names_the_plugin():
    """The plug-in works without zoo knowing it: its name is nowhere in zoo's package or registry."""
    for path in [*(REPO / "zoo").rglob("*.py"), REPO / "registry.yaml"]:
        assert "tinyrl" not in path.read_text(), path


def test_check_says_ok_on_a_plugin_run(plugin, tinyrl_run):
    result = _zoo(plugin, tinyrl_run.parent.parent, "check", "runs", "--json")
    assert result.returncode == 0, result.stderr
    (report,) = json.loads(result.stdout)
    assert report["status"] == "ok" and report["reason"] == "ready to evaluate"
    assert report["run"]["framework"] == "tinyrl" and report["run"]["exp_name"] == "tinyrl_reinforce"
    assert report["details"]["layers"] == ["4x32", "32x2"] and report["details"]["weights_only"] is True


def test_eval_of_a_plugin_run_writes_its_episodes(plugin, tinyrl_run):
    result = _zoo(plugin, tinyrl_run.parent.parent, "eval", str(tinyrl_run), "--episodes", "4")
    assert result.returncode == 0, result.stderr
    data = json.loads((tinyrl_run / "eval.json").read_text())
    assert data["framework"] == "tinyrl" and data["task"] == "CartPole-v1" and data["num_episodes"] == 4
    assert len(data["episodes"]) == 4 and all(e["length"] >= 1 for e in data["episodes"])
    assert data["metrics"]["return_mean"] == pytest.approx(sum(e["return"] for e in data["episodes"]) / 4)


def test_export_of_a_plugin_run_acts_as_the_policy(plugin, tinyrl_run, tmp_path):
    out = tmp_path / "tinyrl.onnx"
    result = _zoo(plugin, tinyrl_run.parent.parent, "export", str(tinyrl_run), "--out", str(out))
    assert result.returncode == 0, result.stderr
    sidecar = json.loads(Path(f"{out}.metadata.json").read_text())
    assert out.stat().st_size > 0 and sidecar["framework"] == "tinyrl"
    assert sidecar["parity"]["exact"] is True and sidecar["parity"]["samples"] > 1
    assert sidecar["action_type"] == "discrete" and sidecar["num_actions"] == 2


def test_doctor_takes_the_plugin_framework_with_its_training_command(plugin, tinyrl_run, tmp_path):
    work = tinyrl_run.parent.parent
    listed = _zoo(plugin, work, "doctor", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["environment"]["frameworks"]["tinyrl"] == {
        "zoo-adapter-example": "0.1.0"
    }
    config = tmp_path / "exp.yaml"
    config.write_text(
        "framework: tinyrl\nalgorithm: reinforce\nenv_id: CartPole-v1\nseed: 1\ntotal_timesteps: 30\n"
        "num_envs: 1\nwall_time_minutes: 5\noutput_dir: runs\n"
    )
    result = _zoo(
        plugin,
        work,
        "doctor",
        "--framework",
        "tinyrl",
        "--policy",
        str(tinyrl_run),
        "--probe-env",
        "--config",
        str(config),
        "--handoff",
        str(tmp_path / "plan"),
        "--json",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert all(c["status"] == "ok" for c in json.loads(result.stdout)["checks"])
    plan = json.loads((tmp_path / "plan" / "handoff.json").read_text())
    assert (
        "python -m zoo_adapter_example.train --env-id CartPole-v1 --seed 1 --episodes 30 --out runs"
        in (plan["training"]["command"])
    )


def test_version_and_registry_list_show_the_plugin(plugin, tmp_path):
    version = _zoo(plugin, tmp_path, "--version")
    assert "zoo-adapter-example 0.1.0" in version.stdout.splitlines()
    listed = _zoo(plugin, tmp_path, "registry", "list")
    assert listed.returncode == 0 and "tinyrl_reinforce" in listed.stdout


# ----------------------------------------------------------------------------- plug-ins zoo refuses
def _package(root: Path, name: str, entry_point: str, module: str) -> Path:
    """A one-module distribution ``name`` declaring ``entry_point`` in zoo's group."""
    (root / name).mkdir(parents=True)
    (root / name / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "{name}"\nversion = "1.0"\n'
        f'[project.entry-points."zoo.adapters"]\n{entry_point}\n'
        f'[tool.setuptools]\npy-modules = ["{name.replace("-", "_")}"]\n'
    )
    (root / name / f"{name.replace('-', '_')}.py").write_text(module)
    return root / name


@pytest.mark.parametrize(
    ("entry_point", "module", "said"),
    [
        (
            'sb3 = "zoo_plugin_bad:ADAPTER"',
            "ADAPTER = None\n",
            "error: adapter plug-in 'sb3' of zoo-plugin-bad has the name of zoo's built-in sb3 adapter",
        ),
        (
            'lab = "zoo_plugin_bad:ADAPTER"',
            "import lab_training_code_not_installed\n",
            "error: adapter plug-in 'lab' of zoo-plugin-bad failed to load (zoo_plugin_bad:ADAPTER): "
            "ModuleNotFoundError: No module named 'lab_training_code_not_installed'",
        ),
    ],
)
def test_a_clashing_or_broken_plugin_is_one_line_naming_its_distribution(tmp_path, entry_point, module, said):
    site = _install(_package(tmp_path / "src", "zoo-plugin-bad", entry_point, module), tmp_path / "site")
    result = _zoo(site, tmp_path, "check", str(REPO / "examples" / "runs"))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert said in result.stderr.splitlines()
