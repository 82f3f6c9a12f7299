"""Train the small, real CleanRL runs in ``examples/runs`` that zoo's docs and tests can use.

It writes exactly one run per experiment, laid out the way CleanRL's scripts write
them (``runs/{env_id}__{exp_name}__{seed}__{unix_time}/``):

- ``CartPole-v1__dqn__1__*/dqn.cleanrl_model``: ``torch.save(q_network.state_dict())``
- ``CartPole-v1__c51__1__*/c51.cleanrl_model``: ``torch.save({"model_weights": ..., "args": vars(args)})``
- ``Pendulum-v1__td3_continuous_action__1__*/td3_continuous_action.cleanrl_model``:
  ``torch.save((actor.state_dict(), qf1.state_dict(), qf2.state_dict()))``

each next to a TensorBoard events file with CleanRL's hyperparameter table and its
``charts/*`` and ``losses/*`` scalars. The models are the classes in
:mod:`zoo.frameworks.cleanrl.models`, and the training loops are those of CleanRL's
``dqn.py``, ``c51.py`` and ``td3_continuous_action.py`` (replay buffer, target
networks, epsilon schedule, TD3 target smoothing and delayed policy updates) on a
gymnasium 1.x ``SyncVectorEnv`` of one env.

Why: zoo needs example runs that are genuinely trained, not random weights, so
that ``zoo check`` and ``zoo eval`` have real returns to show (CartPole: 500, the
maximum; Pendulum: about -150). The hyperparameters (the ``*Args`` classes below)
are CleanRL's, with shorter runs and faster learning so that all three runs train
in about four minutes on two CPU cores.

One addition to CleanRL: every ``eval_frequency`` steps the greedy policy plays
``eval_episodes`` episodes and the run keeps the weights of the best score (see
:class:`BestSoFar`), logged as ``charts/greedy_return``; the saved model is that
snapshot, not the last update.

Everything is seeded (seed 1) and torch runs on one thread (faster for these small
networks, and the same floating-point results whatever the core count), so a
rerun gives the same weights on the same library versions::

    python examples/train_examples.py [--out examples/runs] [--only dqn,c51,td3_continuous_action]

Previous runs of the same experiments in ``--out`` are deleted first.
"""

from __future__ import annotations

import argparse
import copy
import random
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.tensorboard import SummaryWriter

from zoo.frameworks.cleanrl.models import C51QNetwork, ContinuousQNetwork, DeterministicActor, QNetwork


@dataclass
class _EpsilonGreedyArgs:
    """What CleanRL's ``dqn.py`` and ``c51.py`` share: CleanRL's defaults except total_timesteps (500k),
    learning_rate (2.5e-4), learning_starts (10k) and train_frequency (10); ``eval_*`` drive
    :class:`BestSoFar`."""

    exp_name: str = ""
    env_id: str = "CartPole-v1"
    seed: int = 1
    total_timesteps: int = 50_000
    learning_rate: float = 1e-3
    buffer_size: int = 10_000
    gamma: float = 0.99
    target_network_frequency: int = 500
    batch_size: int = 128
    start_e: float = 1.0
    end_e: float = 0.05
    exploration_fraction: float = 0.5
    learning_starts: int = 1_000
    train_frequency: int = 1
    eval_frequency: int = 2_500
    eval_episodes: int = 10


@dataclass
class DQNArgs(_EpsilonGreedyArgs):
    exp_name: str = "dqn"
    tau: float = 1.0


@dataclass
class C51Args(_EpsilonGreedyArgs):
    exp_name: str = "c51"
    n_atoms: int = 101
    v_min: float = -100.0
    v_max: float = 100.0


@dataclass
class TD3Args:
    """CleanRL ``td3_continuous_action.py`` defaults except env_id (Hopper-v4),
    total_timesteps (1M) and learning_starts (25k); ``eval_*`` drive :class:`BestSoFar`."""

    exp_name: str = "td3_continuous_action"
    env_id: str = "Pendulum-v1"
    seed: int = 1
    total_timesteps: int = 15_000
    learning_rate: float = 3e-4
    buffer_size: int = 1_000_000
    gamma: float = 0.99
    tau: float = 0.005
    batch_size: int = 256
    policy_noise: float = 0.2
    exploration_noise: float = 0.1
    learning_starts: int = 1_000
    policy_frequency: int = 2
    noise_clip: float = 0.5
    eval_frequency: int = 1_000
    eval_episodes: int = 10


Args = DQNArgs | C51Args | TD3Args


class ReplayBuffer:
    """A fixed-size ring buffer of single-env transitions, sampled uniformly."""

    def __init__(self, size: int, obs_shape: tuple[int, ...], act_shape: tuple[int, ...], act_dtype: type):
        self.size, self.pos, self.full = size, 0, False
        self.obs = np.zeros((size, *obs_shape), dtype=np.float32)
        self.next_obs = np.zeros((size, *obs_shape), dtype=np.float32)
        self.actions = np.zeros((size, *act_shape), dtype=act_dtype)
        self.rewards = np.zeros(size, dtype=np.float32)
        self.dones = np.zeros(size, dtype=np.float32)

    def add(
        self, obs: np.ndarray, next_obs: np.ndarray, action: np.ndarray, reward: float, done: bool
    ) -> None:
        i = self.pos
        self.obs[i], self.next_obs[i], self.actions[i] = obs, next_obs, action
        self.rewards[i], self.dones[i] = reward, done
        self.pos = (i + 1) % self.size
        self.full = self.full or self.pos == 0

    def sample(self, batch_size: int) -> dict[str, torch.Tensor]:
        idx = np.random.randint(0, self.size if self.full else self.pos, size=batch_size)
        fields = ("obs", "next_obs", "actions", "rewards", "dones")
        return {name: torch.as_tensor(getattr(self, name)[idx]) for name in fields}


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def make_env(env_id: str, seed: int) -> Callable[[], gym.Env]:
    def thunk() -> gym.Env:
        env = gym.wrappers.RecordEpisodeStatistics(gym.make(env_id))
        env.action_space.seed(seed)
        return env

    return thunk


def start_run(args: Args, out: Path) -> tuple[gym.vector.SyncVectorEnv, SummaryWriter]:
    """Seed, build the 1-env vector env, and open the run's writer (CleanRL's preamble)."""
    seed_everything(args.seed)
    run_name = f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}"
    writer = SummaryWriter(str(out / run_name))
    rows = "\n".join(f"|{key}|{value}|" for key, value in asdict(args).items())
    writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" + rows)
    envs = gym.vector.SyncVectorEnv([make_env(args.env_id, args.seed)])
    return envs, writer


def log_step(writer: SummaryWriter, infos: dict, global_step: int) -> None:
    """Episode stats of envs that just finished (gymnasium 1.x: ``infos["episode"]`` under ``_episode``)."""
    if "episode" not in infos:
        return
    for i in np.flatnonzero(infos["_episode"]):
        ret, length = float(infos["episode"]["r"][i]), int(infos["episode"]["l"][i])
        print(f"global_step={global_step}, episodic_return={ret:.1f}")
        writer.add_scalar("charts/episodic_return", ret, global_step)
        writer.add_scalar("charts/episodic_length", length, global_step)


def linear_schedule(start_e: float, end_e: float, duration: int, t: int) -> float:
    slope = (end_e - start_e) / duration
    return max(slope * t + start_e, end_e)


def epsilon_greedy(
    q_network: nn.Module, envs: gym.vector.SyncVectorEnv, obs: np.ndarray, epsilon: float
) -> np.ndarray:
    if random.random() < epsilon:
        return np.array([envs.single_action_space.sample() for _ in range(envs.num_envs)])
    with torch.no_grad():
        return torch.argmax(q_network(torch.as_tensor(obs)), dim=1).numpy()


def sps(global_step: int, start_time: float) -> int:
    return int(global_step / (time.time() - start_time))


def soft_update(net: nn.Module, target: nn.Module, tau: float) -> None:
    for param, target_param in zip(net.parameters(), target.parameters(), strict=True):
        target_param.data.copy_(tau * param.data + (1.0 - tau) * target_param.data)


def greedy_return(act: Callable[[torch.Tensor], np.ndarray], env_id: str, episodes: int, seed: int) -> float:
    """Mean return of one greedy episode in each of ``episodes`` envs (reset seeds ``seed + i``)."""
    envs = gym.vector.SyncVectorEnv([make_env(env_id, seed) for _ in range(episodes)])
    obs, _ = envs.reset(seed=seed)
    returns = np.full(episodes, np.nan)
    while np.isnan(returns).any():
        with torch.no_grad():
            obs, _, _, _, infos = envs.step(act(torch.as_tensor(obs)))
        if "episode" in infos:
            first = infos["_episode"] & np.isnan(returns)
            returns[first] = infos["episode"]["r"][first]
    envs.close()
    return float(returns.mean())


class BestSoFar:
    """Greedy-evaluates the policy now and then and keeps the weights of its best score.

    The final weights of a short DQN/C51 run on CartPole swing between balancing for
    500 steps and dropping the pole after ~100, so the run saves the best greedy
    snapshot (the latest one on ties) instead of whatever the last update left.
    """

    def __init__(self, args: Args, writer: SummaryWriter, modules: list[nn.Module]):
        self.args, self.writer, self.modules = args, writer, modules
        self.score, self.state_dicts = -np.inf, [copy.deepcopy(m.state_dict()) for m in modules]

    def update(self, act: Callable[[torch.Tensor], np.ndarray], global_step: int) -> None:
        score = greedy_return(act, self.args.env_id, self.args.eval_episodes, self.args.seed)
        self.writer.add_scalar("charts/greedy_return", score, global_step)
        if score >= self.score:
            self.score, self.state_dicts = score, [copy.deepcopy(m.state_dict()) for m in self.modules]

    def restore(self) -> None:
        print(f"keeping the weights with greedy return {self.score:.1f}")
        for module, state_dict in zip(self.modules, self.state_dicts, strict=True):
            module.load_state_dict(state_dict)


def store(
    rb: ReplayBuffer,
    obs: np.ndarray,
    next_obs: np.ndarray,
    actions: np.ndarray,
    rewards: np.ndarray,
    terminations: np.ndarray,
    after_done: np.ndarray,
) -> None:
    """Add each env's transition, skipping the reset step that follows a done (autoreset NEXT_STEP).

    In NEXT_STEP mode ``next_obs`` at a truncation is the real last observation, so it
    is stored as is and only true terminations cut the bootstrap.
    """
    for i in np.flatnonzero(~after_done):
        rb.add(obs[i], next_obs[i], actions[i], rewards[i], terminations[i])


def epsilon_greedy_steps(
    args: DQNArgs | C51Args,
    envs: gym.vector.SyncVectorEnv,
    q_network: nn.Module,
    writer: SummaryWriter,
    rb: ReplayBuffer,
) -> Iterator[int]:
    """CleanRL's DQN/C51 collection step: act epsilon-greedily, log, store; yields each global step."""
    obs, _ = envs.reset(seed=args.seed)
    after_done = np.zeros(envs.num_envs, dtype=bool)
    duration = int(args.exploration_fraction * args.total_timesteps)
    for global_step in range(args.total_timesteps):
        epsilon = linear_schedule(args.start_e, args.end_e, duration, global_step)
        actions = epsilon_greedy(q_network, envs, obs, epsilon)
        next_obs, rewards, terminations, truncations, infos = envs.step(actions)
        log_step(writer, infos, global_step)
        store(rb, obs, next_obs, actions, rewards, terminations, after_done)
        obs, after_done = next_obs, terminations | truncations
        yield global_step


def train_dqn(args: DQNArgs, out: Path) -> Path:
    envs, writer = start_run(args, out)
    q_network = QNetwork(envs)
    optimizer = optim.Adam(q_network.parameters(), lr=args.learning_rate)
    target_network = QNetwork(envs)
    target_network.load_state_dict(q_network.state_dict())
    rb = ReplayBuffer(args.buffer_size, envs.single_observation_space.shape, (), np.int64)
    best = BestSoFar(args, writer, [q_network])

    start_time = time.time()
    for global_step in epsilon_greedy_steps(args, envs, q_network, writer, rb):
        if global_step > args.learning_starts:
            if global_step % args.train_frequency == 0:
                data = rb.sample(args.batch_size)
                with torch.no_grad():
                    target_max, _ = target_network(data["next_obs"]).max(dim=1)
                    td_target = data["rewards"] + args.gamma * target_max * (1 - data["dones"])
                old_val = q_network(data["obs"]).gather(1, data["actions"].unsqueeze(1)).squeeze(1)
                loss = F.mse_loss(td_target, old_val)
                if global_step % 100 == 0:
                    writer.add_scalar("losses/td_loss", loss, global_step)
                    writer.add_scalar("losses/q_values", old_val.mean().item(), global_step)
                    writer.add_scalar("charts/SPS", sps(global_step, start_time), global_step)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            if global_step % args.target_network_frequency == 0:
                soft_update(q_network, target_network, args.tau)
            if global_step % args.eval_frequency == 0:
                best.update(lambda x: q_network(x).argmax(dim=1).numpy(), global_step)

    best.restore()
    return finish(args, writer, envs, q_network.state_dict())


def train_c51(args: C51Args, out: Path) -> Path:
    envs, writer = start_run(args, out)
    q_network = C51QNetwork(envs, n_atoms=args.n_atoms, v_min=args.v_min, v_max=args.v_max)
    optimizer = optim.Adam(q_network.parameters(), lr=args.learning_rate, eps=0.01 / args.batch_size)
    target_network = C51QNetwork(envs, n_atoms=args.n_atoms, v_min=args.v_min, v_max=args.v_max)
    target_network.load_state_dict(q_network.state_dict())
    rb = ReplayBuffer(args.buffer_size, envs.single_observation_space.shape, (), np.int64)
    best = BestSoFar(args, writer, [q_network])
    atoms, delta_z = q_network.atoms, (args.v_max - args.v_min) / (args.n_atoms - 1)

    def pmfs(network: C51QNetwork, x: torch.Tensor) -> torch.Tensor:
        """Per-action return distributions, shape ``(batch, n_actions, n_atoms)``."""
        return torch.softmax(network.network(x).view(len(x), network.n, network.n_atoms), dim=2)

    start_time = time.time()
    for global_step in epsilon_greedy_steps(args, envs, q_network, writer, rb):
        if global_step > args.learning_starts:
            if global_step % args.train_frequency == 0:
                data = rb.sample(args.batch_size)
                with torch.no_grad():
                    next_pmfs_all = pmfs(target_network, data["next_obs"])
                    next_actions = (next_pmfs_all * atoms).sum(2).argmax(1)
                    next_pmfs = next_pmfs_all[torch.arange(len(next_actions)), next_actions]
                    rewards, dones = data["rewards"].unsqueeze(1), data["dones"].unsqueeze(1)
                    next_atoms = rewards + args.gamma * atoms * (1 - dones)
                    # projection onto the fixed support
                    tz = next_atoms.clamp(args.v_min, args.v_max)
                    b = (tz - args.v_min) / delta_z
                    lower, upper = b.floor().clamp(0, args.n_atoms - 1), b.ceil().clamp(0, args.n_atoms - 1)
                    # (upper == lower) would drop the mass: give it all to one side
                    d_m_l = (upper + (lower == upper).float() - b) * next_pmfs
                    d_m_u = (b - lower) * next_pmfs
                    # CleanRL's per-row index_add_ loop, done for the whole batch at once
                    offset = (torch.arange(args.batch_size) * args.n_atoms).unsqueeze(1)
                    target_pmfs = torch.zeros(args.batch_size * args.n_atoms)
                    target_pmfs.index_add_(0, (lower.long() + offset).view(-1), d_m_l.view(-1))
                    target_pmfs.index_add_(0, (upper.long() + offset).view(-1), d_m_u.view(-1))
                    target_pmfs = target_pmfs.view(args.batch_size, args.n_atoms)
                old_pmfs = pmfs(q_network, data["obs"])[torch.arange(args.batch_size), data["actions"]]
                loss = (-(target_pmfs * old_pmfs.clamp(min=1e-5, max=1 - 1e-5).log()).sum(-1)).mean()
                if global_step % 100 == 0:
                    writer.add_scalar("losses/loss", loss.item(), global_step)
                    writer.add_scalar("losses/q_values", (old_pmfs * atoms).sum(1).mean().item(), global_step)
                    writer.add_scalar("charts/SPS", sps(global_step, start_time), global_step)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            if global_step % args.target_network_frequency == 0:
                target_network.load_state_dict(q_network.state_dict())
            if global_step % args.eval_frequency == 0:
                best.update(lambda x: q_network(x).argmax(dim=1).numpy(), global_step)

    best.restore()
    return finish(args, writer, envs, {"model_weights": q_network.state_dict(), "args": asdict(args)})


def train_td3(args: TD3Args, out: Path) -> Path:
    envs, writer = start_run(args, out)
    actor, qf1, qf2 = DeterministicActor(envs), ContinuousQNetwork(envs), ContinuousQNetwork(envs)
    target_actor = DeterministicActor(envs)
    qf1_target, qf2_target = ContinuousQNetwork(envs), ContinuousQNetwork(envs)
    target_actor.load_state_dict(actor.state_dict())
    qf1_target.load_state_dict(qf1.state_dict())
    qf2_target.load_state_dict(qf2.state_dict())
    q_optimizer = optim.Adam(list(qf1.parameters()) + list(qf2.parameters()), lr=args.learning_rate)
    actor_optimizer = optim.Adam(actor.parameters(), lr=args.learning_rate)
    action_space = envs.single_action_space
    rb = ReplayBuffer(args.buffer_size, envs.single_observation_space.shape, action_space.shape, np.float32)
    best = BestSoFar(args, writer, [actor, qf1, qf2])

    start_time = time.time()
    obs, _ = envs.reset(seed=args.seed)
    after_done = np.zeros(envs.num_envs, dtype=bool)
    for global_step in range(args.total_timesteps):
        if global_step < args.learning_starts:
            actions = np.array([action_space.sample() for _ in range(envs.num_envs)])
        else:
            with torch.no_grad():
                actions = actor(torch.as_tensor(obs))
                actions += torch.normal(0, actor.action_scale * args.exploration_noise)
                actions = actions.numpy().clip(action_space.low, action_space.high)
        next_obs, rewards, terminations, truncations, infos = envs.step(actions)
        log_step(writer, infos, global_step)
        store(rb, obs, next_obs, actions, rewards, terminations, after_done)
        obs, after_done = next_obs, terminations | truncations

        if global_step > args.learning_starts:
            data = rb.sample(args.batch_size)
            with torch.no_grad():
                clipped_noise = (torch.randn_like(data["actions"]) * args.policy_noise).clamp(
                    -args.noise_clip, args.noise_clip
                ) * target_actor.action_scale
                next_state_actions = (target_actor(data["next_obs"]) + clipped_noise).clamp(
                    float(action_space.low[0]), float(action_space.high[0])
                )
                qf1_next_target = qf1_target(data["next_obs"], next_state_actions)
                qf2_next_target = qf2_target(data["next_obs"], next_state_actions)
                min_qf_next_target = torch.min(qf1_next_target, qf2_next_target).view(-1)
                next_q_value = data["rewards"] + (1 - data["dones"]) * args.gamma * min_qf_next_target
            qf1_a_values = qf1(data["obs"], data["actions"]).view(-1)
            qf2_a_values = qf2(data["obs"], data["actions"]).view(-1)
            qf1_loss = F.mse_loss(qf1_a_values, next_q_value)
            qf2_loss = F.mse_loss(qf2_a_values, next_q_value)
            qf_loss = qf1_loss + qf2_loss
            q_optimizer.zero_grad()
            qf_loss.backward()
            q_optimizer.step()

            if global_step % args.policy_frequency == 0:
                actor_loss = -qf1(data["obs"], actor(data["obs"])).mean()
                actor_optimizer.zero_grad()
                actor_loss.backward()
                actor_optimizer.step()
                for net, target in ((actor, target_actor), (qf1, qf1_target), (qf2, qf2_target)):
                    soft_update(net, target, args.tau)

            if global_step % 100 == 0:
                writer.add_scalar("losses/qf1_values", qf1_a_values.mean().item(), global_step)
                writer.add_scalar("losses/qf2_values", qf2_a_values.mean().item(), global_step)
                writer.add_scalar("losses/qf1_loss", qf1_loss.item(), global_step)
                writer.add_scalar("losses/qf2_loss", qf2_loss.item(), global_step)
                writer.add_scalar("losses/qf_loss", qf_loss.item() / 2.0, global_step)
                writer.add_scalar("losses/actor_loss", actor_loss.item(), global_step)
                writer.add_scalar("charts/SPS", sps(global_step, start_time), global_step)
            if global_step % args.eval_frequency == 0:
                best.update(lambda x: actor(x).numpy(), global_step)

    best.restore()
    return finish(args, writer, envs, (actor.state_dict(), qf1.state_dict(), qf2.state_dict()))


def finish(args: Args, writer: SummaryWriter, envs: gym.vector.SyncVectorEnv, checkpoint: object) -> Path:
    """Save ``{exp_name}.cleanrl_model`` next to the events file and close everything."""
    model_path = Path(writer.log_dir) / f"{args.exp_name}.cleanrl_model"
    torch.save(checkpoint, model_path)
    writer.close()
    envs.close()
    return model_path


EXPERIMENTS: dict[str, Callable[[Path], Path]] = {
    "dqn": lambda out: train_dqn(DQNArgs(), out),
    "c51": lambda out: train_c51(C51Args(), out),
    "td3_continuous_action": lambda out: train_td3(TD3Args(), out),
}


def remove_previous_runs(out: Path, exp_name: str) -> None:
    """Delete ``out/*__{exp_name}__*`` run dirs so the folder keeps one run per experiment."""
    for run_dir in out.glob(f"*__{exp_name}__*"):
        if run_dir.is_dir() and run_dir.name.split("__")[1] == exp_name:
            shutil.rmtree(run_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("examples/runs"), help="runs folder to write into")
    parser.add_argument("--only", default=",".join(EXPERIMENTS), help="comma-separated experiments to train")
    cli = parser.parse_args()
    names = [n.strip() for n in cli.only.split(",") if n.strip()]
    unknown = sorted(set(names) - set(EXPERIMENTS))
    if unknown:
        parser.error(f"unknown experiment(s) {', '.join(unknown)}; known: {', '.join(EXPERIMENTS)}")
    torch.set_num_threads(1)
    cli.out.mkdir(parents=True, exist_ok=True)
    for name in names:
        remove_previous_runs(cli.out, name)
        started = time.time()
        model_path = EXPERIMENTS[name](cli.out)
        print(f"{name}: {model_path} ({model_path.stat().st_size} bytes) in {time.time() - started:.0f}s")


if __name__ == "__main__":
    main()
