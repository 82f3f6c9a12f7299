"""The page handlers of ``zoo hub serve``'s web UI: server-rendered HTML, no scripts, no build step.

Each handler is a plain function, so it runs whole in a worker thread as the API's do (storage reads,
Markdown, templates). A page sees what the API would show the same caller: the caller comes from the
session cookie the login form set (:func:`zoo.hub_server.routing.caller_of`), and a private repo the caller may not
read is the same "not found" page as a repo that does not exist (:meth:`zoo.hub_server.routing.Call.readable`).

Errors are pages too: a page route answers HTML whatever goes wrong; the API keeps its JSON replies.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlsplit

import jinja2
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from zoo.hub_server import scores
from zoo.hub_server.http_limits import HttpError, check_head, read_form
from zoo.hub_server.protocol import ANONYMOUS, TokenInfo
from zoo.hub_server.routing import Call, caller_of, report_bug
from zoo.hub_server.sessions import SESSION_COOKIE, SESSION_TTL
from zoo.hub_server.store_records import (
    DEFAULT_BRANCH,
    Commit,
    EntryNotFound,
    FileEntry,
    RepoNotFound,
    RevisionNotFound,
    StorageError,
)
from zoo.hub_server.web.cardhtml import render_card
from zoo.hub_server.web.evals import card_results, evaluation

if TYPE_CHECKING:
    from zoo.hub_server.server import HubServer

HERE = Path(__file__).parent
STATIC = {"zoo.css": "text/css; charset=utf-8"}
#: No script runs on these pages, not even the server's own: a card that slipped past the sanitizer
#: still could not run one. Images and video come from this server only (an air-gapped lab has no other).
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",  # a page may show a private repo: no shared cache keeps it
}
SORTS = {"lastModified": ("recently updated", -1), "createdAt": ("newest", -1), "id": ("name", 1)}
PAGE_SIZE = 50
MAX_CARD_BYTES = 2 << 20  # a README rendered on a page: Markdown is linear, but this bounds one request
_NEXT = re.compile(r"/(?![/\\])[\x21-\x7e]*")  # a same-site path to go back to after login: no //host
_PR_PREFIX = re.compile(r"(refs/pr/\d+)(?=/|$)")
_TEXT_VIEW = 512 << 10  # a text file up to this size is shown on its /blob/ page
_IMAGE_TYPES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
_NOT_FOUND = (RepoNotFound, RevisionNotFound, EntryNotFound)

PageHandler = Callable[..., Response]


@dataclass(frozen=True)
class FileRow:
    path: str
    size: int
    lfs: bool
    url: str


@dataclass(frozen=True)
class Change:
    """A file a commit added, changed or removed, against the commit it is compared with."""

    path: str
    kind: str  # "added", "changed" or "removed"
    old_size: int | None
    new_size: int | None


# ---------------------------------------------------------------------------------------------- urls
def repo_href(repo_id: str, *tail: str) -> str:
    """A page URL of a repo; each tail part is one path segment, quoted whole (``refs/pr/1`` too)."""
    return "/" + "/".join([quote(repo_id), *(quote(part, safe="") for part in tail)])


def resolve_href(repo_id: str, commit_id: str, path: str) -> str:
    return f"/{quote(repo_id)}/resolve/{commit_id}/{quote(path)}"


def safe_next(value: str | None) -> str:
    """Where to send a browser after login or logout: a path of this site, else the index."""
    return value if value and _NEXT.fullmatch(value) else "/"


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def short_date(iso: str | None) -> str:
    """``2026-12-02T01:03:39.123Z`` as ``2026-12-02 01:03 UTC``."""
    if not iso or len(iso) < 16:
        return iso or ""
    return f"{iso[:10]} {iso[11:16]} UTC"


def split_revision(rest: str) -> tuple[str, str]:
    """``REV/PATH`` of a /tree/ or /blob/ URL, still percent-encoded, as (revision, path). The revision is
    one segment (a branch with a slash comes quoted whole), except ``refs/pr/N``, which the Hub's web
    routes and huggingface_hub write as is."""
    match = _PR_PREFIX.match(rest)
    if match:
        return match.group(1), unquote(rest[match.end() :].lstrip("/"))
    rev, _, path = rest.partition("/")
    return unquote(rev), unquote(path)


def changes(old: dict[str, FileEntry], new: dict[str, FileEntry]) -> list[Change]:
    """The files that differ between two commits' file maps, by path."""
    found = []
    for path in sorted(old.keys() | new.keys()):
        before, after = old.get(path), new.get(path)
        if before == after:
            continue
        kind = "added" if before is None else "removed" if after is None else "changed"
        found.append(Change(path, kind, before.size if before else None, after.size if after else None))
    return found


# ---------------------------------------------------------------------------------------------- pages
class WebPages:
    """The pages of one server; :meth:`routes` lists them (see :func:`zoo.hub_server.web.web_routes`)."""

    def __init__(self, hub: HubServer):
        self.hub, self.storage = hub, hub.storage
        self.templates = jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.templates.filters.update(size=human_size, date=short_date, q=lambda s: quote(str(s), safe=""))
        self.templates.globals.update(repo_href=repo_href, resolve_href=resolve_href)

    # ------------------------------------------------------------------------------------------ plumbing
    def endpoint(self, handler: PageHandler) -> Callable[[Request], Any]:
        """The Starlette endpoint of a page: authenticate, run the handler in a worker thread, and answer
        every failure as an HTML page (a bad session is no error: the page is shown logged out)."""
        hub = self.hub

        async def page(request: Request) -> Response:
            try:
                check_head(request, hub.limits.header_bytes)
                call = Call(hub, request, self._caller(request))
                response = await run_in_threadpool(handler, call, **request.path_params)
            except HttpError as exc:
                response = self.error(request, exc.status, exc.message)
            except _NOT_FOUND as exc:
                response = self.error(request, 404, str(exc))
            except StorageError as exc:
                response = self.error(request, 400, str(exc))
            except Exception:
                report_bug(request)
                response = self.error(request, 500, "internal server error")
            response.headers.update(SECURITY_HEADERS)
            return response

        return page

    def _caller(self, request: Request) -> TokenInfo | None:
        try:
            return caller_of(self.hub, request)
        except HttpError:  # a bearer token this server does not know: the page is shown as to no one
            return None

    def render(self, call: Call | Request, template: str, code: int = 200, **context: Any) -> HTMLResponse:
        request = call.request if isinstance(call, Call) else call
        caller = call.caller if isinstance(call, Call) else self._caller(request)
        here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        page = self.templates.get_template(template).render(
            viewer=None if caller is ANONYMOUS else caller,
            open_access=self.hub.open_access,
            here=here if _NEXT.fullmatch(here) else "/",
            **context,
        )
        return HTMLResponse(page, code)

    def error(self, request: Request, status: int, message: str) -> HTMLResponse:
        titles = {
            400: "Bad request",
            401: "Not signed in",
            403: "Forbidden",
            404: "Not found",
            405: "Method not allowed",
            431: "Request too large",
            500: "Server error",
        }
        title = titles.get(status, f"Error {status}")
        return self.render(request, "error.html.j2", status, title=title, status=status, message=message)

    def not_found(self, request: Request) -> Response:
        response = self.error(request, 404, f"no page at {request.url.path}")
        response.headers.update(SECURITY_HEADERS)
        return response

    def static(self, call: Call, name: str) -> Response:
        if name not in STATIC:
            raise HttpError(404, f"no file {name}")
        headers = {"Cache-Control": "public, max-age=3600"}
        return FileResponse(HERE / "static" / name, media_type=STATIC[name], headers=headers)

    # ------------------------------------------------------------------------------------------ index
    def index(self, call: Call) -> Response:
        query = call.request.query_params
        search, author = query.get("q", "").strip(), query.get("author", "").strip()
        tags = [t for t in query.getlist("tag") if t]
        sort = query.get("sort", "lastModified")
        if sort not in SORTS:
            raise HttpError(400, f"unknown sort {sort!r}: use one of {', '.join(SORTS)}")
        index = self.hub.index
        rows = index.search(
            call.caller,
            author=author or None,
            search=search or None,
            tags=tags,
            sort=sort,
            direction=SORTS[sort][1],
        )
        visible = index.search(call.caller, sort="id", direction=1)
        tag_counts: dict[str, int] = {}
        for row in visible:
            for tag in row.tags:
                tag_counts[tag] = tag_counts.get(tag, 0) + 1
        top_tags = sorted(tag_counts.items(), key=lambda item: (-item[1], item[0]))[:40]
        authors = sorted({row.author for row in visible})
        return self.render(
            call,
            "index.html.j2",
            rows=rows,
            q=search,
            author=author,
            tags=tags,
            sort=sort,
            sorts=SORTS,
            authors=authors,
            top_tags=top_tags,
            total=len(visible),
        )

    # ------------------------------------------------------------------------------------------ model
    def tree(self, call: Call, ns: str, name: str, rest: str) -> Response:
        """``/tree/REV[/FOLDER]``: the model page at a branch, tag, PR or commit, its files under FOLDER."""
        rev, folder = split_revision(rest)
        return self.model(call, ns, name, rev, folder.strip("/"))

    def blob(self, call: Call, ns: str, name: str, rest: str) -> Response:
        """``/blob/REV/PATH``, the file viewer URL huggingface_hub makes (``HfUri.to_url``): a small text
        file shown, an image or video played, anything else described, with its download link."""
        repo_id = f"{ns}/{name}"
        call.readable(repo_id)
        rev, path = split_revision(rest)
        commit = self.storage.resolve(repo_id, rev)
        entry = commit.files.get(path)
        if entry is None:
            raise HttpError(404, f"{path} not found at {rev} in {repo_id}")
        kind, text = _view_kind(path, entry), None
        if kind == "text":
            text = self.storage.read_blob(entry).decode("utf-8", "replace")
        return self.render(
            call,
            "blob.html.j2",
            repo_id=repo_id,
            rev=rev,
            commit=commit,
            path=path,
            entry=entry,
            kind=kind,
            text=text,
            url=resolve_href(repo_id, commit.id, path),
        )

    def model(self, call: Call, ns: str, name: str, rev: str = DEFAULT_BRANCH, folder: str = "") -> Response:
        repo_id = f"{ns}/{name}"
        meta = call.readable(repo_id)
        commit = self.storage.resolve(repo_id, rev)
        refs = self.storage.refs(repo_id)
        readme = commit.files.get("README.md")
        card = self.hub.index.card(readme)
        card_html, card_note = "", None
        if readme is not None and readme.size <= MAX_CARD_BYTES:
            text = self.storage.read_blob(readme).decode("utf-8", "replace")
            card_html = render_card(text, f"/{quote(repo_id)}/resolve/{commit.id}")
        elif readme is not None:
            card_note = f"README.md is {human_size(readme.size)}: too large to show here; download it below"
        prefix = f"{folder}/" if folder else ""
        files = [
            FileRow(path, e.size, e.lfs, resolve_href(repo_id, commit.id, path))
            for path, e in sorted(commit.files.items())
            if path.startswith(prefix)
        ]
        if folder and not files:
            raise HttpError(404, f"folder {folder} not found at {rev} in {repo_id}")
        videos = sorted(
            (p for p in commit.files if p.lower().endswith(".mp4")),
            key=lambda p: (p != "replay.mp4", p.count("/"), p),
        )
        history = list(itertools.islice(self.storage.history(repo_id, commit), 11))
        return self.render(
            call,
            "model.html.j2",
            repo_id=repo_id,
            ns=ns,
            name=name,
            meta=meta,
            commit=commit,
            rev=rev,
            folder=folder,
            refs=refs,
            card=card,
            card_html=card_html,
            card_note=card_note,
            files=files,
            total_size=sum(f.size for f in files),
            video=videos[0] if videos else None,
            results=card_results(card),
            evaluation=evaluation(self.storage, repo_id, commit),
            score=self._score(call, repo_id, commit),
            history=history[:10],
            more_history=len(history) > 10,
            prs=sorted(refs["pr"].items(), key=lambda item: -int(item[0])),
        )

    def _score(self, call: Call, repo_id: str, commit: Commit) -> tuple[str, Any] | None:
        """The env id and leaderboard row of this repo (verified or self-reported, with its rank), for the
        main branch's head: that is what the leaderboard ranks."""
        if commit.id != self.storage.refs(repo_id)["heads"].get(DEFAULT_BRANCH):
            return None
        row = self.hub.index.get(repo_id)
        for card_score in scores.card_scores(row.card if row else {}):
            for score in scores.board(self.hub, card_score.env_id, call.caller):
                if score.repo_id == repo_id:
                    return card_score.env_id, score
        return None

    # ------------------------------------------------------------------------------------------ history
    def commits(self, call: Call, ns: str, name: str, rev: str) -> Response:
        repo_id = f"{ns}/{name}"
        call.readable(repo_id)
        head = self.storage.resolve(repo_id, rev)
        page = _page_number(call)
        start = page * PAGE_SIZE
        listed = list(itertools.islice(self.storage.history(repo_id, head), start, start + PAGE_SIZE + 1))
        return self.render(
            call,
            "commits.html.j2",
            repo_id=repo_id,
            rev=rev,
            head=head,
            commits=listed[:PAGE_SIZE],
            page=page,
            more=len(listed) > PAGE_SIZE,
        )

    def commit(self, call: Call, ns: str, name: str, commit_id: str) -> Response:
        repo_id = f"{ns}/{name}"
        call.readable(repo_id)
        commit = self.storage.resolve(repo_id, commit_id)
        parent = self.storage.load_commit(repo_id, commit.parent) if commit.parent else None
        return self.render(
            call,
            "commit.html.j2",
            repo_id=repo_id,
            commit=commit,
            parent=parent,
            changes=changes(parent.files if parent else {}, commit.files),
        )

    def discussions(self, call: Call, ns: str, name: str) -> Response:
        repo_id = f"{ns}/{name}"
        call.readable(repo_id)
        prs = sorted(self.storage.refs(repo_id)["pr"].items(), key=lambda item: -int(item[0]))
        heads = {number: self.storage.load_commit(repo_id, target) for number, target in prs}
        return self.render(call, "discussions.html.j2", repo_id=repo_id, prs=prs, heads=heads)

    def pull_request(self, call: Call, ns: str, name: str, number: str) -> Response:
        """A PR (``refs/pr/N``): its commits since it left main, and the files they change."""
        repo_id = f"{ns}/{name}"
        call.readable(repo_id)
        refs = self.storage.refs(repo_id)
        if number not in refs["pr"]:
            raise HttpError(404, f"pull request #{number} not found in {repo_id}")
        head = self.storage.load_commit(repo_id, refs["pr"][number])
        main = self.storage.load_commit(repo_id, refs["heads"][DEFAULT_BRANCH])
        on_main = {c.id for c in _bounded(self.storage.history(repo_id, main))}
        own: list[Commit] = []
        base: Commit | None = None
        for item in _bounded(self.storage.history(repo_id, head)):
            if item.id in on_main:
                base = item
                break
            own.append(item)
        return self.render(
            call,
            "pull_request.html.j2",
            repo_id=repo_id,
            number=number,
            head=head,
            base=base,
            main=main,
            commits=own,
            changes=changes(base.files if base else {}, head.files),
            merged=head.id in on_main,
        )

    # ------------------------------------------------------------------------------------------ leaderboard
    def leaderboards(self, call: Call) -> Response:
        return self.render(call, "leaderboards.html.j2", env_ids=scores.env_ids(self.hub, call.caller))

    def leaderboard(self, call: Call, env_id: str) -> Response:
        rows = scores.board(self.hub, env_id, call.caller)
        if not rows and env_id not in scores.env_ids(self.hub, call.caller):
            raise HttpError(404, f"no public model reports a score on {env_id}")
        return self.render(call, "leaderboard.html.j2", env_id=env_id, rows=rows)

    # ------------------------------------------------------------------------------------------ login
    def login_form(self, call: Call) -> Response:
        return self.render(
            call, "login.html.j2", next=safe_next(call.request.query_params.get("next")), failed=False
        )

    async def _posted_form(self, request: Request) -> dict[str, str] | Response:
        """The login or logout form's fields, or the error page: a form posted from another site, or one
        over the bounds, is refused before it is read."""
        try:
            check_head(request, self.hub.limits.header_bytes)
            _same_origin(request, self.hub.public_url)
            return await _form(request, self.hub)
        except HttpError as exc:
            return self._secured(self.error(request, exc.status, exc.message))

    async def login(self, request: Request) -> Response:
        """POST of the login form: the token (in the body, never a URL) for a session cookie."""
        form = await self._posted_form(request)
        if isinstance(form, Response):
            return form
        next_page = safe_next(form.get("next"))
        session = await run_in_threadpool(self.hub.sessions.login, form.get("token", ""))
        if session is None:
            failed = self.render(request, "login.html.j2", 401, next=next_page, failed=True)
            return self._secured(failed)
        response = RedirectResponse(next_page, 303)
        response.set_cookie(
            SESSION_COOKIE,
            session,
            max_age=SESSION_TTL,
            path="/",
            httponly=True,
            samesite="strict",
            secure=self._https(request),
        )
        return self._secured(response)

    async def logout(self, request: Request) -> Response:
        form = await self._posted_form(request)
        if isinstance(form, Response):
            return form
        self.hub.sessions.logout(request.cookies.get(SESSION_COOKIE))
        response = RedirectResponse(safe_next(form.get("next")), 303)
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
        return self._secured(response)

    def _https(self, request: Request) -> bool:
        """Whether the browser reached us over TLS (directly, or through the proxy ``--public-url`` names):
        then the cookie is ``Secure`` and never travels in clear."""
        return request.url.scheme == "https" or (self.hub.public_url or "").startswith("https:")

    @staticmethod
    def _secured(response: Response) -> Response:
        response.headers.update(SECURITY_HEADERS)
        return response


# ---------------------------------------------------------------------------------------------- helpers
def _view_kind(path: str, entry: FileEntry) -> str:
    """How a /blob/ page shows a file: ``image``, ``video``, ``text`` (small, no NUL in it) or ``binary``."""
    lower = path.lower()
    if lower.endswith(_IMAGE_TYPES):
        return "image"
    if lower.endswith(".mp4"):
        return "video"
    if entry.size <= _TEXT_VIEW and not entry.lfs:
        return "text"
    return "binary"


def _bounded(commits: Iterator[Commit], limit: int = 10_000) -> Iterator[Commit]:
    return itertools.islice(commits, limit)


def _page_number(call: Call) -> int:
    try:
        return max(0, int(call.request.query_params.get("p", "0")))
    except ValueError:
        raise HttpError(400, "p must be a page number") from None


def _same_origin(request: Request, public_url: str | None) -> None:
    """Refuse a form posted from another site (login CSRF: logging a browser into someone else's account).
    The browser's Origin must be this server as the browser reached it: its Host, or ``--public-url``."""
    site = request.headers.get("sec-fetch-site")
    origin = request.headers.get("origin")
    allowed = {request.headers.get("host", "")}
    if public_url:
        allowed.add(urlsplit(public_url).netloc)
    if site not in (None, "same-origin", "none") or (
        origin is not None and urlsplit(origin).netloc not in allowed
    ):
        raise HttpError(403, "this form may only be sent from this server's own pages")


async def _form(request: Request, hub: HubServer) -> dict[str, str]:
    """A small url-encoded form body (the login form's), read within a fixed bound."""
    try:
        fields = await read_form(request, 16 << 10, hub.limits.body_idle_timeout, max_fields=8)
    except ClientDisconnect:
        raise HttpError(400, "request body ended early") from None
    return {key: values[0] for key, values in fields.items()}
