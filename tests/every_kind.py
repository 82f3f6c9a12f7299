"""A model of every kind the registry holds, written by its real library, and the env it was made for.

Shared by the tests that must meet every kind: tests/test_space_mismatch.py (each against an env of the wrong
kind) and tests/test_lanes.py (each rolled out whole and split across processes). CleanRL's layouts come from
zoo's model classes (and CleanRL's own flax modules for the JAX scripts), Stable-Baselines3 and sb3-contrib's
``save``, skrl's trainer, rsl_rl's runner; the other libraries' runs are committed (tests/data/trainer_runs).
The fixtures are session-scoped (registered in conftest.py): each test worker writes them once.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

import pytest
from helpers import make_run

from zoo.registry import load_registry

DISCRETE_ON_BOX = ("acts on a Discrete action space", "Pendulum-v1's is Box(1,)")
BOX_ON_DISCRETE = ("acts on a Box action space", "CartPole-v1's is Discrete(2)")
IMAGES_ON_VECTOR = ("reads image observations", "CartPole-v1's are vector observations, Box(4,)")

#: entry -> (the env its model is made for, an env of another kind, what the error says of each side)
WRONG_KIND = {
    **{
        name: ("CartPole-v1", "Pendulum-v1", DISCRETE_ON_BOX) for name in ("dqn", "c51", "dqn_jax", "c51_jax")
    },
    **{
        name: ("Pendulum-v1", "CartPole-v1", BOX_ON_DISCRETE)
        for name in (
            "ppo_continuous_action",
            "ddpg_continuous_action",
            "td3_continuous_action",
            "td3_continuous_action_jax",
            "ddpg_continuous_action_jax",
        )
    },
    **{
        name: ("BreakoutNoFrameskip-v4", "CartPole-v1", IMAGES_ON_VECTOR)
        for name in (
            "dqn_atari",
            "c51_atari",
            "qdagger_dqn_atari_impalacnn",
            "dqn_atari_jax",
            "c51_atari_jax",
            "qdagger_dqn_atari_jax_impalacnn",
        )
    },
    "ppo_atari_envpool_xla_jax_scan": ("Breakout-v5", "CartPole-v1", IMAGES_ON_VECTOR),
    **{
        name: ("CartPole-v1", "Pendulum-v1", DISCRETE_ON_BOX)
        for name in ("sb3_ppo", "sb3_a2c", "sb3_dqn", "sb3_qrdqn", "sb3_trpo", "sb3_ppo_lstm", "sb3_ppo_mask")
    },
    **{
        name: ("Pendulum-v1", "CartPole-v1", BOX_ON_DISCRETE)
        for name in ("sb3_sac", "sb3_td3", "sb3_ddpg", "sb3_tqc", "sb3_ars", "sb3_crossq")
    },
    **{
        name: ("Pendulum-v1", "CartPole-v1", BOX_ON_DISCRETE)
        for name in ("rsl_ppo", "skrl_ppo", "skrl_ppo_rnn", "deprl_mpo")
    },
    # rl_games: the committed real runs (tests/data/trainer_runs/rl_games), Pendulum-v1's continuous actor
    "rl_games_ppo": ("Pendulum-v1", "CartPole-v1", BOX_ON_DISCRETE),
    "torchrl_dqn": ("CartPole-v1", "Pendulum-v1", DISCRETE_ON_BOX),
    **{name: ("Pendulum-v1", "CartPole-v1", BOX_ON_DISCRETE) for name in ("torchrl_ppo", "torchrl_sac")},
    # Tianshou's committed runs (tests/data/trainer_runs/tianshou): their policy.pt says the policy's kind
    "tianshou_dqn": ("CartPole-v1", "Pendulum-v1", DISCRETE_ON_BOX),
    "tianshou_ppo": ("Pendulum-v1", "CartPole-v1", BOX_ON_DISCRETE),
    # Sample Factory's committed GRU run (tests/data/trainer_runs): its head's 2 outputs could be a Gaussian's, so the
    # env that config.json names says the kind
    "sf_appo": ("CartPole-v1", "Pendulum-v1", DISCRETE_ON_BOX),
    # a policy class has no kind of its own: its first actions are checked against the env's space
    "custom": (
        "Pendulum-v1",
        "CartPole-v1",
        ("first actions (before any step) do not fit CartPole-v1's action space Discrete(2)",),
    ),
}
#: Beyond the registry: the other kinds an entry meets (a categorical skrl policy, an MLP on frames).
MORE = {
    "rl_games_ppo:discrete": ("CartPole-v1", "Pendulum-v1", DISCRETE_ON_BOX),
    "skrl_ppo:categorical": ("CartPole-v1", "Pendulum-v1", DISCRETE_ON_BOX),
    "dqn:frames": (
        "CartPole-v1",
        "BreakoutNoFrameskip-v4",
        (
            "dqn reads vector observations",
            "BreakoutNoFrameskip-v4's are image observations, Box(210, 160, 3)",
        ),
    ),
}
TRAINED = ("rsl_ppo", "skrl_ppo", "skrl_ppo_rnn", "skrl_ppo:categorical")
#: Runs that a library training in its own venv wrote, committed (tests/data/trainer_runs/README.md):
#: case -> (the run under tests/data/trainer_runs, a glob; the flags it is read with).
COMMITTED: dict[str, tuple[str, tuple[str, ...]]] = {
    "rl_games_ppo": ("rl_games/logs/rl_games/pendulum/2026-12-06_09-00-00", ()),
    "rl_games_ppo:discrete": ("rl_games/runs/cartpole_06-09-00-52", ()),
    "deprl_mpo": ("deprl/runs/Pendulum-v1_dep", ()),
    "torchrl_dqn": ("torchrl/dqn/checkpoints", ()),
    "torchrl_ppo": ("torchrl/ppo", ()),
    "torchrl_sac": ("torchrl/ppo", ("--exp-name", "torchrl_sac")),
    "tianshou_dqn": ("tianshou/CartPole-v1/DQNExperiment_*/exp_seed=42", ()),
    "tianshou_ppo": ("tianshou/Pendulum-v1/PPOExperiment_*/exp_seed=42", ()),
    "sf_appo": ("sample_factory/train_dir/cartpole_gru", ()),
}


def committed_run(case: str) -> tuple[Path, tuple[str, ...]]:
    pattern, flags = COMMITTED[case]
    return next((Path(__file__).parent / "data" / "trainer_runs").glob(pattern)), flags


CLEANRL_TORCH = (
    "dqn",
    "c51",
    "ppo_continuous_action",
    "ddpg_continuous_action",
    "td3_continuous_action",
    "dqn_atari",
    "c51_atari",
    "qdagger_dqn_atari_impalacnn",
)
SB3_CLASSES = {
    "sb3_ppo": "stable_baselines3:PPO",
    "sb3_a2c": "stable_baselines3:A2C",
    "sb3_dqn": "stable_baselines3:DQN",
    "sb3_sac": "stable_baselines3:SAC",
    "sb3_td3": "stable_baselines3:TD3",
    "sb3_ddpg": "stable_baselines3:DDPG",
    "sb3_qrdqn": "sb3_contrib:QRDQN",
    "sb3_tqc": "sb3_contrib:TQC",
    "sb3_trpo": "sb3_contrib:TRPO",
    "sb3_ars": "sb3_contrib:ARS",
    "sb3_crossq": "sb3_contrib:CrossQ",
    "sb3_ppo_lstm": "sb3_contrib:RecurrentPPO",
    "sb3_ppo_mask": "sb3_contrib:MaskablePPO",
}


# ----------------------------------------------------------------------------- the models, as the libraries write them
def entry_name(case: str) -> str:
    return case.split(":")[0]


def _cleanrl_run(root: Path, case: str, env_id: str) -> Path:
    name = entry_name(case)
    if name in CLEANRL_TORCH:
        return make_run(root, env_id, name)
    run = root / "runs" / f"{env_id}__{name}__1__1700000000"
    _save_flax(run / f"{name}.cleanrl_model", name)
    return run


def _save_flax(path: Path, script: str) -> None:
    """What the JAX script's ``--save-model`` writes: ``flax.serialization.to_bytes`` of its own modules' params
    (classes from the cleanrl wheel, as tests/test_cleanrl_flax_models.py builds them)."""
    import flax.serialization
    import jax
    import numpy as np
    from test_cleanrl_flax_models import _script_args, _wheel_classes
    from test_cleanrl_jax import _save_actor_critics, _save_c51, _save_dqn

    path.parent.mkdir(parents=True, exist_ok=True)
    if script == "dqn_jax":
        _save_dqn(path.parent)
        return
    if script == "c51_jax":
        _save_c51(path.parent)
        return
    if script in ("td3_continuous_action_jax", "ddpg_continuous_action_jax"):
        _save_actor_critics(path.parent, script, critics=2 if script.startswith("td3") else 1, seed=1)
        return
    classes, key, frames = _wheel_classes(script), jax.random.PRNGKey(0), np.zeros((1, 4, 84, 84), np.float32)
    if script in ("dqn_atari_jax", "qdagger_dqn_atari_jax_impalacnn"):
        saved = classes["QNetwork"](action_dim=4).init(key, frames)
    elif script == "c51_atari_jax":
        args = _script_args(script, [])
        saved = {
            "model_weights": classes["QNetwork"](action_dim=4, n_atoms=args["n_atoms"]).init(key, frames),
            "args": args,
        }
    else:  # ppo_atari_envpool_xla_jax_scan: [vars(args), [network, actor, critic]]
        network = classes["Network"]()
        network_params = network.init(key, frames)
        hidden = network.apply(network_params, frames)
        parts = [
            network_params,
            classes["Actor"](action_dim=4).init(key, hidden),
            classes["Critic"]().init(key, hidden),
        ]
        saved = [_script_args(script, ["--env-id", "Breakout-v5"]), parts]
    path.write_bytes(flax.serialization.to_bytes(saved))


def _sb3_model(root: Path, name: str, env_id: str) -> Path:
    """The algorithm built on ``env_id`` and saved by its own ``save`` (nothing learned: the spaces are the point)."""
    import importlib

    module, _, cls_name = SB3_CLASSES[name].partition(":")
    cls = getattr(importlib.import_module(module), cls_name)
    policy = "MlpLstmPolicy" if name == "sb3_ppo_lstm" else "MlpPolicy"
    kwargs = (
        {"buffer_size": 1000}
        if name in ("sb3_sac", "sb3_td3", "sb3_ddpg", "sb3_tqc", "sb3_dqn", "sb3_qrdqn", "sb3_crossq")
        else {}
    )
    path = root / load_registry().get(name).model_filename(env_id=env_id)
    root.mkdir(parents=True)
    cls(policy, env_id, device="cpu", seed=0, **kwargs).save(path)
    return path


@pytest.fixture(scope="session")
def untrained(tmp_path_factory) -> dict[str, Path]:
    """``{case: target}`` of every CleanRL and SB3 case (CleanRL run dirs, SB3 zips with rl_zoo3's hub names)."""
    root = tmp_path_factory.mktemp("kinds")
    targets = {}
    for case, (env_id, _, _) in {**WRONG_KIND, **MORE}.items():
        entry = load_registry().get(entry_name(case))
        if entry.layout.get("kind") == "flax" and find_spec("jax") is None:
            continue  # the JAX scripts' files are written by flax: their cases skip, saying so
        if entry.framework == "cleanrl":
            targets[case] = _cleanrl_run(root / case, case, env_id)
        elif entry.framework == "sb3":
            targets[case] = _sb3_model(root / case, case, env_id)
    return targets


@pytest.fixture(scope="session")
def mismatch_runs(tmp_path_factory) -> dict[str, tuple[Path, tuple[str, ...]]]:
    """``{case: (run dir, flags)}``: rsl_rl's runner and skrl's trainer, a few iterations each on the case's env;
    Sample Factory's committed run (its trainer needs a venv of its own)."""
    import skrl_rnn
    import yaml
    from test_rsl_rl import _train
    from test_skrl_rnn import _model_config
    from train_skrl import CATEGORICAL, gaussian_policy, ppo_cfg, train_isaac_lab_style

    from zoo.evaluator import single_cpu_thread

    root = tmp_path_factory.mktemp("kinds-trained")
    runs = {"rsl_ppo": (_train(root / "rsl", None).run_dir, ())}
    with single_cpu_thread("cpu"):
        for case, policy in (("skrl_ppo", gaussian_policy()), ("skrl_ppo:categorical", CATEGORICAL)):
            env_id = {**WRONG_KIND, **MORE}[case][0]
            run, _ = train_isaac_lab_style(
                ppo_cfg(policy, timesteps=64), root / case, "2026-12-01_10-00-00_ppo_torch", env_id
            )
            runs[case] = (run, ("--exp-name", "skrl_ppo"))
        run, _ = skrl_rnn.train("lstm", root / "rnn", "26-12-01_10-00-00-000000_PPO_RNN", timesteps=64)
        config = root / "lstm.yaml"
        config.write_text(yaml.safe_dump(_model_config("lstm")))
        runs["skrl_ppo_rnn"] = (run, ("--exp-name", "skrl_ppo_rnn", "--model-config", config))
    return runs
