"""Train small, real rsl_rl runs (rsl-rl-lib's ``OnPolicyRunner``, PPO on Pendulum-v1) in Isaac Lab's layout.

zoo's docs show its rsl_rl support on these runs, and the tests train the same way (``tests/helpers.py`` and the
rsl_rl test modules import from here). Each run is what Isaac Lab's ``train.py`` leaves::

    {out}/rsl_rl/pendulum_{kind}/{stamp}/model_{iter}.pt   # runner.save after every --iterations (model_1, model_2)
    {out}/rsl_rl/pendulum_{kind}/{stamp}/params/agent.yaml # the runner config
    {out}/rsl_rl/pendulum_{kind}/{stamp}/params/env.yaml   # the env config

with ``kind`` one of

- ``mlp`` (an ``MLPModel`` actor), ``lstm`` or ``gru`` (an ``RNNModel`` actor: one LSTM layer, two GRU layers)
  on gymnasium's Pendulum-v1;
- ``camera``: a ``CNNModel`` actor (a CNN with BatchNorm for the image, an MLP) on ``PendulumCamera-v0``
  (``examples/pendulum_camera.py``: a 12x12 image of the rod beside its velocity and height), reading the groups
  in the order ``[velocity, height, camera]``, not the Dict's;
- ``teacher``: an MLP actor on a privileged group (Pendulum's observation plus the true angle, which a deployed
  robot would not have), and ``student``: a 2-layer GRU distilled from it (rsl-rl-lib's ``DistillationRunner``)
  that reads only Pendulum's observation. ``student`` loads the latest ``teacher`` of the same ``--stamp``.

Every actor normalizes its observations (``EmpiricalNormalization``) and acts through a Gaussian. The env is 8
gymnasium envs in a ``SyncVectorEnv`` behind rsl_rl's ``VecEnv`` contract (:class:`GymVecEnv`).

Why: a few iterations are far from solving Pendulum, but the files are the real library's, so ``zoo check``,
``eval`` and ``export`` have a true rsl_rl checkpoint (and its config) to read. Seeded (the config's seed 7) and
on one torch thread, so a rerun on the same machine and versions writes the same weights; ``--stamp`` names the
run dir (Isaac Lab names it by the start time) so that the docs can name it::

    python examples/train_rsl_rl.py [--out logs] [--kinds mlp,lstm,gru] [--checkpoints 2] [--iterations 2]
                                    [--stamp 2026-11-30_10-00-00]

It needs the ``rsl`` extra (rsl-rl-lib 5.x and tensordict); a few seconds per run on one CPU core.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
import yaml

KINDS = ("mlp", "lstm", "gru", "camera", "teacher", "student")
#: The Gaussian every actor here acts through.
GAUSSIAN = {"class_name": "GaussianDistribution", "init_std": 1.0, "std_type": "scalar"}
#: The camera actor's CNN (BatchNorm after the first conv) and the groups it reads, in the config's order.
CNN_CFG = {
    "output_channels": [4, 8],
    "kernel_size": 3,
    "stride": 2,
    "norm": ["batch", "none"],
    "activation": "elu",
}
CAMERA_GROUPS = ["velocity", "height", "camera"]


class GymVecEnv:
    """rsl_rl's ``VecEnv`` contract over a gymnasium vector env: TensorDict observations, same-step resets."""

    def __init__(self, env_id: str, num_envs: int, seed: int):
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


class CameraVecEnv(GymVecEnv):
    """rsl_rl's VecEnv over a Dict env: one TensorDict group per key."""

    def _tensordict(self, obs):
        from tensordict import TensorDict

        groups = {key: torch.as_tensor(value, dtype=torch.float32) for key, value in obs.items()}
        return TensorDict(groups, batch_size=[self.num_envs])


class PrivilegedVecEnv(GymVecEnv):
    """Pendulum with a ``privileged`` group beside ``policy``: the observation and the true angle."""

    def _tensordict(self, obs):
        from tensordict import TensorDict

        angle = [[float(env.unwrapped.state[0])] for env in self.envs.envs]
        obs = torch.as_tensor(obs, dtype=torch.float32)
        privileged = torch.cat([obs, torch.tensor(angle, dtype=torch.float32)], dim=-1)
        return TensorDict({"policy": obs, "privileged": privileged}, batch_size=[self.num_envs])


class _Plain(yaml.SafeDumper):
    """Writes a value the config holds twice (the camera's CNN, in the actor and the critic) twice, as Isaac Lab's
    dumps do, rather than as a YAML anchor and alias."""

    def ignore_aliases(self, data) -> bool:
        return True


def train_cfg(rnn_type: str | None) -> dict:
    """An rsl-rl-lib 5.x runner config (the dict Isaac Lab's ``RslRlOnPolicyRunnerCfg`` turns into)."""
    actor = {
        "class_name": "RNNModel" if rnn_type else "MLPModel",
        "hidden_dims": [32, 32],
        "activation": "elu",
        "obs_normalization": True,
        "distribution_cfg": GAUSSIAN,
    }
    if rnn_type:
        actor.update(rnn_type=rnn_type, rnn_hidden_dim=16, rnn_num_layers=1 if rnn_type == "lstm" else 2)
    return {
        "seed": 7,
        "num_steps_per_env": 32,
        "save_interval": 50,
        "clip_actions": None,
        "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
        "algorithm": {
            "class_name": "PPO",
            "num_learning_epochs": 2,
            "num_mini_batches": 2,
            "learning_rate": 1e-3,
        },
        "actor": actor,
        "critic": {
            "class_name": "MLPModel",
            "hidden_dims": [32, 32],
            "activation": "elu",
            "obs_normalization": True,
        },
    }


def camera_cfg() -> dict:
    """PPO with a ``CNNModel`` actor and critic on the camera groups."""
    model = {
        "class_name": "CNNModel",
        "hidden_dims": [32, 32],
        "activation": "elu",
        "obs_normalization": True,
        "cnn_cfg": CNN_CFG,
    }
    return {
        **train_cfg(None),
        "obs_groups": {"actor": CAMERA_GROUPS, "critic": CAMERA_GROUPS},
        "actor": {**model, "distribution_cfg": GAUSSIAN},
        "critic": model,
    }


def teacher_cfg() -> dict:
    """PPO whose actor and critic read the privileged group."""
    return {**train_cfg(None), "obs_groups": {"actor": ["privileged"], "critic": ["privileged"]}}


def student_cfg(rnn_type: str | None) -> dict:
    """rsl-rl-lib's ``Distillation`` of :func:`teacher_cfg`'s actor into a student reading the ``policy`` group."""
    return {
        "seed": 7,
        "num_steps_per_env": 32,
        "save_interval": 50,
        "clip_actions": None,
        "obs_groups": {"student": ["policy"], "teacher": ["privileged"]},
        "algorithm": {
            "class_name": "Distillation",
            "num_learning_epochs": 2,
            "gradient_length": 16,
            "learning_rate": 1e-3,
        },
        "student": train_cfg(rnn_type)["actor"],
        "teacher": teacher_cfg()["actor"],
    }


def configure(kind: str) -> tuple[dict, GymVecEnv]:
    """The runner config and the env of one ``kind``."""
    if kind == "camera":
        import pendulum_camera  # noqa: F401 - registers the env; this folder is on the path when run as a script

        cfg, env_class, env_id = camera_cfg(), CameraVecEnv, pendulum_camera.ENV_ID
    elif kind in ("teacher", "student"):
        cfg = teacher_cfg() if kind == "teacher" else student_cfg("gru")
        env_class, env_id = PrivilegedVecEnv, "Pendulum-v1"
    else:
        cfg, env_class, env_id = train_cfg(None if kind == "mlp" else kind), GymVecEnv, "Pendulum-v1"
    return cfg, env_class(env_id, 8, seed=cfg["seed"])


def train(
    run_dir: Path,
    cfg: dict,
    env: GymVecEnv,
    checkpoints: int = 2,
    iterations: int = 2,
    teacher: Path | None = None,
):
    """One run into ``run_dir``: its config files, then ``checkpoints`` times ``runner.learn(iterations)`` and
    ``runner.save`` (rsl_rl numbers a checkpoint by its last iteration, and a resumed ``learn`` repeats that one).
    A ``Distillation`` config loads ``teacher`` (a PPO checkpoint: rsl_rl loads its actor as the teacher only).
    Returns the runner and the checkpoints."""
    from rsl_rl.runners import DistillationRunner, OnPolicyRunner

    (run_dir / "params").mkdir(parents=True)
    (run_dir / "params" / "agent.yaml").write_text(yaml.dump(cfg, Dumper=_Plain, sort_keys=False))
    (run_dir / "params" / "env.yaml").write_text(yaml.dump(env.cfg, Dumper=_Plain, sort_keys=False))
    torch.manual_seed(cfg["seed"])
    distill = cfg["algorithm"]["class_name"] == "Distillation"
    with contextlib.redirect_stdout(io.StringIO()):  # the runner prints its models and a table per iteration
        runner = (DistillationRunner if distill else OnPolicyRunner)(
            env, copy.deepcopy(cfg), log_dir=None, device="cpu"
        )
        if teacher is not None:
            runner.load(str(teacher))
    saved = []
    for _ in range(checkpoints):
        with contextlib.redirect_stdout(io.StringIO()):
            runner.learn(iterations)
        saved.append(run_dir / f"model_{runner.current_learning_iteration}.pt")
        runner.save(str(saved[-1]))
    env.envs.close()
    return runner, saved


def latest(run_dir: Path) -> Path | None:
    """A run dir's latest ``model_{iter}.pt``, if any."""
    models = sorted(run_dir.glob("model_*.pt"), key=lambda p: int(p.stem.split("_")[1]))
    return models[-1] if models else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("logs"), help="logs folder to write into [logs]")
    parser.add_argument(
        "--kinds",
        default="mlp,lstm,gru",
        help=f"comma-separated actors to train, of {','.join(KINDS)} [mlp,lstm,gru]",
    )
    parser.add_argument("--checkpoints", type=int, default=2, help="checkpoints per run [2]")
    parser.add_argument("--iterations", type=int, default=2, help="PPO iterations before each checkpoint [2]")
    parser.add_argument(
        "--stamp", default=time.strftime("%Y-%m-%d_%H-%M-%S"), help="the run dir's name [now]"
    )
    cli = parser.parse_args()
    kinds = [k.strip() for k in cli.kinds.split(",") if k.strip()]
    if unknown := sorted(set(kinds) - set(KINDS)):
        parser.error(f"unknown kind(s) {', '.join(unknown)}; known: {', '.join(KINDS)}")
    torch.set_num_threads(1)
    for kind in kinds:
        run_dir = cli.out / "rsl_rl" / f"pendulum_{kind}" / cli.stamp
        if run_dir.exists():
            parser.error(f"{run_dir} exists: give another --stamp or --out")
        teacher = latest(cli.out / "rsl_rl" / "pendulum_teacher" / cli.stamp) if kind == "student" else None
        if kind == "student" and teacher is None:
            parser.error("the student learns from a teacher: train one first (--kinds teacher,student)")
        checkpoints = train(run_dir, *configure(kind), cli.checkpoints, cli.iterations, teacher)[1]
        print(f"{kind}: {run_dir} ({', '.join(c.name for c in checkpoints)})")


if __name__ == "__main__":
    main()
