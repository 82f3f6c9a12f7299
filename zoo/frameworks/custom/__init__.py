"""Custom adapter: the user's own policy, a class (``--policy-class module:Class``) or a pickled object.

No training library stands behind it, so zoo knows nothing of its files: the policy is either the user's
class, constructed for the eval env (and handed ``TARGET`` through its ``load(path)`` when one is given),
or a pickled object with an action method (MJRL's ``policy.pickle``), loaded only with ``--trust-pickle``.
Either way it is wrapped as a :class:`~zoo.frameworks.custom.policy.CustomPolicy`, whose actions are
checked against the env's action space before every step, and evaluated like any policy.

Discovery claims only a lone ``.pickle``/``.pkl`` file given by name, never one inside a folder: other
frameworks keep pickles beside their models (SB3's ``vecnormalize.pkl``, Genesis' ``cfgs.pkl``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.artifacts.report import WARNING, RunReport
from zoo.artifacts.runs import Run
from zoo.errors import UnsupportedError, UsageError
from zoo.frameworks.base import Adapter, Checkpoint, HubNaming, LoadOptions, Misfit, PolicyView
from zoo.frameworks.custom import pickled

if TYPE_CHECKING:
    from zoo.frameworks.custom.policy import CustomPolicy
    from zoo.registry import Entry, Registry


@dataclass
class CustomCheckpoint(Checkpoint):
    """What a custom target holds: nothing on disk (a policy class alone), a pickle, or a file for the
    user's class to read."""

    model_file: Path | None  # None: a --policy-class target with no file
    facts: pickled.PickleFacts | None = None  # the file's size and, for a pickle, what it would import


class CustomAdapter(Adapter):
    name = "custom"
    #: Required of every adapter; a lone pickle or a class has no events file, so it is never read.
    train_return_tags = ("charts/episodic_return",)
    layout_hint = (
        "custom: a pickled policy object named on the command line (policy.pickle), or your class: "
        "zoo eval --policy-class module:Class --env-id ENV"
    )
    hub = HubNaming(library_name="custom", display_name="custom code", tags=("custom-implementation",))
    takes_policy_class = True

    def entry_problem(self, raw: dict) -> tuple[str, str] | None:
        if raw.get("format") != "pickle":
            return "format", "custom entries read pickled policy objects: 'pickle'"
        return self.unused_fields(
            raw, ("layout", "model", "policy"), "the policy is your class or your object"
        )

    def discover(self, root: Path) -> Iterator[Run]:
        """A pickle file given by name, never one found in a folder (listing only: the file is not opened)."""
        if root.suffix in pickled.SUFFIXES and root.is_file():
            yield Run(framework=self.name, path=root, model_file=root, exp_name=self.name)

    def inputs(self, run: Run) -> list[Path | None]:
        return [run.model_file]

    def read(self, run: Run, entry: Entry | None) -> CustomCheckpoint:
        """Nothing for a class alone; else the file's size and, for a pickle, the globals it names (scanned,
        not run). Another kind of file is read only by the user's class."""
        if run.model_file is None:
            return CustomCheckpoint(None, "policy-class", None)
        facts = pickled.read(run.model_file)
        return CustomCheckpoint(
            run.model_file, "pickle" if facts.is_pickle else "file", facts.size, facts=facts
        )

    def inspect(self, report: RunReport, registry: Registry) -> PolicyView | None:
        """A pickle's globals, scanned, not run; nothing to fit: zoo knows nothing of the object's spaces (its
        actions are checked against the env's before every step), so the inspection ends here."""
        run = report.run
        entry, checkpoint = self.read_entry(report, registry, run.exp_name or self.name)
        facts = checkpoint.facts
        assert checkpoint.model_file is not None and facts is not None  # discovery yields files
        problem = pickled.problem(facts, checkpoint.model_file)
        if problem:
            raise problem
        report.details["globals"] = [f"{module}.{name}" for module, name in facts.globals]
        if facts.dangerous:
            raise pickled.refusal(facts, checkpoint.model_file)
        report.flag(
            WARNING,
            pickled.describe_untrusted(facts),
            f"if you trust it: zoo eval {checkpoint.model_file} "
            f"--exp-name {entry.name} --env-id ENV --trust-pickle",
        )
        if run.env_id is None:
            report.flag(WARNING, "env id unknown (a lone file)", "pass --env-id")
        return None

    def misfit(self, view: PolicyView, env_id: str, spaces: tuple | None) -> Misfit | None:
        """None: the user's object states no spaces; its actions are checked before every env step."""
        return None

    def check_options(self, options: LoadOptions) -> None:
        """The base refusals, and ``--policy-class`` checked for shape before anything is imported."""
        from zoo.frameworks.custom.userclass import parse_policy_class

        super().check_options(options)
        if options.policy_class is not None:
            parse_policy_class(options.policy_class)

    def loaded(self, checkpoint: Checkpoint, entry: Entry, env_id: str, options: LoadOptions) -> PolicyView:
        """Nothing is loaded before the env's spaces are known (:meth:`build_policy` constructs or unpickles the
        object); a batched tensor task is refused first."""
        from zoo.tensor_env import TensorEnvSpec

        if isinstance(self.env_spec(entry, env_id), TensorEnvSpec):
            raise UnsupportedError(
                f"{env_id} is a batched tensor task; custom policies are evaluated on gymnasium envs",
                hint="pass a gymnasium --env-id",
            )
        return PolicyView(checkpoint, entry)

    def build_policy(
        self, view: PolicyView, env_id: str, spaces: tuple | None, options: LoadOptions
    ) -> CustomPolicy:
        """The user's class constructed for ``env_id`` (then ``load(TARGET)`` when a file is given), or the
        trusted pickled object; wrapped so that its actions are checked before every env step."""
        from zoo.envs import env_factory
        from zoo.frameworks.custom import userclass
        from zoo.frameworks.custom.policy import CustomPolicy

        checkpoint, entry = view.checkpoint, view.entry
        assert isinstance(checkpoint, CustomCheckpoint) and entry is not None and spaces is not None
        path = checkpoint.model_file
        if options.policy_class:
            cls = userclass.import_class(options.policy_class)
            kind = userclass.constructor_kind(cls)
            method = userclass.action_method(cls, cls.__qualname__)
            userclass.seed_user_code(options.seed)
            spec = self.env_spec(entry, env_id)
            obj = userclass.construct(cls, kind, env_factory(spec, 0), spaces, options.seed)
            if path is not None:
                userclass.load_weights(obj, path)
            return CustomPolicy(
                obj, method, *spaces, name=cls.__qualname__, env_id=env_id, who="your policy class"
            )
        if path is None or checkpoint.facts is None:
            raise UsageError(
                "a custom target with no file needs a policy class",
                hint="pass --policy-class module:Class, or a pickled policy file",
            )
        problem = pickled.problem(checkpoint.facts, path)
        if problem:
            raise problem
        if not options.trust_pickle:
            raise pickled.refusal(checkpoint.facts, path)
        userclass.seed_user_code(options.seed)
        obj = pickled.load_trusted(checkpoint.facts, path)
        name = type(obj).__qualname__
        method = userclass.action_method(obj, f"{path.name} holds a {name}, which")
        return CustomPolicy(obj, method, *spaces, name=name, env_id=env_id, who="your pickled policy")

    def video_dir(self, run: Run, model_file: Path | None) -> Path:
        """Beside a file, as for every framework; for a class alone, ``videos/{Class}-eval`` here."""
        if model_file is None:
            return run.path.resolve() / "videos" / f"{(run.run_name or 'policy').rpartition(':')[2]}-eval"
        return super().video_dir(run, model_file)


ADAPTER = CustomAdapter()
