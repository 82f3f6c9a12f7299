"""rl_zoo3's ``config.yml`` / ``args.yml``: ``yaml.dump`` of an ``OrderedDict``, read safely.

The files carry a ``!!python/object/apply:collections.OrderedDict`` tag that ``yaml.safe_load``
rejects; this loader maps that one tag (a list of ``[key, value]`` pairs) to a dict and still
refuses every other Python tag.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

_TAG = "tag:yaml.org,2002:python/object/apply:collections.OrderedDict"


def _loader():
    import yaml

    class ZooYamlLoader(yaml.SafeLoader):
        """SafeLoader plus the OrderedDict tag rl_zoo3 writes."""

    def ordered_dict(loader, node):
        pairs = loader.construct_sequence(node.value[0], deep=True) if node.value else []
        return {k: v for k, v in pairs}

    ZooYamlLoader.add_constructor(_TAG, ordered_dict)
    return ZooYamlLoader


def read_zoo_yaml(path: Path) -> dict[str, Any]:
    """The mapping in an rl_zoo3 YAML file; ``{}`` when it is missing or not readable."""
    import yaml

    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_loader())  # noqa: S506 - SafeLoader subclass
    except (OSError, yaml.YAMLError, TypeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
