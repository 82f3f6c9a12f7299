"""Non-finite weights: which tensors of a model hold NaN or Inf, and how many such values.

A policy whose training diverged still loads and acts (a NaN DQN plays action 0 forever), so ``zoo check``
reads every floating-point tensor's values and reports the ones that are not finite. The values come from
zoo's static readers: a torch file's storages as the verification read them (:mod:`zoo.artifacts.torchfile`,
no torch), a flax file's numpy arrays (:mod:`zoo.artifacts.flaxfile`), or a state dict already loaded with
``torch.load(weights_only=True)`` (SB3's ``policy.pth``). Optimizer states (Adam's moments) are not
weights and are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

#: Subtrees of a checkpoint that hold an optimizer's state, not the model's weights.
_OPTIMIZER = "optimizer"
#: Tensors listed by name in a report; the rest are counted.
SHOWN = 8


@dataclass(frozen=True)
class NonFinite:
    """One tensor with values that are NaN or +-Inf."""

    name: str
    count: int
    numel: int

    def to_json(self) -> dict[str, str | int]:
        return {"tensor": self.name, "non_finite": self.count, "values": self.numel}


def count(values: np.ndarray) -> int:
    """NaN and +-Inf values in a floating-point or complex array (0 for any other dtype)."""
    import numpy as np

    if values.dtype.kind not in "fc" or not values.size:
        return 0
    return int(values.size - np.count_nonzero(np.isfinite(values)))


def count_bfloat16(raw: np.ndarray) -> int:
    """The same for bfloat16 values given as their uint16 bit patterns (numpy has no bfloat16): a value is
    NaN or Inf exactly when its eight exponent bits are all set."""
    import numpy as np

    return int(np.count_nonzero((raw & 0x7F80) == 0x7F80))


def leaves(content: Any) -> Iterator[tuple[str, Any]]:
    """``(dotted name, leaf)`` of a checkpoint's nested dicts, lists and tuples, optimizer states left out.

    Walked with a stack of its own: a crafted checkpoint nests deeper than Python's recursion limit."""
    stack: list[tuple[str, Any]] = [("", content)]
    while stack:
        prefix, value = stack.pop()
        if isinstance(value, dict):
            items = [(str(k), v) for k, v in value.items() if _OPTIMIZER not in str(k).lower()]
        elif isinstance(value, list | tuple):
            items = [(str(i), v) for i, v in enumerate(value)]
        else:
            yield prefix, value
            continue
        stack.extend((f"{prefix}.{key}" if prefix else key, v) for key, v in reversed(items))


def in_arrays(content: Any) -> list[NonFinite]:
    """The non-finite tensors of loaded content: numpy arrays, and torch tensors (without importing torch:
    a tensor is anything with ``detach`` and ``is_floating_point``)."""
    import numpy as np

    found = []
    for name, leaf in leaves(content):
        if hasattr(leaf, "detach") and hasattr(leaf, "is_floating_point"):
            if not (leaf.is_floating_point() or leaf.is_complex()):
                continue
            bad = int(leaf.numel() - leaf.detach().isfinite().sum().item())
            if bad:
                found.append(NonFinite(name, bad, int(leaf.numel())))
        elif isinstance(leaf, np.ndarray | np.generic):
            bad = count(np.asarray(leaf))
            if bad:
                found.append(NonFinite(name, bad, int(np.size(leaf))))
    return found


def describe(found: list[NonFinite]) -> str:
    """One line: the first tensors by name with their counts, then how many more."""
    shown = ", ".join(f"{f.name} ({f.count} of {f.numel})" for f in found[:3])
    more = f", and {len(found) - 3} more tensors" if len(found) > 3 else ""
    return f"non-finite weights (NaN or Inf): {shown}{more}"


#: The fix a report gives for non-finite weights.
HINT = "training diverged before this checkpoint was saved: evaluate an earlier one, or retrain"
