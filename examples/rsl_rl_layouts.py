"""Lay a trained rsl_rl run out as other tools and older rsl-rl-lib versions leave theirs.

zoo reads rsl_rl checkpoints wherever they come from; the docs show it on copies of a run of
``examples/train_rsl_rl.py``, and the tests build the same copies with these functions. Each kind writes into a
new folder ``OUT``::

    python examples/rsl_rl_layouts.py genesis RUN OUT  # RUN's latest model_{iter}.pt + cfgs.pkl, as Genesis writes it
    python examples/rsl_rl_layouts.py legacy RUN OUT   # RUN's latest checkpoint in rsl-rl-lib 2.x's keys, no config

- ``genesis``: Genesis' locomotion examples keep ``[env_cfg, obs_cfg, reward_cfg, command_cfg, train_cfg]``
  pickled as ``cfgs.pkl`` beside ``model_{iter}.pt``, in ``logs/{exp_name}/``. The train config is RUN's
  ``params/agent.yaml`` with Genesis' ``runner`` section; the env config sets ``clip_actions: 100`` and the
  numbers of actions and observations of the env RUN's ``params/env.yaml`` names, and no gymnasium id (Genesis'
  envs have none).
- ``legacy``: rsl-rl-lib before 4 saved an ``ActorCritic[Recurrent]``'s ``model_state_dict`` (``actor.*``,
  ``memory_a.*``, ``std``, ``critic.*``); 2.x kept the runner's observation normalizer beside it as
  ``obs_norm_state_dict``, 3.x inside it as ``actor_obs_normalizer.*``. The keys are renamed by the old versions'
  own mapping, read from rsl-rl-lib 2.2.4's and 3.1.1's source; the CLI writes 2.x's layout with no config, as
  legged_gym's runs are found. (Files written by those versions themselves are in ``tests/data/rsl_rl_legacy``.)
"""

from __future__ import annotations

import argparse
import pickle
import shutil
from pathlib import Path

from train_rsl_rl import latest  # this folder is on the path when run as a script, and in the tests


def genesis_cfgs(train_cfg: dict, experiment: str, num_actions: int, num_obs: int) -> list[dict]:
    """The five configs Genesis' ``go2_train.py`` pickles into ``cfgs.pkl``, for a run of ``train_cfg``."""
    env_cfg = {"num_actions": num_actions, "clip_actions": 100.0, "episode_length_s": 20.0}
    obs_cfg, reward_cfg, command_cfg = {"num_obs": num_obs}, {"reward_scales": {}}, {"num_commands": 0}
    runner = {"experiment_name": experiment, "max_iterations": 4}
    return [env_cfg, obs_cfg, reward_cfg, command_cfg, {**train_cfg, "runner": runner}]


def genesis(run: Path, out: Path) -> list[Path]:
    import gymnasium as gym
    import yaml

    train_cfg = yaml.safe_load((run / "params" / "agent.yaml").read_text())
    env = gym.make(yaml.safe_load((run / "params" / "env.yaml").read_text())["env_id"])
    num_actions, num_obs = env.action_space.shape[0], env.observation_space.shape[0]
    env.close()
    model = Path(shutil.copy(latest(run), out))
    with (out / "cfgs.pkl").open("wb") as fh:  # as Genesis' examples write it
        pickle.dump(genesis_cfgs(train_cfg, out.name, num_actions, num_obs), fh)
    return [model, out / "cfgs.pkl"]


def legacy_checkpoint(src: Path, dst: Path, normalizer_outside: bool) -> Path:
    """A 5.x checkpoint renamed to the rsl-rl-lib < 4 ``ActorCritic[Recurrent]`` key names: 2.x's layout
    (``obs_norm_state_dict`` beside the model) with ``normalizer_outside``, else 3.x's."""
    import torch

    ckpt = torch.load(src, weights_only=True)
    renames = (
        ("mlp.", "actor."),
        ("rnn.", "memory_a."),
        ("obs_normalizer.", "actor_obs_normalizer."),
        ("distribution.std_param", "std"),
    )
    model, norm = {}, {}
    for key, value in ckpt["actor_state_dict"].items():
        if normalizer_outside and key.startswith("obs_normalizer."):
            norm[key.removeprefix("obs_normalizer.")] = value
            continue
        new = next((n + key[len(o) :] for o, n in renames if key.startswith(o)), key)
        model[new] = value
    model.update(
        {f"critic.{k.removeprefix('mlp.')}": v for k, v in ckpt["critic_state_dict"].items() if "mlp." in k}
    )
    legacy = {
        "model_state_dict": model,
        "optimizer_state_dict": ckpt["optimizer_state_dict"],
        "iter": ckpt["iter"],
        "infos": None,
    }
    if normalizer_outside:
        legacy["obs_norm_state_dict"] = norm
    dst.parent.mkdir(parents=True, exist_ok=True)
    torch.save(legacy, dst)
    return dst


def legacy(run: Path, out: Path) -> list[Path]:
    model = latest(run)
    return [legacy_checkpoint(model, out / model.name, normalizer_outside=True)]


KINDS = {"genesis": genesis, "legacy": legacy}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=sorted(KINDS))
    parser.add_argument("run", type=Path, help="a run dir of examples/train_rsl_rl.py")
    parser.add_argument("out", type=Path, help="the new folder to write into")
    cli = parser.parse_args()
    if latest(cli.run) is None:
        parser.error(f"{cli.run}: no model_{{iter}}.pt here: give an rsl_rl run dir")
    if cli.out.exists():
        parser.error(f"{cli.out} exists: name a new folder")
    cli.out.mkdir(parents=True)
    for path in KINDS[cli.kind](cli.run, cli.out):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
