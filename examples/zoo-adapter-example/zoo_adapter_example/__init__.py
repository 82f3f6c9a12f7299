"""A zoo adapter outside zoo: tinyrl's policies, plugged in through the ``zoo.adapters`` entry point.

tinyrl (this package's ``train`` module) writes ``runs/{env_id}__{exp_name}__{seed}/policy.tinyrl``: the
``state_dict`` of an MLP of action logits (``Linear`` layers named ``0``, ``2``, ... with ``tanh`` between
them). This adapter finds such runs from listings, verifies the file with zoo's static torch reader (nothing
is unpickled), checks the layers against the env's spaces and builds the policy; zoo's ``check``, ``eval``,
``export``, ``push`` and ``doctor`` then work on them with no file of zoo changed. Its registry entries are
``registry.yaml`` beside this file (:attr:`Adapter.registry_file`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.artifacts.report import RunReport, flag_torch_file
from zoo.artifacts.runs import Run, listed_names, scan_tree
from zoo.artifacts.torchfile import TorchFileInfo, inspect_torch_file
from zoo.errors import LayoutMismatch
from zoo.frameworks import Adapter, Checkpoint, HubNaming, LoadOptions, SpaceKinds
from zoo.frameworks.base import Misfit, PolicyView

if TYPE_CHECKING:
    from zoo.artifacts.scope import Spaces
    from zoo.policy import Policy
    from zoo.registry import Entry, Registry

MODEL = "policy.tinyrl"
RUN_NAME = re.compile(r"^(?P<env_id>.+?)__(?P<exp_name>[^_].*?)__(?P<seed>\d+)$")
LAYER_KEY = re.compile(r"(?P<index>\d+)\.(?P<kind>weight|bias)")
#: tinyrl's policies pick one of n actions from a vector of observations.
KINDS = SpaceKinds("Discrete", "vector")


@dataclass
class TinyCheckpoint(Checkpoint):
    """``policy.tinyrl`` as zoo's torch reader found it (verified, never unpickled)."""

    info: TorchFileInfo | None = None


@dataclass
class TinyView(PolicyView):
    """What the fit check and the policy builder read: the MLP's layers (and, when loading, its tensors: ``model``)."""

    layers: list[tuple[int, int]] = field(default_factory=list)


def layers(state: Any) -> list[tuple[int, int]]:
    """``(inputs, outputs)`` of each ``Linear`` of the MLP, first layer first, from a state dict of tensors or
    of the tensor descriptions zoo's reader decodes (both have ``shape``); a file laid out otherwise raises."""
    if not isinstance(state, Mapping) or not state:
        raise LayoutMismatch("not a tinyrl policy: expected the state_dict of its MLP", "train with tinyrl")
    shapes: dict[int, dict[str, tuple]] = {}
    for key, value in state.items():
        match = LAYER_KEY.fullmatch(str(key))
        if match is None or not hasattr(value, "shape"):
            raise LayoutMismatch(
                f"not a tinyrl policy: unexpected key {str(key)[:80]!r}", "train with tinyrl"
            )
        shapes.setdefault(int(match["index"]), {})[match["kind"]] = tuple(value.shape)
    found = []
    for index in sorted(shapes):
        weight, bias = shapes[index].get("weight", ()), shapes[index].get("bias", ())
        if len(weight) != 2 or bias != weight[:1] or index != 2 * len(found):
            raise LayoutMismatch(f"not a tinyrl policy: layer {index} is {weight} with bias {bias}")
        if found and found[-1][1] != weight[1]:
            raise LayoutMismatch(f"not a tinyrl policy: layer {index} takes {weight[1]}, gets {found[-1][1]}")
        found.append((int(weight[1]), int(weight[0])))
    return found


def fit_problem(found: list[tuple[int, int]], spaces: tuple) -> str | None:
    """Why the MLP does not fit the env's ``(observation_space, action_space)``, or None."""
    observation, action = spaces
    if len(observation.shape) != 1 or found[0][0] != observation.shape[0]:
        return f"the policy reads {found[0][0]} values, the env observes {observation.shape}"
    if found[-1][1] != int(action.n):
        return f"the policy picks one of {found[-1][1]} actions, the env has {int(action.n)}"
    return None


class TinyRLAdapter(Adapter):
    name = "tinyrl"
    packages = ("zoo-adapter-example",)
    train_return_tags = ("train/episode_return",)
    layout_hint = "tinyrl: runs/{env_id}__{exp_name}__{seed}/policy.tinyrl"
    hub = HubNaming(library_name="tinyrl", display_name="tinyrl", tags=("tinyrl",))
    training_command = (
        "python -m zoo_adapter_example.train --env-id {env_id} --seed {seed} --episodes {total_timesteps} "
        "--out {output_dir}"
    )
    registry_file = Path(__file__).with_name("registry.yaml")

    def entry_problem(self, raw: dict) -> tuple[str, str] | None:
        return self.unused_fields(raw, ("layout", "model", "policy"), "the file states the network")

    def discover(self, root: Path) -> Iterator[Run]:
        if root.is_file():
            if root.name == MODEL:
                yield self._run(root.parent) if RUN_NAME.match(root.parent.name) else self._lone(root)
            return
        for folder, entries, subdirs in scan_tree(root):
            names = {e.name for e in entries}
            if MODEL in names:
                subdirs.clear()
                yield self._run(folder, names)

    def _run(self, folder: Path, names: Set[str] | None = None) -> Run:
        """The run in ``folder``, from its name and listing (``names``; listed here when not given)."""
        names = listed_names(folder) if names is None else names
        run = Run(framework=self.name, path=folder, run_name=folder.name, model_file=folder / MODEL)
        run.eval_json = folder / "eval.json" if "eval.json" in names else None
        match = RUN_NAME.match(folder.name)
        if match:
            run.env_id, run.exp_name, run.seed = match["env_id"], match["exp_name"], int(match["seed"])
        else:
            run.name_problem = f"run name {folder.name!r} is not env_id__exp_name__seed"
        return run

    def _lone(self, model: Path) -> Run:
        return Run(
            framework=self.name, path=model, model_file=model, name_problem="the file is not in a run dir"
        )

    def inputs(self, run: Run) -> list[Path | None]:
        return [run.model_file]

    def read(self, run: Run, entry: Entry | None) -> TinyCheckpoint:
        assert run.model_file is not None
        info = inspect_torch_file(run.model_file)
        return TinyCheckpoint(run.model_file, info.kind, info.size, info=info)

    def inspect(self, report: RunReport, registry: Registry) -> TinyView | None:
        """The file verified by zoo's static reader (nothing unpickled) and its layers described."""
        run = report.run
        if run.exp_name is None:
            raise LayoutMismatch(run.name_problem or "no experiment name", "pass --exp-name and --env-id")
        entry, checkpoint = self.read_entry(report, registry, run.exp_name)
        info = checkpoint.info
        if not flag_torch_file(report, info, not_torch_hint="is this a tinyrl policy?"):
            return None
        found = layers(info.content)
        report.details["layers"] = [f"{i}x{o}" for i, o in found]
        return TinyView(checkpoint, entry, KINDS, found)

    def env_id_unknown(self, run: Run, view: PolicyView) -> tuple[str, str]:
        return f"env id unknown ({run.name_problem})", "pass --env-id"

    def loaded(self, checkpoint: Checkpoint, entry: Entry, env_id: str, options: LoadOptions) -> TinyView:
        """The state dict loaded with ``weights_only=True`` (full unpickling only with ``--trust-pickle``)."""
        from zoo.artifacts.torchfile import load_checkpoint

        assert isinstance(checkpoint, TinyCheckpoint) and checkpoint.info is not None
        state = load_checkpoint(checkpoint.model_file, checkpoint.info, trust_pickle=options.trust_pickle)
        return TinyView(checkpoint, entry, KINDS, layers(state), model=state)

    def misfit(self, view: PolicyView, env_id: str, spaces: Spaces | None) -> Misfit | None:
        assert isinstance(view, TinyView) and view.entry is not None and spaces is not None
        problem = fit_problem(view.layers, spaces)
        return Misfit.of(
            env_id, problem, f"shapes do not match {view.entry.name} on {env_id}: {problem}", "check --env-id"
        )

    def build_policy(
        self, view: PolicyView, env_id: str, spaces: Spaces | None, options: LoadOptions
    ) -> Policy:
        from zoo_adapter_example.policy import TinyPolicy

        assert isinstance(view, TinyView) and spaces is not None
        return TinyPolicy(view.model, view.layers, spaces, options.device, options.seed)


ADAPTER = TinyRLAdapter()
