"""Lay a trained skrl run out as skrl 1.x, skrl's per-module writer and skrl's own default layout leave theirs.

zoo reads skrl checkpoints wherever they come from; the docs show it on copies of a run of
``examples/train_skrl.py`` (Isaac Lab's layout, ``{logs}/skrl/{env_id}/{stamp}_ppo_torch``), and the tests build the
same copies with these functions. Each kind writes into a new folder ``OUT``::

    python examples/skrl_layouts.py v1 RUN OUT       # RUN's latest checkpoint and config in skrl 1.x's names
    python examples/skrl_layouts.py modules RUN OUT  # skrl's own write_checkpoint, one file per module
    python examples/skrl_layouts.py bare RUN OUT     # the latest checkpoint alone, with gymnasium's env spec

- ``v1``: skrl 1.x called observations "states": its configs' networks read ``STATES`` and its agents save the
  observation scaler as ``state_preprocessor``. skrl 1.x cannot be installed beside 2.x, so this is the real 2.x
  checkpoint with that key renamed, and the config in 1.x's words.
- ``modules``: RUN's latest checkpoint loaded into skrl's own agent (the ``Runner`` of RUN's ``params/agent.yaml``)
  and written again by skrl's ``write_checkpoint`` with ``store_separately``: ``policy_{step}.pt``,
  ``value_{step}.pt``, ``observation_preprocessor_{step}.pt``, ...; ``params/`` is copied.
- ``bare``: what a run holds under skrl's default name without Isaac Lab: ``checkpoints/agent_{step}.pt`` and no
  ``params/agent.yaml``, but a ``params/env.yaml`` holding gymnasium's spec of the env (which names it).

RUN's env is its parent folder's name, as in Isaac Lab's layout.
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
from pathlib import Path


def latest(run: Path) -> Path:
    """RUN's latest ``checkpoints/agent_{step}.pt``."""
    steps = sorted(run.glob("checkpoints/agent_*.pt"), key=lambda p: int(p.stem.split("_")[1]))
    if not steps:
        raise SystemExit(
            f"{run}: no checkpoints/agent_{{step}}.pt here: give a run dir of examples/train_skrl.py"
        )
    return steps[-1]


def as_skrl_1(cfg: dict) -> dict:
    """The same config in skrl 1.x's words: observations are "states", their scaler state_preprocessor."""
    cfg = copy.deepcopy(cfg)
    for model in cfg["models"].values():
        if isinstance(model, dict):
            for container in model.get("network", []):
                container["input"] = "STATES"
    for suffix in ("", "_kwargs"):
        cfg["agent"][f"state_preprocessor{suffix}"] = cfg["agent"].pop(f"observation_preprocessor{suffix}")
    return cfg


def v1(run: Path, out: Path) -> list[Path]:
    import torch
    import yaml

    final = latest(run)
    (out / "params").mkdir()
    (out / "params" / "agent.yaml").write_text(
        yaml.safe_dump(as_skrl_1(yaml.safe_load((run / "params" / "agent.yaml").read_text())))
    )
    modules = torch.load(final, weights_only=True)
    modules["state_preprocessor"] = modules.pop("observation_preprocessor")
    (out / "checkpoints").mkdir()
    torch.save(modules, out / "checkpoints" / final.name)
    return [out / "params" / "agent.yaml", out / "checkpoints" / final.name]


def write_modules(agent, out: Path, step: int) -> list[Path]:
    """skrl's own per-module writer, for an agent in memory: ``{module}_{step}.pt`` under ``out/checkpoints``."""
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    agent.experiment_dir = str(out)
    agent.cfg.experiment.store_separately = True
    agent.checkpoint_best_modules["saved"] = True  # no best_*.pt copies
    agent.write_checkpoint(timestep=step, timesteps=step)
    return sorted((out / "checkpoints").iterdir())


def modules(run: Path, out: Path) -> list[Path]:
    import yaml
    from train_skrl import runner_for  # this folder is on the path when run as a script, and in the tests

    final = latest(run)
    shutil.copytree(run / "params", out / "params")
    cfg = yaml.safe_load((run / "params" / "agent.yaml").read_text())
    cfg["agent"]["experiment"].update(
        directory=str(out.parent), experiment_name=out.name, write_interval=0, checkpoint_interval=0
    )
    agent = runner_for(cfg, run.parent.name).agent
    agent.load(str(final))
    return write_modules(agent, out, int(final.stem.split("_")[1]))


def bare(run: Path, out: Path) -> list[Path]:
    import gymnasium as gym
    import yaml

    final = latest(run)
    (out / "checkpoints").mkdir()
    shutil.copy(final, out / "checkpoints" / final.name)
    (out / "params").mkdir()
    (out / "params" / "env.yaml").write_text(yaml.safe_dump(json.loads(gym.spec(run.parent.name).to_json())))
    return [out / "checkpoints" / final.name, out / "params" / "env.yaml"]


KINDS = {"v1": v1, "modules": modules, "bare": bare}


def main() -> None:
    import logging

    from skrl import logger  # skrl sets its logger's level when imported: after that

    logger.setLevel(logging.WARNING)  # its INFO lines (the seed) go to stderr in colour
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=sorted(KINDS))
    parser.add_argument("run", type=Path, help="a run dir of examples/train_skrl.py")
    parser.add_argument("out", type=Path, help="the new folder to write into")
    cli = parser.parse_args()
    latest(cli.run)
    if cli.out.exists():
        parser.error(f"{cli.out} exists: name a new folder")
    cli.out.mkdir(parents=True)
    for path in KINDS[cli.kind](cli.run, cli.out):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
