"""Write the rsl-rl-lib 2.x/3.x runs in this folder, with the real old library (not part of the test run).

zoo's tests cannot install an old rsl-rl-lib next to the 5.x one they evaluate with, so these runs were
trained once, for 2 PPO iterations on Pendulum-v1, by the old runners themselves, and committed. Each
run's ``reference.json`` entry holds the returns of that runner's ``get_inference_policy()`` stepped by
zoo's evaluator (6 episodes on 4 envs, seed 0, deterministic), which zoo must reproduce from the files.

Regenerate (the old wheel unpacked in a folder put first on the path, so it shadows rsl-rl-lib 5.x)::

    pip download --no-deps rsl-rl-lib==2.2.4 -d /tmp/w && unzip -q /tmp/w/*.whl -d /tmp/rsl2
    PYTHONPATH=/tmp/rsl2 .venv/bin/python tests/data/rsl_rl_legacy/make_legacy_runs.py 2.2.4
    (the same with 3.1.1)
"""

from __future__ import annotations

import copy
import json
import pickle
import sys
import tempfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
import yaml

HERE = Path(__file__).resolve().parent
ENV_ID, SEED, EPISODES, NUM_ENVS = "Pendulum-v1", 7, 6, 4
VERSION = sys.argv[1] if len(sys.argv) > 1 else ""  # the rsl-rl-lib version on the path, recorded per run


class PendulumVecEnv:
    """rsl_rl's ``VecEnv`` over gymnasium's Pendulum: 2.x gives ``(obs, extras)``, 3.x a TensorDict."""

    def __init__(self, tensordict: bool):
        self.envs = gym.vector.SyncVectorEnv(
            [lambda: gym.make(ENV_ID)] * 8, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
        )
        self.num_envs, self.num_actions, self.device = 8, 1, "cpu"
        self.num_obs, self.num_privileged_obs = 3, None
        self.max_episode_length = 200
        self.episode_length_buf = torch.zeros(8, dtype=torch.long)
        self.cfg = {"env_id": ENV_ID}
        self.tensordict = tensordict
        self._obs = self._wrap(self.envs.reset(seed=SEED)[0])

    def _wrap(self, obs):
        obs = torch.as_tensor(obs, dtype=torch.float32)
        if not self.tensordict:
            return obs
        from tensordict import TensorDict

        return TensorDict({"policy": obs}, batch_size=[self.num_envs])

    def get_observations(self):
        return self._obs if self.tensordict else (self._obs, {"observations": {}})

    def reset(self):
        return self.get_observations()

    def step(self, actions):
        obs, rew, terminated, truncated, _ = self.envs.step(actions.cpu().numpy())
        self._obs = self._wrap(obs)
        dones = torch.as_tensor(np.logical_or(terminated, truncated))
        self.episode_length_buf = torch.where(dones, 0, self.episode_length_buf + 1)
        extras = {"time_outs": torch.as_tensor(truncated), "observations": {}}
        return self._obs, torch.as_tensor(rew, dtype=torch.float32), dones.long(), extras


class InferenceShim:
    """The old runner's inference policy behind zoo's Policy protocol (resets as in tests/test_rsl_rl.py)."""

    def __init__(self, runner, model, tensordict: bool):
        self.policy, self.model, self.tensordict = (
            runner.get_inference_policy(device="cpu"),
            model,
            tensordict,
        )
        self.is_recurrent = model.is_recurrent
        for module in model.modules():  # the old Memory keeps the training batch's state: start from zeros
            if hasattr(module, "hidden_states"):
                module.hidden_states = None

    def act(self, obs_batch, state=None, deterministic=True):
        obs = torch.as_tensor(obs_batch, dtype=torch.float32)
        if self.tensordict:
            from tensordict import TensorDict

            obs = TensorDict({"policy": obs}, batch_size=[len(obs)])
        with torch.inference_mode():
            return self.policy(obs).numpy(), state

    def reset(self, done_mask):
        with torch.inference_mode():
            self.model.reset(torch.as_tensor(done_mask).long())


def reference_returns(runner, model, tensordict: bool) -> list[float]:
    sys.path.insert(0, str(HERE.parents[2]))
    from zoo.envs import EnvSpec, make_vector_env
    from zoo.evaluator import rollout

    envs = make_vector_env(EnvSpec(ENV_ID), NUM_ENVS)
    try:
        episodes = rollout(
            InferenceShim(runner, model, tensordict), envs, EPISODES, seed=0, deterministic=True
        )
    finally:
        envs.close()
    return [e.return_ for e in episodes]


def train(run_dir: Path, cfg: dict, runner_class, tensordict: bool, teacher: Path | None = None) -> Path:
    torch.manual_seed(SEED)
    env = PendulumVecEnv(tensordict)
    # 2.x needs a log dir (tensorboard, git state); the runs keep only what the tests read
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as log_dir:
        runner = runner_class(env, copy.deepcopy(cfg), log_dir=log_dir, device="cpu")
        if teacher is not None:
            runner.load(str(teacher))
        runner.learn(2)
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "model_1.pt"
    runner.save(str(path))
    model = runner.alg.actor_critic if hasattr(runner.alg, "actor_critic") else runner.alg.policy
    returns = reference_returns(runner, model, tensordict)
    keys = sorted(torch.load(path, weights_only=True))
    env.envs.close()
    reference = HERE / "reference.json"
    references = json.loads(reference.read_text()) if reference.exists() else {}
    references[str(run_dir.relative_to(HERE))] = {
        "rsl_rl": VERSION,
        "checkpoint_keys": keys,
        "returns": returns,
    }
    reference.write_text(json.dumps(references, indent=1, sort_keys=True) + "\n")
    return path


def ppo_algorithm() -> dict:
    return {
        "class_name": "PPO",
        "num_learning_epochs": 2,
        "num_mini_batches": 2,
        "learning_rate": 1e-3,
        "clip_param": 0.2,
        "entropy_coef": 0.0,
        "gamma": 0.99,
        "lam": 0.95,
        "max_grad_norm": 1.0,
        "value_loss_coef": 1.0,
        "use_clipped_value_loss": True,
        "desired_kl": 0.01,
        "schedule": "adaptive",
    }


def genesis_2_2_4() -> None:
    """rsl-rl-lib 2.2.4, the version Genesis' locomotion examples pin: ``cfgs.pkl`` beside the checkpoints."""
    from rsl_rl.runners import OnPolicyRunner

    for kind in ("mlp", "lstm"):
        policy = {
            "activation": "elu",
            "actor_hidden_dims": [32, 32],
            "critic_hidden_dims": [32, 32],
            "init_noise_std": 1.0,
            "class_name": "ActorCritic",
        }
        if kind == "lstm":
            policy.update(
                class_name="ActorCriticRecurrent", rnn_type="lstm", rnn_hidden_size=16, rnn_num_layers=1
            )
        train_cfg = {
            "algorithm": ppo_algorithm(),
            "init_member_classes": {},
            "policy": policy,
            "runner": {"experiment_name": f"pendulum-{kind}", "max_iterations": 2, "seed": SEED},
            "runner_class_name": "OnPolicyRunner",
            "num_steps_per_env": 32,
            "save_interval": 100,
            "empirical_normalization": True,
            "seed": SEED,
        }
        run_dir = HERE / "logs" / f"pendulum-{kind}-2.2.4"
        run_dir.mkdir(parents=True, exist_ok=True)
        env_cfg = {"num_actions": 1, "episode_length_s": 10.0, "clip_actions": 100.0}
        obs_cfg, reward_cfg, command_cfg = (
            {"num_obs": 3, "obs_scales": {}},
            {"reward_scales": {}},
            {"num_commands": 0},
        )
        with (run_dir / "cfgs.pkl").open("wb") as fh:  # as Genesis' go2_train.py writes it
            pickle.dump([env_cfg, obs_cfg, reward_cfg, command_cfg, train_cfg], fh)
        train(run_dir, train_cfg, OnPolicyRunner, tensordict=False)


def isaaclab_3_1_1() -> None:
    """rsl-rl-lib 3.1.1 (Isaac Lab 2.x): a log-std MLP actor, then a student distilled from it."""
    from rsl_rl.runners import DistillationRunner, OnPolicyRunner

    policy = {
        "class_name": "ActorCritic",
        "activation": "elu",
        "actor_hidden_dims": [32, 32],
        "critic_hidden_dims": [32, 32],
        "init_noise_std": 1.0,
        "noise_std_type": "log",
        "actor_obs_normalization": True,
        "critic_obs_normalization": True,
    }
    cfg = {
        "seed": SEED,
        "num_steps_per_env": 32,
        "save_interval": 100,
        "clip_actions": None,
        "obs_groups": {"policy": ["policy"], "critic": ["policy"]},
        "algorithm": ppo_algorithm(),
        "policy": policy,
    }
    ppo_dir = HERE / "logs" / "rsl_rl" / "pendulum_ppo_3.1.1" / "2025-06-01_12-00-00"
    teacher = train(ppo_dir, cfg, OnPolicyRunner, tensordict=True)
    distill = {
        "seed": SEED,
        "num_steps_per_env": 32,
        "save_interval": 100,
        "clip_actions": None,
        "obs_groups": {"policy": ["policy"], "teacher": ["policy"]},
        "algorithm": {
            "class_name": "Distillation",
            "num_learning_epochs": 2,
            "learning_rate": 1e-3,
            "gradient_length": 15,
        },
        "policy": {
            "class_name": "StudentTeacher",
            "activation": "elu",
            "student_hidden_dims": [32, 32],
            "teacher_hidden_dims": [32, 32],
            "student_obs_normalization": True,
            "teacher_obs_normalization": True,
            "init_noise_std": 0.1,
        },
    }
    distill_dir = HERE / "logs" / "rsl_rl" / "pendulum_distill_3.1.1" / "2025-06-01_13-00-00"
    for run_dir, run_cfg in ((ppo_dir, cfg), (distill_dir, distill)):
        (run_dir / "params").mkdir(parents=True, exist_ok=True)
        (run_dir / "params" / "agent.yaml").write_text(yaml.dump(run_cfg, sort_keys=False))
        (run_dir / "params" / "env.yaml").write_text(yaml.dump({"env_id": ENV_ID}))
    train(distill_dir, distill, DistillationRunner, tensordict=True, teacher=teacher)


if __name__ == "__main__":
    import rsl_rl.runners

    assert Path(rsl_rl.runners.__file__).parent.parent.parent.name != "site-packages", (
        "put the old wheel first"
    )
    torch.set_num_threads(1)
    {"2.2.4": genesis_2_2_4, "3.1.1": isaaclab_3_1_1}[VERSION]()
