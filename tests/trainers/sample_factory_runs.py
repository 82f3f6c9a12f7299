"""Sample Factory 2.1.1's own training, inference and hub loader, run in its trainer venv (no zoo here).

``train TRAIN_DIR`` trains with SF's documented gym entry (``sf_examples.train_gym_env``: its
``register_custom_components`` / ``parse_custom_args`` / ``run_rl``, as ``python -m sf_examples.train_gym_env``
does), CartPole-v1 with the default GRU core, a 2-layer LSTM, no core, and separate actor and critic weights, and
Pendulum-v1 registered the same way.

``reference TRAIN_DIR EXP ENV_ID KIND SEEDS...`` is SF's own deterministic inference, as its ``enjoy`` does it with
``--eval_deterministic=True``: ``load_from_checkpoint`` (config.json), ``create_actor_critic``, ``load_state_dict``,
then each step ``prepare_and_normalize_obs`` -> ``actor_critic(obs, rnn_states)`` -> ``argmax_actions`` and the new
rnn states. enjoy resets its env without a seed, so the episodes are driven here from ``reset(seed=s)`` of a plain
gymnasium env (what zoo's evaluator steps), one episode per seed; observations and actions are recorded.

``train-and-reference TRAIN_DIR SEEDS...`` does both, every experiment's latest checkpoint and the GRU run's best.

``hub URL REPO TRAIN_DIR`` reads a repo back as SF's ``load_from_hub`` lays it out (``train_dir/<repo name>``), with
SF's own ``load_from_hf`` first (its git ``Repository`` clone), then ``snapshot_download`` into the same folder,
then SF's ``load_from_checkpoint`` + ``create_actor_critic`` + ``load_state_dict`` on what arrived.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from sample_factory.algo.utils.action_distributions import argmax_actions
from sample_factory.algo.utils.rl_utils import prepare_and_normalize_obs
from sample_factory.envs.env_utils import register_env
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.model.model_utils import get_rnn_size
from sf_examples.train_gym_env import make_gym_env_func, parse_custom_args, register_custom_components

torch.set_num_threads(1)
COMMON = [
    "--algo=APPO",
    "--num_workers=1",
    "--num_envs_per_worker=4",
    "--batch_size=128",
    "--rollout=32",
    "--device=cpu",
    "--serial_mode=True",
    "--seed=1",
    "--encoder_mlp_layers",
    "32",
    "32",
    "--rnn_size=32",
    "--save_every_sec=1",
    "--save_best_after=500",
    "--save_best_every_sec=1",
    "--experiment_summaries_interval=1",
    "--stats_avg=10",
]
#: experiment -> its SF arguments (beyond COMMON)
RUNS = {
    "cartpole_gru": ["--env=CartPole-v1", "--train_for_env_steps=3000"],
    "cartpole_mlp": ["--env=CartPole-v1", "--use_rnn=False", "--train_for_env_steps=2000"],
    "pendulum": ["--env=Pendulum-v1", "--use_rnn=False", "--train_for_env_steps=3000"],
    "cartpole_lstm": [
        "--env=CartPole-v1",
        "--rnn_type=lstm",
        "--rnn_num_layers=2",
        "--train_for_env_steps=2000",
    ],
    # separate weights without a core: Sample Factory 2.1.1's learner cannot train them with one
    # (AttributeError: 'PackedSequence' object has no attribute 'chunk', in ActorCriticSeparateWeights._core_rnn)
    "cartpole_separate": [
        "--env=CartPole-v1",
        "--actor_critic_share_weights=False",
        "--use_rnn=False",
        "--train_for_env_steps=2000",
    ],
}


def register() -> None:
    register_custom_components()  # CartPole-v1, as sf_examples.train_gym_env registers it
    register_env("Pendulum-v1", make_gym_env_func)  # the same pattern for a continuous env


def train(train_dir: Path) -> None:
    from sample_factory.train import run_rl

    register()
    for exp, args in RUNS.items():
        cfg = parse_custom_args([*COMMON, *args, f"--experiment={exp}", f"--train_dir={train_dir}"])
        status = run_rl(cfg)
        assert status == 0, (exp, status)


def sf_policy(train_dir: Path, exp: str, env_id: str, kind: str):
    """SF's enjoy, up to the loaded actor-critic (Learner.load_checkpoint tried first: it fails on np.float64)."""
    from sample_factory.algo.learning.learner import Learner
    from sample_factory.algo.utils.make_env import make_env_func_batched
    from sample_factory.cfg.arguments import load_from_checkpoint
    from sample_factory.utils.attr_dict import AttrDict

    register()
    argv = [f"--env={env_id}", f"--experiment={exp}", f"--train_dir={train_dir}", "--device=cpu"]
    argv += ["--eval_deterministic=True", "--no_render", f"--load_checkpoint_kind={kind}"]
    cfg = load_from_checkpoint(parse_custom_args(argv, evaluation=True))
    cfg.num_envs = 1
    env = make_env_func_batched(
        cfg, env_config=AttrDict(worker_index=0, vector_index=0, env_id=0), render_mode=None
    )
    actor_critic = create_actor_critic(cfg, env.observation_space, env.action_space)
    actor_critic.eval()
    prefix = dict(latest="checkpoint", best="best")[kind]
    files = Learner.get_checkpoints(Learner.checkpoint_dir(cfg, 0), f"{prefix}_*")
    sf_load = Learner.load_checkpoint(files, torch.device("cpu"))  # None when torch refuses the file
    loaded = sf_load or torch.load(files[-1], map_location="cpu", weights_only=False)  # our own file: trusted
    actor_critic.load_state_dict(loaded["model"])
    env.close()
    return cfg, actor_critic, files[-1], sf_load is not None


def reference(train_dir: Path, exp: str, env_id: str, kind: str, seeds: list[int]) -> None:
    cfg, actor_critic, checkpoint, sf_loaded = sf_policy(train_dir, exp, env_id, kind)
    episodes, all_obs, all_actions = [], [], []
    env = gym.make(env_id)
    with torch.no_grad():
        for seed in seeds:
            obs, _ = env.reset(seed=seed)
            rnn_states = torch.zeros([1, get_rnn_size(cfg)], dtype=torch.float32)
            total, length, done = 0.0, 0, False
            ep_obs, ep_actions = [], []
            while not done:
                normalized = prepare_and_normalize_obs(actor_critic, {"obs": torch.as_tensor(obs[None])})
                out = actor_critic(normalized, rnn_states)
                actions = argmax_actions(actor_critic.action_distribution())
                rnn_states = out["new_rnn_states"]
                action = actions[0].numpy()
                ep_obs.append(np.asarray(obs, np.float32))
                ep_actions.append(action)
                obs, reward, terminated, truncated, _ = env.step(action if action.ndim else int(action))
                total += float(reward)
                length += 1
                done = terminated or truncated
            episodes.append({"seed": seed, "return": total, "length": length})
            all_obs.append(np.stack(ep_obs))
            all_actions.append(np.stack(ep_actions))
    out = train_dir / exp / f"sf_reference_{kind}.json"
    out.write_text(
        json.dumps(
            {"checkpoint": Path(checkpoint).name, "sf_load_checkpoint_ok": sf_loaded, "episodes": episodes}
        )
    )
    arrays = {f"obs_{i}": o for i, o in enumerate(all_obs)} | {
        f"actions_{i}": a for i, a in enumerate(all_actions)
    }
    np.savez(train_dir / exp / f"sf_reference_{kind}.npz", **arrays)
    print(json.dumps(episodes))


def hub(url: str, repo: str, train_dir: Path, env_id: str) -> None:
    """SF's load_from_hub layout (train_dir/<repo name>), read back by SF's own enjoy code: a line of what SF's
    load_from_hf said and the files that arrived, then :func:`reference`'s episodes."""
    import os

    os.environ["HF_ENDPOINT"] = url
    from huggingface_hub import snapshot_download

    result: dict = {}
    try:
        from sample_factory.huggingface.huggingface_utils import load_from_hf

        load_from_hf(str(train_dir), repo)
        result["load_from_hf"] = "ok"
    except Exception as exc:  # noqa: BLE001 - what SF's own loader says, recorded for the test and the docs
        result["load_from_hf"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
    name = repo.split("/")[1]
    snapshot_download(repo, local_dir=str(train_dir / name))
    folder = train_dir / name
    result["files"] = sorted(
        p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and ".cache" not in p.parts
    )
    print(json.dumps(result))
    reference(train_dir, name, env_id, "latest", [0, 1, 2])  # Sample Factory's own enjoy path on what arrived


def train_and_reference(train_dir: Path, seeds: list[int]) -> None:
    """:func:`train`, then :func:`reference` of each experiment's latest checkpoint and of the GRU run's best, in
    one process (Sample Factory's imports take seconds)."""
    train(train_dir)
    for exp, args in RUNS.items():
        env_id = next(a.split("=", 1)[1] for a in args if a.startswith("--env="))
        reference(train_dir.resolve(), exp, env_id, "latest", seeds)
    reference(train_dir.resolve(), "cartpole_gru", "CartPole-v1", "best", seeds)


if __name__ == "__main__":
    command, rest = sys.argv[1], sys.argv[2:]
    if command == "train-and-reference":
        train_and_reference(Path(rest[0]), [int(s) for s in rest[1:]])
    elif command == "train":
        train(Path(rest[0]))  # as given: config.json records it (a relative train_dir stays relative)
    elif command == "reference":
        reference(Path(rest[0]).resolve(), rest[1], rest[2], rest[3], [int(s) for s in rest[4:]])
    elif command == "hub":
        hub(rest[0], rest[1], Path(rest[2]).resolve(), rest[3])
    else:
        raise SystemExit(f"unknown command {command!r}")
