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


def loads(
    text: str, *, tags: TagPolicy = "safe", max_nodes: int = MAX_NODES, max_chars: int = MAX_CHARS
) -> Any:
    """Parse one YAML document; :class:`YamlProblem` with a one-line reason for anything refused."""
    import yaml

    loader = _loader(tags, max_nodes, max_chars)
    try:
        if not getattr(yaml, "__with_libyaml__", False):
            return yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader subclass
        # libyaml composes ten times faster and bounds nesting itself (1000 levels, flow or block);
        # the budget check and the construction stay PyYAML's, with the tag policy above
        node = yaml.compose(text, Loader=yaml.CSafeLoader)
        _check_expansion(node, max_nodes, max_chars)
        return None if node is None else loader("").construct_document(node)
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


def read(path: str | os.PathLike, *, tags: TagPolicy = "safe", max_bytes: int = MAX_BYTES) -> Any:
    """The document in ``path``; a one-line :class:`~zoo.errors.ZooError` for a file zoo cannot read."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            raw = fh.read(max_bytes + 1)
    except OSError as exc:
        raise BrokenFile(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > max_bytes:
        raise ZooError(f"{path}: YAML file over {max_bytes >> 20} MiB", hint="is this really a config file?")
    try:
        return loads(raw.decode("utf-8"), tags=tags)
    except UnicodeDecodeError:
        raise BrokenFile(f"{path}: not UTF-8 text") from None
    except YamlProblem as exc:
        raise BrokenFile(f"{path}: {exc}") from None
