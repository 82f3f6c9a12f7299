"""Train Tianshou 2.0.1 with its own high-level API, as its examples do (run in the trainer venv, no zoo).

``python tianshou_train.py dqn|ppo BASE [--seed S]`` writes Tianshou's own layout,
``BASE/<task>/<Exp>_<YYYYMMDD-HHMMSS>/exp_seed=<S>/``: ``experiment.pkl``, ``policy.pt`` (the whole pickled
Algorithm), ``log.txt``, the TensorBoard events and, for the obs-normalized PPO run, ``env_obs_rms.pkl``.

- dqn: upstream ``examples/discrete/discrete_dqn_hl.py`` (v2.0.1) on CartPole-v1, one small epoch. Upstream passes
  ``training_seed``/``test_seed`` to ``EnvFactoryRegistered``, which forwards them to ``gymnasium.make`` and
  CartPole refuses them (a bug of the example): they are left out here.
- ppo: upstream ``examples/mujoco/mujoco_ppo_hl.py`` on Pendulum-v1 (its ``MujocoEnvFactory`` normalizes
  observations: copied as tianshou_mujoco_env.py), two small epochs, the logger's ``save_interval=1`` adding a
  ``policy_epoch_<N>.pt`` per epoch (Tianshou passes its checkpoint function to on-policy trainers only).
Sizes are tiny (a few hundred env steps): the tests need a real run, not a good one.
"""

from __future__ import annotations

import argparse
import os

import torch

torch.set_num_threads(1)


def dqn(base: str, seed: int) -> None:
    from tianshou.highlevel.config import OffPolicyTrainingConfig
    from tianshou.highlevel.env import EnvFactoryRegistered, VectorEnvType
    from tianshou.highlevel.experiment import DQNExperimentBuilder, ExperimentConfig
    from tianshou.highlevel.params.algorithm_params import DQNParams

    task = "CartPole-v1"
    experiment_config = ExperimentConfig(
        persistence_base_dir=os.path.abspath(os.path.join(base, task)), watch=False, seed=seed
    )
    training_config = OffPolicyTrainingConfig(
        max_epochs=1,
        epoch_num_steps=2000,
        num_training_envs=2,
        num_test_envs=2,
        buffer_size=2000,
        batch_size=64,
        collection_step_num_env_steps=10,
        update_step_num_gradient_steps_per_sample=1 / 2,
        start_timesteps=0,
        start_timesteps_random=False,
    )
    env_factory = EnvFactoryRegistered(task=task, venv_type=VectorEnvType.DUMMY)
    builder = (
        DQNExperimentBuilder(env_factory, experiment_config, training_config)
        .with_dqn_params(
            DQNParams(
                lr=1e-3,
                gamma=0.9,
                n_step_return_horizon=3,
                target_update_freq=320,
                eps_training=0.3,
                eps_inference=0.0,
            )
        )
        .with_model_factory_default(hidden_sizes=(32, 32))
    )
    builder.build_and_run(num_experiments=1, launcher="sequential")


def ppo(base: str, seed: int) -> None:
    from tianshou.highlevel.config import OnPolicyTrainingConfig
    from tianshou.highlevel.env import VectorEnvType
    from tianshou.highlevel.experiment import ExperimentConfig, PPOExperimentBuilder
    from tianshou.highlevel.logger import LoggerFactoryDefault
    from tianshou.highlevel.params.algorithm_params import PPOParams
    from tianshou.highlevel.params.lr_scheduler import LRSchedulerFactoryFactoryLinear
    from tianshou_mujoco_env import MujocoEnvFactory

    task = "Pendulum-v1"
    experiment_config = ExperimentConfig(
        persistence_base_dir=os.path.abspath(os.path.join(base, task)), watch=False, seed=seed
    )
    training_config = OnPolicyTrainingConfig(
        max_epochs=2,
        epoch_num_steps=512,
        batch_size=64,
        num_training_envs=2,
        num_test_envs=2,
        buffer_size=256,
        collection_step_num_env_steps=256,
        update_step_num_repetitions=1,
    )
    env_factory = MujocoEnvFactory(task, obs_norm=True, venv_type=VectorEnvType.DUMMY)
    hidden_sizes = (32, 32)
    builder = (
        PPOExperimentBuilder(env_factory, experiment_config, training_config)
        .with_ppo_params(
            PPOParams(
                gamma=0.99,
                gae_lambda=0.95,
                action_bound_method="clip",
                return_scaling=True,
                ent_coef=0.0,
                vf_coef=0.25,
                max_grad_norm=0.5,
                value_clip=False,
                advantage_normalization=False,
                eps_clip=0.2,
                dual_clip=None,
                recompute_advantage=True,
                lr=3e-4,
                lr_scheduler=LRSchedulerFactoryFactoryLinear(training_config),
            )
        )
        .with_actor_factory_default(hidden_sizes, torch.nn.Tanh, continuous_unbounded=True)
        .with_critic_factory_default(hidden_sizes, torch.nn.Tanh)
        .with_logger_factory(LoggerFactoryDefault(save_interval=1))  # policy_epoch_<N>.pt each epoch
    )
    builder.build_and_run(num_experiments=1, launcher="sequential")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("algo", choices=("dqn", "ppo"))
    parser.add_argument("base")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    {"dqn": dqn, "ppo": ppo}[args.algo](args.base, args.seed)
