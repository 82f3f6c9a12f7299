"""What zoo's Genesis tasks do alike: :class:`GenesisTask`, the frame each task fills in.

Genesis' Go2 and hover examples share the frame of a step (clip the action, apply it, step the
scene, read the state, then rewards, commands, terminations and resets in the example's own order,
then the observation) and their reward and video plumbing; each task keeps what is its own: the
config it honours, the scene, the state it reads, the observation, the rewards, the termination and
the reset. Genesis and torch are imported only when a task is built.
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from zoo.tasks.genesis import EpisodeVideo, ensure_init, import_genesis
from zoo.tensor_env import DEFAULT_GROUP


class GenesisTask(ABC):
    """A Genesis example's env as rsl_rl 5's ``VecEnv`` (and zoo's :class:`~zoo.tensor_env.TensorEnv`)."""

    #: The task's id in :data:`zoo.tensor_env.TASKS`.
    task_id: ClassVar[str]
    #: The control period, hard-coded in the example.
    dt: ClassVar[float]
    #: The policy group's size and the action's (a config that says otherwise is refused).
    obs_dim: ClassVar[int]
    num_actions: ClassVar[int]

    @classmethod
    @abstractmethod
    def _checked(cls, cfgs: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
        """The cfgs this definition honours (the defaults for None); a one-line refusal for any other."""

    @classmethod
    @abstractmethod
    def deployment_notes(cls, cfgs: list[dict[str, Any]] | None) -> list[str]:
        """What a deployment computes around the exported policy, in words, without building anything."""

    @classmethod
    def spaces(cls, cfgs: list[dict[str, Any]] | None) -> tuple[Any, Any]:
        """``(Dict(policy: Box(obs_dim)), Box(±clip_actions, num_actions))``, without building anything."""
        import numpy as np
        from gymnasium import spaces

        clip = float(cls._checked(cfgs)[0]["clip_actions"])
        obs = spaces.Dict({DEFAULT_GROUP: spaces.Box(-np.inf, np.inf, (cls.obs_dim,), np.float32)})
        return obs, spaces.Box(-clip, clip, (cls.num_actions,), np.float32)

    def __init__(
        self,
        num_envs: int,
        device: str,
        seed: int,
        cfgs: list[dict[str, Any]] | None = None,
        video_dir: str | None = None,
    ):
        import torch

        cfgs = copy.deepcopy(self._checked(cfgs))
        ensure_init(device)
        gs = import_genesis()
        self.env_cfg, self.obs_cfg, self.reward_cfg, self.command_cfg = cfgs[:4]
        self.cfg = self.env_cfg
        self.num_envs = num_envs
        self.device = gs.device
        self.max_episode_length = math.ceil(self.env_cfg["episode_length_s"] / self.dt)
        self.reward_scales = self._step_reward_scales()
        self.generator = torch.Generator(self.device).manual_seed(seed)
        self.video = EpisodeVideo(video_dir, fps=round(1 / self.dt)) if video_dir else None
        self._build_scene(gs)
        self._init_buffers(gs, torch)
        self.reset()

    def reseed(self, seed: int) -> None:
        """Back to the state a fresh build with ``seed`` starts in, the scene kept: the generator seeded,
        the buffers as :meth:`_init_buffers` makes them, every env reset. ``zoo watch`` evaluates each
        checkpoint on one scene this way, so Genesis compiles its kernels once per watch, not per checkpoint."""
        import torch

        self.generator.manual_seed(seed)
        self._init_buffers(import_genesis(), torch)
        self.reset()

    @property
    def videos_written(self) -> list:
        return self.video.written if self.video else []

    @property
    def video_failures(self) -> list[str]:
        return self.video.failures if self.video else []

    def _step_reward_scales(self) -> dict[str, float]:
        """Each reward's weight per step: the config's scale x dt, as the example multiplies it."""
        return {name: float(scale) * self.dt for name, scale in self.reward_cfg["reward_scales"].items()}

    @abstractmethod
    def _build_scene(self, gs) -> None:
        """The example's scene in ``self.scene`` (with the video camera, when there is one), built."""

    def _init_buffers(self, gs, torch) -> None:
        """The buffers both examples keep; a task adds its own after these."""
        n, dev, f = self.num_envs, self.device, gs.tc_float
        self.base_pos, self.base_lin_vel, self.base_ang_vel, self.base_euler = (
            torch.zeros((n, 3), dtype=f, device=dev) for _ in range(4)
        )
        self.base_quat = torch.zeros((n, 4), dtype=f, device=dev)
        self.actions = torch.zeros((n, self.num_actions), dtype=f, device=dev)
        self.last_actions = torch.zeros_like(self.actions)
        self.commands = torch.zeros((n, 3), dtype=f, device=dev)
        self.rew_buf = torch.zeros((n,), dtype=f, device=dev)
        self.episode_length_buf = torch.zeros((n,), dtype=gs.tc_int, device=dev)
        self.episode_sums = {name: torch.zeros((n,), dtype=f, device=dev) for name in self.reward_scales}
        self.extras: dict[str, Any] = {}

    # ------------------------------------------------------------------ the VecEnv interface
    def reset(self):
        """Every env back to its initial state (new commands); the first observations."""
        import torch

        self.reset_buf = torch.ones((self.num_envs,), dtype=torch.bool, device=self.device)
        self._reset_idx(None)
        self._update_observation()
        return self.get_observations()

    def get_observations(self):
        from tensordict import TensorDict

        return TensorDict({DEFAULT_GROUP: self.obs_buf}, batch_size=[self.num_envs])

    def step(self, actions):
        """One control step: ``(obs, rewards, dones, extras)``; a done env is reset before its obs is taken.

        What follows the physics (rewards, commands, terminations, resets) is the task's
        :meth:`_post_physics_step`, in its example's order."""
        import torch

        clip = self.env_cfg["clip_actions"]
        self.actions.copy_(torch.clip(actions, -clip, clip))
        self._apply_actions()
        self.scene.step()
        self.episode_length_buf += 1
        self._read_state()
        if self.video:
            self.video.frame()
        self._post_physics_step()
        self._update_observation()
        self.last_actions.copy_(self.actions)
        return self.get_observations(), self.rew_buf, self.reset_buf, self.extras

    def close(self) -> None:
        """Write the video of the episode in progress and free the scene; Genesis stays initialised (other
        tasks may follow in this process)."""
        if self.video:
            self.video.close()
        self.scene.destroy()

    # ------------------------------------------------------------------ the example's step, piece by piece
    @abstractmethod
    def _apply_actions(self) -> None:
        """Drive the robot from ``actions`` (clipped) and ``last_actions``, before the scene steps."""

    @abstractmethod
    def _read_state(self) -> None:
        """The state the step reached, read from the scene into the buffers (:meth:`_read_base` for the base)."""

    @abstractmethod
    def _post_physics_step(self) -> None:
        """Rewards, commands, ``reset_buf`` and ``extras["time_outs"]``, and the resets
        (:meth:`_reset_done`), in the example's order."""

    @abstractmethod
    def _reset_idx(self, envs_idx) -> None:
        """The envs of the mask ``envs_idx`` (all when None) back to the initial state, as the example resets."""

    @abstractmethod
    def _update_observation(self) -> None:
        """``obs_buf``: the policy group's observation of the current state."""

    def _read_base(self, body) -> Any:
        """``body``'s position, quaternion, attitude (degrees, relative to the initial one) and body-frame
        velocities into the base buffers; the inverse of its quaternion, for the task's own terms."""
        from genesis.utils.geom import inv_quat, quat_to_xyz, transform_by_quat, transform_quat_by_quat

        self.base_pos.copy_(body.get_pos())
        self.base_quat.copy_(body.get_quat())
        relative_quat = transform_quat_by_quat(self.inv_base_init_quat, self.base_quat)
        self.base_euler.copy_(quat_to_xyz(relative_quat, rpy=True, degrees=True))
        inv_base_quat = inv_quat(self.base_quat)
        self.base_lin_vel.copy_(transform_by_quat(body.get_vel(), inv_base_quat))
        self.base_ang_vel.copy_(transform_by_quat(body.get_ang(), inv_base_quat))
        return inv_base_quat

    def _add_rewards(self) -> None:
        self.rew_buf.zero_()
        for name, scale in self.reward_scales.items():
            rew = getattr(self, "_reward_" + name)() * scale
            self.rew_buf += rew
            self.episode_sums[name] += rew

    def _reset_done(self) -> None:
        """The envs of ``reset_buf`` reset, env 0's video episode ended first when it is one of them."""
        if self.video:
            self.video.step_done(self.reset_buf[0])
        self._reset_idx(self.reset_buf)
