"""tinyrl's trainer: REINFORCE on a discrete-action gymnasium env, one MLP of logits.

``python -m zoo_adapter_example.train --env-id CartPole-v1 --seed 1 --episodes 40 --out runs`` writes
``runs/{env_id}__tinyrl_reinforce__{seed}/policy.tinyrl``: ``torch.save(net.state_dict())`` of an
``nn.Sequential`` of ``Linear`` layers with ``tanh`` between them, the format the adapter reads.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HIDDEN = 32


def build(sizes: list[int]):
    """The policy network, observations to action logits: ``Linear`` layers of ``sizes`` (observation size
    first, action count last) with ``tanh`` between them, so that layer ``i``'s keys are ``2i.weight/bias``."""
    from torch import nn

    modules: list[nn.Module] = []
    for inputs, outputs in zip(sizes, sizes[1:], strict=False):
        modules += [nn.Linear(inputs, outputs), nn.Tanh()]
    return nn.Sequential(*modules[:-1])


def train(env_id: str, seed: int, episodes: int, out: Path) -> Path:
    import gymnasium as gym
    import torch

    torch.manual_seed(seed)
    env = gym.make(env_id)
    net = build([env.observation_space.shape[0], HIDDEN, int(env.action_space.n)])
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        log_probs, rewards, done = [], [], False
        while not done:
            dist = torch.distributions.Categorical(logits=net(torch.as_tensor(obs, dtype=torch.float32)))
            action = dist.sample()
            log_probs.append(dist.log_prob(action))
            obs, reward, terminated, truncated, _ = env.step(int(action))
            rewards.append(float(reward))
            done = terminated or truncated
        returns = torch.tensor([sum(rewards[i:]) for i in range(len(rewards))])
        returns = (returns - returns.mean()) / (returns.std() + 1e-8)
        loss = -(torch.stack(log_probs) * returns).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    run = out / f"{env_id}__tinyrl_reinforce__{seed}"
    run.mkdir(parents=True, exist_ok=True)
    torch.save(net.state_dict(), run / "policy.tinyrl")
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-id", default="CartPole-v1")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--out", type=Path, default=Path("runs"))
    args = parser.parse_args()
    print(train(args.env_id, args.seed, args.episodes, args.out))


if __name__ == "__main__":
    main()
