"""A model card's Markdown as HTML that is safe to put in a page.

A card is user input: anyone who may push to a repo writes it, and anyone who opens the repo's page
reads it. So markdown-it-py renders it (CommonMark, with tables and raw HTML, as huggingface.co does)
and nh3 (ammonia) then keeps only a list of harmless tags and attributes: no scripts, no event handlers,
no styles, no ``javascript:`` URLs, no ids (which could shadow the page's own). The page's Content
Security Policy (no scripts at all) is the second wall.

Relative links and images point into the repo, as on huggingface.co: ``images/curve.png`` becomes
``/ns/name/resolve/COMMIT/images/curve.png``, pinned to the commit the card was read from, so a page
never mixes one commit's text with another's pictures. An image without alt text gets its file name.
"""

from __future__ import annotations

import html
import posixpath
import re
from functools import lru_cache
from urllib.parse import quote, unquote, urlsplit

import nh3
from markdown_it import MarkdownIt

from zoo.hub.card_header import YAML_BLOCK

#: The page has its own landmarks (header, nav, main, footer): a card's would confuse screen readers.
_TAGS = (nh3.ALLOWED_TAGS - {"header", "footer", "nav", "aside", "article", "map", "area"}) | {
    "video",
    "source",
}
_ATTRIBUTES = {
    **{tag: set(attrs) for tag, attrs in nh3.ALLOWED_ATTRIBUTES.items()},
    "video": {"src", "controls", "width", "height", "muted", "loop", "poster"},
    "source": {"src", "type"},
    "code": {"class"},  # language-python, for whoever styles code blocks
}
_SCHEMES = {"http", "https", "mailto"}
_URL_ATTRIBUTES = {"href", "src", "poster"}
_IMG = re.compile(r'<img\b((?:[^>"]|"[^"]*")*)>')
_ALT = re.compile(r'\salt="([^"]*)"')
_SRC = re.compile(r'\ssrc="([^"]*)"')


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def card_body(text: str) -> str:
    """The README without its YAML header (the metadata the page shows on its own)."""
    match = YAML_BLOCK.match(text)
    return text[match.end() :] if match else text


def render_card(text: str, repo_base: str) -> str:
    """Sanitized HTML of a README; ``repo_base`` is ``/ns/name/resolve/COMMIT`` for relative URLs."""

    def keep(tag: str, attribute: str, value: str) -> str | None:
        if attribute in _URL_ATTRIBUTES:
            return repo_url(value, repo_base)
        return value

    clean = nh3.clean(
        _markdown().render(card_body(text)),
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        attribute_filter=keep,
        url_schemes=_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        clean_content_tags={"script", "style"},
        strip_comments=True,
    )
    return _IMG.sub(_with_alt, clean)


def repo_url(value: str, repo_base: str) -> str | None:
    """A card URL as the page uses it: absolute and fragment URLs unchanged, a path relative to the
    README resolved inside the repo, and one that climbs out of it dropped."""
    parts = urlsplit(value)
    if parts.scheme or parts.netloc or value.startswith(("#", "/")) or not parts.path:
        return value
    path = posixpath.normpath(unquote(parts.path))
    if path.startswith("..") or path == ".":
        return None
    tail = f"?{parts.query}" if parts.query else ""
    return f"{repo_base}/{quote(path)}{tail}" + (f"#{parts.fragment}" if parts.fragment else "")


def _with_alt(match: re.Match[str]) -> str:
    """An <img> whose alt is missing or empty gets its file name as alt (nh3 escaped the attributes)."""
    attrs = match.group(1)
    alt = _ALT.search(attrs)
    if alt and alt.group(1).strip():
        return match.group(0)
    src = _SRC.search(attrs)
    name = posixpath.basename(urlsplit(html.unescape(src.group(1))).path) if src else ""
    text = html.escape(unquote(name) or "image", quote=True)
    attrs = _ALT.sub("", attrs)
    return f'<img alt="{text}"{attrs}>'
