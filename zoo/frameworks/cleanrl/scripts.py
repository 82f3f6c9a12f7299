"""The command-line arguments each CleanRL script takes, so that a model card's "reproduce" command names
only flags the script accepts.

A run logs ``vars(args)`` as its hyperparameter table; a run trained by a modified copy of a script (zoo's
own ``examples/train_examples.py`` adds periodic greedy evaluation) logs fields the upstream script does not
have, and a command passing them would stop at the script's argument parser. The sets below are the
``Args`` dataclass fields of ``cleanrl/{script}.py`` at vwxyzjn/cleanrl fe8d8a03 (2026-04-20), the commit
the card's ``git clone`` gets; a script not listed here is not filtered.
"""

from __future__ import annotations

_COMMON = (
    "exp_name",
    "seed",
    "track",
    "wandb_project_name",
    "wandb_entity",
    "capture_video",
    "save_model",
    "upload_model",
    "hf_entity",
    "env_id",
    "total_timesteps",
    "learning_rate",
)
_TORCH = ("torch_deterministic", "cuda")
_Q = (
    "num_envs",
    "buffer_size",
    "gamma",
    "target_network_frequency",
    "batch_size",
    "start_e",
    "end_e",
    "exploration_fraction",
    "learning_starts",
    "train_frequency",
)
_C51 = (*_Q, "n_atoms", "v_min", "v_max")
_DQN = (*_Q, "tau")
_QDAGGER = (
    *_DQN,
    "teacher_policy_hf_repo",
    "teacher_model_exp_name",
    "teacher_eval_episodes",
    "teacher_steps",
    "offline_steps",
    "temperature",
)
_DDPG = (
    "buffer_size",
    "gamma",
    "tau",
    "batch_size",
    "exploration_noise",
    "learning_starts",
    "policy_frequency",
)
_TD3 = (*_DDPG, "policy_noise", "noise_clip")
_PPO = (
    "num_envs",
    "num_steps",
    "anneal_lr",
    "gamma",
    "gae_lambda",
    "num_minibatches",
    "update_epochs",
    "norm_adv",
    "clip_coef",
    "clip_vloss",
    "ent_coef",
    "vf_coef",
    "max_grad_norm",
    "target_kl",
    "batch_size",
    "minibatch_size",
    "num_iterations",
)

SCRIPT_ARGS: dict[str, frozenset[str]] = {
    name: frozenset((*_COMMON, *fields))
    for name, fields in {
        "c51": (*_TORCH, *_C51),
        "c51_atari": (*_TORCH, *_C51),
        "c51_jax": _C51,
        "c51_atari_jax": _C51,
        "dqn": (*_TORCH, *_DQN),
        "dqn_atari": (*_TORCH, *_DQN),
        "dqn_jax": _DQN,
        "dqn_atari_jax": _DQN,
        "qdagger_dqn_atari_impalacnn": (*_TORCH, *_QDAGGER),
        "qdagger_dqn_atari_jax_impalacnn": _QDAGGER,
        "ddpg_continuous_action": (*_TORCH, *_DDPG),
        "ddpg_continuous_action_jax": _DDPG,
        "td3_continuous_action": (*_TORCH, *_TD3, "num_envs"),
        "td3_continuous_action_jax": _TD3,
        "ppo_continuous_action": (*_TORCH, *_PPO),
        "ppo_atari_envpool_xla_jax_scan": (*_TORCH, *_PPO),
    }.items()
}
