"""The adapter contract: every question zoo's core asks a training library, answered in one class.

A framework is one package ``zoo/frameworks/<name>/`` whose ``ADAPTER`` is an instance of a subclass
of :class:`Adapter`. The core (``zoo check``, the evaluator, the exporter, the hub client) talks to
frameworks only through these hooks, found with :func:`zoo.frameworks.get_adapter`; nothing outside
the adapter package knows which library produced a policy.

The hooks, in the order a model meets them:

- registry: :meth:`Adapter.entry_problem` checks the framework's own fields of an entry;
- discovery: :meth:`~Adapter.discover` finds runs from listings and names, :meth:`~Adapter.inputs`
  names the files a verdict depends on, :meth:`~Adapter.identify` resolves once the env and seed a run was
  trained with (:meth:`~Adapter.env_id`, :meth:`~Adapter.run_seed`) into the run, where every command reads them;
- reading: :meth:`~Adapter.read` verifies a model file without running it and parses it into a
  :class:`Checkpoint`; ``zoo check`` describes that checkpoint (:meth:`~Adapter.describe`) and the
  loader builds the policy from the very same one (:meth:`~Adapter.load_policy`). Both are the base's
  skeleton, never an adapter's: the adapter's :meth:`~Adapter.inspect` (check) and :meth:`~Adapter.loaded`
  (load) make the :class:`PolicyView` that one fit check reads (:meth:`~Adapter.misfit`), so "ok" and
  "loads" cannot drift apart;
- fit: :meth:`~Adapter.fitting_spaces`, the eval env's spaces checked against the kinds the policy acts on
  and reads (:mod:`zoo.frameworks.kinds`) before any shape, by ``describe`` and ``load_policy`` alike, then
  :meth:`~Adapter.misfit`, the shapes;
- evaluation: :meth:`~Adapter.env_spec` (the eval env), :meth:`~Adapter.video_dir` (where replays go);
- following training (``zoo watch``): :meth:`~Adapter.checkpoints` lists what a run has saved so far,
  :meth:`~Adapter.best_model_files` names the copy of the best one;
- sharing: :attr:`~Adapter.hub` (the Hub's name for the library, tags, default org, card template),
  :meth:`~Adapter.hub_files` (what a repo holds beside the model), :meth:`~Adapter.card_context`;
- what the library's own loader would run or fail on, for the people who download a run
  (:mod:`zoo.artifacts.findings`): :meth:`~Adapter.config_files` (the YAML its tools load),
  :meth:`~Adapter.file_findings` and :meth:`~Adapter.strip_findings` (a file ``zoo push`` stages).

Defaults are given where one answer fits most libraries; the abstract methods are what every adapter
must say for itself. ``tests/test_adapter_contract.py`` holds every adapter to this shape.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from zoo.artifacts.report import ERROR, WARNING, RunReport
from zoo.errors import LayoutMismatch, RefusedError, UnsupportedError, UsageError, ZooError
from zoo.frameworks.kinds import SpaceKinds, SpaceMismatch

if TYPE_CHECKING:
    from zoo.artifacts.findings import Finding
    from zoo.artifacts.runs import Run
    from zoo.artifacts.scope import Spaces
    from zoo.envs import EnvSpec
    from zoo.policy import Policy
    from zoo.registry import Entry, Registry
    from zoo.tensor_env import TensorEnvSpec


@dataclass(frozen=True)
class LoadOptions:
    """How to load a policy: the same object whatever the framework (unused fields are ignored,
    except ``model_config``, ``env_factory`` and ``policy_class``, which an adapter that has no use for
    them refuses in :meth:`Adapter.check_options`)."""

    device: str = "cpu"
    seed: int = 0  # the seed of the policy's own randomness (stochastic eval modes)
    trust_pickle: bool = False  # full unpickling of a file the user trusts; never for downloads
    model_config: Path | None = None  # the architecture, for checkpoints that do not state it
    trusted_wrappers: frozenset[str] = frozenset()  # env wrapper classes the user named (--trust-wrapper)
    env_factory: str | None = None  # the user's tensor env, module:function (--env-factory): user code
    #: The user's policy class, ``module:Class`` (``--policy-class``): user code, imported and constructed only
    #: by an adapter that takes it (:attr:`Adapter.takes_policy_class`), when the policy is loaded.
    policy_class: str | None = None
    #: What computes the actions: ``torch`` (exact), or ``onnxruntime`` (the policy exported in memory, proven to
    #: act the same on the run's own observations first; :mod:`zoo.exporter.engine`).
    engine: str = "torch"


@dataclass(frozen=True)
class HubNaming:
    """How a framework's models are named and described on a Hugging Face Hub."""

    library_name: str  # the Hub's name for the library (the card's ``library_name``)
    display_name: str  # the library's name in prose ("made with Stable-Baselines3")
    tags: tuple[str, ...] = ()  # card tags beyond the env id and zoo's own
    default_org: str | None = None  # the user or org ``zoo enjoy`` looks in when neither flag nor entry says
    companions: tuple[str, ...] = ()  # files beside the model that evaluation needs; fetched when present
    #: Globs of the files a repo of a *run* holds (rsl_rl's checkpoints and config): ``zoo enjoy`` fetches
    #: them as one folder and reads it as a run, its latest checkpoint the model. Empty: one model file.
    run_files: tuple[str, ...] = ()
    card_template: str = "default"  # ``cards_templates/<name>.md.j2``
    #: Files the library's own hub loader reads at the repo root (Sample Factory: its experiment's
    #: ``config.json``). ``zoo push`` leaves out a framework-free form that would take one of these names, with the
    #: file that form needs (model.safetensors goes with config.json), and ``zoo enjoy`` then fetches the run.
    loader_files: tuple[str, ...] = ()


@dataclass
class Checkpoint:
    """A model file as :meth:`Adapter.read` found it: verified without running it, parsed into the
    adapter's own view (subclasses add their fields). ``zoo check`` describes it; the loader builds
    the policy from it."""

    model_file: Path
    format: str  # what ``zoo check`` shows: "torch-zip", "sb3-zip", ...
    size: int | None


@dataclass
class PolicyView:
    """A checkpoint as the fit check sees it, made by both paths: :meth:`Adapter.inspect` (``zoo check``: verified
    without running it, tensors described) and :meth:`Adapter.loaded` (the loader: tensors loaded safely).
    Adapters subclass it with what their fit check and policy builder read (an architecture, a config)."""

    checkpoint: Checkpoint
    entry: Entry | None  # None: ``zoo check`` could not tell the experiment (it said why): nothing to fit
    kinds: SpaceKinds = field(default_factory=SpaceKinds)  # what the policy acts on and reads
    #: The one object the fit check and the policy builder read, when one is all they read (SB3's rebuilt model,
    #: a state dict); an adapter whose hooks read more subclasses the view. Keyword-only: subclasses' fields keep
    #: their places.
    model: Any = field(default=None, kw_only=True)


@dataclass(frozen=True)
class Misfit:
    """A checkpoint whose shapes do not fit the eval env's spaces, in each path's words: ``check`` is the error of
    ``zoo check``'s row (the row names the run), ``load`` the loader's (:func:`does_not_fit`)."""

    check: ZooError
    load: ZooError

    @classmethod
    def of(
        cls,
        env_id: str,
        problem: str | None,
        check: str | None = None,
        hint: str = "check the env id of this run",
        load_hint: str = "check --env-id",
    ) -> Misfit | None:
        """The misfit a fit check found, ``problem`` (None or empty: it fits): ``zoo check``'s error says ``check``
        (by default the loader's words) with ``hint``, the loader's is :func:`does_not_fit` with ``load_hint``."""
        if not problem:
            return None
        load = does_not_fit(env_id, problem, load_hint)
        return cls(LayoutMismatch(check or load.message, hint), load)


@dataclass(frozen=True)
class NetworkFlag:
    """A training flag that sends something off this machine: what it sends where, and the credential it needs."""

    sends: str  # "metrics to Weights & Biases"
    credential: str  # "a W&B API key"


#: The stem of the files ``zoo watch`` writes for a run's best checkpoint (``best_model.pt``, ...). Discovery
#: must never take them for the latest checkpoint, and :meth:`Adapter.checkpoints` never lists them.
BEST_MODEL = "best_model"


@dataclass
class SavedCheckpoint:
    """One checkpoint a training run has written so far, as :meth:`Adapter.checkpoints` lists it."""

    #: The training step or iteration its name says; None for a file saved over in place (no step in its name).
    step: int | None
    model_file: Path
    #: Files saved with this checkpoint that evaluating it reads, by role (SB3: ``{"vecnormalize": ...}``):
    #: they must be complete before it is loaded, and are copied with it when it is the best.
    companions: dict[str, Path] = field(default_factory=dict)


class Adapter(ABC):
    """One training library, as zoo's core sees it. Subclass it in ``zoo/frameworks/<name>/``."""

    #: The registry's ``framework`` value, and the package name under ``zoo/frameworks/``.
    name: ClassVar[str]
    #: PyPI distributions of the library (reported by ``zoo --version`` when installed).
    packages: ClassVar[tuple[str, ...]] = ()
    #: The zoo extra whose modules loading this framework's models needs (None: torch alone does).
    extra: ClassVar[str | None] = None
    #: zoo's extras this framework owns, ``{extra: the modules it is known by}`` (found, never imported: their
    #: presence means the extra is installed); registry entries may list them under ``extras:``. The env
    #: extras (mujoco, atari, ...) are :data:`zoo.envs.EXTRA_MODULES`. A plug-in's own dependencies come with it.
    extra_modules: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: What a training run of this framework imports, ``{module: the pip requirement that provides it}``:
    #: ``zoo doctor --config`` finds each (without importing it). The env's own extra is checked apart.
    training_modules: ClassVar[dict[str, str]] = {}
    #: How the library's own docs launch a training run, for ``zoo doctor --handoff``: ``{...}`` fields are
    #: the config's (docs/doctor.md), plus ``script``, ``config``, ``iterations``, ``checkpoint_every``, ...
    training_command: ClassVar[str] = "python {script} --config {config}"
    #: The training script when the config names none (``{...}``: the config's fields).
    training_script: ClassVar[str] = "train.py"
    #: The flag :attr:`training_command` takes for the config's ``device:`` (None: the command has none; the
    #: config itself carries it, as for ``--config``). :meth:`training_invocation` passes it.
    training_device_flag: ClassVar[str | None] = None
    #: The folder a training run writes, as a glob over the config's fields: its name holds a time stamp or a
    #: counter, so ``zoo doctor --handoff`` follows, recovers and cleans up the newest match.
    training_run_folder: ClassVar[str] = "{output_dir}"
    #: How a stopped training run goes on, for the handoff's recovery (None: zoo does not know; said as a gap).
    training_resume: ClassVar[str | None] = None
    #: The trainer's own flags that reach the network, ``{flag: NetworkFlag}``: each needs its own consent, so the
    #: command zoo writes never passes one, and ``zoo check`` and the handoff say what each would do.
    network_flags: ClassVar[dict[str, NetworkFlag]] = {}
    #: Registry entries this adapter ships (a plug-in's own ``registry.yaml``; zoo's bundled registry holds
    #: the built-in adapters' entries): read after the bundled file and before the user's.
    registry_file: ClassVar[Path | None] = None
    #: TensorBoard tags under which training logs its episode return; the first one found is shown.
    train_return_tags: ClassVar[tuple[str, ...]] = ()
    #: What a run of this framework looks like on disk (the hint when ``zoo check`` finds nothing).
    layout_hint: ClassVar[str]
    #: Hub naming: library name, tags, default org, companions, card template.
    hub: ClassVar[HubNaming]
    #: Whether :attr:`LoadOptions.model_config` means anything to this framework.
    takes_model_config: ClassVar[bool] = False
    #: Whether the policy can be loaded for a user's tensor env (``--env-factory``), which zoo does not
    #: build before the rollout: only adapters whose checkpoint states the spaces (rsl_rl, skrl).
    takes_env_factory: ClassVar[bool] = False
    #: Whether a policy can be the user's own class (:attr:`LoadOptions.policy_class`); such an adapter's
    #: entries can also be evaluated with no file at all (``zoo eval --policy-class ... --env-id ...``).
    takes_policy_class: ClassVar[bool] = False

    # ------------------------------------------------------------------ registry
    @abstractmethod
    def entry_problem(self, raw: dict[str, Any]) -> tuple[str, str] | None:
        """``(field, problem)`` for the first framework-specific field of a raw registry entry that is wrong."""

    # ------------------------------------------------------------------ discovery
    @abstractmethod
    def discover(self, root: Path) -> Iterator[Run]:
        """The runs (or lone model files) under ``root``, from directory listings and names only."""

    @abstractmethod
    def inputs(self, run: Run) -> list[Path | None]:
        """The files a verdict on ``run`` is read from: ``zoo check`` remembers it while they are unchanged."""

    def companion_files(self, run: Run) -> list[Path]:
        """The existing files besides the model that evaluating it reads (a normalizer's statistics, the
        configs its env is built from): what travels with a lone model file (``zoo push``) and what
        ``zoo doctor`` records with it. By default the :meth:`inputs` other than the model and events file."""
        model = run.model_file
        found = [
            p for p in self.inputs(run) if p is not None and p not in (model, run.events_file) and p.is_file()
        ]
        return list(dict.fromkeys(found))

    def identify(self, run: Run) -> Run:
        """``run`` with its env id and seed as :meth:`env_id` and :meth:`run_seed` resolve them: the one place
        they are resolved, once per run, when it is discovered (``Run.env_id`` and ``Run.seed`` are what
        every filter, evaluation, leaderboard and push reads). A config that cannot be read leaves what the
        names said: ``zoo check`` reports the broken file, and a filter must not fail a whole walk over it."""
        with contextlib.suppress(ZooError):
            run.env_id, run.seed = self.env_id(run), self.run_seed(run)
        return run

    def env_id(self, run: Run) -> str | None:
        """The env id the run was trained on, for :meth:`identify`: from its path by default; adapters also
        read a small config file (bounded, and noted with :func:`~zoo.artifacts.runs.note_read`, since
        ``zoo check`` remembers what discovery found while the files it read are unchanged)."""
        return run.env_id

    def env_id_problem(self, run: Run) -> str | None:
        """Why :meth:`env_id` cannot tell the run's env, when the run's config says more than "nothing"."""
        return None

    def run_seed(self, run: Run) -> int | None:
        """The seed the run was trained with (hub repo names carry it), for :meth:`identify`: from its path
        by default."""
        return run.seed

    def train_returns(
        self, run: Run, problems: list[str] | None = None
    ) -> tuple[str | None, list[tuple[int, float]]]:
        """``(tag, points)``: every episode return training logged, under the first of :attr:`train_return_tags`
        with a point, read from the run's events file and any other ``events.out.tfevents.*`` beside it (a
        resumed training), ordered by step. No events file: ``(None, [])``. ``problems`` gets a line for a
        file cut short or unreadable (what was read before the damage is kept)."""
        if run.events_file is None:
            return None, []
        from zoo.artifacts.tensorboard import scalars

        folder = Path(run.events_file).parent
        files = sorted({Path(run.events_file), *folder.glob("events.out.tfevents.*")})
        for tag in self.train_return_tags:
            said: list[str] = []
            points = []
            for f in files:
                why: list[str] = []
                points += scalars(f, tag, why)
                said += [f"{f.name}: {line}" for line in why]
            if problems is not None:
                problems.extend(said)
            if points:
                return tag, sorted(points, key=lambda p: p[0])
            if said:
                return None, []
        return None, []

    # ------------------------------------------------------------------ reading
    @abstractmethod
    def read(self, run: Run, entry: Entry | None) -> Checkpoint:
        """``run.model_file`` verified and parsed without executing it; a broken file raises.

        A pickle that would need trust is not refused here: the checkpoint records it, ``describe``
        reports it and ``load_policy`` refuses it unless :attr:`LoadOptions.trust_pickle` is set.
        """

    # ------------------------------------------------------------------ the skeleton check and load share
    def describe(self, report: RunReport, registry: Registry) -> None:
        """Fill ``zoo check``'s report on ``report.run``; raise a :class:`ZooError` for its headline error.

        The skeleton :meth:`load_policy` runs too, so that "ok" means "loads": the checkpoint read and verified
        (:meth:`inspect`), then, once the run's env is known, its spaces of the kinds the policy acts on
        (:meth:`env_spaces_or_warn`) and the same shape check the loader makes (:meth:`misfit`), then what
        only check reports (:meth:`checked`). Warnings are ``report.flag(WARNING, ...)``; an error that ends
        the inspection is raised, and :meth:`inspect_run` turns it into the report's reason, so adapters
        never catch to report.
        """
        view = self.inspect(report, registry)
        if view is None:
            return
        env_id = report.run.env_id
        if env_id is None:
            report.flag(WARNING, *self.env_id_unknown(report.run, view))
            return
        if view.entry is None:
            return
        spec = self.env_spec(view.entry, env_id, model_file=view.checkpoint.model_file)
        spaces = self.env_spaces_or_warn(report, view.entry, env_id, view.kinds, spec)
        if spaces is None:
            return
        misfit = self.misfit(view, env_id, spaces)
        if misfit is not None:
            raise misfit.check
        self.checked(report, view, env_id, spaces)

    @abstractmethod
    def inspect(self, report: RunReport, registry: Registry) -> PolicyView | None:
        """``zoo check``'s reading of ``report.run``: its entry, its model file :meth:`read` and verified without
        running it, the report's details and warnings; the view the fit check reads, or None when the report
        already says why the inspection ends here. An error that ends it is raised."""

    def read_entry(self, report: RunReport, registry: Registry, name: str) -> tuple[Entry, Checkpoint]:
        """For :meth:`inspect`: the registry entry ``name`` (the registry's error, with its suggestions, when none)
        and its algorithm, then the run's model file :meth:`read`, its size and format, in the report."""
        entry = registry.get(name)
        report.details["algorithm"] = entry.algorithm
        checkpoint = self.read(report.run, entry)
        report.details.update(size=checkpoint.size, format=checkpoint.format)
        return entry, checkpoint

    def env_id_unknown(self, run: Run, view: PolicyView) -> tuple[str, str]:
        """``(warning, hint)`` of a report whose run's env id is unknown (adapters say where they looked)."""
        return "env id unknown", "pass --env-id"

    @abstractmethod
    def misfit(self, view: PolicyView, env_id: str, spaces: Spaces | None) -> Misfit | None:
        """The fit check of both paths: why the checkpoint's shapes do not fit ``env_id``'s ``spaces`` (of the kinds
        :attr:`PolicyView.kinds` says: the base checked those), or None. ``spaces`` is None only when loading for
        a user's tensor env (``--env-factory``), which is not built before the rollout."""

    def checked(self, report: RunReport, view: PolicyView, env_id: str, spaces: Spaces) -> None:
        """What ``zoo check`` adds once the checkpoint fits ``env_id``'s ``spaces``: a warning the loader has no
        use for, or a check that needs the fit's outcome (rsl_rl's CNN weights, for the env's image size)."""
        return None

    def inspect_run(self, run: Run, registry: Registry) -> RunReport:
        """``zoo check``'s verdict on one run, without executing any file: first what the library's own
        tools would execute in its config files (the headline when there is any), then :meth:`describe`."""
        from zoo.artifacts import findings

        report = RunReport(run)
        folder = run.path if run.path.is_dir() else run.path.parent
        for path in self.config_files(run):
            shown = str(path.relative_to(folder)) if path.is_relative_to(folder) else path.name
            findings.flag(report, findings.yaml_findings(path, shown))
        try:
            self.describe(report, registry)
        except ZooError as exc:
            report.flag(ERROR, self.reason(exc, run), exc.hint)
        return report

    def reason(self, exc: ZooError, run: Run) -> str:
        """The report line for an error raised while inspecting ``run`` (adapters may shorten paths)."""
        return exc.message

    def load_policy(self, checkpoint: Checkpoint, entry: Entry, env_id: str, options: LoadOptions) -> Policy:
        """A ready :class:`~zoo.policy.Policy` for ``env_id``, built from ``checkpoint``: the skeleton
        :meth:`describe` runs, with the weights loaded (:meth:`loaded`), the eval env's spaces refused when not of
        the policy's kinds (:meth:`fitting_spaces`), the same shape check (:meth:`misfit`), then the policy built
        (:meth:`build_policy`)."""
        view = self.loaded(checkpoint, entry, env_id, options)
        spec = self.eval_env(entry, env_id, options, checkpoint.model_file)
        spaces = self.fitting_spaces(entry, env_id, view.kinds, spec)
        misfit = self.misfit(view, env_id, spaces)
        if misfit is not None:
            raise misfit.load
        return self.build_policy(view, env_id, spaces, options)

    @abstractmethod
    def loaded(self, checkpoint: Checkpoint, entry: Entry, env_id: str, options: LoadOptions) -> PolicyView:
        """The loader's reading of ``checkpoint``: its weights loaded safely (``torch.load(weights_only=True)``,
        restricted unpickling; full unpickling only with ``options.trust_pickle``), as the view the fit check
        reads; what refuses the load before any env is made raises."""

    @abstractmethod
    def build_policy(
        self, view: PolicyView, env_id: str, spaces: Spaces | None, options: LoadOptions
    ) -> Policy:
        """The :class:`~zoo.policy.Policy` of a view that fits ``env_id``'s ``spaces``."""

    def check_options(self, options: LoadOptions) -> None:
        """Refuse options this framework has no use for, before anything is read."""
        if options.model_config is not None and not self.takes_model_config:
            raise UsageError(
                f"--model-config is not used by {self.name} models (their checkpoint states the "
                "architecture)",
                hint="drop --model-config",
            )
        if options.env_factory is not None and not self.takes_env_factory:
            raise UsageError(
                f"--env-factory: {self.name} policies take their spaces from a gymnasium env, and zoo "
                "does not build a user's env before the rollout",
                hint="evaluate rsl_rl or skrl "
                "checkpoints on your own tensor env, or register it with gymnasium and pass --env-id",
            )
        if options.policy_class is not None and not self.takes_policy_class:
            raise UsageError(
                f"--policy-class is not used by {self.name} models (zoo builds their policy from the "
                "checkpoint)",
                hint="drop --policy-class, or evaluate your class alone: zoo eval "
                "--policy-class module:Class --env-id ENV",
            )

    # ------------------------------------------------------------------ evaluation
    def env_spec(
        self,
        entry: Entry,
        env_id: str,
        video_dir: str | None = None,
        *,
        model_file: Path | None = None,
        trusted_wrappers: frozenset[str] = frozenset(),
    ) -> EnvSpec | TensorEnvSpec:
        """The eval env: the entry's wrapper preset on ``env_id``.

        An adapter whose runs carry their own env config (rl_zoo3's ``config.yml``) reads it beside
        ``model_file`` and refuses a wrapper class that is neither allowlisted nor in ``trusted_wrappers``."""
        from zoo.envs import env_spec_for

        return env_spec_for(entry, env_id, video_dir)

    def eval_env(
        self,
        entry: Entry,
        env_id: str,
        options: LoadOptions,
        model_file: Path | None = None,
        video_dir: str | None = None,
    ) -> EnvSpec | TensorEnvSpec:
        """The env an evaluation steps: the user's tensor env when ``options.env_factory`` names one
        (it replaces the eval env; its code runs only when the rollout builds it), else :meth:`env_spec`."""
        if options.env_factory:
            from zoo.tensor_env import TensorEnvSpec

            return TensorEnvSpec(env_id, factory=options.env_factory, video_dir=video_dir)
        return self.env_spec(
            entry, env_id, video_dir, model_file=model_file, trusted_wrappers=options.trusted_wrappers
        )

    def eval_mode(self, entry: Entry, env_id: str) -> tuple[bool, str]:
        """``(deterministic, why)``: the eval mode when the caller sets none. The registry's, unless the
        framework's own eval protocol differs by env (rl_zoo3 samples on Atari)."""
        return entry.eval["deterministic"], "registry"

    def video_dir(self, run: Run, model_file: Path) -> Path:
        """Where ``--capture-video`` writes an evaluation's replays: ``videos/`` inside the run dir."""
        run_dir = run.path if run.path.is_dir() else run.path.parent
        return run_dir.resolve() / "videos" / f"{model_file.stem}-eval"

    def replay_dirs(self, run: Run) -> list[Path]:
        """Folders ``zoo push`` looks in for a replay, newest evaluation first."""
        model = run.model_file or run.path
        return [self.video_dir(run, model)]

    # ------------------------------------------------------------------ training (zoo doctor --handoff)
    def training_invocation(self, fields: dict[str, Any]) -> str:
        """The command that trains what a doctor config describes: :attr:`training_command` filled from ``fields``
        (the config's, plus ``script``, ``config``, ``iterations``, ...), with :attr:`training_device_flag` and the
        config's ``device`` when it states one. An adapter whose trainer names devices otherwise overrides it."""
        import shlex

        command = self.training_command.format(**fields)
        if fields.get("device") and self.training_device_flag:
            command += f" {self.training_device_flag} {shlex.quote(fields['device'])}"
        return command

    # ------------------------------------------------------------------ following training
    def checkpoints(self, run_dir: Path) -> list[SavedCheckpoint]:
        """The checkpoints the run being trained in ``run_dir`` has written so far, oldest first.

        ``zoo watch`` calls this every poll, so it reads directory listings only (a file may be half
        written: the watcher waits until it is stable and retries what fails to load). The files zoo
        writes itself (:data:`BEST_MODEL` ones) are never listed. A framework whose training writes no
        checkpoint series keeps this default: nothing to follow."""
        return []

    def best_model_files(self, run_dir: Path, checkpoint: SavedCheckpoint) -> dict[str, Path]:
        """``{name in run_dir: source file}`` of the copy ``zoo watch`` keeps of the best checkpoint, the
        model first: ``best_model`` plus its suffix, and ``best_model_{role}`` plus theirs for its
        companions. An adapter whose discovery reads other names overrides it; either way
        ``zoo eval run_dir/<the model's name>`` must load the copy as it loaded the checkpoint."""
        files = {f"{BEST_MODEL}{checkpoint.model_file.suffix}": checkpoint.model_file}
        for role, path in checkpoint.companions.items():
            files[f"{BEST_MODEL}_{role}{path.suffix}"] = path
        return files

    # ------------------------------------------------------------------ sharing
    def hub_files(self, model_file: Path, env_id: str, workdir: Path) -> dict[str, Path]:
        """Files a hub repo of this model holds beside it, under the names the library's own hub tools
        expect (huggingface_sb3's ``vec_normalize.pkl``, rl_zoo3's ``config.yml``). A file that must be
        made is written into ``workdir``, a private folder the push deletes once it is staged."""
        return {}

    def card_context(self, entry: Entry, run: Run) -> dict[str, Any]:
        """Extra values for the model card template (the layout in words, the training command)."""
        return {}

    # ------------------------------------------------------------------ what the library's own loader does
    def config_files(self, run: Run) -> list[Path]:
        """The run's YAML files that the library's own tools load (rl_zoo3's ``config.yml``, Isaac Lab's
        ``params/agent.yaml``), existing ones only: ``zoo check`` reports the Python tags in them that an
        unsafe YAML loader executes. They must be among :meth:`inputs`."""
        return []

    def file_findings(self, path: Path) -> list[Finding]:
        """What the library's own loader would run (an error) or fail on (a warning) in ``path``, one of the
        files ``zoo push`` stages; YAML is checked for every framework alike, so this is for the rest."""
        return []

    def strip_findings(self, path: Path, findings: list[Finding]) -> bytes:
        """``path``'s content without the strippable ones of ``findings`` (:meth:`file_findings`'s), for
        ``zoo push --strip-unsafe``; called only for a file with such findings."""
        raise UnsupportedError(f"zoo cannot strip {path.name}")

    # ------------------------------------------------------------------ helpers
    def unused_fields(self, raw: dict[str, Any], fields: tuple[str, ...], why: str) -> tuple[str, str] | None:
        """For ``entry_problem``: the first of ``fields`` an entry sets although this framework reads it
        from the checkpoint (a field that would be silently ignored is a typo waiting to bite)."""
        given = next((key for key in fields if raw.get(key)), None)
        return (given, f"not used by {self.name} entries ({why})") if given else None

    # ------------------------------------------------------------------ helpers for describe()
    def missing_extra(self, entry: Entry, env_id: str | None) -> str | None:
        """The first optional extra that the entry (first) or the env needs and that is not installed."""
        from zoo.envs import extras_for_env, missing_modules_for_extras
        from zoo.frameworks import extra_modules

        needed = list(dict.fromkeys([*entry.extras, *(extras_for_env(env_id) if env_id else [])]))
        missing = missing_modules_for_extras(needed, {e: extra_modules(e, self) for e in needed})
        return missing[0] if missing else None

    def warn_missing_extra(self, report: RunReport, entry: Entry, env_id: str | None) -> bool:
        """Whether an extra evaluating the run needs is missing (:meth:`missing_extra`), after the report's warning."""
        missing = self.missing_extra(entry, env_id)
        if missing:
            report.flag(
                WARNING,
                f"missing optional extra {missing!r} to evaluate it",
                f"pip install 'rl-zoo-hub[{missing}]'",
            )
        return missing is not None

    def fitting_spaces(self, entry: Entry, env_id: str, kinds: SpaceKinds, spec: Any = None) -> Spaces | None:
        """The fit check of every command, before any shape is compared: the eval env's ``(observation_space,
        action_space)`` (of ``spec``, else the entry's preset), refused in one line
        (:class:`~zoo.frameworks.kinds.SpaceMismatch`) when they are not of the ``kinds`` the policy acts on
        and reads (:meth:`SpaceKinds.fitting <zoo.frameworks.kinds.SpaceKinds.fitting>`; None: no env here)."""
        return kinds.fitting(spec if spec is not None else self.env_spec(entry, env_id), entry.name, env_id)

    def env_spaces_or_warn(
        self,
        report: RunReport,
        entry: Entry,
        env_id: str,
        kinds: SpaceKinds,
        spec: EnvSpec | TensorEnvSpec | None = None,
    ) -> Spaces | None:
        """:meth:`fitting_spaces` for ``zoo check``: None after a warning saying why there are none (a missing
        extra, an env that cannot be built here), or when the inspection scope creates no env (``zoo doctor``
        without ``--probe-env``). Spaces of another kind than ``kinds`` raise: the run's error."""
        if self.warn_missing_extra(report, entry, env_id):
            return None
        try:
            return self.fitting_spaces(entry, env_id, kinds, spec)
        except (RefusedError, SpaceMismatch):
            raise
        except ZooError as exc:
            report.flag(WARNING, f"cannot build env to compare shapes: {exc.message}", exc.hint)
            return None


def does_not_fit(env_id: str, problem: str, hint: str = "check --env-id") -> ZooError:
    """The loader's one error for a model whose spaces differ from the eval env's."""
    return LayoutMismatch(f"model does not fit {env_id}: {problem}", hint=hint)
