"""Bounds on what zoo reads from a file it did not write, so that no read is unbounded.

Each bound is far above what the libraries write (a state dict's ``data.pkl`` is a few KiB per
hundred tensors; SB3's ``data`` JSON a few KiB; VecNormalize statistics a few MiB for image
observations) and far below what would stall ``zoo check`` or exhaust memory. A file over a bound is
refused in one line that names the bound, before it is decompressed or read whole.
"""

from __future__ import annotations

#: A pickle read whole and interpreted: ``data.pkl`` of a torch file, ``vecnormalize.pkl``, ``cfgs.pkl``.
MAX_PICKLE_BYTES = 256 << 20
#: JSON and text entries of a model archive (SB3's ``data``, version files).
MAX_TEXT_BYTES = 64 << 20
#: An archive entry is inflated (for its CRC and its content) only up to this size ...
MAX_ENTRY_BYTES = 16 << 30
#: ... and, when it is larger than :data:`RATIO_FLOOR_BYTES`, only up to this compression ratio: deflate
#: reaches ~1000:1 on zeros (a zip bomb), weights and JSON compress less than 10:1.
MAX_RATIO = 200
RATIO_FLOOR_BYTES = 1 << 20
#: Entries in one archive (a torch file has one per tensor storage, plus five).
MAX_ENTRIES = 1 << 20


def mib(n: int) -> str:
    return f"{n / (1 << 20):.0f} MiB" if n < 1 << 30 else f"{n / (1 << 30):.0f} GiB"


def entry_problem(name: str, size: int, compressed: int, cap: int = MAX_ENTRY_BYTES) -> str | None:
    """Why an archive entry must not be inflated (too large, or a zip bomb's ratio); None when it may."""
    if size > cap:
        return f"{name} inflates to {mib(size)}, over zoo's {mib(cap)} bound"
    if size > RATIO_FLOOR_BYTES and size > MAX_RATIO * max(compressed, 1):
        return f"{name} inflates {size // max(compressed, 1)}:1 ({mib(size)}), a zip bomb's ratio"
    return None
