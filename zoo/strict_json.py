"""JSON that every reader parses: never a ``NaN`` or ``Infinity`` token.

Python's ``json.dumps`` writes ``float("nan")`` as the bare token ``NaN``, which is not JSON: strict parsers
(JavaScript's ``JSON.parse``, Go's, jq, ``json.loads(..., parse_constant=...)``) reject the whole file. Every
JSON file and line zoo writes (eval.json, evals.jsonl, best_model_meta.json, an export's sidecar, a report's
summary) and every ``--json`` output goes through :func:`dumps`, which refuses a non-finite number in one line
naming where it is. The evaluator fails a rollout with non-finite actions or returns before that
(:mod:`zoo.rollout_guard`), so reaching this refusal means a value slipped past those checks.
"""

from __future__ import annotations

import json
import math
from typing import Any

from zoo.errors import ZooError


def dumps(data: Any, *, what: str, **kwargs: Any) -> str:
    """``json.dumps(data, **kwargs)`` with ``allow_nan=False``; ``what`` names the output in the error."""
    try:
        return json.dumps(data, allow_nan=False, **kwargs)
    except ValueError:
        where = nonfinite_at(data)
        if where is None:
            raise
        raise ZooError(
            f"cannot write {what}: {where} is not a finite number, and JSON has no NaN or infinity",
            hint="please report it: zoo should have refused that value before writing",
        ) from None


def jsonable(data: Any) -> Any:
    """``data`` with each NaN or infinite float spelled as a string (``"nan"``, ``"inf"``, ``"-inf"``, which
    ``float()`` reads back): for values zoo echoes from a user's own file (a config's ``wall_time_minutes:
    .inf``), which a report must show as written. Never for what zoo measures: a non-finite score is an error."""
    if isinstance(data, float) and not math.isfinite(data):
        return str(data)
    if isinstance(data, dict):
        return {key: jsonable(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [jsonable(value) for value in data]
    return data


def nonfinite_at(data: Any, path: str = "") -> str | None:
    """Where the first NaN or infinity in ``data`` is (``metrics.return_mean``, ``episodes[3].return``), or None."""
    if isinstance(data, float):
        return None if math.isfinite(data) else f"{path or 'the value'} ({data})"
    if isinstance(data, dict):
        items = ((f"{path}.{key}" if path else str(key), value) for key, value in data.items())
    elif isinstance(data, list | tuple):
        items = ((f"{path}[{i}]", value) for i, value in enumerate(data))
    else:
        return None
    return next((found for key, value in items if (found := nonfinite_at(value, key)) is not None), None)
