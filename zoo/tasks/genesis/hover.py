"""Genesis' drone hover task (``examples/drone/hover_env.py``, v0.4.5), re-implemented for zoo.

Policies trained with Genesis' ``hover_train.py`` are evaluated on this definition, so it reproduces
the example step for step: a Crazyflie (``gs.morphs.Drone``, whose propeller model turns RPM into
thrust and torque) driven by ``(1 + 0.8 * action) * 14468.43`` RPM with no latency; 17 observation
values (the target's position relative to the drone /3, the quaternion, body linear velocity /3,
body angular velocity /pi, each of the three clipped to [-1, 1], and the previous action); a new
target when the drone comes within ``at_target_threshold`` of it; the crash termination (tilt, too
far from the target, too close to the ground) and the time-out; the rewards (scales x dt), computed
after the reset as the example does. The example's quirks are kept: when any env resets, every env's
relative position is recomputed from the new targets; a reset env keeps its terminal attitude for
the yaw reward; the episode statistics stay as they were in a step where no env resets.

What differs from the example, none of it in what a policy sees: targets are drawn from the task's
own seeded ``torch.Generator``, one draw for all envs (the example draws from torch's global one, as
many values as envs are resampled, which needs a host sync); the episode statistics are 0-d tensors,
not floats; the viewer-only options (``visualize_target``, ``visualize_camera``) add nothing.
"""

from __future__ import annotations

from typing import Any

from zoo.tasks.cfgs import DRONE_HOVER
from zoo.tasks.genesis import CfgKeys, refuse
from zoo.tasks.genesis.base import GenesisTask
from zoo.tensor_env import DEFAULT_GROUP, Term, terms_of

#: The control period (100 Hz), hard-coded in the example; two physics substeps per step.
DT = 0.01
OBS_DIM = 17
NUM_ACTIONS = 4
#: The propellers' RPM at which the Crazyflie hovers; an action of ±1 is ±80% of it.
HOVER_RPM = 14468.429183500699
COMMAND_KEYS = ("pos_x_range", "pos_y_range", "pos_z_range")
#: What the env reads of the cfgs (the rewards: ``_reward_<name>``, and the reward_cfg keys each one reads).
CFG_KEYS = CfgKeys(
    DRONE_HOVER,
    env=(
        "num_actions",
        "termination_if_roll_greater_than",
        "termination_if_pitch_greater_than",
        "termination_if_close_to_ground",
        "termination_if_x_greater_than",
        "termination_if_y_greater_than",
        "termination_if_z_greater_than",
        "base_init_pos",
        "base_init_quat",
        "episode_length_s",
        "at_target_threshold",
        "clip_actions",
    ),
    obs_scales=("rel_pos", "lin_vel", "ang_vel"),
    command_ranges=COMMAND_KEYS,
    rewards={"target": (), "smooth": (), "yaw": ("yaw_lambda",), "angular": (), "crash": ()},
)

#: ``[env_cfg, obs_cfg, reward_cfg, command_cfg, train_cfg]`` as hover_train.py (v0.4.5) builds them.
DEFAULT_CFGS: list[dict[str, Any]] = [
    {
        "num_actions": 4,
        "termination_if_roll_greater_than": 180,
        "termination_if_pitch_greater_than": 180,
        "termination_if_close_to_ground": 0.1,
        "termination_if_x_greater_than": 3.0,
        "termination_if_y_greater_than": 3.0,
        "termination_if_z_greater_than": 2.0,
        "base_init_pos": [0.0, 0.0, 1.0],
        "base_init_quat": [1.0, 0.0, 0.0, 0.0],
        "episode_length_s": 15.0,
        "at_target_threshold": 0.1,
        "resampling_time_s": 3.0,  # not read by the example
        "simulate_action_latency": True,  # read, never applied: actions act in the step they are given
        "clip_actions": 1.0,
        "visualize_target": False,
        "visualize_camera": False,
        "max_visualize_FPS": 60,
    },
    {"obs_scales": {"rel_pos": 1 / 3.0, "lin_vel": 1 / 3.0, "ang_vel": 1 / 3.14159}},
    {
        "yaw_lambda": -10.0,
        "reward_scales": {"target": 10.0, "smooth": -1e-4, "yaw": 0.01, "angular": -2e-4, "crash": -10.0},
    },
    {"num_commands": 3, "pos_x_range": [-1.0, 1.0], "pos_y_range": [-1.0, 1.0], "pos_z_range": [1.0, 1.0]},
    {
        "algorithm": {
            "class_name": "PPO",
            "clip_param": 0.2,
            "desired_kl": 0.01,
            "entropy_coef": 0.004,
            "gamma": 0.99,
            "lam": 0.95,
            "learning_rate": 0.0003,
            "max_grad_norm": 1.0,
            "num_learning_epochs": 5,
            "num_mini_batches": 4,
            "schedule": "adaptive",
            "use_clipped_value_loss": True,
            "value_loss_coef": 1.0,
        },
        "actor": {
            "class_name": "MLPModel",
            "hidden_dims": [128, 128],
            "activation": "tanh",
            "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0, "std_type": "scalar"},
        },
        "critic": {"class_name": "MLPModel", "hidden_dims": [128, 128], "activation": "tanh"},
        "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
        "num_steps_per_env": 100,
        "save_interval": 100,
        "run_name": "drone-hovering",
        "logger": "tensorboard",
    },
]


class DroneHover(GenesisTask):
    """The drone hover task as rsl_rl 5's ``VecEnv`` (and zoo's :class:`~zoo.tensor_env.TensorEnv`)."""

    task_id = DRONE_HOVER
    dt = DT
    obs_dim = OBS_DIM
    num_actions = NUM_ACTIONS

    @classmethod
    def _checked(cls, cfgs: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
        cfgs = CFG_KEYS.check(DEFAULT_CFGS if cfgs is None else cfgs)
        if cfgs[0]["num_actions"] != NUM_ACTIONS:
            raise refuse(
                DRONE_HOVER, f"num_actions is {cfgs[0]['num_actions']}; the Crazyflie has 4 propellers"
            )
        return cfgs

    @classmethod
    def obs_terms(cls, cfgs: list[dict[str, Any]] | None) -> dict[str, tuple[Term, ...]]:
        """The policy group's terms; rel_pos is the target's position minus the drone's, in the world frame."""
        scales = cls._checked(cfgs)[1]["obs_scales"]
        return {
            DEFAULT_GROUP: terms_of(
                ("rel_pos", 3, float(scales["rel_pos"]), 1.0),
                ("base_quat", 4, 1.0, None),
                ("base_lin_vel", 3, float(scales["lin_vel"]), 1.0),
                ("base_ang_vel", 3, float(scales["ang_vel"]), 1.0),
                ("last_actions", 4, 1.0, None),
            )
        }

    @classmethod
    def deployment_notes(cls, cfgs: list[dict[str, Any]] | None) -> list[str]:
        """What the drone side computes around the policy, as the task does (the sidecar's ``left_to_caller``)."""
        env_cfg = cls._checked(cfgs)[0]
        return [
            "observation: the terms of obs_groups['policy'], in order, unscaled (the file applies each term's "
            "scale and clip); rel_pos = target - position (world frame), velocities in the body frame, "
            "quaternion (w, x, y, z)",
            f"actions: clip to +-{env_cfg['clip_actions']}, propeller RPM = (1 + 0.8 * action) * {HOVER_RPM:.2f}, "
            f"applied in the same step, at {1 / cls.dt:.0f} Hz",
        ]

    def _build_scene(self, gs) -> None:
        """The example's scene: a plane and the Crazyflie (cf2x), 2 substeps of 0.005 s per step."""
        self.scene = gs.Scene(
            sim_options=gs.options.SimOptions(dt=self.dt, substeps=2),
            viewer_options=gs.options.ViewerOptions(
                refresh_rate=self.env_cfg.get("max_visualize_FPS", 60),
                camera_pos=(3.0, 0.0, 3.0),
                camera_lookat=(0.0, 0.0, 1.0),
                camera_fov=40,
            ),
            vis_options=gs.options.VisOptions(rendered_envs_idx=[0]),
            # the example's RigidOptions(dt=0.01) meant 0.01 / substeps up to v0.4.5; Genesis 1.x reads a rigid
            # dt as the substep, so the SimOptions' substep (0.005 s) is left to apply, as it did then
            rigid_options=gs.options.RigidOptions(
                constraint_solver=gs.constraint_solver.Newton, enable_collision=True, enable_joint_limit=True
            ),
            show_viewer=False,
        )
        self.scene.add_entity(gs.morphs.Plane())
        self.drone = self.scene.add_entity(gs.morphs.Drone(file="urdf/drones/cf2x.urdf"))
        if self.video:
            self.video.add_camera(self.scene, pos=(0.7, 0.0, 1.3), lookat=(0.0, 0.0, 1.0), follow=self.drone)
        self.scene.build(n_envs=self.num_envs)

    def _init_buffers(self, gs, torch) -> None:
        from genesis.utils.geom import inv_quat

        super()._init_buffers(gs, torch)
        n, dev, f = self.num_envs, self.device, gs.tc_float
        self.base_init_pos = torch.tensor(self.env_cfg["base_init_pos"], dtype=f, device=dev)
        self.base_init_quat = torch.tensor(self.env_cfg["base_init_quat"], dtype=f, device=dev)
        self.inv_base_init_quat = inv_quat(self.base_init_quat)
        self.last_base_pos, self.rel_pos, self.last_rel_pos = (
            torch.zeros((n, 3), dtype=f, device=dev) for _ in range(3)
        )

    # ------------------------------------------------------------------ the example's step, piece by piece
    def _apply_actions(self) -> None:
        """The propellers' RPM from this step's action: no latency."""
        self.drone.set_propellers_rpm((1 + self.actions * 0.8) * HOVER_RPM)

    def _post_physics_step(self) -> None:
        """New targets for the drones at theirs, the crash termination and the time-out, the resets, then
        the rewards."""
        import torch

        self._resample_commands(torch.norm(self.rel_pos, dim=1) < self.env_cfg["at_target_threshold"])
        self.crash_condition = self._crashed()
        time_outs = self.episode_length_buf > self.max_episode_length
        self.reset_buf = time_outs | self.crash_condition
        self.extras["time_outs"] = time_outs.to(dtype=self.rew_buf.dtype)
        self._reset_done()
        self._add_rewards()  # after the reset, as the example computes them

    def _read_state(self) -> None:
        self.last_base_pos.copy_(self.base_pos)
        self._read_base(self.drone)
        self.rel_pos = self.commands - self.base_pos
        self.last_rel_pos = self.commands - self.last_base_pos

    def _crashed(self):
        import torch

        cfg = self.env_cfg
        return (
            (torch.abs(self.base_euler[:, 1]) > cfg["termination_if_pitch_greater_than"])
            | (torch.abs(self.base_euler[:, 0]) > cfg["termination_if_roll_greater_than"])
            | (torch.abs(self.rel_pos[:, 0]) > cfg["termination_if_x_greater_than"])
            | (torch.abs(self.rel_pos[:, 1]) > cfg["termination_if_y_greater_than"])
            | (torch.abs(self.rel_pos[:, 2]) > cfg["termination_if_z_greater_than"])
            | (self.base_pos[:, 2] < cfg["termination_if_close_to_ground"])
        )

    def _resample_commands(self, envs_idx) -> None:
        """New targets, uniform in the command ranges, for the envs of the mask ``envs_idx``."""
        import torch

        draw = torch.rand((self.num_envs, 3), device=self.device, generator=self.generator)
        columns = [
            (hi - lo) * draw[:, i] + lo
            for i, (lo, hi) in enumerate(self.command_cfg[k] for k in COMMAND_KEYS)
        ]
        torch.where(envs_idx[:, None], torch.stack(columns, dim=1), self.commands, out=self.commands)

    def _reset_idx(self, envs_idx) -> None:
        """The envs of the mask ``envs_idx`` (all when None) back to the initial pose (a step where none is
        done changes nothing)."""
        import torch

        if envs_idx is None:
            envs_idx = torch.ones((self.num_envs,), dtype=torch.bool, device=self.device)
        mask = envs_idx[:, None]
        torch.where(mask, self.base_init_pos, self.base_pos, out=self.base_pos)
        torch.where(mask, self.base_init_pos, self.last_base_pos, out=self.last_base_pos)
        torch.where(mask, self.base_init_quat, self.base_quat, out=self.base_quat)
        self.drone.set_pos(self.base_pos, zero_velocity=True, envs_idx=envs_idx)
        self.drone.set_quat(self.base_quat, zero_velocity=True, envs_idx=envs_idx)
        for buf in (self.base_lin_vel, self.base_ang_vel, self.last_actions):
            buf.masked_fill_(mask, 0.0)
        self.drone.zero_all_dofs_velocity(envs_idx)
        self.episode_length_buf.masked_fill_(envs_idx, 0)
        self._episode_stats(envs_idx)
        self._resample_commands(envs_idx)
        any_reset = envs_idx.any()  # the example recomputes every env's relative position once any env resets
        self.rel_pos = torch.where(any_reset, self.commands - self.base_pos, self.rel_pos)
        self.last_rel_pos = torch.where(any_reset, self.commands - self.last_base_pos, self.last_rel_pos)

    def _episode_stats(self, envs_idx) -> None:
        """``extras["episode"]``: each reward's mean episode sum over the envs reset, per second (kept as it
        was when none is), then those sums zeroed."""
        import torch

        previous = self.extras.get("episode", {})
        n_envs = envs_idx.sum()
        episode = {}
        for key, value in self.episode_sums.items():
            mean = torch.where(envs_idx, value, 0.0).sum() / n_envs / self.env_cfg["episode_length_s"]
            episode["rew_" + key] = torch.where(n_envs > 0, mean, previous.get("rew_" + key, mean))
            value.masked_fill_(envs_idx, 0.0)
        self.extras["episode"] = episode

    def _update_observation(self) -> None:
        import torch

        scales = self.obs_cfg["obs_scales"]
        self.obs_buf = torch.cat(
            [
                torch.clip(self.rel_pos * scales["rel_pos"], -1, 1),
                self.base_quat,
                torch.clip(self.base_lin_vel * scales["lin_vel"], -1, 1),
                torch.clip(self.base_ang_vel * scales["ang_vel"], -1, 1),
                self.last_actions,
            ],
            dim=-1,
        )

    # ------------------------------------------------------------------ rewards (the example's, unchanged)
    def _reward_target(self):
        import torch

        return torch.sum(torch.square(self.last_rel_pos), dim=1) - torch.sum(
            torch.square(self.rel_pos), dim=1
        )

    def _reward_smooth(self):
        import torch

        return torch.sum(torch.square(self.actions - self.last_actions), dim=1)

    def _reward_yaw(self):
        import torch

        yaw = self.base_euler[:, 2]
        yaw = torch.where(yaw > 180, yaw - 360, yaw) / 180 * 3.14159  # in radians
        return torch.exp(self.reward_cfg["yaw_lambda"] * torch.abs(yaw))

    def _reward_angular(self):
        import torch

        return torch.norm(self.base_ang_vel / 3.14159, dim=1)

    def _reward_crash(self):
        return self.crash_condition.to(dtype=self.rew_buf.dtype)
