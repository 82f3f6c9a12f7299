"""YAML that zoo did not write: safe tags only, a bounded size and a bounded alias expansion.

``yaml.safe_load`` builds no objects, but it is still a denial-of-service vector: nine levels of
nine aliases ("billion laughs") load in milliseconds as shared references, and then blow up to
387 million items in whatever walks the result (``json.dumps``, a recursive comparison, rich's
pretty printer). Every YAML zoo reads from a user, a run folder or a hub client goes through
:func:`loads`: the composed node graph is measured with aliases expanded (each shared node
counted once per reference, a recursive alias refused) before anything is constructed. Two budgets,
because either alone can be beaten: nodes (nine levels of nine aliases of a short string) and
characters of scalar text (one 100 KB string behind 20,000 aliases: few nodes, 2 GB of JSON).

Two tag policies:

- ``"safe"``: PyYAML's ``SafeLoader`` (a Python tag is an error). Registry files, model cards.
- ``"config"``: what ``yaml.dump`` of a training config writes. Isaac Lab and mjlab dump tuples as
  ``!!python/tuple`` (read as lists) and rl_zoo3 dumps an ``OrderedDict`` as
  ``!!python/object/apply:collections.OrderedDict`` (read as a dict); any other Python or local
  tag becomes ``None``: it is never built, and the keys zoo reads never hold one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from zoo.errors import BrokenFile, ZooError

#: Nodes a document may hold once every alias is expanded: a large agent config has a few thousand.
MAX_NODES = 200_000
#: Characters of scalar text (keys and values) a document may hold once every alias is expanded:
#: four times the largest file zoo reads, so only an alias can reach it.
MAX_CHARS = 32 << 20
#: Bytes of YAML zoo reads from one file.
MAX_BYTES = 8 << 20
#: ``[`` / ``{`` nesting: PyYAML's scanner is quadratic in it (and its composer recursive).
MAX_FLOW_DEPTH = 100

TagPolicy = Literal["safe", "config"]
_ORDERED_DICT = "tag:yaml.org,2002:python/object/apply:collections.OrderedDict"


class YamlProblem(ValueError):
    """The text is not YAML zoo accepts; the message is one line, without the text itself."""


def _loader(tags: TagPolicy, max_nodes: int, max_chars: int) -> type:
    import yaml

    class Loader(yaml.SafeLoader):
        """SafeLoader that bounds flow nesting and measures the composed document before constructing it."""

        def fetch_flow_collection_start(self, TokenClass):
            if self.flow_level >= MAX_FLOW_DEPTH:
                raise YamlProblem(f"nested too deeply (over {MAX_FLOW_DEPTH} levels of [ or {{)")
            super().fetch_flow_collection_start(TokenClass)

        def compose_document(self):
            node = super().compose_document()
            _check_expansion(node, max_nodes, max_chars)
            return node

    if tags == "config":

        def as_list(loader, node):
            return loader.construct_sequence(node, deep=True)

        def as_dict(loader, node):
            pairs = loader.construct_sequence(node.value[0], deep=True) if node.value else []
            return {key: value for key, value in pairs}

        def unbuilt(_loader, _suffix, _node):
            return None

        Loader.add_constructor("tag:yaml.org,2002:python/tuple", as_list)
        Loader.add_constructor(_ORDERED_DICT, as_dict)
        Loader.add_multi_constructor("tag:yaml.org,2002:python/", unbuilt)
        Loader.add_multi_constructor("!", unbuilt)
    return Loader


def _check_expansion(root, max_nodes: int, max_chars: int) -> None:
    """Refuse a node graph that, with aliases expanded, holds more than ``max_nodes`` nodes or more than
    ``max_chars`` characters of scalars, or a cycle."""
    import yaml

    sizes: dict[int, tuple[int, int]] = {}
    pending: set[int] = set()

    def check(nodes: int, chars: int) -> None:
        if nodes > max_nodes:
            raise YamlProblem(f"expands to more than {max_nodes} nodes (aliases of aliases?)")
        if chars > max_chars:
            raise YamlProblem(
                f"expands to more than {max_chars} characters of text (a long string's aliases?)"
            )

    def size(node) -> tuple[int, int]:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in pending:
            raise YamlProblem("recursive alias (an anchor that contains itself)")
        pending.add(key)
        nodes, chars = 1, len(node.value) if isinstance(node, yaml.ScalarNode) else 0
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [item for pair in node.value for item in pair]
        else:
            children = []
        for child in children:
            child_nodes, child_chars = size(child)
            nodes, chars = nodes + child_nodes, chars + child_chars
            check(nodes, chars)
        check(nodes, chars)
        pending.discard(key)
        sizes[key] = nodes, chars
        return nodes, chars

    if root is not None:
        size(root)


def _compose(text: str, max_nodes: int, max_chars: int):
    """The document's node graph (tags kept as written, nothing constructed), within the budgets."""
    import yaml

    try:
        if not getattr(yaml, "__with_libyaml__", False):
            return yaml.compose(text, Loader=_loader("safe", max_nodes, max_chars))  # noqa: S506 - composes only
        # libyaml composes ten times faster and bounds nesting itself (1000 levels, flow or block)
        node = yaml.compose(text, Loader=yaml.CSafeLoader)
        _check_expansion(node, max_nodes, max_chars)
        return node
    except yaml.MarkedYAMLError as exc:
        if "maximum nesting depth" in str(exc.problem):
            raise YamlProblem("nested too deeply (over libyaml's 1000 levels)") from None
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}" if mark else ""
        raise YamlProblem(f"not valid YAML{where}: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise YamlProblem("not valid YAML: " + " ".join(str(exc).split())[:200]) from None
    except RecursionError:
        raise YamlProblem("nested too deeply") from None


def loads(
    text: str, *, tags: TagPolicy = "safe", max_nodes: int = MAX_NODES, max_chars: int = MAX_CHARS
) -> Any:
    """Parse one YAML document; :class:`YamlProblem` with a one-line reason for anything refused."""
    import yaml

    node = _compose(text, max_nodes, max_chars)
    try:
        return None if node is None else _loader(tags, max_nodes, max_chars)("").construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}" if mark else ""
        raise YamlProblem(f"not valid YAML{where}: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise YamlProblem("not valid YAML: " + " ".join(str(exc).split())[:200]) from None
    except RecursionError:
        raise YamlProblem("nested too deeply") from None


# ---------------------------------------------------------------------------------------------- Python tags
_PYTHON = "tag:yaml.org,2002:python/"
#: Python tags whose construction runs nothing, under any loader that knows them: plain values, and what a
#: ``yaml.dump`` of a training config writes for tuples (Isaac Lab, mjlab), ``OrderedDict`` (rl_zoo3) and
#: ``slice(None)`` (Isaac Lab's ``SceneEntityCfg``).
_INERT_PYTHON = frozenset(
    {
        f"{_PYTHON}{name}"
        for name in (
            "none",
            "bool",
            "str",
            "unicode",
            "bytes",
            "int",
            "long",
            "float",
            "complex",
            "list",
            "tuple",
            "dict",
        )
    }
    | {_ORDERED_DICT, f"{_PYTHON}object/apply:builtins.slice"}
)


@dataclass(frozen=True)
class PythonTag:
    """A node under a Python tag that ``yaml.UnsafeLoader`` (rl_zoo3's loader) would execute."""

    key: str  # where: "env_wrapper", "agent.models.policy", "callbacks[1]", or "(the document)"
    tag: str  # as written in YAML's short form: "!!python/object/apply:os.system"
    line: int
    effect: str  # what the unsafe loader does with it: "calls os.system"


def _effect(tag: str | None) -> str | None:
    """What an unsafe loader does with a node tagged ``tag``; None when it runs nothing.

    ``python/name`` and ``python/module`` only import (mjlab's dumps name their functions this way):
    they are findings when they reach a known-dangerous global."""
    from zoo.artifacts.pickles import is_dangerous

    if not tag or not tag.startswith(_PYTHON) or tag in _INERT_PYTHON:
        return None
    kind, _, target = tag[len(_PYTHON) :].partition(":")
    module, _, name = target.rpartition(".")
    if kind == "object/apply":
        return f"calls {target}"
    if kind in ("object", "object/new"):
        return f"builds a {target} object (running its class's code)"
    if kind in ("name", "module") and is_dangerous(module or target, name):
        return f"imports {target}"
    return None  # an import of something harmless, or a tag the loader does not know (it fails: no code)


def _pairs(node) -> list | None:
    """The ``[key, value]`` pairs of rl_zoo3's ``!!python/object/apply:collections.OrderedDict [[...]]``."""
    import yaml

    if node.tag != _ORDERED_DICT or len(node.value) != 1 or not isinstance(node.value[0], yaml.SequenceNode):
        return None
    return node.value[0].value


def _is_pair(node) -> bool:
    """A ``[key, value]`` item of an OrderedDict's list, itself untagged."""
    import yaml

    return isinstance(node, yaml.SequenceNode) and len(node.value) == 2 and not _effect(node.tag)


def _children(node, path: str) -> list[tuple[object, str]]:
    """``(child node, its path)``: mapping keys and values, sequence items, an OrderedDict's pairs by key."""
    import yaml

    def join(label: str) -> str:
        return f"{path}.{label}" if path else label

    def label(key) -> str:
        return str(key.value) if isinstance(key, yaml.ScalarNode) else "?"

    pairs = _pairs(node)
    if pairs is not None:
        found = []
        for i, pair in enumerate(pairs):
            if _is_pair(pair):
                found += [(item, join(label(pair.value[0]))) for item in pair.value]
            else:
                found.append((pair, f"{path}[{i}]"))
        return found
    if isinstance(node, yaml.MappingNode):
        return [(item, join(label(key))) for key, value in node.value for item in (key, value)]
    if isinstance(node, yaml.SequenceNode):
        return [(item, f"{path}[{i}]") for i, item in enumerate(node.value)]
    return []


def python_tags(text: str) -> list[PythonTag]:
    """Every node of the document under a Python tag that an unsafe loader would execute, outermost only
    (what is inside such a node is never reached: the node goes as a whole)."""
    root = _compose(text, MAX_NODES, MAX_CHARS)
    found: list[PythonTag] = []
    seen: set[int] = set()
    stack = [(root, "")] if root is not None else []
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        effect = _effect(node.tag)
        if effect:
            found.append(
                PythonTag(
                    path or "(the document)",
                    "!!" + node.tag[len("tag:yaml.org,2002:") :],
                    node.start_mark.line + 1,
                    effect,
                )
            )
            continue
        stack.extend(reversed(_children(node, path)))
    return found


def strip_python_tags(text: str) -> str:
    """The document re-written without the keys (and list items, and rl_zoo3 ``[key, value]`` pairs) whose
    node carries a Python tag :func:`python_tags` reports; everything else keeps its tags and values. A
    document that is such a node as a whole becomes an empty mapping."""
    import yaml

    root = _compose(text, MAX_NODES, MAX_CHARS)
    seen: set[int] = set()

    def bad(node) -> bool:
        if _effect(node.tag):
            return True
        if id(node) not in seen:
            seen.add(id(node))
            clean(node)
        return False

    def clean(node) -> None:
        pairs = _pairs(node)
        if pairs is not None:  # a pair goes as a whole: [key] alone would break OrderedDict(...)
            pairs[:] = [
                p for p in pairs if not (any([bad(item) for item in p.value]) if _is_pair(p) else bad(p))
            ]
        elif isinstance(node, yaml.MappingNode):
            node.value = [(k, v) for k, v in node.value if not any([bad(k), bad(v)])]
        elif isinstance(node, yaml.SequenceNode):
            node.value = [item for item in node.value if not bad(item)]

    if root is None or bad(root):
        return "{}\n"
    return yaml.serialize(root, Dumper=yaml.SafeDumper, allow_unicode=True)


# ---------------------------------------------------------------------------------------------- files
def read_text(path: str | os.PathLike, *, max_bytes: int = MAX_BYTES) -> str:
    """A YAML file's text, read within ``max_bytes``; a one-line :class:`~zoo.errors.ZooError` else."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            raw = fh.read(max_bytes + 1)
    except OSError as exc:
        raise BrokenFile(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > max_bytes:
        raise ZooError(f"{path}: YAML file over {max_bytes >> 20} MiB", hint="is this really a config file?")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BrokenFile(f"{path}: not UTF-8 text") from None


def read(path: str | os.PathLike, *, tags: TagPolicy = "safe", max_bytes: int = MAX_BYTES) -> Any:
    """The document in ``path``; a one-line :class:`~zoo.errors.ZooError` for a file zoo cannot read."""
    text = read_text(path, max_bytes=max_bytes)
    try:
        return loads(text, tags=tags)
    except YamlProblem as exc:
        raise BrokenFile(f"{path}: {exc}") from None
