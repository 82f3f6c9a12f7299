"""CleanRL adapter: recognise runs, inspect checkpoints, build policies.

CleanRL's training scripts write ``runs/{run_name}/{exp_name}.cleanrl_model`` in
one of three layouts (a state dict, ``{"model_weights", "args"}``, or a tuple of
state dicts); the registry says which. Models are the classes in
:mod:`zoo.frameworks.cleanrl.models`, key-for-key compatible with the scripts.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.artifacts.report import RunReport, flag_nonfinite, flag_torch_file
from zoo.artifacts.runs import Run
from zoo.artifacts.torchfile import TorchFileInfo, inspect_torch_file
from zoo.errors import BrokenFile, LayoutMismatch, ZooError
from zoo.frameworks.base import (
    Adapter,
    Checkpoint,
    HubNaming,
    LoadOptions,
    Misfit,
    NetworkFlag,
    PolicyView,
    SavedCheckpoint,
)
from zoo.frameworks.cleanrl import discover as _discover
from zoo.frameworks.cleanrl import flaxlayout
from zoo.frameworks.cleanrl.discover import MODEL_SUFFIX
from zoo.frameworks.kinds import SpaceKinds

if TYPE_CHECKING:
    from zoo.artifacts.flaxfile import FlaxFileInfo
    from zoo.registry import Entry, Registry

LAYOUTS = ("state_dict", "dict", "tuple", "flax")
HEADS = ("q_values", "c51", "gaussian", "deterministic_actor", "categorical")
#: The action space each head acts on (CleanRL's scripts assert it: "only discrete action space is supported").
HEAD_ACTIONS = {
    "q_values": "Discrete",
    "c51": "Discrete",
    "categorical": "Discrete",
    "gaussian": "Box",
    "deterministic_actor": "Box",
}
#: Hyperparameters CleanRL's PPO scripts compute at runtime (``batch_size = num_envs * num_steps``): logged
#: with ``vars(args)`` but not flags to pass. DQN, C51, TD3 and DDPG take ``--batch-size`` as a real flag.
RUNTIME_ARGS = ("minibatch_size", "num_iterations")
PPO_RUNTIME_ARGS = ("batch_size",)

_LAYOUT_TEXT = {
    "state_dict": "`torch.save(model.state_dict())`",
    "dict": "`torch.save({{'{w}': state_dict, '{a}': vars(args)}})`",
    "tuple": "`torch.save(({parts}))`, one state dict per part",
    "flax": "`flax.serialization.to_bytes(...)` of the params of {parts}",
}
_SHAPES_CACHE: dict[tuple, dict[str, tuple]] = {}


@dataclass
class CleanRLCheckpoint(Checkpoint):
    """A verified ``.cleanrl_model``: its torch-file facts and per-part tensor descriptions."""

    info: TorchFileInfo | None = None  # a torch file's facts
    flax: FlaxFileInfo | None = None  # a flax msgpack file's facts (JAX scripts)
    parts: dict[str, Mapping] = field(default_factory=dict)  # part -> {key: tensor description} / flax params
    kwargs: dict[str, Any] = field(default_factory=dict)  # model kwargs stored in the file (C51's atoms)

    def tensor_count(self) -> int:
        """How many tensors the parts hold (flax params are nested: counted leaf by leaf)."""
        if self.flax is not None:
            from zoo.artifacts.flaxfile import tensor_shapes

            return sum(len(tensor_shapes(tree)) for tree in self.parts.values())
        return sum(len(sd) for sd in self.parts.values())

    def split(self, entry: Entry) -> None:
        """The decoded file's parts, as the entry's layout names them; a file laid out otherwise raises."""
        from zoo.frameworks.cleanrl.checkpoint import split_parts

        if self.flax is not None:
            self.parts, self.kwargs = flaxlayout.split(entry, self.flax.content)
            return
        assert self.info is not None
        self.parts, self.kwargs = split_parts(entry, self.info.content)


class CleanRLAdapter(Adapter):
    name = "cleanrl"
    packages = ("cleanrl",)
    #: CleanRL's scripts run from a clone of its repo: no cleanrl package, only what they import.
    training_modules = {"torch": "torch", "gymnasium": "gymnasium"}
    training_command = (
        "python {script} --env-id {env_id} --total-timesteps {total_timesteps} --seed {seed} "
        "--num-envs {num_envs} --save-model"
    )
    training_script = "cleanrl/{algorithm}.py"
    #: The scripts write ``runs/{env_id}__{exp_name}__{seed}__{unix time}`` under the folder they run in.
    training_run_folder = "runs/{env_id}__*__{seed}__*"
    training_resume = (
        "CleanRL's scripts cannot resume: they save the model once, when training ends (--save-model), so a stopped "
        "run keeps its events file and videos but no model; run the command again"
    )
    #: Both are the scripts' own flags (tyro booleans, off by default); zoo's command passes neither.
    network_flags = {
        "--track": NetworkFlag("metrics to Weights & Biases", "a W&B API key"),
        "--upload-model": NetworkFlag("the model and videos to the Hugging Face Hub", "a Hub write token"),
    }
    train_return_tags = ("charts/episodic_return",)
    layout_hint = "CleanRL: runs/{env_id}__{exp_name}__{seed}__{time}/{exp_name}.cleanrl_model"
    hub = HubNaming(
        library_name="cleanrl",
        display_name="CleanRL",
        tags=("cleanrl", "custom-implementation"),
        default_org="cleanrl",
        card_template="cleanrl",
    )

    def training_invocation(self, fields: dict[str, Any]) -> str:
        """The script's command on the config's ``device``: the torch scripts take ``--cuda``/``--no-cuda`` (a GPU by
        index is ``CUDA_VISIBLE_DEVICES``); the JAX scripts have no such flag, and JAX reads ``JAX_PLATFORMS``."""
        from zoo.frameworks.cleanrl.scripts import SCRIPT_ARGS

        command = super().training_invocation(fields)
        device = fields.get("device")
        if not device:
            return command
        kind, _, index = device.partition(":")
        takes = SCRIPT_ARGS.get(Path(fields["script"]).stem)
        env = [f"CUDA_VISIBLE_DEVICES={index}"] if index else []
        if takes is not None and "cuda" not in takes:
            env.append(f"JAX_PLATFORMS={'cpu' if kind == 'cpu' else 'cuda'}")
        else:
            command += " --no-cuda" if kind == "cpu" else " --cuda"
        return f"env {' '.join(env)} {command}" if env else command

    def entry_problem(self, raw: dict) -> tuple[str, str] | None:
        layout = raw.get("layout")
        if not isinstance(layout, dict):
            return "layout", "missing"
        if layout.get("kind") not in LAYOUTS:
            return "layout.kind", f"{layout.get('kind', '<missing>')!r} is not one of {', '.join(LAYOUTS)}"
        parts = layout.get("parts")
        if not isinstance(parts, list) or not parts or not all(isinstance(p, str) for p in parts):
            return "layout.parts", "expected a non-empty list of part names"
        if layout["kind"] not in ("tuple", "flax") and len(parts) != 1:
            return "layout.parts", f"layout {layout['kind']!r} holds exactly one part"
        if layout["kind"] == "flax":
            problem = flaxlayout.entry_problem(raw)
            if problem:
                return problem
        elif raw.get("format") == "flax-msgpack":
            return "layout.kind", "flax-msgpack files use layout kind 'flax'"
        if layout["kind"] == "dict":
            for key in ("weights_key", "args_key"):
                if not isinstance(layout.get(key), str):
                    return f"layout.{key}", "required for layout kind 'dict'"
        model = raw.get("model")
        if not isinstance(model, dict):
            return "model", "missing"
        for part in parts:
            if not isinstance(model.get(part), str) or ":" not in model[part]:
                return f"model.{part}", "expected 'module.path:ClassName'"
        policy = raw.get("policy")
        if not isinstance(policy, dict):
            return "policy", "missing"
        if policy.get("part") not in parts:
            return "policy.part", f"must name one of the layout parts {parts}"
        if policy.get("head") not in HEADS:
            return "policy.head", f"{policy.get('head', '<missing>')!r} is not one of {', '.join(HEADS)}"
        return None

    def discover(self, root: Path) -> Iterator[Run]:
        return _discover.discover(root)

    def inputs(self, run: Run) -> list[Path | None]:
        return [run.model_file, *run.other_model_files, run.events_file]

    def checkpoints(self, run_dir: Path) -> list[SavedCheckpoint]:
        """The run dir's ``.cleanrl_model`` files: step-numbered copies, then the model saved over in place."""
        return _discover.saved_checkpoints(run_dir)

    def read(self, run: Run, entry: Entry | None) -> CleanRLCheckpoint:
        """The file's torch facts and, when the static check decoded it, its parts as the layout names
        them (a file only torch's own loader can decide is split once ``flag_torch_file`` confirmed it)."""
        assert run.model_file is not None and entry is not None
        if entry.layout["kind"] == "flax":
            from zoo.artifacts.flaxfile import read_flax_file, refuse_broken

            flax = read_flax_file(run.model_file)
            refuse_broken(flax)  # no pickle to trust in a msgpack file: broken is broken
            checkpoint = CleanRLCheckpoint(run.model_file, flax.kind, flax.size, flax=flax)
            checkpoint.split(entry)
            return checkpoint
        info = inspect_torch_file(run.model_file)
        checkpoint = CleanRLCheckpoint(run.model_file, info.kind, info.size, info=info)
        if info.decoded and not info.confirm:
            checkpoint.split(entry)
        return checkpoint

    def reason(self, exc: ZooError, run: Run) -> str:
        """A file's error without its path: the row already names the run."""
        prefix = f"{run.model_file}: " if run.model_file else None
        return exc.message.removeprefix(prefix) if prefix else exc.message

    def inspect(self, report: RunReport, registry: Registry) -> PolicyView | None:
        run = report.run
        if run.name_problem and run.model_file is None:
            raise LayoutMismatch(run.name_problem, "pass --exp-name and --env-id, or rename the run dir")
        if run.name_problem and registry.find(run.exp_name or "") is None:  # a lone file, named otherwise
            raise LayoutMismatch(
                f"cannot tell the experiment: {run.name_problem}, and {run.exp_name!r} is not "
                "a registry entry",
                "pass --exp-name (zoo registry list shows them)",
            )
        entry = registry.get(run.exp_name or "")
        report.details["algorithm"] = entry.algorithm
        if run.model_file is None:
            snapshot = re.compile(rf"{re.escape(run.exp_name or '')}-offline-\d+\{MODEL_SUFFIX}")
            if run.other_model_files and all(snapshot.fullmatch(p.name) for p in run.other_model_files):
                raise BrokenFile(
                    f"missing model: only the offline-phase snapshots qdagger writes every 100,000 "
                    f"steps ({run.other_model_files[-1].name}, ...)",
                    "train with --save-model, or zoo eval one snapshot file with --exp-name",
                )
            if run.other_model_files:
                names = ", ".join(p.name for p in run.other_model_files)
                raise LayoutMismatch(
                    f"exp_name mismatch: run is {run.exp_name!r}, model file is {names}",
                    "rename the file, or pass --exp-name",
                )
            raise BrokenFile("missing model: no .cleanrl_model in the run dir", "train with --save-model")
        checkpoint = self.read(run, entry)
        info = checkpoint.info
        if checkpoint.flax is not None:
            from zoo.artifacts.finite import in_arrays

            report.details.update(size=checkpoint.size, format=checkpoint.format)
            flag_nonfinite(report, in_arrays(checkpoint.flax.content))
        elif info is not None:
            if info.kind not in ("missing", "unreadable"):
                report.details.update(size=info.size, format=info.kind)
            if not flag_torch_file(report, info, not_torch_hint="is this a CleanRL model file?"):
                return None
            if info.confirm:  # torch's loader decided it, and what it loaded is the content
                checkpoint.split(entry)
        report.details["tensors"] = checkpoint.tensor_count()
        if checkpoint.kwargs:
            report.details["model_kwargs"] = checkpoint.kwargs
        return PolicyView(checkpoint, entry, space_kinds(entry))

    def env_id_unknown(self, run: Run, view: PolicyView) -> tuple[str, str]:
        return f"env id unknown ({run.name_problem or 'the file is not in a run dir'})", "pass --env-id"

    def misfit(self, view: PolicyView, env_id: str, spaces: tuple | None) -> Misfit | None:
        """Every part's keys and shapes against the registry's model class (flax params against the port's)."""
        checkpoint, entry = view.checkpoint, view.entry
        assert isinstance(checkpoint, CleanRLCheckpoint) and entry is not None and spaces is not None
        problem = (
            flaxlayout.fit_problem(entry, checkpoint.parts, checkpoint.kwargs, spaces)
            if checkpoint.flax is not None
            else _fit_problem(checkpoint, entry, env_id, spaces)
        )
        where, what = problem or ("", "")
        return Misfit.of(
            env_id,
            what + where,
            f"shapes do not match {entry.name} on {env_id}{where}: {what}",
            "check the env id and exp_name of this run",
            "check --env-id and --exp-name",
        )

    def loaded(self, checkpoint: Checkpoint, entry: Entry, env_id: str, options: LoadOptions) -> PolicyView:
        """A torch file loaded with ``weights_only=True`` and split into the layout's parts; a JAX script's
        params (no pickle in them) are the parts :meth:`read` decoded."""
        from zoo.artifacts.torchfile import load_checkpoint
        from zoo.frameworks.cleanrl.checkpoint import split_parts

        assert isinstance(checkpoint, CleanRLCheckpoint)
        if checkpoint.flax is None:
            assert checkpoint.info is not None
            content = load_checkpoint(
                checkpoint.model_file, checkpoint.info, trust_pickle=options.trust_pickle
            )
            parts, kwargs = split_parts(entry, content)
            checkpoint = CleanRLCheckpoint(
                checkpoint.model_file, checkpoint.format, checkpoint.size, parts=parts, kwargs=kwargs
            )
        return PolicyView(checkpoint, entry, space_kinds(entry))

    def build_policy(self, view: PolicyView, env_id: str, spaces: tuple | None, options: LoadOptions):
        """The registry's model class with the policy part's weights (a JAX script's in zoo's torch port of its
        flax module: no jax needed)."""
        from zoo.frameworks.cleanrl.checkpoint import build_model
        from zoo.frameworks.cleanrl.policy import CleanRLPolicy

        checkpoint, entry = view.checkpoint, view.entry
        assert isinstance(checkpoint, CleanRLCheckpoint) and entry is not None and spaces is not None
        part = entry.policy["part"]
        if checkpoint.flax is not None:
            module = flaxlayout.build(
                entry, part, checkpoint.parts[part], spaces, checkpoint.kwargs, options.device
            )
        else:
            module = build_model(entry, part, spaces, checkpoint.kwargs, device=options.device)
            module.load_state_dict(checkpoint.parts[part])
        return CleanRLPolicy(
            module, entry.policy["head"], spaces[0], spaces[1], entry.eval, options.device, options.seed
        )

    def video_dir(self, run: Run, model_file: Path) -> Path:
        """CleanRL's layout: ``videos/{run_name}-eval`` beside ``runs/``."""
        if run.path.is_dir() and run.run_name:
            return run.path.resolve().parent.parent / "videos" / f"{run.run_name}-eval"
        return super().video_dir(run, model_file)

    def replay_dirs(self, run: Run) -> list[Path]:
        """The eval videos, else the training videos CleanRL's ``--capture-video`` wrote."""
        if not (run.path.is_dir() and run.run_name):
            return super().replay_dirs(run)
        videos = run.path.resolve().parent.parent / "videos"
        return [videos / f"{run.run_name}-eval", videos / run.run_name]

    def card_context(self, entry: Entry, run: Run) -> dict[str, Any]:
        from zoo.artifacts.tensorboard import text_summary

        layout = entry.layout
        text = _LAYOUT_TEXT[layout["kind"]].format(
            w=layout.get("weights_key"), a=layout.get("args_key"), parts=", ".join(layout["parts"])
        )
        table = text_summary(run.events_file) if run.events_file else None
        command, not_upstream = train_command(entry, table)
        return {
            "layout": layout["kind"],
            "layout_text": text,
            "train_command": command,
            "not_upstream": not_upstream,
        }


def train_command(entry: Entry, hyperparameters: str | None) -> tuple[str | None, list[str]]:
    """The training command, from the ``|param|value|`` table CleanRL logs (``vars(args)``), with only the
    flags upstream's script takes (:mod:`~zoo.frameworks.cleanrl.scripts`), and the logged fields it left out
    (a modified script's own: the command would stop at the parser with them)."""
    from zoo.frameworks.cleanrl.scripts import SCRIPT_ARGS

    if not hyperparameters:
        return None, []
    takes = SCRIPT_ARGS.get(entry.name)
    argv = [f"python cleanrl/{entry.name}.py"]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in hyperparameters.splitlines()]
    rows = [cells for cells in rows if len(cells) == 2 and cells[0] not in ("param", "-", "exp_name")]
    computed = (*RUNTIME_ARGS, *(PPO_RUNTIME_ARGS if any(c[0] == "num_minibatches" for c in rows) else ()))
    logged, unknown = set(), []
    for cells in rows:
        if cells[0] in computed or cells[1] == "None":
            continue
        if takes is not None and cells[0] not in takes:
            unknown.append(cells[0])
            continue
        logged.add(cells[0])
        flag = "--" + cells[0].replace("_", "-")
        if cells[1] in ("True", "False"):  # tyro's boolean flags
            argv.append(flag if cells[1] == "True" else f"--no-{flag[2:]}")
        else:
            argv.append(f"{flag} {shlex.quote(cells[1])}")
    if len(argv) == 1:
        return None, unknown
    if "save_model" not in logged:  # the run holds a model, so it was trained with --save-model
        argv.append("--save-model")
    return " \\\n    ".join(argv), unknown


def space_kinds(entry: Entry) -> SpaceKinds:
    """What the entry's policy acts on (by its head) and reads (its model class's ``observation_kind``:
    frames for the Atari networks, else vectors)."""
    from zoo.frameworks.cleanrl.checkpoint import model_class

    reads = getattr(model_class(entry, entry.policy["part"]), "observation_kind", "vector")
    return SpaceKinds(HEAD_ACTIONS[entry.policy["head"]], reads)


def _fit_problem(
    checkpoint: CleanRLCheckpoint, entry: Entry, env_id: str, spaces: tuple
) -> tuple[str, str] | None:
    """``(where, problem)`` for the first key/shape of any part that differs from the registry's model
    class (every part: what check calls ok, the loader must take)."""
    from zoo.frameworks.cleanrl.checkpoint import expected_shapes, shape_problems

    parts = checkpoint.parts
    for part, state in parts.items():
        key = (entry.name, part, env_id, tuple(sorted(checkpoint.kwargs.items())))
        if key not in _SHAPES_CACHE:
            _SHAPES_CACHE[key] = expected_shapes(entry, part, spaces, checkpoint.kwargs)
        problems = shape_problems(state, _SHAPES_CACHE[key])
        if problems:
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            return (f" in {part}" if len(parts) > 1 else ""), f"{problems[0]}{more}"
    return None


ADAPTER = CleanRLAdapter()
