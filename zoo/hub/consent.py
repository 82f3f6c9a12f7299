"""Who may touch the network, and when: the one place that decides.

zoo opens no connection unless the user consented for this call (``--allow-download`` for
fetching, ``--yes`` for pushing) or for the session (``ZOO_ALLOW_NETWORK=1``).
``HF_HUB_OFFLINE=1`` always wins, even over consent.
"""

from __future__ import annotations

import os

from zoo.errors import RefusedError, ZooError

_TRUE = {"1", "true", "yes", "on"}


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


def offline() -> bool:
    return _flag("HF_HUB_OFFLINE")


def endpoint() -> str:
    """The hub zoo would talk to (``HF_ENDPOINT``, as huggingface_hub reads it)."""
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def require_network(action: str, flag: str, consented: bool) -> None:
    """Raise unless the network may be used for ``action``; the message says what and how to allow it."""
    if offline():
        raise ZooError(
            f"HF_HUB_OFFLINE=1 is set, so zoo will not {action}", hint="unset HF_HUB_OFFLINE to go online"
        )
    if not (consented or _flag("ZOO_ALLOW_NETWORK")):
        raise RefusedError(
            f"not without your consent: zoo would {action} ({endpoint()})",
            hint=f"pass {flag} (or set ZOO_ALLOW_NETWORK=1) to allow it",
        )
