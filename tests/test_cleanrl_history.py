"""Every layout CleanRL's ``--save-model`` has written loads in zoo, and ``zoo check`` agrees with the loader.

Found by going through the history of ``vwxyzjn/cleanrl`` (``git log -p cleanrl/<script>.py`` from the
commit that added ``--save-model`` to each script, up to fe8d8a03, 2026-04-20), building each version's
``nn.Module`` classes the way its script does and comparing state-dict keys and shapes with zoo's:

* ``dqn``, ``dqn_atari`` (30381eea, 2023-01-12 .. HEAD), ``qdagger_dqn_atari_impalacnn`` (0b976ace ..),
  ``ppo_continuous_action`` (2d660b6d ..): ``torch.save(model.state_dict())``, the same keys and shapes
  in every version.
* ``c51``, ``c51_atari`` (30381eea ..): ``{"model_weights": state_dict, "args": vars(args)}``; the
  weights never changed. ``args`` was an argparse ``Namespace`` until 35896b1f (tyro ``Args`` since), and
  gained ``num_envs`` in 72e49d42; ``n_atoms``/``v_min``/``v_max`` are always there, ints when left at
  their defaults (``default=-100`` in argparse, ``v_min: float = -100`` in tyro) and floats when given.
* ``ddpg_continuous_action`` (f62ad1f9 ..): ``(actor, qf1)`` state dicts; ``action_scale``/``action_bias``
  from the batched ``env.action_space`` of its one env: ``(1, act_dim)``.
* ``td3_continuous_action`` (1c4e8b94 ..): ``(actor, qf1, qf2)``; ``(1, act_dim)`` buffers up to
  35896b1f, ``(act_dim,)`` since 9d709007 ("Add TD3 and SAC support for vec envs", 2025-01-23), which
  computes them from ``env.single_action_space``.
* CleanRL defaults to ``--cuda True``: files trained on a GPU carry ``cuda:0`` storages.

The historical classes below are copied from those scripts (same keys, same buffers).
"""

from __future__ import annotations

import json
import zipfile

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from helpers import make_run, zoo

LOW, HIGH = np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32)


class _BoxEnv(gym.Env):
    """A 2-D action env with asymmetric bounds (action_bias != 0) whose reward depends on the action."""

    observation_space = gym.spaces.Box(-1, 1, (3,), np.float32)
    action_space = gym.spaces.Box(LOW, HIGH, dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.obs = self.np_random.uniform(-1, 1, 3).astype(np.float32)
        return self.obs, {}

    def step(self, action):
        self.t += 1
        reward = -float(np.sum((np.asarray(action) - np.array([1.0, 0.8])) ** 2)) + float(self.obs[0])
        self.obs = self.np_random.uniform(-1, 1, 3).astype(np.float32)
        return self.obs, reward, False, self.t >= 25, {}


ENV = "ZooHistoryBox-v0"
gym.register(ENV, entry_point=_BoxEnv)


def _vector_env(env_id=ENV):
    return gym.vector.SyncVectorEnv([lambda: gym.make(env_id)])


# ----------------------------------------------------------------------------- CleanRL's classes
class QNetwork(nn.Module):
    """ddpg/td3_continuous_action.py QNetwork (same keys in every version)."""

    def __init__(self, env):
        super().__init__()
        self.fc1 = nn.Linear(
            np.array(env.single_observation_space.shape).prod() + np.prod(env.single_action_space.shape), 256
        )
        self.fc2 = nn.Linear(256, 256)
        self.fc3 = nn.Linear(256, 1)


class ActorBatched(nn.Module):
    """ddpg_continuous_action.py (f62ad1f9 .. HEAD), td3_continuous_action.py 1c4e8b94 .. 35896b1f."""

    def __init__(self, env):
        super().__init__()
        self.fc1 = nn.Linear(np.array(env.single_observation_space.shape).prod(), 256)
        self.fc2 = nn.Linear(256, 256)
        self.fc_mu = nn.Linear(256, np.prod(env.single_action_space.shape))
        self.register_buffer(
            "action_scale",
            torch.tensor((env.action_space.high - env.action_space.low) / 2.0, dtype=torch.float32),
        )
        self.register_buffer(
            "action_bias",
            torch.tensor((env.action_space.high + env.action_space.low) / 2.0, dtype=torch.float32),
        )

    def forward(self, x):
        x = torch.tanh(self.fc_mu(F.relu(self.fc2(F.relu(self.fc1(x))))))
        return x * self.action_scale + self.action_bias


class ActorSingle(ActorBatched):
    """td3_continuous_action.py since 9d709007 (lines 106-132 at HEAD): buffers from single_action_space."""

    def __init__(self, env):
        super().__init__(env)
        space = env.single_action_space
        self.action_scale = torch.tensor((space.high - space.low) / 2.0, dtype=torch.float32)
        self.action_bias = torch.tensor((space.high + space.low) / 2.0, dtype=torch.float32)


def _actor_pair(seed=3):
    """The same weights in both actor layouts, the batched one first."""
    envs = _vector_env()
    torch.manual_seed(seed)
    batched = ActorBatched(envs)
    single = ActorSingle(envs)
    single.load_state_dict(
        {**batched.state_dict(), "action_scale": single.action_scale, "action_bias": single.action_bias}
    )
    envs.close()
    return batched, single


def _td3_runs(tmp_path, exp="td3_continuous_action"):
    """One run per actor layout (same weights): ``{"batched": run, "single": run}``."""
    envs = _vector_env()
    torch.manual_seed(0)
    critics = [QNetwork(envs).state_dict() for _ in range(2 if exp.startswith("td3") else 1)]
    envs.close()
    runs = {}
    for seed, (name, actor) in enumerate(zip(("batched", "single"), _actor_pair(), strict=True), start=1):
        run = tmp_path / "runs" / f"{ENV}__{exp}__{seed}__1700000000"
        run.mkdir(parents=True)
        torch.save((actor.state_dict(), *critics), run / f"{exp}.cleanrl_model")
        runs[name] = run
    return runs


def _check(target):
    result = zoo("check", target, "--json")
    return result.json()[0]


def _eval(tmp_path, run, *args):
    out = tmp_path / f"{run.name}-{len(list(tmp_path.glob('*.json')))}.json"
    result = zoo("eval", run, "--quiet", "-n", "3", "--num-envs", "1", "--out", out, *args)
    assert result.exit_code == 0, result.stderr
    return [e["return"] for e in json.loads(out.read_text())["episodes"]]


# ----------------------------------------------------------------------------- action_scale / action_bias
def test_historical_actor_buffers_have_the_shapes_cleanrl_wrote():
    batched, single = _actor_pair()
    assert tuple(batched.action_scale.shape) == tuple(batched.action_bias.shape) == (1, 2)
    assert tuple(single.action_scale.shape) == tuple(single.action_bias.shape) == (2,)
    assert batched.action_bias.abs().sum() > 0  # asymmetric bounds: the bias matters


def test_both_buffer_shapes_load_and_act_identically():
    from zoo.frameworks.cleanrl.checkpoint import vector_env_view
    from zoo.frameworks.cleanrl.models import DeterministicActor

    batched, single = _actor_pair()
    x = torch.randn(16, 3)
    outputs = []
    for source in (batched, single):
        actor = DeterministicActor(vector_env_view(_BoxEnv.observation_space, _BoxEnv.action_space))
        result = actor.load_state_dict(source.state_dict(), strict=True)
        assert not result.missing_keys and not result.unexpected_keys
        assert tuple(actor.action_scale.shape) == (1, 2)  # reshaped to the class's own shape
        with torch.no_grad():
            outputs.append(actor(x))
            torch.testing.assert_close(outputs[-1], source(x), rtol=0, atol=0)
    assert torch.equal(outputs[0], outputs[1])
    assert tuple(single.state_dict()["action_scale"].shape) == (2,)  # the caller's state dict is untouched


@pytest.mark.parametrize("exp", ["td3_continuous_action", "ddpg_continuous_action"])
def test_check_ok_and_eval_gives_the_same_returns_for_both_buffer_shapes(tmp_path, exp):
    runs = _td3_runs(tmp_path, exp)
    for run in runs.values():
        report = _check(run)
        assert report["status"] == "ok", report
    for mode in ("--deterministic", "--stochastic"):  # stochastic: noise scaled by action_scale
        returns = {name: _eval(tmp_path, run, mode) for name, run in runs.items()}
        assert returns["batched"] == returns["single"], mode


def test_python_api_policy_gives_identical_actions_for_both_shapes(tmp_path):
    import zoo as zoo_api

    runs = _td3_runs(tmp_path)
    obs = np.random.default_rng(0).uniform(-1, 1, (8, 3)).astype(np.float32)
    actions = []
    for run in runs.values():
        policy = zoo_api.load_policy(
            run / "td3_continuous_action.cleanrl_model", exp_name="td3_continuous_action", env_id=ENV
        )
        actions.append(policy.act(obs, deterministic=True)[0])
    assert actions[0].shape == (8, 2) and np.array_equal(actions[0], actions[1])


@pytest.mark.parametrize("shape", [(3,), (2, 2), (1, 3), (2, 1), (1, 1, 2), ()])
def test_other_buffer_shapes_are_refused_by_check_and_eval_alike(tmp_path, shape):
    runs = _td3_runs(tmp_path)
    model = runs["single"] / "td3_continuous_action.cleanrl_model"
    actor, qf1, qf2 = torch.load(model, weights_only=True)
    actor["action_scale"] = torch.ones(shape)
    torch.save((actor, qf1, qf2), model)
    report = _check(runs["single"])
    assert report["status"] == "error" and f"action_scale is {shape}" in report["reason"], report
    assert "(1, 2) or (2,)" in report["reason"]
    result = zoo("eval", runs["single"], "--quiet", "-n", "1")
    assert result.exit_code == 1 and f"action_scale is {shape}" in result.stderr


def test_check_ok_means_the_loader_succeeds_for_every_buffer_shape():
    """``shape_problems`` accepts exactly what ``DeterministicActor.load_state_dict`` takes."""
    from zoo.frameworks.cleanrl.checkpoint import Shape, expected_shapes, shape_problems, vector_env_view
    from zoo.frameworks.cleanrl.models import DeterministicActor
    from zoo.registry import load_registry

    spaces = (_BoxEnv.observation_space, _BoxEnv.action_space)
    expected = expected_shapes(load_registry().get("td3_continuous_action"), "actor", spaces, {})
    assert isinstance(expected["action_scale"], Shape) and expected["action_scale"] == (1, 2)
    assert expected["action_scale"].alternatives == ((2,),) and expected["fc1.weight"].alternatives == ()
    base = DeterministicActor(vector_env_view(*spaces)).state_dict()
    for shape in [(1, 2), (2,), (2, 1), (1, 1, 2), (4,), (1,), ()]:
        for key in ("action_scale", "action_bias"):
            state = {**base, key: torch.ones(shape)}
            ok = not shape_problems(state, expected)
            try:
                DeterministicActor(vector_env_view(*spaces)).load_state_dict(state)
                loads = True
            except RuntimeError:
                loads = False
            assert ok == loads == (shape in ((1, 2), (2,))), (key, shape)


# ----------------------------------------------------------------------------- C51's saved args
#: ``vars(args)`` of c51.py at 30381eea (argparse, no num_envs) and at HEAD (tyro Args, num_envs since 72e49d42).
ARGPARSE_ARGS = {
    "exp_name": "c51",
    "seed": 1,
    "torch_deterministic": True,
    "cuda": True,
    "track": False,
    "wandb_project_name": "cleanRL",
    "wandb_entity": None,
    "capture_video": False,
    "save_model": True,
    "upload_model": False,
    "hf_entity": "",
    "env_id": "CartPole-v1",
    "total_timesteps": 500000,
    "learning_rate": 2.5e-4,
    "n_atoms": 101,
    "v_min": -100,
    "v_max": 100,
    "buffer_size": 10000,
    "gamma": 0.99,
    "target_network_frequency": 500,
    "batch_size": 128,
    "start_e": 1,
    "end_e": 0.05,
    "exploration_fraction": 0.5,
    "learning_starts": 10000,
    "train_frequency": 10,
}
TYRO_ARGS = {**ARGPARSE_ARGS, "num_envs": 1}


@pytest.mark.parametrize(
    "variant",
    [
        ("argparse", {}),
        ("tyro", {"num_envs": 1}),
        ("argparse-given", {"n_atoms": 51, "v_min": -10.0, "v_max": 10.0}),
        ("tyro-given", {"num_envs": 1, "n_atoms": 51, "v_min": -10.0, "v_max": 10.0}),
    ],
)
def test_c51_args_of_every_era_check_and_give_the_same_returns(tmp_path, variant):
    from helpers import spaces

    from zoo.frameworks.cleanrl.checkpoint import build_model
    from zoo.registry import load_registry

    name, extra = variant
    args = {**ARGPARSE_ARGS, **extra}
    atoms = {k: args[k] for k in ("n_atoms", "v_min", "v_max")}
    # the current layout: same weights, kwargs as floats the way zoo's default would build them
    current = {
        **TYRO_ARGS,
        "n_atoms": atoms["n_atoms"],
        "v_min": float(atoms["v_min"]),
        "v_max": float(atoms["v_max"]),
    }
    torch.manual_seed(5)
    weights = build_model(load_registry().get("c51"), "q_network", spaces("CartPole-v1"), atoms).state_dict()
    returns = []
    for seed, saved in ((1, args), (2, current)):
        run = tmp_path / "runs" / f"CartPole-v1__c51__{seed}__1700000000"
        run.mkdir(parents=True)
        torch.save({"model_weights": weights, "args": saved}, run / "c51.cleanrl_model")
        report = _check(run)
        assert report["status"] == "ok", report
        assert report["details"]["model_kwargs"] == {k: saved[k] for k in atoms}
        returns.append(_eval(tmp_path, run, "--stochastic"))
    assert returns[0] == returns[1], name


# ----------------------------------------------------------------------------- files written on a GPU
def _save_as_if_on_cuda(obj, path):
    """``torch.save`` as a CUDA training run writes it: every storage tagged ``cuda:0`` (no GPU needed)."""
    import torch.serialization as ser

    original = ser.location_tag
    ser.location_tag = lambda storage: "cuda:0"
    try:
        torch.save(obj, path)
    finally:
        ser.location_tag = original
    with zipfile.ZipFile(path) as archive:
        pickle_name = next(n for n in archive.namelist() if n.endswith("data.pkl"))
        data = archive.read(pickle_name)
    assert b"cuda:0" in data and b"cpu" not in data


@pytest.mark.parametrize(
    ("exp", "env_id"),
    [
        ("dqn", "CartPole-v1"),
        ("c51", "CartPole-v1"),
        ("ppo_continuous_action", "Pendulum-v1"),
        ("td3_continuous_action", "Pendulum-v1"),
    ],
)
def test_files_written_on_a_gpu_check_ok_and_evaluate_like_cpu_files(tmp_path, exp, env_id):
    cpu = make_run(tmp_path, env_id, exp, seed=1)
    model = cpu / f"{exp}.cleanrl_model"
    obj = torch.load(model, weights_only=True)
    if exp == "td3_continuous_action":  # the layout CleanRL master writes
        actor = {
            **obj[0],
            "action_scale": obj[0]["action_scale"].reshape(-1),
            "action_bias": obj[0]["action_bias"].reshape(-1),
        }
        obj = (actor, *obj[1:])
    gpu = tmp_path / "runs" / f"{env_id}__{exp}__2__1700000000"
    gpu.mkdir()
    _save_as_if_on_cuda(obj, gpu / model.name)
    report = _check(gpu)
    assert report["status"] == "ok", report
    assert _eval(tmp_path, gpu, "--deterministic") == _eval(tmp_path, cpu, "--deterministic")


def test_qdagger_offline_snapshots_alone_say_what_they_are(tmp_path):
    """qdagger writes {exp_name}-offline-{step}.cleanrl_model every 100,000 offline steps, even without
    --save-model: a run holding only those is not an exp_name mismatch."""
    run = tmp_path / "runs" / "BreakoutNoFrameskip-v4__qdagger_dqn_atari_impalacnn__1__1700000000"
    run.mkdir(parents=True)
    for step in (0, 100000):
        (run / f"qdagger_dqn_atari_impalacnn-offline-{step}.cleanrl_model").write_bytes(b"")
    report = zoo("check", run, "--json").json()[0]
    assert report["status"] == "error" and report["reason"].startswith(
        "missing model: only the offline-phase"
    )
    assert "exp_name mismatch" not in report["reason"]
