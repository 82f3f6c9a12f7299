"""TorchRL's own deterministic inference on the checkpoints torchrl_train.py wrote: actions and episode returns.

Runs in the trainer venv. ``python torchrl_reference.py ALGO CHECKPOINT OUT.json SEED...`` loads the checkpoint
with TorchRL (``Checkpoint(policy=...).load`` for a unified checkpoint, ``torch.load(weights_only=True)`` of
``save_render_checkpoint``'s payload), rebuilds the modules exactly as torchrl_train.py built them, and plays one
gymnasium episode per seed (``reset(seed=SEED)``: what ``zoo eval --num-envs N -n N --seed 0`` plays, env i
seeded with i). Each step runs the env's observation transforms (PPO: ``ObservationNorm`` with the frozen
VecNorm statistics and ``ClipTransform(-10, 10)``, as sota-implementations' render env does) and the policy under
``set_exploration_type(ExplorationType.DETERMINISTIC)``; DQN's one-hot action becomes its argmax. OUT.json holds
each episode's return and length, and every (raw observation, action) pair.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import gymnasium as gym
import torch
from tensordict import TensorDict
from torchrl.checkpoint import Checkpoint
from torchrl.envs import ClipTransform, Compose, ExplorationType, ObservationNorm, set_exploration_type
from torchrl_train import dqn_env, dqn_model, ppo_env, ppo_models, sac_env, sac_models

torch.set_num_threads(1)


def dqn_policy(checkpoint: Path):
    model = dqn_model(dqn_env("CartPole-v1"))
    Checkpoint(policy=model).load(checkpoint, components={"policy"})
    model.eval()

    def act(obs):
        td = model(TensorDict(observation=torch.as_tensor(obs)[None], batch_size=[1]))
        return int(td["action"][0].argmax())

    return "CartPole-v1", act


def ppo_policy(checkpoint: Path):
    payload = torch.load(checkpoint, weights_only=True)
    actor, _ = ppo_models(ppo_env(payload["env_name"]))
    actor.load_state_dict(payload["model_state_dict"])
    actor.eval()
    vecnorm = payload["vecnorm"]
    transforms = Compose(
        ObservationNorm(vecnorm["loc"], vecnorm["scale"], in_keys=["observation"], standard_normal=True),
        ClipTransform(in_keys=["observation"], low=-10, high=10),
    )

    def act(obs):
        td = transforms(TensorDict(observation=torch.as_tensor(obs)[None], batch_size=[1]))
        return actor(td)["action"][0].numpy()

    return payload["env_name"], act


def sac_policy(checkpoint: Path):
    actor, _ = sac_models(sac_env("Pendulum-v1"))
    Checkpoint(policy=actor).load(checkpoint, components={"policy"})
    actor.eval()

    def act(obs):
        return actor(TensorDict(observation=torch.as_tensor(obs)[None], batch_size=[1]))["action"][0].numpy()

    return "Pendulum-v1", act


def main() -> None:
    algo, checkpoint, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    seeds = [int(s) for s in sys.argv[4:]]
    env_id, act = {"dqn": dqn_policy, "ppo": ppo_policy, "sac": sac_policy}[algo](checkpoint)
    episodes, observations, actions = [], [], []
    with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
        for seed in seeds:
            env = gym.make(env_id)
            obs, _ = env.reset(seed=seed)
            total, length = 0.0, 0
            while True:
                action = act(obs)
                observations.append(obs.tolist())
                actions.append(action if isinstance(action, int) else action.tolist())
                obs, reward, terminated, truncated, _ = env.step(action)
                total += float(reward)
                length += 1
                if terminated or truncated:
                    break
            env.close()
            episodes.append({"seed": seed, "return": total, "length": length})
    out.write_text(
        json.dumps({"env_id": env_id, "episodes": episodes, "observations": observations, "actions": actions})
    )
    print(f"{algo}: {[e['return'] for e in episodes]}")


if __name__ == "__main__":
    main()
