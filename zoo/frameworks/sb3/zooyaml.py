"""rl_zoo3's ``config.yml`` / ``args.yml``: ``yaml.dump`` of an ``OrderedDict``, read safely.

The files carry a ``!!python/object/apply:collections.OrderedDict`` tag that ``yaml.safe_load``
rejects; :func:`zoo.safeyaml.read`'s config policy maps that one tag (a list of ``[key, value]``
pairs) to a dict and builds no other Python tag.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zoo import safeyaml
from zoo.errors import ZooError


def read_zoo_yaml(path: Path) -> dict[str, Any]:
    """The mapping in an rl_zoo3 YAML file; ``{}`` when it is missing or not readable."""
    try:
        data = safeyaml.read(path, tags="config")
    except ZooError:
        return {}
    return data if isinstance(data, dict) else {}
