"""Find skrl experiment dirs: ``{experiment}/checkpoints/agent_{step}.pt`` (and ``best_agent.pt``).

skrl's ``Agent.write_checkpoint`` writes either one file per checkpoint holding every module
(``agent_{tag}.pt``, ``best_agent.pt``) or, with ``experiment.store_separately``, one file per
module (``policy_{tag}.pt``, ``observation_preprocessor_{tag}.pt``, ``best_policy.pt``, ...).
The tag is the timestep, or a ``%y-%m-%d_%H-%M-%S-%f`` date when none was given.

Discovery only lists directories and parses names; it reads no file, so it stays fast on
large trees. The checkpoint reported is the one of the highest step (what Isaac Lab's
``play.py`` picks); ``best_*`` and older steps are listed as the run's other model files.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from zoo.artifacts.runs import Run, is_folder, listdir, run_files, scan_tree
from zoo.frameworks.base import BEST_MODEL

#: Module names skrl's torch agents put in ``checkpoint_modules`` (per-module files carry them).
MODULES = (
    "policy",
    "value",
    "critic",
    "critic_1",
    "critic_2",
    "target_policy",
    "target_critic",
    "target_critic_1",
    "target_critic_2",
    "q_network",
    "target_q_network",
    "discriminator",
    "optimizer",
    "policy_optimizer",
    "critic_optimizer",
    "value_optimizer",
    "entropy_optimizer",
    "observation_preprocessor",
    "state_preprocessor",
    "value_preprocessor",
    "amp_observation_preprocessor",
)
#: skrl agent classes; an experiment dir name that holds one (``..._PPO``, ``..._ppo_torch``) says the algo.
ALGORITHMS = ("ppo", "a2c", "rpo", "trpo", "amp", "sac", "td3", "ddpg", "dqn", "ddqn", "cem")
_TAG = r"(?P<tag>\d+|\d{2}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}-\d{6})"
#: ``zoo watch``'s copy of the best checkpoint, in the experiment dir: ``best_model.pt`` (a whole-agent file)
#: or ``best_model_policy.pt`` with ``best_model_{module}.pt`` beside it (per-module files).
_ZOO_BEST = rf"{BEST_MODEL}(?:_(?P<zoo_module>{'|'.join(MODULES)}))?"
CHECKPOINT = re.compile(
    rf"^(?:(?P<zoo>{_ZOO_BEST})|best_(?P<best>{'|'.join(('agent',) + MODULES)})|(?P<module>agent|{'|'.join(MODULES)})_{_TAG})\.pt$"
)
ENV_ID = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*-v\d+$")
_SKIP = {"checkpoints", "params", "videos", "exported", "git"}


def parse_checkpoint(name: str) -> tuple[str, str | None] | None:
    """``(module, tag)`` for an skrl checkpoint name; ``tag`` is None for ``best_*`` (and zoo watch's
    ``best_model*``); None otherwise."""
    m = CHECKPOINT.match(name)
    if not m:
        return None
    if m["zoo"]:
        return m["zoo_module"] or "agent", None
    return (m["best"], None) if m["best"] else (m["module"], m["tag"])


def step_of(path: Path) -> int | None:
    """The timestep in a checkpoint's name (None for ``best_*`` and date tags)."""
    parsed = parse_checkpoint(path.name)
    return int(parsed[1]) if parsed and parsed[1] and parsed[1].isdigit() else None


def companion(model_file: Path, module: str) -> Path:
    """The per-module file written beside ``model_file`` at the same checkpoint (same tag or best)."""
    _, tag = parse_checkpoint(model_file.name) or ("", None)
    if model_file.name.startswith(BEST_MODEL):
        return model_file.with_name(f"{BEST_MODEL}_{module}.pt")
    name = f"best_{module}.pt" if tag is None else f"{module}_{tag}.pt"
    return model_file.with_name(name)


def _sort_key(path: Path) -> tuple:
    """Best last among equals: numeric steps ascending, then date tags, ``best_*`` lowest."""
    _, tag = parse_checkpoint(path.name) or ("", None)
    if tag is None:
        return (0, 0, "")
    return (2, int(tag), "") if tag.isdigit() else (1, 0, tag)


def acting_files(names: list[str]) -> list[str]:
    """Files that hold a policy: whole-agent files, else the per-module ``policy`` files."""
    parsed = {n: parse_checkpoint(n) for n in names}
    whole = [n for n, p in parsed.items() if p and p[0] == "agent"]
    return whole or [n for n, p in parsed.items() if p and p[0] == "policy"]


def _name_tokens(name: str) -> list[str]:
    return [t for t in re.split(r"_+", name) if t]


def env_id_from_names(experiment_dir: Path) -> str | None:
    """A gymnasium-style id (``Pendulum-v1``) in the experiment dir name or its parent's (skrl's
    ``experiment.directory``); skrl itself records no env id."""
    for name in (experiment_dir.name, experiment_dir.parent.name):
        for token in [name, *_name_tokens(name)]:
            if ENV_ID.match(token):
                return token
    return None


def algorithm_from_name(name: str) -> str | None:
    """``ppo`` from ``25-11-30_10-00-00-000000_PPO`` (skrl) or ``2025-11-30_10-00-00_ppo_torch`` (Isaac Lab);
    ``ppo_rnn`` from skrl's ``..._PPO_RNN`` (skrl names the dir after the agent class)."""
    tokens = [t.lower() for t in _name_tokens(name)]
    for i in reversed(range(len(tokens))):
        if tokens[i] in ALGORITHMS:
            return f"{tokens[i]}_rnn" if tokens[i + 1 : i + 2] == ["rnn"] else tokens[i]
    return None


def run_from_dir(experiment_dir: Path, checkpoint_names: list[str], model_file: Path | None = None) -> Run:
    """Describe one experiment dir from its ``checkpoints/`` listing."""
    ckpt_dir = experiment_dir / "checkpoints"
    files = sorted((ckpt_dir / n for n in checkpoint_names if parse_checkpoint(n)), key=_sort_key)
    acting = [ckpt_dir / n for n in acting_files(checkpoint_names)]
    acting.sort(key=_sort_key)
    run = Run(framework="skrl", path=experiment_dir, run_name=experiment_dir.name)
    run.env_id = env_id_from_names(experiment_dir)
    algo = algorithm_from_name(experiment_dir.name)
    run.exp_name = f"skrl_{algo}" if algo else None
    if algo is None:
        run.name_problem = (
            f"experiment dir {experiment_dir.name!r} does not name the algorithm (e.g. ..._ppo)"
        )
    run.model_file = model_file or (acting[-1] if acting else None)
    run.other_model_files = [p for p in files if p != run.model_file]
    run.events_file, run.eval_json = run_files(experiment_dir)
    return run


def checkpoint_names(folder: Path) -> list[str]:
    """The checkpoint files ``folder`` (a ``checkpoints/``) lists; none when it cannot be listed."""
    try:
        return [e.name for e in listdir(folder) if not is_folder(e) and parse_checkpoint(e.name)]
    except OSError:
        return []


def _from_file(path: Path) -> Iterator[Run]:
    """A checkpoint given directly: described by its experiment dir when it sits in ``checkpoints/`` (or is
    zoo watch's best model beside ``checkpoints/``)."""
    parsed = parse_checkpoint(path.name)
    zoo_best = parsed is not None and path.name.startswith(BEST_MODEL)
    if path.parent.name == "checkpoints" and parsed:
        yield run_from_dir(path.parent.parent, checkpoint_names(path.parent), model_file=path)
    elif zoo_best:  # beside checkpoints/ only: an rsl_rl run's best_model.pt is rsl_rl's
        names = checkpoint_names(path.parent / "checkpoints")
        if acting_files(names):
            yield run_from_dir(path.parent, names, model_file=path)
    elif parsed or path.name == "agent.pt":  # agent.pt: skrl's Hugging Face file name
        yield Run(framework="skrl", path=path, model_file=path)


def discover(root: Path) -> Iterator[Run]:
    """Every skrl experiment under ``root`` (a logs folder, an experiment dir, its ``checkpoints/``, a file)."""
    if root.is_file():
        yield from _from_file(root)
        return
    if root.name == "checkpoints" and acting_files(checkpoint_names(root)):
        root = root.parent
    for folder, entries, subdirs in scan_tree(root):
        if any(e.name == "checkpoints" for e in entries):
            names = checkpoint_names(folder / "checkpoints")
            if acting_files(names):
                yield run_from_dir(folder, names)
                subdirs.clear()
                continue
        subdirs[:] = [d for d in subdirs if d.name not in _SKIP]
