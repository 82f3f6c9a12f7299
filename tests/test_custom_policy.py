"""Custom policies: ``--policy-class module:Class`` and trusted pickled objects (MJRL style), evaluated like
any policy, their actions checked before the first env step, every failure one line.

The classes are in tests/custom_policies.py; the reference rollouts are written here, on gymnasium's
own SyncVectorEnv, without zoo.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import custom_policies
import gymnasium as gym
import numpy as np
import pytest
from custom_policies import CanaryPolicy, MJRLStylePolicy
from helpers import write_malicious, zoo

CLASSES = ["EnvGetAction", "EnvPredict", "EnvAct", "SpacesGetAction", "SpacesPredict", "SpacesAct"]
EPISODES, NUM_ENVS, SEED = 4, 2, 3


def _construct(name: str, env_id: str, seed: int):
    cls = getattr(custom_policies, name)
    if name.startswith("Env"):
        env = gym.make(env_id)
        try:
            return cls(env, seed)
        finally:
            env.close()
    env = gym.make(env_id)
    try:
        return cls(env.observation_space, env.action_space)
    finally:
        env.close()


def _act(policy, obs: np.ndarray) -> np.ndarray:
    """The policy's actions for a batch, called as docs/frameworks/custom.md says zoo calls them (deterministic)."""
    if hasattr(policy, "get_action"):
        return np.stack([np.asarray(policy.get_action(o)[1]["evaluation"]) for o in obs])
    if hasattr(policy, "predict"):
        return np.asarray(policy.predict(obs, deterministic=True)[0])
    return np.asarray(policy.act(obs))


def _reference_returns(policy, env_id: str, episodes: int, num_envs: int, seed: int) -> list[float]:
    """Episode returns of a hand-written rollout: env i seeded seed + i, its first quota of episodes kept,
    in env order (what zoo's per-env quotas count)."""
    envs = gym.vector.SyncVectorEnv([lambda: gym.make(env_id) for _ in range(num_envs)])
    quotas = [episodes // num_envs + (i < episodes % num_envs) for i in range(num_envs)]
    finished: list[list[float]] = [[] for _ in range(num_envs)]
    running = np.zeros(num_envs)
    autoreset = np.zeros(num_envs, dtype=bool)
    obs, _ = envs.reset(seed=seed)
    try:
        while any(len(finished[i]) < quotas[i] for i in range(num_envs)):
            obs, reward, terminated, truncated, _ = envs.step(_act(policy, obs))
            for i in range(num_envs):
                if autoreset[i]:  # this step was the reset (gymnasium's next-step autoreset)
                    continue
                running[i] += reward[i]
                if terminated[i] or truncated[i]:
                    finished[i].append(float(running[i]))
                    running[i] = 0.0
            autoreset = terminated | truncated
    finally:
        envs.close()
    return [r for i in range(num_envs) for r in finished[i][: quotas[i]]]


def _eval_json(path: Path) -> dict:
    return json.loads(path.read_text())


def _one_error(stderr: str) -> str:
    """The error line, after checking that stderr holds nothing but notes, one error and its hint."""
    lines = [line for line in stderr.splitlines() if not line.startswith("note:")]
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert (
        lines[0].startswith("error: ")
        and len(lines) <= 2
        and all(line.startswith("hint: ") for line in lines[1:])
    ), stderr
    return lines[0]


@pytest.fixture
def steps(monkeypatch) -> list[int]:
    """Counts the vector env steps of every evaluation in this test (zoo steps a SyncVectorEnv)."""
    calls: list[int] = []
    original = gym.vector.SyncVectorEnv.step

    def counted(self, actions):
        calls.append(1)
        return original(self, actions)

    monkeypatch.setattr(gym.vector.SyncVectorEnv, "step", counted)
    return calls


# ----------------------------------------------------------------------------- classes, evaluated
@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
@pytest.mark.parametrize("name", CLASSES)
def test_each_constructor_and_action_method_scores_what_a_hand_written_rollout_scores(name, env_id, tmp_path):
    out = tmp_path / "eval.json"
    result = zoo(
        "eval",
        "--policy-class",
        f"custom_policies:{name}",
        "--env-id",
        env_id,
        "-n",
        EPISODES,
        "--num-envs",
        NUM_ENVS,
        "--seed",
        SEED,
        "--out",
        out,
        "-q",
    )
    assert result.exit_code == 0, result.stderr
    assert f"note: running your code: --policy-class custom_policies:{name} acts" in result.stderr  # with -q
    data = _eval_json(out)
    expected = _reference_returns(_construct(name, env_id, SEED), env_id, EPISODES, NUM_ENVS, SEED)
    assert [e["return"] for e in data["episodes"]] == expected
    assert data["settings"] == {"policy_class": f"custom_policies:{name}"}
    assert (data["checkpoint"], data["exp_name"], data["framework"]) == (
        f"custom_policies:{name}",
        "custom",
        "custom",
    )
    assert data["deterministic"] is True


def test_mjrl_get_action_samples_item_0_and_the_same_seed_repeats_it(tmp_path):
    """--stochastic takes get_action's item 0 (MJRL's sampled action): zoo seeds np.random with --seed."""
    common = (
        "--policy-class",
        "custom_policies:SpacesGetAction",
        "--env-id",
        "Pendulum-v1",
        "-n",
        "2",
        "--num-envs",
        "2",
        "-q",
        "--json",
        "--out",
        tmp_path / "e.json",
    )
    first, again = zoo("eval", *common, "--stochastic"), zoo("eval", *common, "--stochastic")
    other_seed, greedy = zoo("eval", *common, "--stochastic", "--seed", "1"), zoo("eval", *common)
    returns = [[e["return"] for e in r.json()["episodes"]] for r in (first, again, other_seed, greedy)]
    assert returns[0] == returns[1]
    assert returns[0] != returns[2] and returns[0] != returns[3]


def test_the_python_api_loads_and_evaluates_a_class_with_no_file(tmp_path, monkeypatch):
    import zoo as api

    policy = api.load_policy(policy_class="custom_policies:EnvPredict", env_id="CartPole-v1", seed=5)
    assert (policy.obj.seed, policy.obj.env_type) == (
        5,
        "RecordEpisodeStatistics",
    )  # one env, the eval's stack
    actions, state = policy.act(np.zeros((3, 4), dtype=np.float32))
    assert actions.shape == (3,) and state is None
    monkeypatch.chdir(tmp_path)
    result = api.evaluate(
        settings=api.EvalSettings(episodes=2, num_envs=2),
        load=api.LoadOptions(policy_class="custom_policies:SpacesAct"),
        env_id="Pendulum-v1",
    )
    assert (
        result.checkpoint == "custom_policies:SpacesAct"
        and result.settings["policy_class"] == result.checkpoint
    )
    assert (
        _eval_json(tmp_path / "eval.json")["num_episodes"] == 2
    )  # no run dir: eval.json in the current folder


def test_a_target_file_is_read_by_the_class_load_method(tmp_path):
    weights = tmp_path / "gain.json"
    weights.write_text(json.dumps({"gain": 0.0}))  # a gain of 0: the pendulum is never pushed
    common = (
        "--policy-class",
        "custom_policies:WithLoad",
        "--env-id",
        "Pendulum-v1",
        "-n",
        "2",
        "--num-envs",
        "2",
        "-q",
        "--json",
    )
    loaded = zoo("eval", weights, "--exp-name", "custom", *common, "--out", tmp_path / "loaded.json")
    assert loaded.exit_code == 0, loaded.stderr
    data = loaded.json()
    assert (
        data["checkpoint"] == str(weights) and data["settings"]["policy_class"] == "custom_policies:WithLoad"
    )
    plain = zoo("eval", *common, "--out", tmp_path / "plain.json").json()  # gain 1.0: the class's own
    assert [e["return"] for e in data["episodes"]] != [e["return"] for e in plain["episodes"]]
    no_load = zoo(
        "eval",
        weights,
        "--exp-name",
        "custom",
        "--policy-class",
        "custom_policies:SpacesAct",
        "--env-id",
        "Pendulum-v1",
        "-q",
    )
    assert no_load.exit_code == 1 and "SpacesAct has no load(path) method" in _one_error(no_load.stderr)


# ----------------------------------------------------------------------------- actions checked before a step
@pytest.mark.parametrize(
    ("name", "env_id", "found"),
    [
        ("WrongShape", "Pendulum-v1", "shape (2, 2), expected (2, 1)"),
        ("OutOfBounds", "Pendulum-v1", "2 values outside the bounds, the first 5 (env 0) not in [-2, 2]"),
        ("NotFinite", "Pendulum-v1", "not finite"),
        ("FloatDiscrete", "CartPole-v1", "dtype float64, expected integers"),
        ("BareGetAction", "Pendulum-v1", "get_action returned a ndarray: expected a tuple"),
    ],
)
def test_actions_that_do_not_fit_the_space_are_refused_before_the_first_step(
    name, env_id, found, steps, tmp_path
):
    result = zoo(
        "eval",
        "--policy-class",
        f"custom_policies:{name}",
        "--env-id",
        env_id,
        "-n",
        "2",
        "--num-envs",
        "2",
        "--out",
        tmp_path / "eval.json",
        "-q",
    )
    assert result.exit_code == 1
    error = _one_error(result.stderr)
    assert name in error and found in error, error
    assert steps == [] and not (tmp_path / "eval.json").exists()


def test_every_batch_is_checked_not_only_the_first(steps, tmp_path):
    custom_policies.LateOutOfBounds.calls = 0
    result = zoo(
        "eval",
        "--policy-class",
        "custom_policies:LateOutOfBounds",
        "--env-id",
        "Pendulum-v1",
        "-n",
        "2",
        "--num-envs",
        "2",
        "-q",
    )
    assert result.exit_code == 1
    assert "LateOutOfBounds.act's actions in batch 3 do not fit" in _one_error(result.stderr)
    assert len(steps) == 2  # the two batches that fit were stepped, the third never reached env.step


# ----------------------------------------------------------------------------- one line per mistake
@pytest.mark.parametrize(
    ("ref", "code", "said"),
    [
        ("no_colon", 2, "--policy-class 'no_colon': expected module:Class"),
        ("custom_policies:", 2, "expected module:Class"),
        ("custom_policies:1bad", 2, "expected module:Class"),
        ("no_such_module_zoo:Policy", 2, "cannot import 'no_such_module_zoo'"),
        ("custom_policies:Missing", 2, "'custom_policies' has no 'Missing'"),
        ("custom_policies:control", 2, "control is a function, not a class"),
        (
            "custom_policies:OtherNames",
            1,
            "OtherNames(obs_space, act_space) takes neither (env, seed) nor "
            "(observation_space, action_space)",
        ),
        (
            "custom_policies:ThreeArgs",
            1,
            "ThreeArgs(env, seed, config): zoo passes only the first two, and config has no default",
        ),
        ("custom_policies:NoActionMethod", 1, "NoActionMethod has none of get_action(obs), predict"),
        ("custom_policies:RaisesInInit", 1, "your policy class raised: TypeError: boom from __init__"),
        ("custom_policies:RaisesInAct", 1, "your policy class raised: ValueError: boom from act"),
    ],
)
def test_a_bad_policy_class_is_one_line_with_its_exit_code(ref, code, said, steps):
    result = zoo("eval", "--policy-class", ref, "--env-id", "Pendulum-v1", "-n", "1", "-q")
    assert result.exit_code == code, result.stderr
    assert said in _one_error(result.stderr)
    assert steps == []


def test_the_user_error_names_the_line_of_user_code_it_came_from():
    result = zoo("eval", "--policy-class", "custom_policies:RaisesInInit", "--env-id", "Pendulum-v1", "-q")
    hint = result.stderr.splitlines()[-1]
    line = next(
        i
        for i, text in enumerate(Path(custom_policies.__file__).read_text().splitlines(), 1)
        if "boom from __init__" in text
    )
    assert (
        hint
        == f"hint: custom_policies.py:{line}, in __init__; zoo called RaisesInInit(observation_space, action_space)"
    )


def test_a_module_that_fails_while_it_imports_is_the_users_error(tmp_path, monkeypatch):
    (tmp_path / "broken_policies.py").write_text("import numpy\n\nRATE = 1 / 0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    result = zoo("eval", "--policy-class", "broken_policies:Policy", "--env-id", "Pendulum-v1", "-q")
    assert result.exit_code == 1
    assert "your policy class raised: ZeroDivisionError: division by zero" in _one_error(result.stderr)
    assert "broken_policies.py:3, in <module>; zoo called import broken_policies" in result.stderr


def test_target_is_optional_only_with_a_policy_class_and_the_env_is_required():
    bare = zoo("eval")
    assert bare.exit_code == 2 and "Missing argument 'TARGET'." in bare.stderr
    no_env = zoo("eval", "--policy-class", "custom_policies:SpacesAct", "-q")
    assert no_env.exit_code == 2 and "pass --env-id" in no_env.stderr and "Traceback" not in no_env.stderr


def test_policy_class_on_another_frameworks_target_is_a_usage_error(dqn_run):
    result = zoo("eval", dqn_run, "--policy-class", "custom_policies:SpacesAct", "-q")
    assert result.exit_code == 2
    assert _one_error(result.stderr).startswith("error: --policy-class is not used by cleanrl models")
    named = zoo(
        "eval",
        "--policy-class",
        "custom_policies:SpacesAct",
        "--exp-name",
        "dqn",
        "--env-id",
        "CartPole-v1",
        "-q",
    )
    assert named.exit_code == 2 and "--policy-class is not used by cleanrl models" in named.stderr


def test_policy_class_on_an_exported_file_is_a_usage_error(dqn_run, tmp_path):
    assert zoo("export", dqn_run, "--out", tmp_path / "dqn.ts", "-q").exit_code == 0
    result = zoo("eval", tmp_path / "dqn.ts", "--policy-class", "custom_policies:SpacesAct", "-q")
    assert result.exit_code == 2 and "an exported file is its own policy" in _one_error(result.stderr)


# ----------------------------------------------------------------------------- pickled objects
@pytest.fixture
def mjrl_pickle(tmp_path) -> Path:
    path = tmp_path / "policy.pickle"
    path.write_bytes(pickle.dumps(MJRLStylePolicy()))
    return path


def test_a_pickle_is_refused_without_trust_and_names_what_it_would_run(mjrl_pickle, tmp_path):
    canary = tmp_path / "canary"
    traced = tmp_path / "traced.pickle"
    traced.write_bytes(pickle.dumps(CanaryPolicy(canary)))
    for path, named in (
        (mjrl_pickle, "custom_policies.MJRLStylePolicy"),
        (traced, "custom_policies.make_canary_policy"),
    ):
        result = zoo("eval", path, "--exp-name", "custom", "--env-id", "Pendulum-v1", "-q")
        assert result.exit_code == 3
        assert (
            named in _one_error(result.stderr)
            and "pass --trust-pickle if you trust this file" in result.stderr
        )
    assert not canary.exists()  # nothing was unpickled
    report = zoo("check", traced, "--json")
    assert report.exit_code == 0 and not canary.exists()
    (verdict,) = report.json()
    assert verdict["status"] == "warning" and verdict["reason"].startswith("pickle: needs --trust-pickle")
    assert "custom_policies.make_canary_policy" in verdict["details"]["globals"]


def test_a_malicious_pickle_is_refused_by_check_and_eval_and_never_runs(tmp_path):
    canary = tmp_path / "pwned"
    evil = write_malicious(tmp_path / "policy.pkl", canary, as_torch=False)
    evaluated = zoo("eval", evil, "--exp-name", "custom", "--env-id", "Pendulum-v1", "-q")
    assert evaluated.exit_code == 3 and "unsafe pickle, loading it would call" in _one_error(evaluated.stderr)
    checked = zoo("check", evil, "--json")
    assert checked.exit_code == 1 and checked.json()[0]["reason"].startswith(f"{evil}: unsafe pickle")
    assert not canary.exists()


def test_a_trusted_pickle_is_evaluated_like_a_class_with_get_actions_mean(mjrl_pickle, tmp_path):
    result = zoo(
        "eval",
        mjrl_pickle,
        "--env-id",
        "Pendulum-v1",
        "--trust-pickle",
        "-n",
        EPISODES,
        "--num-envs",
        NUM_ENVS,
        "--seed",
        SEED,
        "-q",
        "--out",
        tmp_path / "eval.json",
    )
    assert result.exit_code == 0, result.stderr
    data = _eval_json(tmp_path / "eval.json")
    reference = _reference_returns(MJRLStylePolicy(), "Pendulum-v1", EPISODES, NUM_ENVS, SEED)
    assert [e["return"] for e in data["episodes"]] == reference  # info["evaluation"], not the sampled item 0
    assert (data["framework"], data["checkpoint"], data["settings"]) == ("custom", str(mjrl_pickle), {})


def test_trust_runs_the_pickle_and_only_then(tmp_path):
    canary = tmp_path / "canary"
    traced = tmp_path / "traced.pickle"
    traced.write_bytes(pickle.dumps(CanaryPolicy(canary)))
    result = zoo("eval", traced, "--env-id", "Pendulum-v1", "--trust-pickle", "-n", "1", "-q")
    assert result.exit_code == 0, result.stderr
    assert canary.exists()


def test_pickles_inside_folders_are_never_claimed(mjrl_pickle, tmp_path):
    """Other frameworks keep pickles beside their models: only a file named on the command line is taken."""
    result = zoo("check", mjrl_pickle.parent)
    assert result.exit_code == 1 and "no runs found" in result.stderr


def test_a_pickle_of_plain_data_a_cut_pickle_or_a_non_pickle_is_one_error(tmp_path):
    data = tmp_path / "weights.pkl"
    data.write_bytes(pickle.dumps({"w": [1.0, 2.0]}))
    plain = zoo("eval", data, "--env-id", "Pendulum-v1", "--trust-pickle", "-q")
    assert plain.exit_code == 1 and "holds plain data" in _one_error(plain.stderr)
    cut = tmp_path / "cut.pickle"
    cut.write_bytes(pickle.dumps(MJRLStylePolicy())[:40])
    broken = zoo("check", cut, "--json")
    assert broken.exit_code == 1 and "the pickle cannot be read to its end" in broken.json()[0]["reason"]
    text = tmp_path / "notes.pickle"
    text.write_text("not a pickle")
    other = zoo("eval", text, "--env-id", "Pendulum-v1", "--trust-pickle", "-q")
    assert other.exit_code == 1 and f"{text}: not a pickle" in _one_error(other.stderr)


def test_a_custom_policy_is_not_exported(mjrl_pickle, tmp_path):
    result = zoo(
        "export", mjrl_pickle, "--env-id", "Pendulum-v1", "--trust-pickle", "--out", tmp_path / "p.onnx"
    )
    assert result.exit_code == 1 and "custom policies cannot be exported yet" in _one_error(result.stderr)
    assert not (tmp_path / "p.onnx").exists()


def test_exporting_a_policy_class_target_says_there_is_no_model_file(tmp_path, monkeypatch):
    """A class target (the user's policy class, nothing on disk) handed to ``zoo.export`` is a usage error
    naming the class (it used to reach the exporter and be told to pass the policy class it had)."""
    import zoo as api
    from zoo.errors import UsageError
    from zoo.registry import load_registry
    from zoo.targets import class_target

    monkeypatch.chdir(tmp_path)
    target = class_target(load_registry(), "custom_policies:EnvPredict", env_id="CartPole-v1")
    with pytest.raises(UsageError, match="custom_policies:EnvPredict is a policy class, not a model file"):
        api.export(target, tmp_path / "p.onnx")
    assert not (tmp_path / "p.onnx").exists()
