"""rsl_rl: runs written by rsl-rl-lib's ``OnPolicyRunner`` are found, checked and evaluated as rsl_rl does.

The fixture trains PPO for a few iterations on Pendulum-v1 (8 envs) through a small rsl_rl ``VecEnv``
over a gymnasium ``SyncVectorEnv``, once with an ``MLPModel`` actor and once with an LSTM ``RNNModel``
actor, and saves with ``runner.save`` into an Isaac Lab style run dir (``params/agent.yaml`` and
``params/env.yaml`` dumped from the configs, as Isaac Lab's train script does). zoo's eval is then
compared, episode for episode, with rsl_rl's own ``runner.get_inference_policy()`` stepped by the same
evaluator on the same seeded envs.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from helpers import Canary, make_run, write_malicious, zoo

from zoo.envs import EnvSpec, make_vector_env
from zoo.evaluate import rollout

ENV_ID = "Pendulum-v1"
EPISODES, NUM_ENVS = 6, 4  # quotas [2, 2, 1, 1]: envs 0 and 1 play a second episode after a reset


class GymVecEnv:
    """rsl_rl's ``VecEnv`` contract over a gymnasium vector env: TensorDict observations, same-step resets."""

    def __init__(self, env_id: str, num_envs: int, seed: int):
        import gymnasium as gym

        self.envs = gym.vector.SyncVectorEnv(
            [lambda: gym.make(env_id)] * num_envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
        )
        self.num_envs = num_envs
        self.num_actions = self.envs.single_action_space.shape[0]
        self.max_episode_length = self.envs.envs[0].spec.max_episode_steps
        self.episode_length_buf = torch.zeros(num_envs, dtype=torch.long)
        self.device = "cpu"
        self.cfg = {"env_id": env_id, "num_envs": num_envs, "seed": seed}
        self._obs = self._tensordict(self.envs.reset(seed=seed)[0])

    def _tensordict(self, obs):
        from tensordict import TensorDict

        return TensorDict({"policy": torch.as_tensor(obs, dtype=torch.float32)}, batch_size=[self.num_envs])

    def get_observations(self):
        return self._obs

    def step(self, actions):
        obs, rew, terminated, truncated, _ = self.envs.step(actions.cpu().numpy())
        self._obs = self._tensordict(obs)
        dones = torch.as_tensor(np.logical_or(terminated, truncated))
        self.episode_length_buf = torch.where(dones, 0, self.episode_length_buf + 1)
        rewards = torch.as_tensor(rew, dtype=torch.float32)
        return self._obs, rewards, dones.long(), {"time_outs": torch.as_tensor(truncated)}


def train_cfg(rnn_type: str | None) -> dict:
    """An rsl-rl-lib 5.x runner config (the dict Isaac Lab's ``RslRlOnPolicyRunnerCfg`` turns into)."""
    gaussian = {"class_name": "GaussianDistribution", "init_std": 1.0, "std_type": "scalar"}
    actor = {"class_name": "RNNModel" if rnn_type else "MLPModel", "hidden_dims": [32, 32],
             "activation": "elu", "obs_normalization": True, "distribution_cfg": gaussian}  # fmt: skip
    if rnn_type:
        actor.update(rnn_type=rnn_type, rnn_hidden_dim=16, rnn_num_layers=1 if rnn_type == "lstm" else 2)
    return {
        "seed": 7, "num_steps_per_env": 32, "save_interval": 50, "clip_actions": None,
        "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
        "algorithm": {"class_name": "PPO", "num_learning_epochs": 2, "num_mini_batches": 2,
                      "learning_rate": 1e-3},
        "actor": actor,
        "critic": {"class_name": "MLPModel", "hidden_dims": [32, 32], "activation": "elu",
                   "obs_normalization": True},
    }  # fmt: skip


class Trained:
    """One trained run: its dir, the runner that wrote it and the config."""

    def __init__(self, run_dir: Path, runner, cfg: dict, checkpoints: list[Path]):
        self.run_dir, self.runner, self.cfg = run_dir, runner, cfg
        self.earlier, self.model = checkpoints


def _train(root: Path, rnn_type: str | None) -> Trained:
    from rsl_rl.runners import OnPolicyRunner

    cfg = train_cfg(rnn_type)
    env = GymVecEnv(ENV_ID, 8, seed=cfg["seed"])
    run_dir = root / "logs" / "rsl_rl" / f"pendulum_{rnn_type or 'mlp'}" / "2026-11-30_10-00-00"
    (run_dir / "params").mkdir(parents=True)
    (run_dir / "params" / "agent.yaml").write_text(yaml.dump(cfg, sort_keys=False))
    (run_dir / "params" / "env.yaml").write_text(yaml.dump(env.cfg, sort_keys=False))
    torch.manual_seed(cfg["seed"])
    runner = OnPolicyRunner(env, cfg, log_dir=None, device="cpu")
    checkpoints = []
    for _ in range(2):
        runner.learn(2)
        checkpoints.append(run_dir / f"model_{runner.current_learning_iteration}.pt")
        runner.save(str(checkpoints[-1]))
    env.envs.close()
    return Trained(run_dir, runner, cfg, checkpoints)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict[str, Trained]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        root = tmp_path_factory.mktemp("rsl")
        yield {kind: _train(root, None if kind == "mlp" else kind) for kind in ("mlp", "lstm", "gru")}
    finally:
        torch.set_num_threads(threads)


class InferenceShim:
    """rsl_rl's own inference policy behind zoo's Policy protocol.

    As rsl_rl's runner does after each step, finished envs get ``policy.reset(dones)``. The evaluator
    marks an env both at its done step and at the next one (gymnasium's vector env discards that
    step's action and resets then), so each episode starts from a zero hidden state, as in rsl_rl's
    same-step-reset envs.
    """

    def __init__(self, runner, spaces):
        self.policy = runner.get_inference_policy(device="cpu")
        self.policy.reset()
        self.observation_space, self.action_space = spaces
        self.is_recurrent = self.policy.is_recurrent

    def act(self, obs_batch, state=None, deterministic=True):
        from tensordict import TensorDict

        with torch.inference_mode():
            obs = TensorDict(
                {"policy": torch.as_tensor(obs_batch, dtype=torch.float32)}, batch_size=[len(obs_batch)]
            )
            actions = self.policy(obs).numpy()
        return actions, state

    def reset(self, done_mask):
        with torch.inference_mode():
            self.policy.reset(torch.as_tensor(done_mask))


def _rsl_rl_returns(runner) -> list[float]:
    envs = make_vector_env(EnvSpec(ENV_ID), NUM_ENVS)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        shim = InferenceShim(runner, (envs.single_observation_space, envs.single_action_space))
        episodes = rollout(shim, envs, EPISODES, seed=0, deterministic=True)
    finally:
        torch.set_num_threads(threads)
        envs.close()
    return [e.return_ for e in episodes]


def _zoo_eval(target: Path, out: Path, *args: str):
    return zoo("eval", target, "--deterministic", "--episodes", EPISODES, "--num-envs", NUM_ENVS, "--seed", 0,
               "--out", out, "--quiet", *args)  # fmt: skip


def _zoo_returns(target: Path, out: Path, *args: str) -> list[float]:
    result = _zoo_eval(target, out, *args)
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["framework"] == "rsl_rl" and data["exp_name"] == "rsl_ppo" and data["deterministic"] is True
    return [e["return"] for e in data["episodes"]]


def test_check_reports_the_latest_checkpoint_of_each_trained_run(trained):
    reports = {r["run"]["path"]: r for r in zoo("check", trained["mlp"].run_dir.parents[1], "--json").json()}
    assert len(reports) == 3
    for kind, run in trained.items():
        report = reports[str(run.run_dir)]
        assert report["status"] == "ok", report
        assert report["run"]["framework"] == "rsl_rl" and report["run"]["exp_name"] == "rsl_ppo"
        assert report["run"]["model_file"] == str(run.model)
        assert report["run"]["other_model_files"] == [str(run.earlier)]
        assert report["run"]["env_id"] == ENV_ID and report["run"]["seed"] == 7
        details = report["details"]
        assert (
            details["iteration"] == int(run.model.stem.split("_")[1]) > 1
            and details["other_checkpoints"] == 1
        )
        assert details["config"] == "params/agent.yaml" and details["checkpoint"] == "actor_state_dict"
        assert details["weights_only"] is True and details["recurrent"] is (kind != "mlp")
    models = {kind: reports[str(run.run_dir)]["details"]["model"] for kind, run in trained.items()}
    assert models == {"mlp": "MLP 3-32-32-1 (elu, obs normalizer)",
                      "lstm": "LSTM(3->16)x1 + MLP 16-32-32-1 (elu, obs normalizer)",
                      "gru": "GRU(3->16)x2 + MLP 16-32-32-1 (elu, obs normalizer)"}  # fmt: skip


@pytest.mark.parametrize("kind", ["mlp", "lstm", "gru"])
def test_eval_matches_rsl_rl_inference_policy_episode_for_episode(trained, kind, tmp_path):
    run = trained[kind]
    ours = _zoo_returns(run.run_dir, tmp_path / "eval.json", "--env-id", ENV_ID)
    theirs = _rsl_rl_returns(run.runner)
    assert len(ours) == EPISODES
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9)
    assert len(set(np.round(ours, 6))) > 1  # real, differing episodes


def _legacy_checkpoint(src: Path, dst: Path, normalizer_outside: bool) -> Path:
    """A real 5.x checkpoint renamed to the rsl-rl-lib < 4 ``ActorCritic[Recurrent]`` key names.

    ``normalizer_outside`` writes the 2.x layout (``obs_norm_state_dict`` beside the model), else the
    3.x one (``actor_obs_normalizer.*`` inside ``model_state_dict``).
    """
    ckpt = torch.load(src, weights_only=True)
    renames = (("mlp.", "actor."), ("rnn.", "memory_a."), ("obs_normalizer.", "actor_obs_normalizer."),
               ("distribution.std_param", "std"))  # fmt: skip
    model, norm = {}, {}
    for key, value in ckpt["actor_state_dict"].items():
        if normalizer_outside and key.startswith("obs_normalizer."):
            norm[key.removeprefix("obs_normalizer.")] = value
            continue
        new = next((n + key[len(o) :] for o, n in renames if key.startswith(o)), key)
        model[new] = value
    model.update(
        {f"critic.{k.removeprefix('mlp.')}": v for k, v in ckpt["critic_state_dict"].items() if "mlp." in k}
    )
    legacy = {
        "model_state_dict": model,
        "optimizer_state_dict": ckpt["optimizer_state_dict"],
        "iter": 3,
        "infos": None,
    }
    if normalizer_outside:
        legacy["obs_norm_state_dict"] = norm
    dst.parent.mkdir(parents=True, exist_ok=True)
    torch.save(legacy, dst)
    return dst


@pytest.mark.parametrize("kind", ["mlp", "lstm"])
def test_legacy_model_state_dict_checkpoint_gives_the_same_returns(trained, kind, tmp_path):
    run = trained[kind]
    legacy_dir = tmp_path / "logs" / "rsl_rl" / "legacy" / "2024-01-01_00-00-00"
    _legacy_checkpoint(run.model, legacy_dir / "model_3.pt", normalizer_outside=kind == "mlp")
    policy = {"class_name": "ActorCriticRecurrent" if kind == "lstm" else "ActorCritic", "activation": "elu",
              "actor_hidden_dims": [32, 32], "rnn_type": "lstm" if kind == "lstm" else None}  # fmt: skip
    (legacy_dir / "params").mkdir()
    (legacy_dir / "params" / "agent.yaml").write_text(
        yaml.dump({"policy": policy, "algorithm": {"class_name": "PPO"}})
    )
    report = zoo("check", legacy_dir, "--json").json()[0]
    assert report["details"]["checkpoint"] == "model_state_dict (legacy ActorCritic)"
    assert report["status"] == "warning" and "env id unknown" in report["reason"]  # no env.yaml
    new = _zoo_returns(run.run_dir, tmp_path / "new.json", "--env-id", ENV_ID)
    old = _zoo_returns(legacy_dir, tmp_path / "old.json", "--env-id", ENV_ID)
    assert old == new


def test_genesis_layout_with_cfgs_pkl(trained, tmp_path):
    run = trained["lstm"]
    log_dir = tmp_path / "logs" / "pendulum-walking"
    log_dir.mkdir(parents=True)
    (log_dir / "model_3.pt").write_bytes(run.model.read_bytes())
    env_cfg = {"num_actions": 1, "clip_actions": 100.0, "episode_length_s": 20.0}
    obs_cfg, reward_cfg, command_cfg = {"num_obs": 3}, {"reward_scales": {}}, {"num_commands": 0}
    train = {**run.cfg, "runner": {"experiment_name": "pendulum-walking", "max_iterations": 4}}
    with (log_dir / "cfgs.pkl").open("wb") as fh:  # as Genesis' examples write it
        pickle.dump([env_cfg, obs_cfg, reward_cfg, command_cfg, train], fh)
    report = zoo("check", tmp_path / "logs", "--json").json()[0]
    assert report["run"]["path"] == str(log_dir) and report["details"]["config"] == "cfgs.pkl"
    assert report["details"]["clip_actions"] == 100.0 and report["run"]["seed"] == 7
    assert report["run"]["env_id"] is None and "pass --env-id" in report["hint"]
    no_env = _zoo_eval(log_dir, tmp_path / "e.json")
    assert no_env.exit_code == 1 and "cannot tell the env id" in no_env.stderr
    clipped = _zoo_returns(
        log_dir, tmp_path / "genesis.json", "--env-id", ENV_ID
    )  # |actions| << 100: no effect
    assert clipped == _zoo_returns(run.run_dir, tmp_path / "isaac.json", "--env-id", ENV_ID)


def test_malicious_cfgs_pkl_is_refused_and_never_runs(trained, tmp_path):
    canary = tmp_path / "canary"
    log_dir = tmp_path / "logs" / "evil"
    log_dir.mkdir(parents=True)
    (log_dir / "model_3.pt").write_bytes(trained["mlp"].model.read_bytes())
    (log_dir / "cfgs.pkl").write_bytes(pickle.dumps([{"algorithm": {}}, Canary(canary)], protocol=4))
    report = zoo("check", log_dir, "--json").json()[0]
    assert (
        report["status"] == "error" and "unsafe pickle" in report["reason"] and "system" in report["reason"]
    )
    result = _zoo_eval(log_dir, tmp_path / "eval.json", "--env-id", ENV_ID)
    assert result.exit_code == 3 and "unsafe pickle" in result.stderr and "Traceback" not in result.stderr
    assert not canary.exists()


def test_malicious_checkpoint_is_refused_and_never_runs(tmp_path):
    canary = tmp_path / "canary"
    run_dir = tmp_path / "logs" / "rsl_rl" / "evil" / "2026-01-01_00-00-00"
    write_malicious(run_dir / "model_5.pt", canary)
    report = zoo("check", run_dir, "--json").json()[0]
    assert report["status"] == "error" and report["details"]["dangerous_globals"] == ["posix.system"]
    result = _zoo_eval(run_dir / "model_5.pt", tmp_path / "eval.json", "--env-id", ENV_ID)
    assert result.exit_code == 3 and "unsafe pickle" in result.stderr
    assert not canary.exists()


def test_cleanrl_and_rsl_rl_runs_side_by_side_are_each_claimed_once(trained, tmp_path):
    make_run(tmp_path, "CartPole-v1", "dqn")
    rsl = tmp_path / "logs" / "run"
    rsl.mkdir(parents=True)
    (rsl / "model_3.pt").write_bytes(trained["mlp"].model.read_bytes())
    reports = zoo("check", tmp_path, "--json").json()
    assert sorted((r["run"]["framework"], Path(r["run"]["model_file"]).name) for r in reports) == [
        ("cleanrl", "dqn.cleanrl_model"), ("rsl_rl", "model_3.pt"),
    ]  # fmt: skip
    rsl_report = next(r for r in reports if r["run"]["framework"] == "rsl_rl")
    assert "no params/agent.yaml or cfgs.pkl" in " ".join([rsl_report["reason"], *rsl_report["notes"]])


def test_registry_entries_are_checked_by_the_adapter(tmp_path):
    bad = tmp_path / "reg.yaml"
    bad.write_text(
        "my_rsl:\n  framework: rsl_rl\n  format: torch-checkpoint\n  filename: 'policy.pt'\n"
        "  env: {wrappers: classic}\n  eval: {episodes: 10}\n"
    )
    result = zoo("--registry", bad, "registry", "list")
    assert result.exit_code == 1 and "'filename'" in result.stderr and "model_{iter}.pt" in result.stderr


def test_config_that_contradicts_the_weights_is_one_error_line(trained, tmp_path):
    run_dir = tmp_path / "logs" / "rsl_rl" / "bad" / "2026-01-01_00-00-00"
    (run_dir / "params").mkdir(parents=True)
    (run_dir / "model_2.pt").write_bytes(trained["lstm"].model.read_bytes())
    contradictions = (
        ({"rnn_type": "gru"}, "the config says rnn_type 'gru', the weights are a LSTM"),
        ({"activation": "softsign"}, "activation 'softsign' is not one of rsl_rl's"),
    )
    for actor, reason in contradictions:
        (run_dir / "params" / "agent.yaml").write_text(yaml.dump({"actor": actor}))
        report = zoo("check", run_dir, "--json").json()[0]
        assert report["status"] == "error" and reason in report["reason"]
        result = _zoo_eval(run_dir, tmp_path / "eval.json", "--env-id", ENV_ID)
        assert result.exit_code == 1 and reason in result.stderr and "Traceback" not in result.stderr
    wrong_env = _zoo_eval(trained["mlp"].run_dir, tmp_path / "eval.json", "--env-id", "CartPole-v1")
    assert (
        wrong_env.exit_code == 1 and "the actor takes 3 observations, CartPole-v1 gives 4" in wrong_env.stderr
    )
