"""Whether this process may fork workers.

``zoo check`` forks (discovery beside imports, one reader per core, the memo written after exit) because
a forked worker shares what this process imported. A library caller's process may hold threads a fork
would copy mid-flight: JAX's (it warns, and a child can deadlock) or Python threads of its own (a server,
a notebook's kernel). There the work is done in this process instead: slower, never stuck.
"""

from __future__ import annotations

import os
import sys
import threading

#: Imported libraries known to run threads of their own that a fork would copy mid-flight.
THREADED_LIBRARIES = ("jax",)


def fork_is_safe() -> bool:
    return (
        hasattr(os, "fork")
        and threading.active_count() == 1
        and not any(name in sys.modules for name in THREADED_LIBRARIES)
    )
