"""zoo.safeyaml: the one YAML reader for files zoo did not write (registry, run configs, model cards)."""

from __future__ import annotations

import pytest
import yaml
from helpers import hang_guard

from zoo import safeyaml
from zoo.errors import ZooError


def billion_laughs(levels: int = 9) -> str:
    """Nine levels of nine aliases: 387 million strings once expanded, a few hundred bytes as text."""
    lines, prev = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'], "a"
    for name in "bcdefghijklmnop"[: levels - 1]:
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
        prev = name
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (billion_laughs(), "expands to more than"),
        ("a: &a " + "x" * 100_000 + "\nb: [" + ", ".join(["*a"] * 400) + "]", "characters of text"),
        ("a: &x [*x]", "recursive alias"),
        ("[" * 20_000 + "]" * 20_000, "nested too deeply"),
        ("a: !!python/object/apply:os.system [touch /tmp/x]", "could not determine a constructor"),
        ("a: [1, 2", "not valid YAML at line"),
    ],
)
def test_hostile_or_broken_yaml_is_refused_in_one_line(text, reason):
    with hang_guard(), pytest.raises(safeyaml.YamlProblem) as caught:  # expanded, the bombs would never end
        safeyaml.loads(text)
    assert reason in str(caught.value) and "\n" not in str(caught.value)


def test_shared_aliases_within_the_budget_still_load():
    assert safeyaml.loads(billion_laughs(levels=3))["c"][0][0] == ["lol"] * 9  # 9**3 items: fine


def test_config_tags_read_tuples_and_ordered_dicts_and_build_nothing_else():
    text = (
        "sizes: !!python/tuple [64, 64]\n"
        "hook: !!python/object/apply:os.system [touch /tmp/zoo-canary]\n"
        "local: !custom 3\n"
        "kwargs: !!python/object/apply:collections.OrderedDict\n- - - lr\n    - 0.001\n"
    )
    assert safeyaml.loads(text, tags="config") == {
        "sizes": [64, 64],
        "hook": None,
        "local": None,
        "kwargs": {"lr": 0.001},
    }


def test_read_bounds_the_file_and_names_it(tmp_path):
    big = tmp_path / "agent.yaml"
    big.write_text("a: 1\n" * 10)
    assert safeyaml.read(big) == {"a": 1}
    with pytest.raises(ZooError, match="agent.yaml: YAML file over 0 MiB"):
        safeyaml.read(big, max_bytes=16)
    (tmp_path / "bad.yaml").write_bytes(b"a: \xff\xfe\n")
    with pytest.raises(ZooError, match="bad.yaml: not UTF-8 text"):
        safeyaml.read(tmp_path / "bad.yaml")
    with pytest.raises(ZooError, match="cannot read"):
        safeyaml.read(tmp_path / "missing.yaml")


def test_a_yaml_bomb_as_registry_or_run_config_is_one_line(tmp_path):
    from helpers import zoo

    bomb = tmp_path / "registry.yaml"
    bomb.write_text(billion_laughs())
    result = zoo("--registry", bomb, "registry", "list")
    assert result.exit_code == 1 and result.stderr.count("error:") == 1
    assert "invalid registry" in result.stderr and "expands to more than" in result.stderr

    run = tmp_path / "logs" / "rsl_rl" / "go2" / "2026-01-01_00-00-00"
    (run / "params").mkdir(parents=True)
    (run / "model_100.pt").write_bytes(b"")
    (run / "params" / "agent.yaml").write_text(billion_laughs())
    checked = zoo("check", tmp_path / "logs", "--json")
    assert checked.exit_code == 1 and "Traceback" not in checked.stderr
    (report,) = checked.json()
    assert report["status"] == "error" and "agent.yaml: expands to more than" in report["reason"]


# ---------------------------------------------------------------------------------------------- Python tags
ZOO_CONFIG = (  # rl_zoo3's yaml.dump of an OrderedDict, with a hostile value planted in one pair
    "!!python/object/apply:collections.OrderedDict\n"
    "- - - n_envs\n    - 8\n"
    "  - - env_wrapper\n    - !!python/object/apply:os.system\n      - touch {canary}\n"
    "  - - policy_kwargs\n    - dict(net_arch=[64, 64])\n"
)
ISAAC_ENV = (  # what Isaac Lab's and mjlab's dumps hold: tuples, slice(None), functions by name
    "sim:\n  gravity: !!python/tuple\n  - 0.0\n  - 0.0\n  - -9.81\n"
    "scene:\n  joint_ids: !!python/object/apply:builtins.slice\n  - null\n  - null\n  - null\n"
    "events:\n  reset:\n    func: !!python/name:mjlab.envs.mdp.events.reset_joints_by_offset ''\n"
    "    params: {{hook: {hook}}}\n"
)


def test_python_tags_that_execute_are_named_by_key_and_inert_ones_are_not():
    tags = safeyaml.python_tags(ZOO_CONFIG.format(canary="/tmp/x"))
    assert [(t.key, t.tag, t.line, t.effect) for t in tags] == [
        ("env_wrapper", "!!python/object/apply:os.system", 5, "calls os.system")
    ]
    assert safeyaml.python_tags(ISAAC_ENV.format(hook="null")) == []
    hostile = ISAAC_ENV.format(hook="!!python/object/new:subprocess.Popen [[ls]]") + (
        "more: [1, !!python/name:os.system '', !!python/module:subprocess '', !!python/object:pathlib.Path {}]\n"
    )
    assert [(t.key, t.effect) for t in safeyaml.python_tags(hostile)] == [
        ("events.reset.params.hook", "builds a subprocess.Popen object (running its class's code)"),
        ("more[1]", "imports os.system"),
        ("more[2]", "imports subprocess"),
        ("more[3]", "builds a pathlib.Path object (running its class's code)"),
    ]


def test_stripping_removes_only_the_tagged_keys_and_the_unsafe_loader_then_runs_nothing(tmp_path):
    """rl_zoo3 reads its YAML with yaml.UnsafeLoader: the original runs the canary, the stripped copy loads
    to the same values without the tagged pair."""
    canary = tmp_path / "canary"
    text = ZOO_CONFIG.format(canary=canary)
    stripped = safeyaml.strip_python_tags(text)
    assert safeyaml.python_tags(stripped) == []
    assert yaml.load(stripped, Loader=yaml.UnsafeLoader) == {
        "n_envs": 8,
        "policy_kwargs": "dict(net_arch=[64, 64])",
    }
    assert stripped.startswith("!!python/object/apply:collections.OrderedDict")  # still rl_zoo3's form
    assert not canary.exists()
    yaml.load(text, Loader=yaml.UnsafeLoader)
    assert canary.exists()  # the finding is real

    isaac = ISAAC_ENV.format(hook="!!python/object/apply:os.system [touch /tmp/never]")
    isaac = isaac.replace(
        "mjlab.envs.mdp.events.reset_joints_by_offset", "math.sqrt"
    )  # mjlab is not installed
    kept = yaml.load(safeyaml.strip_python_tags(isaac), Loader=yaml.UnsafeLoader)
    assert kept["sim"]["gravity"] == (0.0, 0.0, -9.81) and kept["scene"]["joint_ids"] == slice(None)
    assert kept["events"]["reset"]["params"] == {}
    assert safeyaml.strip_python_tags("!!python/object/apply:os.system [touch /tmp/never]\n") == "{}\n"
