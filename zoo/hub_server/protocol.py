"""What the Hugging Face Hub protocol says, independent of serving it: tokens, card tags, which files go
through LFS, tree listings (a card's YAML header is read by :mod:`zoo.hub.card_header`, shared with the
client). The routes (:mod:`zoo.hub_server.routing` and the route groups) and the server (:mod:`zoo.hub_server.server`)
both follow these rules."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zoo.errors import ZooError
from zoo.hub_server.store_records import FileEntry, InvalidInput, check_name

INVALID_CREDENTIALS = "Invalid credentials in Authorization header"  # the client's cue for "bad token"
LFS_THRESHOLD = 10 * 1024 * 1024  # roughly huggingface.co's rule: files from 10 MiB on go through git-LFS
LFS_PATTERNS = (
    "*.cleanrl_model",
    "*.pt",
    "*.pth",
    "*.bin",
    "*.ckpt",
    "*.safetensors",
    "*.onnx",
    "*.zip",
    "*.tar",
    "*.gz",
    "*.pkl",
    "*.pickle",
    "*.npy",
    "*.npz",
    "*.h5",
    "*.msgpack",
    "*.mp4",
    "*tfevents*",
)


# ---------------------------------------------------------------------------------------------- tokens
@dataclass(frozen=True)
class TokenInfo:
    """Who a token authenticates as, and the namespaces (user and orgs) they may write to."""

    user: str
    orgs: tuple[str, ...] = ()

    def owns(self, namespace: str) -> bool:
        return namespace == self.user or namespace in self.orgs


ANONYMOUS = TokenInfo("anonymous")


def load_tokens(path: Path) -> dict[str, TokenInfo]:
    """Parse a token file (``TOKEN USER [ORG,ORG...]`` per line, ``#`` comments).

    A bad file is a one-line :class:`ZooError` naming the file and line, never the token itself.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ZooError(f"cannot read token file {path}: {getattr(exc, 'strerror', None) or exc}") from exc
    tokens: dict[str, TokenInfo] = {}
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if fields:
            token, info = _token_line(fields, f"token file {path}, line {number}")
            if token in tokens:
                raise ZooError(f"token file {path}, line {number}: the same token appears twice")
            tokens[token] = info
    if not tokens:
        raise ZooError(f"token file {path} has no tokens", hint="one per line: TOKEN USER [ORG,ORG...]")
    return tokens


def _token_line(fields: list[str], where: str) -> tuple[str, TokenInfo]:
    if len(fields) not in (2, 3):
        raise ZooError(f"{where}: expected 'TOKEN USER [ORG,ORG...]'")
    token, user, *rest = fields
    orgs = tuple(rest[0].split(",")) if rest else ()
    if len(token) < 8 or not token.isascii():
        raise ZooError(f"{where}: a token must be at least 8 ASCII characters")
    for name in (user, *orgs):
        try:
            check_name(name, "user or org name")
        except InvalidInput as exc:
            raise ZooError(f"{where}: {exc}") from None
    return token, TokenInfo(user, orgs)


# ---------------------------------------------------------------------------------------------- content
def upload_mode(path: str, size: int, sample: bytes) -> str:
    """'lfs' for large, binary or weight-like files, 'regular' (inline in the commit) for small text."""
    name = path.rsplit("/", 1)[-1].lower()
    if size >= LFS_THRESHOLD or b"\0" in sample or any(fnmatch.fnmatch(name, p) for p in LFS_PATTERNS):
        return "lfs"
    return "regular"


def card_tags(card: dict[str, Any]) -> list[str]:
    """The model's tags as the Hub derives them: the card's tags, its library and its license."""
    tags = card.get("tags") or []
    tags = [tags] if isinstance(tags, str) else list(tags)
    if isinstance(card.get("library_name"), str):
        tags.append(card["library_name"])
    if isinstance(card.get("license"), str):
        tags.append(f"license:{card['license']}")
    return list(dict.fromkeys(t for t in tags if isinstance(t, str)))


def tree_paths(files: dict[str, FileEntry], folder: str, recursive: bool) -> list[str]:
    """Files and folders under ``folder`` ('' for the root): direct children, or all with ``recursive``."""
    prefix = f"{folder}/" if folder else ""
    found: set[str] = set()
    for path in files:
        if not path.startswith(prefix):
            continue
        parts = path[len(prefix) :].split("/")
        depth = len(parts) if recursive else 1
        found.update(prefix + "/".join(parts[: i + 1]) for i in range(depth))
    return sorted(found)


# ---------------------------------------------------------------------------------------------- server
