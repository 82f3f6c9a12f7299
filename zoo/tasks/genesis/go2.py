"""Genesis' Go2 walking task (``examples/locomotion/go2_env.py``, v0.4.5), re-implemented for zoo.

Policies trained with Genesis' ``go2_train.py`` are evaluated on this definition, so it reproduces
the example step for step: the 45 observation values (body angular velocity x0.25, projected
gravity, commands x(2, 2, 0.25), joint positions relative to the default pose, joint velocities
x0.05, the clipped action), the one-step action latency (the action executed is the previous one),
PD targets ``0.25 * action + default`` with kp 20 and kd 0.5, commands resampled every
``resampling_time_s``, the rewards (scales x dt, on the state before the reset), the roll/pitch
termination and the time-out after ``max_episode_length`` steps, and the reset of Genesis >= 0.3.11,
quirk included: the first observation after a reset holds the initial joint positions in Genesis'
dof order, not in the policy's. That order is Genesis 0.4's (:data:`GENESIS_04_DOF_ORDER`) whatever
Genesis runs: every policy trained with Genesis 0.3.11 - 0.4.5 saw it, while Genesis 1.x numbers the
Go2's dofs depth-first, in which the initial and the default angles happen to coincide, so that the
example's dof_pos term after a reset is zero there.

What else differs from the example is nothing a policy sees: commands are drawn from the task's own
seeded ``torch.Generator`` (the example uses torch's global one, seeded by ``gs.init``), the config
dicts are never modified (the example scales ``reward_cfg`` in place), and the episode statistics
are computed without host syncs.
"""

from __future__ import annotations

from typing import Any

from zoo.tasks.cfgs import GO2_JOINT_NAMES, GO2_WALKING, joint_names
from zoo.tasks.genesis import CfgKeys, refuse
from zoo.tasks.genesis.base import GenesisTask
from zoo.tensor_env import DEFAULT_GROUP, Term, terms_of

#: The control period (50 Hz), hard-coded in the example; two physics substeps per step.
DT = 0.02
OBS_DIM = 45
#: The Go2's joints in the order Genesis <= 0.4.5 numbers its dofs (its URDF links breadth-first, legs in file
#: order FL, FR, RL, RR); the example's reset writes the initial angles in this order into dof_pos.
GENESIS_04_DOF_ORDER = tuple(
    f"{leg}_{part}_joint" for part in ("hip", "thigh", "calf") for leg in ("FL", "FR", "RL", "RR")
)
COMMAND_KEYS = ("lin_vel_x_range", "lin_vel_y_range", "ang_vel_range")
#: What the env reads of the cfgs (the rewards: ``_reward_<name>``, and the reward_cfg keys each one reads).
CFG_KEYS = CfgKeys(
    GO2_WALKING,
    env=(
        "num_actions",
        "default_joint_angles",
        "kp",
        "kd",
        "termination_if_roll_greater_than",
        "termination_if_pitch_greater_than",
        "base_init_pos",
        "base_init_quat",
        "episode_length_s",
        "resampling_time_s",
        "action_scale",
        "clip_actions",
    ),
    obs_scales=("lin_vel", "ang_vel", "dof_pos", "dof_vel"),
    command_ranges=COMMAND_KEYS,
    rewards={
        "tracking_lin_vel": ("tracking_sigma",),
        "tracking_ang_vel": ("tracking_sigma",),
        "lin_vel_z": (),
        "action_rate": (),
        "similar_to_default": (),
        "base_height": ("base_height_target",),
    },
)

#: ``[env_cfg, obs_cfg, reward_cfg, command_cfg, train_cfg]`` as go2_train.py (v0.4.5) builds them.
DEFAULT_CFGS: list[dict[str, Any]] = [
    {
        "num_actions": 12,
        "default_joint_angles": {
            "FL_hip_joint": 0.0,
            "FR_hip_joint": 0.0,
            "RL_hip_joint": 0.0,
            "RR_hip_joint": 0.0,
            "FL_thigh_joint": 0.8,
            "FR_thigh_joint": 0.8,
            "RL_thigh_joint": 1.0,
            "RR_thigh_joint": 1.0,
            "FL_calf_joint": -1.5,
            "FR_calf_joint": -1.5,
            "RL_calf_joint": -1.5,
            "RR_calf_joint": -1.5,
        },
        "joint_names": [
            "FR_hip_joint",
            "FR_thigh_joint",
            "FR_calf_joint",
            "FL_hip_joint",
            "FL_thigh_joint",
            "FL_calf_joint",
            "RR_hip_joint",
            "RR_thigh_joint",
            "RR_calf_joint",
            "RL_hip_joint",
            "RL_thigh_joint",
            "RL_calf_joint",
        ],
        "kp": 20.0,
        "kd": 0.5,
        "termination_if_roll_greater_than": 10,
        "termination_if_pitch_greater_than": 10,
        "base_init_pos": [0.0, 0.0, 0.42],
        "base_init_quat": [1.0, 0.0, 0.0, 0.0],
        "episode_length_s": 20.0,
        "resampling_time_s": 4.0,
        "action_scale": 0.25,
        "simulate_action_latency": True,  # not read: the example always delays actions by one step
        "clip_actions": 100.0,
    },
    {"obs_scales": {"lin_vel": 2.0, "ang_vel": 0.25, "dof_pos": 1.0, "dof_vel": 0.05}},
    {
        "tracking_sigma": 0.25,
        "base_height_target": 0.3,
        "feet_height_target": 0.075,
        "reward_scales": {
            "tracking_lin_vel": 1.0,
            "tracking_ang_vel": 0.2,
            "lin_vel_z": -1.0,
            "base_height": -50.0,
            "action_rate": -0.005,
            "similar_to_default": -0.1,
        },
    },
    {"num_commands": 3, "lin_vel_x_range": [0.5, 0.5], "lin_vel_y_range": [0, 0], "ang_vel_range": [0, 0]},
    {
        "algorithm": {
            "class_name": "PPO",
            "clip_param": 0.2,
            "desired_kl": 0.01,
            "entropy_coef": 0.01,
            "gamma": 0.99,
            "lam": 0.95,
            "learning_rate": 0.001,
            "max_grad_norm": 1.0,
            "num_learning_epochs": 5,
            "num_mini_batches": 4,
            "schedule": "adaptive",
            "use_clipped_value_loss": True,
            "value_loss_coef": 1.0,
        },
        "actor": {
            "class_name": "MLPModel",
            "hidden_dims": [512, 256, 128],
            "activation": "elu",
            "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0, "std_type": "scalar"},
        },
        "critic": {"class_name": "MLPModel", "hidden_dims": [512, 256, 128], "activation": "elu"},
        "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
        "num_steps_per_env": 24,
        "save_interval": 100,
        "run_name": "go2-walking",
        "logger": "tensorboard",
    },
]


def reward_scales(env_cfg: dict[str, Any], reward_cfg: dict[str, Any]) -> dict[str, float]:
    """Each reward's weight per step: the config's scale x dt, as the example multiplies it.

    Genesis 0.2.1 (whose env_cfg names the joints ``dof_names``) pickled cfgs.pkl after building the
    env, which had already multiplied the scales by dt in place: those are taken as they are."""
    pre_scaled = "dof_names" in env_cfg and "joint_names" not in env_cfg
    return {
        name: float(scale) * (1.0 if pre_scaled else DT)
        for name, scale in reward_cfg["reward_scales"].items()
    }


class Go2Walking(GenesisTask):
    """The Go2 walking task as rsl_rl 5's ``VecEnv`` (and zoo's :class:`~zoo.tensor_env.TensorEnv`)."""

    task_id = GO2_WALKING
    dt = DT
    obs_dim = OBS_DIM
    num_actions = 12

    @classmethod
    def _checked(cls, cfgs: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
        env_cfg, obs_cfg, *_ = cfgs = CFG_KEYS.check(DEFAULT_CFGS if cfgs is None else cfgs)
        names = joint_names(env_cfg)
        if not isinstance(names, list) or len(names) != 12 or set(names) != GO2_JOINT_NAMES:
            raise refuse(GO2_WALKING, f"joint_names must list the Go2's 12 joints once each, got {names!r}")
        if env_cfg["num_actions"] != len(names):
            raise refuse(
                GO2_WALKING, f"num_actions is {env_cfg['num_actions']}, joint_names lists {len(names)}"
            )
        if not set(env_cfg["default_joint_angles"]) >= GO2_JOINT_NAMES:
            raise refuse(GO2_WALKING, "default_joint_angles must give every Go2 joint an angle")
        if obs_cfg.get("num_obs", OBS_DIM) != OBS_DIM:
            raise refuse(
                GO2_WALKING,
                f"num_obs is {obs_cfg['num_obs']}; the example's observation has {OBS_DIM} values",
            )
        return cfgs

    @classmethod
    def obs_terms(cls, cfgs: list[dict[str, Any]] | None) -> dict[str, tuple[Term, ...]]:
        """The policy group's terms, scaled as the env scales them (dof_pos is relative to the default pose)."""
        _env_cfg, obs_cfg, *_ = cls._checked(cfgs)
        scales = obs_cfg["obs_scales"]
        lin, ang = float(scales["lin_vel"]), float(scales["ang_vel"])
        return {
            DEFAULT_GROUP: terms_of(
                ("base_ang_vel", 3, ang, None),
                ("projected_gravity", 3, 1.0, None),
                ("commands", 3, (lin, lin, ang), None),
                ("dof_pos", 12, float(scales["dof_pos"]), None),
                ("dof_vel", 12, float(scales["dof_vel"]), None),
                ("actions", 12, 1.0, None),
            )
        }

    @classmethod
    def deployment_notes(cls, cfgs: list[dict[str, Any]] | None) -> list[str]:
        """What the robot side computes around the policy, as the task does (the sidecar's ``left_to_caller``)."""
        env_cfg, *_ = cls._checked(cfgs)
        return [
            "observation: the terms of obs_groups['policy'], in order, unscaled (the file applies each term's "
            f"scale and clip); dof_pos relative to the default joint "
            f"angles, joints in the order {joint_names(env_cfg)}",
            f"actions: clip to +-{env_cfg['clip_actions']}, joint targets = {env_cfg['action_scale']} * action + "
            f"default joint angles, applied one step late (the previous action), PD kp {env_cfg['kp']} kd "
            f"{env_cfg['kd']} at {1 / DT:.0f} Hz",
        ]

    def _step_reward_scales(self) -> dict[str, float]:
        """:func:`reward_scales`: a Genesis 0.2.1 run's scales are already per step."""
        return reward_scales(self.env_cfg, self.reward_cfg)

    def _build_scene(self, gs) -> None:
        """The example's scene: a plane and the Go2 from Genesis' assets, 2 substeps of 0.01 s per step."""
        self.scene = gs.Scene(
            sim_options=gs.options.SimOptions(dt=self.dt, substeps=2),
            rigid_options=gs.options.RigidOptions(
                enable_self_collision=False, tolerance=1e-5, max_collision_pairs=20
            ),
            viewer_options=gs.options.ViewerOptions(
                camera_pos=(2.0, 0.0, 2.5),
                camera_lookat=(0.0, 0.0, 0.5),
                camera_fov=40,
                refresh_rate=int(1.0 / self.dt),
            ),
            vis_options=gs.options.VisOptions(rendered_envs_idx=[0]),
            show_viewer=False,
        )
        self.scene.add_entity(gs.morphs.URDF(file="urdf/plane/plane.urdf", fixed=True))
        self.robot = self.scene.add_entity(
            gs.morphs.URDF(
                file="urdf/go2/urdf/go2.urdf",
                pos=self.env_cfg["base_init_pos"],
                quat=self.env_cfg["base_init_quat"],
            )
        )
        if self.video:
            self.video.add_camera(self.scene, pos=(2.0, 0.0, 1.5), lookat=(0.0, 0.0, 0.3), follow=self.robot)
        self.scene.build(n_envs=self.num_envs)

    def _init_buffers(self, gs, torch) -> None:
        from genesis.utils.geom import inv_quat, transform_by_quat

        super()._init_buffers(gs, torch)
        n, dev, f = self.num_envs, self.device, gs.tc_float
        self.resampling_steps = int(self.env_cfg["resampling_time_s"] / self.dt)
        names = joint_names(self.env_cfg)
        angles = self.env_cfg["default_joint_angles"]
        self.motors_dof_idx = torch.tensor(
            [self.robot.get_joint(name).dof_start for name in names], dtype=gs.tc_int, device=dev
        )
        self.actions_dof_idx = torch.argsort(self.motors_dof_idx)
        self.robot.set_dofs_kp([self.env_cfg["kp"]] * self.num_actions, self.motors_dof_idx)
        self.robot.set_dofs_kv([self.env_cfg["kd"]] * self.num_actions, self.motors_dof_idx)
        self.global_gravity = torch.tensor([0.0, 0.0, -1.0], dtype=f, device=dev)
        self.init_base_pos = torch.tensor(self.env_cfg["base_init_pos"], dtype=f, device=dev)
        self.init_base_quat = torch.tensor(self.env_cfg["base_init_quat"], dtype=f, device=dev)
        self.inv_base_init_quat = inv_quat(self.init_base_quat)
        self.init_dof_pos = torch.tensor([angles[j.name] for j in self.robot.joints[1:]], dtype=f, device=dev)
        self.reset_dof_pos = torch.tensor(
            [angles[name] for name in GENESIS_04_DOF_ORDER], dtype=f, device=dev
        )
        self.init_qpos = torch.concatenate((self.init_base_pos, self.init_base_quat, self.init_dof_pos))
        self.init_projected_gravity = transform_by_quat(self.global_gravity, self.inv_base_init_quat)
        self.default_dof_pos = torch.tensor([angles[name] for name in names], dtype=f, device=dev)
        scales = self.obs_cfg["obs_scales"]
        self.commands_scale = torch.tensor(
            [scales["lin_vel"], scales["lin_vel"], scales["ang_vel"]], dtype=f, device=dev
        )
        self.commands_limits = tuple(
            torch.tensor(values, dtype=f, device=dev)
            for values in zip(*(self.command_cfg[k] for k in COMMAND_KEYS), strict=True)
        )
        self.projected_gravity = torch.zeros((n, 3), dtype=f, device=dev)
        self.dof_pos = torch.zeros((n, self.num_actions), dtype=f, device=dev)
        self.dof_vel = torch.zeros_like(self.dof_pos)

    # ------------------------------------------------------------------ the example's step, piece by piece
    def _apply_actions(self) -> None:
        """PD targets from the previous action: the example's one-step latency, always on."""
        target_dof_pos = self.last_actions * self.env_cfg["action_scale"] + self.default_dof_pos
        self.robot.control_dofs_position(target_dof_pos[:, self.actions_dof_idx], slice(6, 18))

    def _post_physics_step(self) -> None:
        """The rewards, new commands every ``resampling_steps``, the termination, then the resets."""
        self._add_rewards()  # on the state the step reached, before any reset
        self._resample_commands(self.episode_length_buf % self.resampling_steps == 0)
        self._check_termination()
        self._reset_done()

    def _check_termination(self) -> None:
        """``reset_buf``: time-out, |pitch| or |roll| over its limit (degrees), or the solver failed."""
        import torch

        time_outs = self.episode_length_buf > self.max_episode_length
        self.reset_buf = time_outs.clone()
        self.reset_buf |= torch.abs(self.base_euler[:, 1]) > self.env_cfg["termination_if_pitch_greater_than"]
        self.reset_buf |= torch.abs(self.base_euler[:, 0]) > self.env_cfg["termination_if_roll_greater_than"]
        self.reset_buf |= self.scene.rigid_solver.get_error_envs_mask()
        self.extras["time_outs"] = time_outs.to(dtype=self.rew_buf.dtype)

    def _read_state(self) -> None:
        from genesis.utils.geom import transform_by_quat

        inv_base_quat = self._read_base(self.robot)
        self.projected_gravity.copy_(transform_by_quat(self.global_gravity, inv_base_quat))
        self.dof_pos.copy_(self.robot.get_dofs_position(self.motors_dof_idx))
        self.dof_vel.copy_(self.robot.get_dofs_velocity(self.motors_dof_idx))

    def _resample_commands(self, envs_idx) -> None:
        """New commands for the envs of the mask ``envs_idx`` (all when None); one draw for all envs either way."""
        import torch

        lower, upper = self.commands_limits
        draw = torch.rand(
            (self.num_envs, *lower.shape), dtype=lower.dtype, device=self.device, generator=self.generator
        )
        commands = (upper - lower) * draw + lower
        if envs_idx is None:
            self.commands.copy_(commands)
        else:
            torch.where(envs_idx[:, None], commands, self.commands, out=self.commands)

    def _reset_idx(self, envs_idx) -> None:
        """The envs of the mask ``envs_idx`` (all when None) back to the initial state, as v0.3.11+ does."""
        import torch

        self.robot.set_qpos(self.init_qpos, envs_idx=envs_idx, zero_velocity=True, skip_forward=True)
        every = torch.ones((self.num_envs, 1), dtype=torch.bool, device=self.device)
        mask = every if envs_idx is None else envs_idx[:, None]
        torch.where(mask, self.init_base_pos, self.base_pos, out=self.base_pos)
        torch.where(mask, self.init_base_quat, self.base_quat, out=self.base_quat)
        torch.where(mask, self.init_projected_gravity, self.projected_gravity, out=self.projected_gravity)
        torch.where(
            mask, self.reset_dof_pos, self.dof_pos, out=self.dof_pos
        )  # Genesis 0.4's order: the quirk
        for buf in (self.base_lin_vel, self.base_ang_vel, self.dof_vel, self.actions, self.last_actions):
            buf.masked_fill_(mask, 0.0)
        self.episode_length_buf.masked_fill_(mask[:, 0], 0)
        self._episode_stats(None if envs_idx is None else mask[:, 0])
        self._resample_commands(envs_idx)

    def _episode_stats(self, envs_idx) -> None:
        """``extras["episode"]``: each reward's mean episode sum over the envs reset, per second; then zeroed."""
        import torch

        episode = {}
        for key, value in self.episode_sums.items():
            if envs_idx is None:
                mean = value.mean()
                value.zero_()
            else:
                n_envs = envs_idx.sum()
                mean = torch.where(n_envs > 0, torch.where(envs_idx, value, 0.0).sum() / n_envs, 0.0)
                value.masked_fill_(envs_idx, 0.0)
            episode["rew_" + key] = mean / self.env_cfg["episode_length_s"]
        self.extras["episode"] = episode

    def _update_observation(self) -> None:
        import torch

        scales = self.obs_cfg["obs_scales"]
        self.obs_buf = torch.concatenate(
            (
                self.base_ang_vel * scales["ang_vel"],
                self.projected_gravity,
                self.commands * self.commands_scale,
                (self.dof_pos - self.default_dof_pos) * scales["dof_pos"],
                self.dof_vel * scales["dof_vel"],
                self.actions,
            ),
            dim=-1,
        )

    # ------------------------------------------------------------------ rewards (the example's, unchanged)
    def _reward_tracking_lin_vel(self):
        import torch

        lin_vel_error = torch.sum(torch.square(self.commands[:, :2] - self.base_lin_vel[:, :2]), dim=1)
        return torch.exp(-lin_vel_error / self.reward_cfg["tracking_sigma"])

    def _reward_tracking_ang_vel(self):
        import torch

        ang_vel_error = torch.square(self.commands[:, 2] - self.base_ang_vel[:, 2])
        return torch.exp(-ang_vel_error / self.reward_cfg["tracking_sigma"])

    def _reward_lin_vel_z(self):
        import torch

        return torch.square(self.base_lin_vel[:, 2])

    def _reward_action_rate(self):
        import torch

        return torch.sum(torch.square(self.last_actions - self.actions), dim=1)

    def _reward_similar_to_default(self):
        import torch

        return torch.sum(torch.abs(self.dof_pos - self.default_dof_pos), dim=1)

    def _reward_base_height(self):
        import torch

        return torch.square(self.base_pos[:, 2] - self.reward_cfg["base_height_target"])
