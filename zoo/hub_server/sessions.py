"""Browser sessions of ``zoo hub serve``'s web pages: a token typed into the login form, once.

A browser cannot send ``Authorization: Bearer`` with a link or a ``<video>`` element, so the login form
trades a valid token for a random session id, set as an ``HttpOnly``, ``SameSite=Strict`` cookie. The
token itself never reaches a URL, a cookie, a page or the log; the id means nothing outside this process
(a restart logs everyone out) and expires after :data:`SESSION_TTL` seconds.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable

from zoo.hub_server.http_limits import HttpError
from zoo.hub_server.protocol import TokenInfo

SESSION_COOKIE = "zoo_session"
SESSION_TTL = 12 * 3600


class Sessions:
    """Session ids to callers; ``authenticate`` is the server's token check (a 401 :class:`HttpError`
    for a token it does not know)."""

    def __init__(self, authenticate: Callable[[str], TokenInfo | None]):
        self._authenticate = authenticate
        self._sessions: dict[str, tuple[TokenInfo, float]] = {}
        self._lock = threading.Lock()

    def login(self, token: str) -> str | None:
        """A new session id for a valid token; None for an invalid or empty one."""
        token = token.strip()
        if not token:
            return None
        try:
            caller = self._authenticate(f"Bearer {token}")
        except HttpError:
            return None
        if caller is None:
            return None
        session = secrets.token_urlsafe(32)
        with self._lock:
            now = time.monotonic()
            self._sessions = {k: v for k, v in self._sessions.items() if v[1] > now}  # drop expired ones
            self._sessions[session] = (caller, now + SESSION_TTL)
        return session

    def caller(self, session: str | None) -> TokenInfo | None:
        """Who a session id belongs to; None if it is unknown or expired."""
        if not session:
            return None
        with self._lock:
            found = self._sessions.get(session)
        if found is None or found[1] <= time.monotonic():
            return None
        return found[0]

    def logout(self, session: str | None) -> None:
        with self._lock:
            self._sessions.pop(session or "", None)
