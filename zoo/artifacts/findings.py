"""What a library's own loader would do with a file that zoo itself never does: run code, or fail.

zoo reads every file statically, so a pickle or a YAML tag that runs code never runs in zoo. The people
who download a published run use the libraries' own loaders instead: SB3's ``PPO.load`` cloudpickle-loads
every ``:serialized:`` value of a zip's ``data``, rl_zoo3 reads its YAML with ``yaml.UnsafeLoader``. A
:class:`Finding` is what such a loader would do that zoo cannot vouch for: :data:`~zoo.artifacts.report.ERROR`
when it runs code (or something zoo cannot check without running it), :data:`~zoo.artifacts.report.WARNING`
when the library's own load fails although zoo reads the model. ``zoo check`` reports them on the run's
row; ``zoo push`` refuses to publish an error unless ``--strip-unsafe`` removes it from the staged copy
(:func:`strip_yaml` here, :meth:`~zoo.frameworks.base.Adapter.strip_findings` for a framework's files).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zoo.artifacts.report import ERROR, RunReport
from zoo.errors import ZooError

#: The fix of a finding that ``zoo push --strip-unsafe`` removes.
STRIP_HINT = "zoo push refuses to publish it; --strip-unsafe publishes a copy without it (docs/push.md)"
#: YAML files zoo reads or stages (``.yml`` for rl_zoo3, ``.yaml`` for Isaac Lab's ``params/``).
YAML_SUFFIXES = (".yml", ".yaml")


@dataclass(frozen=True)
class Finding:
    """One thing a library's own loader would do with one part of a file."""

    severity: str  # ERROR (code) or WARNING (the library's load fails)
    where: str  # the file and its part: "Pendulum-v1.zip: data['lr_schedule']", "config.yml: env_wrapper"
    what: str  # the rest of the line: "is an unsafe pickle: SB3's load would call posix.system"
    hint: str
    strippable: bool = False  # zoo push --strip-unsafe can remove it and keep the file usable
    part: str = ""  # what the stripping removes (an SB3 ``data`` key), when the file's kind needs it said

    @property
    def message(self) -> str:
        return f"{self.where} {self.what}"


def flag(report: RunReport, findings: list[Finding]) -> None:
    """Each finding on the report, errors first (so that code, not a warning, is the row's headline)."""
    for found in sorted(findings, key=lambda f: f.severity != ERROR):
        report.flag(found.severity, found.message, found.hint)


def yaml_findings(path: Path, shown: str | None = None) -> list[Finding]:
    """The Python tags of a YAML file that a loader building Python tags (``yaml.UnsafeLoader``, which
    rl_zoo3 uses) would execute: one error each, naming the key. A file that cannot be read is no
    finding here: whatever reads it says so."""
    from zoo import safeyaml

    shown = shown or path.name
    try:
        tags = safeyaml.python_tags(safeyaml.read_text(path))
    except (ZooError, safeyaml.YamlProblem):
        return []
    return [
        Finding(
            ERROR,
            f"{shown}: {tag.key}",
            f"is tagged {tag.tag} (line {tag.line}): a YAML loader that builds "
            f"Python tags, such as rl_zoo3's yaml.UnsafeLoader, {tag.effect}",
            STRIP_HINT,
            strippable=True,
        )
        for tag in tags
    ]


def strip_yaml(path: Path) -> bytes:
    """The YAML file with every key (or list item) under a Python tag that executes removed."""
    from zoo import safeyaml

    return safeyaml.strip_python_tags(safeyaml.read_text(path)).encode("utf-8")


def is_yaml(path: Path) -> bool:
    return path.suffix.lower() in YAML_SUFFIXES
