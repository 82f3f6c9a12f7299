"""A model card's YAML header, read as the Hub reads it: the one reader for the client (what a repo says it
holds, :mod:`zoo.hub.repo_target`) and the server (``/api/validate-yaml``, ``model_info``'s ``cardData``,
the web page's card, in :mod:`zoo.hub_server`). The text comes from anyone who can reach a hub, so it is
parsed within a size and an alias-expansion budget."""

from __future__ import annotations

import json
import re
from typing import Any

from zoo import safeyaml

#: A README's YAML header, in characters: cards carry a few KiB, and PyYAML parses some 200 KiB a second,
#: so this bounds what one unauthenticated /api/validate-yaml costs to about a second of one core.
MAX_CARD_YAML = 256 << 10
#: What that header may expand to through aliases: it goes back to the client in every model_info.
MAX_CARD_CHARS = 4 << 20
# The Hub's own pattern (huggingface_hub repocard.py), made linear: possessive newline runs, and a close
# that starts a newline run. The original backtracks cubically on newlines: 8 KB of them took 270 s of CPU.
# Where the two differ, the original found an empty header and this one none: the same {} either way.
YAML_BLOCK = re.compile(r"^(\s*+---[\r\n]++)([\S\s]*?)((?<![\r\n])[\r\n]++---(\r\n|\n|$))")


def card_metadata(text: str) -> dict[str, Any]:
    """A README's YAML front matter as JSON-safe data ({} without one); ValueError with a one-line reason.

    The YAML is parsed by :func:`zoo.safeyaml.loads` within a size and an alias-expansion budget, because
    the text comes from anyone who can reach the server (``/api/validate-yaml`` needs no token).
    """
    match = YAML_BLOCK.match(text)
    if not match:
        return {}
    if len(match.group(2)) > MAX_CARD_YAML:
        raise ValueError(f"the README.md metadata is over {MAX_CARD_YAML >> 10} KiB of YAML")
    try:
        data = safeyaml.loads(match.group(2), max_chars=MAX_CARD_CHARS)
    except safeyaml.YamlProblem as exc:
        raise ValueError(f"invalid YAML in the README.md metadata: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError("the README.md metadata must be a YAML mapping (key: value)")
    try:
        return json.loads(json.dumps(data, default=str))  # dates and the like become strings
    except (TypeError, ValueError):  # a key JSON cannot hold (a date as a key, say)
        raise ValueError("the README.md metadata has keys that are not strings or numbers") from None
