"""Train TorchRL (0.14) for a few hundred frames, as its sota-implementations do, and save what TorchRL saves.

Runs in the trainer venv (dev.py TRAINER_VENVS), not in zoo's. ``python torchrl_train.py dqn OUT`` trains DQN on
CartPole-v1 (sota-implementations/dqn/dqn_cartpole.py: ``MLP(ReLU, [120, 84])`` in a ``QValueActor``, ``EGreedyModule``,
``DQNLoss``) and saves ``torchrl.checkpoint.Checkpoint``s: a ``CheckpointRotation`` under ``OUT/checkpoints/``
(``checkpoint-NNNNNNNNNNNN/`` directories) during training and the final archive ``OUT/dqn_ckpt``, the path the
sota script's ``checkpoint.path`` names, without the replay buffer (its ``include_replay_buffer: false``).
``python torchrl_train.py ppo OUT`` trains PPO on Pendulum-v1 (sota-implementations/ppo/ppo_mujoco.py:
``MLP(Tanh, [64, 64])`` + ``AddStateIndependentNormalScale`` in a ``ProbabilisticActor`` with ``TanhNormal`` over the
action bounds, ``VecNorm`` + ``ClipTransform(-10, 10)`` on observations, ``ClipPPOLoss``, ``GAE``) and saves
``save_render_checkpoint``'s legacy payload ``OUT/ppo_ckpt.pt`` with the frozen ``vecnorm`` statistics, as that script
does, the same as a unified archive ``OUT/unified/ppo_ckpt`` (``format="archive"``, the default from TorchRL
0.15), and ``OUT/plain/policy_state_dict.pt``: the user's plain ``torch.save(actor.state_dict())``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from tensordict.nn import (
    AddStateIndependentNormalScale,
    NormalParamExtractor,
    TensorDictModule,
    TensorDictSequential,
)
from torchrl.checkpoint import Checkpoint, CheckpointRotation
from torchrl.collectors import Collector
from torchrl.data import Composite, LazyTensorStorage, TensorDictReplayBuffer
from torchrl.envs import (
    ClipTransform,
    ExplorationType,
    RewardSum,
    StepCounter,
    TransformedEnv,
    VecNorm,
)
from torchrl.envs.libs.gym import GymEnv
from torchrl.modules import MLP, EGreedyModule, ProbabilisticActor, QValueActor, TanhNormal, ValueOperator
from torchrl.objectives import ClipPPOLoss, DQNLoss, HardUpdate, SACLoss, SoftUpdate
from torchrl.objectives.value import GAE
from torchrl.render import save_render_checkpoint

torch.set_num_threads(1)


def dqn_env(env_name: str):
    env = TransformedEnv(GymEnv(env_name, device="cpu"))
    env.append_transform(RewardSum())
    env.append_transform(StepCounter())
    return env


def dqn_model(env) -> QValueActor:
    """sota-implementations/dqn/utils_cartpole.py's make_dqn_modules."""
    action_spec = env.specs["input_spec", "full_action_spec", "action"]
    mlp = MLP(
        in_features=env.observation_spec["observation"].shape[-1],
        activation_class=torch.nn.ReLU,
        out_features=action_spec.space.n,
        num_cells=[120, 84],
    )
    return QValueActor(module=mlp, spec=Composite(action=action_spec), in_keys=["observation"])


def train_dqn(out: Path, frames: int, seed: int) -> None:
    torch.manual_seed(seed)
    env_name = "CartPole-v1"
    model = dqn_model(dqn_env(env_name))
    greedy = EGreedyModule(annealing_num_steps=frames, eps_init=1.0, eps_end=0.05, spec=model.spec)
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(max_size=10_000), batch_size=32)
    loss = DQNLoss(value_network=model, loss_function="l2", delay_value=True)
    loss.make_value_estimator(gamma=0.99)
    updater = HardUpdate(loss, value_network_update_interval=10)
    optimizer = torch.optim.Adam(loss.parameters(), lr=2.5e-4)
    env = dqn_env(env_name)
    env.set_seed(seed)
    collector = Collector(
        create_env_fn=env,
        policy=TensorDictSequential(model, greedy),
        frames_per_batch=100,
        total_frames=frames,
        init_random_frames=100,
    )
    state, metrics = {"collected_frames": 0}, {}
    checkpoint = Checkpoint(
        policy=model,
        loss_module=loss,
        optimizer=optimizer,
        replay_buffer=buffer,
        trainer_state=state,
        environment_metadata={"env_name": env_name},
        config={"env": {"env_name": env_name}, "collector": {"total_frames": frames}, "seed": seed},
        metrics=metrics,
    )
    rotation = CheckpointRotation(out / "checkpoints", keep_last=3)
    for data in collector:
        data = data.reshape(-1)
        buffer.extend(data)
        state["collected_frames"] += data.numel()
        greedy.step(data.numel())
        for _ in range(5):
            update = loss(buffer.sample())["loss"]
            optimizer.zero_grad()
            update.backward()
            optimizer.step()
            updater.step()
        done = data["next", "done"]
        if done.any():
            metrics["train/episode_reward"] = float(data["next", "episode_reward"][done].mean())
        rotation.save(checkpoint, step=state["collected_frames"], components=_policy_only(checkpoint))
    collector.shutdown()
    # sota-implementations' checkpoint.format: archive (a zip of the same tree)
    checkpoint.save(
        out / "dqn_ckpt", components=set(checkpoint.components) - {"replay_buffer"}, format="archive"
    )


def _policy_only(checkpoint: Checkpoint) -> set[str]:
    """The rotation keeps what rendering needs (no optimizer, loss or buffer): small, as watch reads them."""
    return set(checkpoint.components) - {"replay_buffer", "loss_module", "optimizer"}


def ppo_env(env_name: str):
    env = TransformedEnv(GymEnv(env_name, device="cpu"))
    env.append_transform(VecNorm(in_keys=["observation"], decay=0.99999, eps=1e-2))
    env.append_transform(ClipTransform(in_keys=["observation"], low=-10, high=10))
    env.append_transform(RewardSum())
    env.append_transform(StepCounter())
    return env


def ppo_models(env):
    """sota-implementations/ppo/utils_mujoco.py's make_ppo_models_state."""
    n_obs = env.observation_spec["observation"].shape[-1]
    spec = env.action_spec_unbatched
    policy_mlp = MLP(
        in_features=n_obs, activation_class=torch.nn.Tanh, out_features=spec.shape[-1], num_cells=[64, 64]
    )
    for layer in policy_mlp.modules():
        if isinstance(layer, torch.nn.Linear):
            torch.nn.init.orthogonal_(layer.weight, 1.0)
            layer.bias.data.zero_()
    policy_mlp = torch.nn.Sequential(
        policy_mlp, AddStateIndependentNormalScale(spec.shape[-1], scale_lb=1e-8)
    )
    actor = ProbabilisticActor(
        TensorDictModule(policy_mlp, in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"],
        spec=env.full_action_spec_unbatched,
        distribution_class=TanhNormal,
        distribution_kwargs={"low": spec.space.low, "high": spec.space.high, "tanh_loc": False},
        return_log_prob=True,
        default_interaction_type=ExplorationType.RANDOM,
    )
    value_mlp = MLP(in_features=n_obs, activation_class=torch.nn.Tanh, out_features=1, num_cells=[64, 64])
    critic = ValueOperator(value_mlp, in_keys=["observation"])
    return actor, critic


def train_ppo(out: Path, frames: int, seed: int) -> None:
    torch.manual_seed(seed)
    env_name = "Pendulum-v1"
    env = ppo_env(env_name)
    env.set_seed(seed)
    actor, critic = ppo_models(env)
    gae = GAE(gamma=0.99, lmbda=0.95, value_network=critic, average_gae=False)
    loss = ClipPPOLoss(actor_network=actor, critic_network=critic, clip_epsilon=0.2, entropy_coeff=0.0)
    optimizer = torch.optim.Adam(loss.parameters(), lr=3e-4)
    collector = Collector(create_env_fn=env, policy=actor, frames_per_batch=256, total_frames=frames)
    collected = 0
    for data in collector:
        collected += data.numel()
        with torch.no_grad():
            data = gae(data)
        flat = data.reshape(-1)
        for _ in range(2):
            for batch in flat.split(64):
                parts = loss(batch)
                total = parts["loss_objective"] + parts["loss_critic"] + parts["loss_entropy"]
                optimizer.zero_grad()
                total.backward()
                optimizer.step()
    collector.shutdown()
    vecnorm = env.transform[0]
    frozen = {
        "loc": vecnorm.loc["observation"].detach().clone(),
        "scale": vecnorm.scale["observation"].detach().clone(),
    }
    save_render_checkpoint(
        out / "ppo_ckpt.pt",
        actor,
        env_metadata={
            "env_name": env_name,
            "env_backend": "gym",
            "env_num_envs": 1,
            "env_batch_mode": "parallel",
            "normalize_observation": True,
            "vecnorm": frozen,
            "max_episode_steps": None,
        },
        frames=collected,
        metrics={},
        config={"env": {"env_name": env_name}, "collector": {"total_frames": frames}, "seed": seed},
    )
    # the same with format="archive", save_render_checkpoint's default from TorchRL 0.15: a unified checkpoint whose
    # environment_metadata is a state dict (vecnorm's tensors)
    (out / "unified").mkdir(exist_ok=True)
    save_render_checkpoint(
        out / "unified" / "ppo_ckpt",
        actor,
        env_metadata={"env_name": env_name, "normalize_observation": True, "vecnorm": frozen},
        frames=collected,
        format="archive",
    )
    (out / "plain").mkdir(exist_ok=True)
    torch.save(actor.state_dict(), out / "plain" / "policy_state_dict.pt")


def sac_env(env_name: str):
    env = TransformedEnv(GymEnv(env_name, device="cpu"))
    env.append_transform(RewardSum())
    env.append_transform(StepCounter())
    return env


def sac_models(env):
    """sota-implementations/sac/utils.py's make_sac_agent: MLP(ReLU) giving loc and scale through
    NormalParamExtractor (biased softplus), TanhNormal over the action bounds; Q-networks on (observation, action)."""
    spec, n_obs = env.action_spec_unbatched, env.observation_spec["observation"].shape[-1]
    actor_net = MLP(
        in_features=n_obs, num_cells=[64, 64], out_features=2 * spec.shape[-1], activation_class=torch.nn.ReLU
    )
    actor_net = torch.nn.Sequential(
        actor_net, NormalParamExtractor(scale_mapping="biased_softplus_1.0", scale_lb=0.1)
    )
    actor = ProbabilisticActor(
        TensorDictModule(actor_net, in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"],
        spec=env.full_action_spec_unbatched,
        distribution_class=TanhNormal,
        distribution_kwargs={"low": spec.space.low, "high": spec.space.high, "tanh_loc": False},
        default_interaction_type=ExplorationType.RANDOM,
        return_log_prob=False,
    )
    qvalue = ValueOperator(
        MLP(
            in_features=n_obs + spec.shape[-1],
            num_cells=[64, 64],
            out_features=1,
            activation_class=torch.nn.ReLU,
        ),
        in_keys=["action", "observation"],
    )
    return actor, qvalue


def train_sac(out: Path, frames: int, seed: int) -> None:
    """A few SAC updates on Pendulum-v1, saved as sota-implementations/sac does with TorchRL's Checkpoint."""
    torch.manual_seed(seed)
    env_name = "Pendulum-v1"
    env = sac_env(env_name)
    env.set_seed(seed)
    actor, qvalue = sac_models(env)
    loss = SACLoss(actor_network=actor, qvalue_network=qvalue, num_qvalue_nets=2, loss_function="l2")
    loss.make_value_estimator(gamma=0.99)
    updater = SoftUpdate(loss, eps=0.995)
    optimizer = torch.optim.Adam(loss.parameters(), lr=3e-4)
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(max_size=10_000), batch_size=64)
    collector = Collector(
        create_env_fn=env, policy=actor, frames_per_batch=100, total_frames=frames, init_random_frames=100
    )
    for data in collector:
        buffer.extend(data.reshape(-1))
        for _ in range(5):
            parts = loss(buffer.sample())
            total = parts["loss_actor"] + parts["loss_qvalue"] + parts["loss_alpha"]
            optimizer.zero_grad()
            total.backward()
            optimizer.step()
            updater.step()
    collector.shutdown()
    Checkpoint(policy=actor, environment_metadata={"env_name": env_name}).save(
        out / "sac_ckpt", format="archive"
    )


if __name__ == "__main__":
    algo, folder = sys.argv[1], Path(sys.argv[2])
    frames = int(sys.argv[3]) if len(sys.argv) > 3 else {"dqn": 400, "ppo": 512, "sac": 300}[algo]
    folder.mkdir(parents=True, exist_ok=True)
    {"dqn": train_dqn, "ppo": train_ppo, "sac": train_sac}[algo](folder, frames, 0)
    print(f"trained {algo} into {folder}")
