"""The registry: bundled entries, validation of user files, suggestions for typos."""

from __future__ import annotations

import pytest
from helpers import zoo

from zoo.errors import ZooError
from zoo.frameworks.cleanrl.checkpoint import model_class
from zoo.registry import load_registry

CLEANRL_TORCH_EXPERIMENTS = {
    "dqn",
    "dqn_atari",
    "c51",
    "c51_atari",
    "ppo_continuous_action",
    "ddpg_continuous_action",
    "td3_continuous_action",
    "qdagger_dqn_atari_impalacnn",
}


def test_bundled_registry_has_every_cleanrl_torch_experiment():
    reg = load_registry()
    assert set(reg.names()) >= CLEANRL_TORCH_EXPERIMENTS
    for name in CLEANRL_TORCH_EXPERIMENTS:
        entry = reg.get(name)
        assert entry.framework == "cleanrl"
        assert entry.model_filename() == f"{name}.cleanrl_model"
        assert (
            entry.hub_repo(hf_entity="cleanrl", env_id="CartPole-v1", seed=1)
            == f"cleanrl/CartPole-v1-{name}-seed1"
        )
        for part in entry.parts:
            assert isinstance(model_class(entry, part), type)


def test_layouts_match_what_the_training_scripts_write():
    reg = load_registry()
    assert reg.get("dqn").layout["kind"] == "state_dict"
    c51 = reg.get("c51").layout
    assert (c51["kind"], c51["weights_key"], c51["args_key"]) == ("dict", "model_weights", "args")
    assert c51["model_kwargs"] == ["n_atoms", "v_min", "v_max"]
    assert reg.get("ddpg_continuous_action").layout["parts"] == ["actor", "qf1"]
    assert reg.get("td3_continuous_action").layout["parts"] == ["actor", "qf1", "qf2"]


def test_eval_defaults_reproduce_published_cards():
    reg = load_registry()
    assert reg.get("dqn").eval == {"episodes": 10, "deterministic": False, "epsilon": 0.05}
    assert reg.get("c51").eval["epsilon"] == 0.05
    assert reg.get("ppo_continuous_action").eval["deterministic"] is False
    assert reg.get("td3_continuous_action").eval["exploration_noise"] == 0.1
    assert reg.get("dqn_atari").extras == ["atari"]


def test_unknown_name_suggests_the_closest(tmp_path):
    with pytest.raises(ZooError) as info:
        load_registry().get("dqnn")
    assert "dqn" in info.value.hint
    result = zoo("registry", "show", "dqnn")
    assert result.exit_code == 1
    assert "unknown experiment 'dqnn'" in result.stderr and "did you mean dqn" in result.stderr


def test_registry_list_and_show():
    listed = zoo("registry", "list", "--json")
    assert listed.exit_code == 0 and set(listed.json()) >= CLEANRL_TORCH_EXPERIMENTS
    shown = zoo("registry", "show", "c51", "--json")
    assert shown.json()["layout"]["weights_key"] == "model_weights"
    human = zoo("registry", "show", "td3_continuous_action")
    assert "exploration_noise: 0.1" in human.stdout


def test_user_registry_is_merged_over_the_bundled_one(tmp_path):
    user = tmp_path / "reg.yaml"
    user.write_text(
        "my_dqn:\n  framework: cleanrl\n  algorithm: DQN\n  format: torch-state-dict\n"
        "  filename: '{exp_name}.cleanrl_model'\n  layout: {kind: state_dict, parts: [q_network]}\n"
        "  model: {q_network: 'zoo.frameworks.cleanrl.models:QNetwork'}\n"
        "  policy: {part: q_network, head: q_values}\n  env: {wrappers: classic}\n"
        "  eval: {episodes: 3, deterministic: true}\n"
    )
    reg = load_registry(user)
    assert reg.get("my_dqn").eval["episodes"] == 3 and "dqn" in reg.names()
    via_env = zoo("registry", "show", "my_dqn", "--json", env={"ZOO_REGISTRY": str(user)})
    assert via_env.exit_code == 0 and via_env.json()["name"] == "my_dqn"


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ("dqn:\n  framework: cleanrl\n", "entry 'dqn', field 'format'"),
        ("x:\n  framework: jax_magic\n", "entry 'x', field 'framework'"),
        ("dqn:\n  framework: cleanrl\n  formatt: torch-state-dict\n", "entry 'dqn', field 'formatt'"),
        ("- just\n- a list\n", "top level must be a mapping"),
        ("dqn: {framework: [unclosed\n", "not valid YAML at line"),
    ],
)
def test_invalid_user_registry_gets_one_line_naming_entry_and_field(tmp_path, body, names):
    user = tmp_path / "bad.yaml"
    user.write_text(body)
    for result in (
        zoo("--registry", user, "registry", "list"),
        zoo("registry", "list", env={"ZOO_REGISTRY": str(user)}),
    ):
        assert result.exit_code == 1
        assert names in result.stderr
        assert "Traceback" not in result.stderr
        assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1


def test_bad_eval_field_type_is_named(tmp_path):
    user = tmp_path / "bad.yaml"
    text = (load_registry().sources[0].read_text().split("\ndqn_atari:")[0]).replace(
        "epsilon: 0.05", "epsilon: lots"
    )
    user.write_text(text)
    result = zoo("--registry", user, "registry", "list")
    assert result.exit_code == 1 and "entry 'dqn', field 'eval.epsilon'" in result.stderr


@pytest.mark.parametrize("args", [["--help"], ["hub", "--help"], ["registry", "--help"], ["eval", "--help"]])
def test_help_of_every_group_exits_0(args):
    result = zoo(*args)
    assert result.exit_code == 0 and "Usage:" in result.stdout and "error" not in result.stderr


def test_usage_error_exits_2():
    result = zoo("eval")
    assert result.exit_code == 2 and "Missing argument" in result.stderr
