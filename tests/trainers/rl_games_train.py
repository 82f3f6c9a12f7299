"""Train rl_games 1.6.5 PPO for a few epochs with its own ``Runner`` (``rl_games.torch_runner``), in-process envs.

    python rl_games_train.py OUT

writes, under OUT, the two layouts zoo reads:

- ``logs/rl_games/pendulum/<%Y-%m-%d_%H-%M-%S>/``: Pendulum-v1 (continuous, ``normalize_input``), as Isaac Lab's
  ``scripts/reinforcement_learning/rl_games/train.py`` lays it out: ``train_dir`` and ``full_experiment_name`` set,
  and the agent config dumped to ``params/agent.yaml`` (``yaml.dump(..., default_flow_style=False, sort_keys=False)``,
  Isaac Lab's ``dump_yaml``) before training;
- ``runs/cartpole_<%d-%H-%M-%S>/``: CartPole-v1 (discrete), rl_games' own default layout (``nn/`` and
  ``summaries/``, no config), trained from ``cartpole.yaml``, the user's training file (zoo's ``--model-config``),
  with ``torch_compile: False``.

rl_games' runner.py (the documented CLI) is not in the wheel; this is what it does: ``Runner().load(yaml)``, then
``run({'train': True})``. For Pendulum torch.compile stays on (rl_games' default): its keys carry ``_orig_mod.``.
"""

from __future__ import annotations

import copy
import datetime
import os
import sys
from pathlib import Path

import rl_games_vecenv
import yaml
from rl_games.torch_runner import Runner

NETWORK = {
    "name": "actor_critic",
    "mlp": {"units": [32, 32], "activation": "elu", "d2rl": False, "initializer": {"name": "default"}},
}
CONFIG = {
    "env_name": rl_games_vecenv.ENV_NAME,
    "device": "cpu",
    "device_name": "cpu",
    "reward_shaper": {"scale_value": 0.1},
    "normalize_input": True,
    "normalize_value": True,
    "value_bootstrap": True,
    "normalize_advantage": True,
    "gamma": 0.99,
    "tau": 0.95,
    "learning_rate": 1e-3,
    "lr_schedule": "adaptive",
    "kl_threshold": 0.016,
    "score_to_win": 100000,
    "grad_norm": 1.0,
    "entropy_coef": 0.0,
    "truncate_grads": True,
    "e_clip": 0.2,
    "clip_value": True,
    "num_actors": 4,
    "horizon_length": 64,
    "minibatch_size": 128,
    "mini_epochs": 4,
    "critic_coef": 2,
    "bounds_loss_coef": 0.0001,
    "save_best_after": 3,
    "save_frequency": 3,
    "max_epochs": 8,
    "player": {"deterministic": True, "games_num": 3},
}


def pendulum() -> dict:
    """Isaac Lab's rl_games PPO shape (cartpole's rl_games_ppo_cfg.yaml): one shared MLP, fixed log-std."""
    network = copy.deepcopy(NETWORK)
    network.update(
        separate=False,
        space={
            "continuous": {
                "mu_activation": "None",
                "sigma_activation": "None",
                "mu_init": {"name": "default"},
                "sigma_init": {"name": "const_initializer", "val": 0},
                "fixed_sigma": True,
            }
        },
    )
    config = {**copy.deepcopy(CONFIG), "name": "pendulum", "env_config": {"name": "Pendulum-v1", "seed": 1}}
    config["reward_shaper"] = {"scale_value": 0.01}
    return {
        "params": {
            "seed": 1,
            "torch_threads": 1,
            "algo": {"name": "a2c_continuous"},
            "model": {"name": "continuous_a2c_logstd"},
            "network": network,
            "config": config,
        }
    }


def cartpole() -> dict:
    """rl_games' ppo_cartpole.yaml shape: separate actor and critic MLPs, a discrete head."""
    network = copy.deepcopy(NETWORK)
    network.update(separate=True, space={"discrete": {}})
    network["mlp"]["activation"] = "relu"
    config = {**copy.deepcopy(CONFIG), "name": "cartpole", "env_config": {"name": "CartPole-v1", "seed": 1}}
    # torch_compile off: this run's keys have no ``_orig_mod.`` prefix (the Pendulum run keeps rl_games' default)
    config.update(
        max_epochs=6, bounds_loss_coef=0.0, lr_schedule="None", learning_rate=3e-4, torch_compile=False
    )
    return {
        "params": {
            "seed": 1,
            "torch_threads": 1,
            "algo": {"name": "a2c_discrete"},
            "model": {"name": "discrete_a2c"},
            "network": network,
            "config": config,
        }
    }


def train(cfg: dict) -> None:
    runner = Runner()
    runner.load(cfg)
    runner.run({"train": True, "play": False})


def main(out: Path, stamp: str | None = None) -> None:
    rl_games_vecenv.register()
    out.mkdir(parents=True, exist_ok=True)
    os.chdir(out)
    # Isaac Lab: logs/rl_games/<config.name>/<time stamp>, params/agent.yaml dumped before training
    agent = pendulum()
    root = Path("logs") / "rl_games" / agent["params"]["config"]["name"]
    stamp = stamp or datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    agent["params"]["config"].update(train_dir=str(root), full_experiment_name=stamp)
    (root / stamp / "params").mkdir(parents=True)
    with open(root / stamp / "params" / "agent.yaml", "w") as f:
        yaml.dump(agent, f, default_flow_style=False, sort_keys=False)
    train(agent)
    # plain rl_games: runs/<name>_<%d-%H-%M-%S>, no config beside it; the yaml is the user's file
    user = cartpole()
    Path("cartpole.yaml").write_text(yaml.dump(user, default_flow_style=False, sort_keys=False))
    train(user)


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve(), sys.argv[2] if len(sys.argv) > 2 else None)
