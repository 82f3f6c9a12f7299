"""``--env-module``: the package that registers an env id, given as gymnasium's ``module:EnvId`` syntax."""

from __future__ import annotations

import json

from helpers import EXAMPLES, zoo

from zoo.envs import EXTRA_MODULES

DQN = next(EXAMPLES.glob("CartPole-v1__dqn__*"))


def test_env_module_qualifies_the_env_id_wherever_it_is_recorded(tmp_path):
    out = tmp_path / "eval.json"
    result = zoo("eval", DQN, "--env-module", "gymnasium", "--episodes", "2", "--out", out)
    assert result.exit_code == 0, result.stderr
    assert json.loads(out.read_text())["task"] == "gymnasium:CartPole-v1"
    same = zoo(
        "eval", DQN, "--env-id", "gymnasium:CartPole-v1", "--episodes", "2", "--out", tmp_path / "same.json"
    )
    assert same.exit_code == 0
    assert (
        json.loads(out.read_text())["episodes"]
        == json.loads((tmp_path / "same.json").read_text())["episodes"]
    )


def test_env_module_errors_are_one_line():
    absent = zoo("eval", DQN, "--env-module", "myosuite_absent_pkg", "--episodes", "2")
    assert absent.exit_code == 1
    assert (
        absent.stderr.splitlines()[0]
        == "error: --env-module myosuite_absent_pkg: no such module is installed"
    )
    assert zoo("eval", DQN, "--env-module", "not-a-module").exit_code == 2
    clash = zoo("eval", DQN, "--env-id", "gymnasium:CartPole-v1", "--env-module", "ale_py", "--episodes", "2")
    assert clash.exit_code == 2 and "contradicts the env id" in clash.stderr


def test_doctor_probes_an_env_from_a_named_module(monkeypatch):
    result = zoo(
        "doctor",
        "--framework",
        "custom",
        "--probe-env",
        "--env-id",
        "CartPole-v1",
        "--env-module",
        "gymnasium",
        "--json",
    )
    assert result.exit_code == 0, result.stdout
    found = {c["name"]: c for c in result.json()["checks"]}
    assert found["module gymnasium"]["status"] == "ok"
    assert (
        found["spaces"]["message"] == "gymnasium:CartPole-v1: observation Box(4,) float32, action Discrete(2)"
    )
    monkeypatch.setitem(EXTRA_MODULES, "myosuite", ("myosuite_not_installed_here",))  # in any venv
    missing = zoo(
        "doctor", "--framework", "custom", "--probe-env", "--env-id", "myoElbowPose1D6MRandom-v0", "--json"
    )
    assert missing.exit_code == 1
    assert {c["name"]: c["status"] for c in missing.json()["checks"]}["extra myosuite"] == "fail"
