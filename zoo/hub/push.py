"""``zoo push``: stage a run for the hub, refuse what must not leave the machine, upload on consent.

The default is a dry run: the exact folder that would be uploaded is built locally (a temp folder
renamed into place, so a failed staging leaves the previous one intact) and listed. Only ``--yes``
uploads it, in a single commit, through ``huggingface_hub``; that commit also deletes what the repo's
previous zoo release had and this one has not (:mod:`zoo.hub.release`). Like CleanRL's own push, every
file of a run dir is staged (of a lone model file, only the file and what evaluating it reads), which is
why secrets, symlinks leaving the run dir and oversized files are refused before anything is copied. So is a file whose library's own loader would run code on the
machine of whoever downloads it (:mod:`zoo.artifacts.findings`: an SB3 ``:serialized:`` pickle off
the allowlist, a YAML Python tag that executes), unless ``--strip-unsafe`` publishes a copy without it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from zoo.atomic import check_writable, private_workdir
from zoo.errors import NetworkError, RefusedError, UsageError, ZooError
from zoo.hub.consent import endpoint
from zoo.hub.release import MANIFEST

SECRET_NAME = re.compile(
    r"(^\.env(\..*)?$|token|secret|credential|passw|^\.netrc$|^id_(rsa|dsa|ecdsa|ed25519)$|\.(pem|key|p12|pfx)$)",
    re.IGNORECASE,
)
SECRET_CONTENT = re.compile(rb"-----BEGIN [A-Z ]*PRIVATE KEY-----|\bhf_[A-Za-z0-9]{30,}")
SCAN_BYTES = 1 << 20  # content is scanned in files up to this size (text, configs, json)
DEFAULT_MAX_MB = 100
#: The card's images, made for each push (never written to the run dir).
LEARNING_CURVE = "images/learning_curve.png"
EVAL_RETURNS = "images/eval_returns.png"


@dataclass
class StagedFile:
    """One file of the upload: its name in the repo, where it comes from, what it is."""

    name: str
    source: Path
    size: int
    what: str


@dataclass
class Staging:
    """What ``zoo push`` would upload, and where the staged copy lies."""

    repo_id: str
    folder: Path
    files: list[StagedFile] = field(default_factory=list)
    #: What the libraries' own loaders would fail on in the staged files (published all the same).
    warnings: list[str] = field(default_factory=list)
    #: ``{staged name: what --strip-unsafe removed from it}``.
    stripped: dict[str, list[str]] = field(default_factory=dict)

    @property
    def card(self) -> Path:
        return self.folder / "README.md"


def describe(name: str, model_file: str) -> str:
    if name == model_file:
        return "the model weights"
    if name == "eval.json":
        return "zoo eval results"
    if name.startswith("events.out.tfevents"):
        return "TensorBoard training log"
    if name == "replay.mp4":
        return "a replay of the agent"
    if name == LEARNING_CURVE:
        return "learning curve (training returns)"
    if name == EVAL_RETURNS:
        return "histogram of the eval returns"
    if name.endswith(".metadata.json"):
        return "export sidecar"
    if name.endswith((".onnx", ".ts")):
        return "exported policy"
    if name == "README.md":
        return "this model card"
    if name == MANIFEST:
        return "zoo's list of this release's files"
    return "from the run dir"


def _refuse_secret(path: Path, shown: str) -> None:
    if SECRET_NAME.search(path.name):
        raise RefusedError(
            f"{shown} looks like a secret (by its name); refusing to push the run",
            hint="move it out of the run dir",
        )
    if path.stat().st_size <= SCAN_BYTES:
        if SECRET_CONTENT.search(path.read_bytes()):
            raise RefusedError(
                f"{shown} contains what looks like a private key or access token; refusing to push",
                hint="remove it from the file or the run dir",
            )
        token = os.environ.get("HF_TOKEN")
        if token and token.encode() in path.read_bytes():
            raise RefusedError(f"{shown} contains your HF_TOKEN; refusing to push", hint="remove it")


def collect_run_files(run_dir: Path, *, max_mb: float, allow_large: bool) -> list[tuple[str, Path]]:
    """``(name in repo, real path)`` for every file of the run dir, after the refusal rules."""
    root = run_dir.resolve()
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(run_dir):
        dirnames.sort()
        for name in sorted(filenames) + [d for d in dirnames if (Path(dirpath) / d).is_symlink()]:
            path = Path(dirpath) / name
            shown = str(path)
            if path.is_symlink():
                real = path.resolve()
                if not real.is_relative_to(root):
                    raise RefusedError(
                        f"{shown} is a symlink to {real}, outside the run dir; refusing to push",
                        hint="replace it with a copy of what it points to, or remove it",
                    )
                if not real.is_file():
                    continue
            _refuse_file(path, shown, max_mb=max_mb, allow_large=allow_large)
            found.append((str(path.relative_to(run_dir)), path.resolve()))
    return found


def _refuse_file(path: Path, shown: str, *, max_mb: float, allow_large: bool) -> None:
    """Refuse a file that looks like a secret, or is over the size limit."""
    _refuse_secret(path, shown)
    size_mb = path.stat().st_size / 1e6
    if size_mb > max_mb and not allow_large:
        raise RefusedError(
            f"{shown} is {size_mb:.0f} MB, over the {max_mb:g} MB limit",
            hint="pass --allow-large if it belongs in the repo",
        )


def model_file_sources(target, *, max_mb: float, allow_large: bool) -> list[tuple[str, Path]]:
    """A lone model file's release: the file, the companions evaluating it reads (the adapter's
    :meth:`~zoo.frameworks.base.Adapter.companion_files`: SB3's statistics, rl_zoo3's configs), named as
    they lie beside the model, and the eval.json beside it when that evaluated this very file. Never the
    folder's other files: a lone file is often one of many in ``models/`` or ``Downloads/``."""
    from zoo.artifacts.digest import sha256_file

    model = target.model_file
    folder = model.parent
    run = dataclasses.replace(target.run, env_id=target.env_id)
    found: list[tuple[str, Path]] = []
    for path in dict.fromkeys([model, *target.adapter.companion_files(run)]):
        name = path.relative_to(folder).as_posix() if path.is_relative_to(folder) else path.name
        real = path.resolve()
        if path != model and path.is_symlink() and not real.is_relative_to(folder.resolve()):
            raise RefusedError(
                f"{path} is a symlink to {real}, outside {folder}; refusing to push",
                hint="replace it with a copy of what it points to, or remove it",
            )
        _refuse_file(path, str(path), max_mb=max_mb, allow_large=allow_large)
        found.append((name, real))
    evaluation = folder / "eval.json"
    if evaluation.is_file() and evaluation.stat().st_size <= SCAN_BYTES:
        with contextlib.suppress(ZooError):
            data = load_eval(evaluation)
            if (
                isinstance(data, dict)
                and data.get("model_sha256") == sha256_file(model)
                and data.get("task") == target.env_id
            ):
                _refuse_secret(evaluation, str(evaluation))
                found.append(("eval.json", evaluation.resolve()))
    return found


@functools.lru_cache(maxsize=4096)
def _findings_of(adapter_name: str, path: Path, shown: str, stamp: str) -> tuple:
    """:func:`file_findings`, remembered while the file is unchanged (the early refusal and the staging
    read the same files)."""
    from zoo.artifacts import findings
    from zoo.frameworks import get_adapter

    if findings.is_yaml(path):
        return tuple(findings.yaml_findings(path, shown))
    return tuple(get_adapter(adapter_name).file_findings(path))


def file_findings(target, sources: list[tuple[str, Path]]) -> dict[str, list]:
    """``{name in the repo: findings}`` of every source with any: what the library's own loader would run
    (errors) or fail on (warnings) for whoever downloads the repo."""
    from zoo.artifacts.cache import stamp
    from zoo.artifacts.findings import is_yaml

    found = {}
    for name, path in sources:
        shown = name if is_yaml(path) else ""  # other files' findings name the file itself
        found[name] = list(_findings_of(target.adapter.name, path, shown, stamp([path])))
    return {name: items for name, items in found.items() if items}


def refuse_unsafe(found: dict[str, list], *, strip: bool) -> None:
    """Refuse the push for a finding that runs code, unless ``strip`` and it can be stripped: one line naming
    the first, exit 3."""
    from zoo.artifacts.report import ERROR

    blocking = [
        f for items in found.values() for f in items if f.severity == ERROR and not (strip and f.strippable)
    ]
    if not blocking:
        return
    first = blocking[0]
    more = f" (and {len(blocking) - 1} more)" if len(blocking) > 1 else ""
    hint = (
        "pass --strip-unsafe to publish a copy without it (docs/push.md)" if first.strippable else first.hint
    )
    raise RefusedError(f"refusing to push: {first.message}{more}", hint=hint)


def strip_unsafe(target, sources: list[tuple[str, Path]], found: dict[str, list]) -> dict[str, bytes]:
    """``{name in the repo: content}`` of each source whose code findings ``--strip-unsafe`` removes."""
    from zoo.artifacts import findings
    from zoo.artifacts.report import ERROR

    paths = dict(sources)
    rewritten = {}
    for name, items in found.items():
        strippable = [f for f in items if f.severity == ERROR and f.strippable]
        if strippable:
            path = paths[name]
            rewritten[name] = (
                findings.strip_yaml(path)
                if findings.is_yaml(path)
                else target.adapter.strip_findings(path, strippable)
            )
    return rewritten


def exported_policies(sources: list[tuple[str, Path]]) -> list[dict]:
    """Sidecars of the ``zoo export`` files in the run (each checked to match its file), for the card."""
    from zoo.exporter.runtime import EXPORT_SUFFIXES, read_sidecar

    names = {name for name, _ in sources}
    return [
        {"file": name, **read_sidecar(path)}
        for name, path in sources
        if path.suffix in EXPORT_SUFFIXES and f"{name}.metadata.json" in names
    ]


#: A file in every folder zoo push stages (never uploaded): the next push may replace such a folder, and no
#: other. ``--stage-dir ~/work`` must not delete a folder of the user's.
STAGED_MARK = ".zoo-staged"


def check_stage_dir(folder: Path) -> None:
    """Refuse a --stage-dir that staging would replace but that zoo did not stage: a link, a file, or a folder
    holding files without :data:`STAGED_MARK`; or one that cannot be written."""
    if folder.is_symlink():
        raise UsageError(
            f"--stage-dir {folder} is a link; staging replaces the folder, not what it points to",
            hint="give the folder it points to, or a new folder",
        )
    check_writable(folder, "--stage-dir", folder=True)
    if folder.is_dir() and not (folder / STAGED_MARK).is_file() and any(folder.iterdir()):
        raise UsageError(
            f"--stage-dir {folder} holds files zoo push did not stage; refusing to replace them",
            hint="give a new or empty folder, or one an earlier zoo push staged",
        )


def stage(
    repo_id: str,
    folder: Path,
    sources: list[tuple[str, Path]],
    model_file: str,
    card_text: str,
    labels: dict[str, str] | None = None,
    rewritten: dict[str, bytes] | None = None,
) -> Staging:
    """Copy ``sources`` (``rewritten`` ones as their new content), the card and the release's
    :data:`~zoo.hub.release.MANIFEST` (every file staged, with its sha256 and size) into a fresh folder,
    then rename it over ``folder`` (an earlier staging there is moved aside first and removed after)."""
    from zoo.artifacts.digest import sha256_file
    from zoo.hub.release import manifest

    with private_workdir(folder.parent, f".{folder.name}.") as work:
        tmp = work / "stage"
        tmp.mkdir()
        staging = Staging(repo_id, folder)
        for name, source in sources:
            dest = tmp / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            if rewritten and name in rewritten:
                dest.write_bytes(rewritten[name])
            else:
                shutil.copyfile(source, dest)
            what = (labels or {}).get(name) or describe(name, model_file)
            staging.files.append(StagedFile(name, source, dest.stat().st_size, what))
        (tmp / "README.md").write_text(card_text, encoding="utf-8")
        staging.files.append(
            StagedFile("README.md", folder / "README.md", len(card_text.encode()), "this model card")
        )
        listed = {f.name: (sha256_file(tmp / f.name), f.size) for f in staging.files}
        (tmp / MANIFEST).write_text(manifest(listed), encoding="utf-8")
        size = (tmp / MANIFEST).stat().st_size
        staging.files.append(StagedFile(MANIFEST, folder / MANIFEST, size, describe(MANIFEST, model_file)))
        (tmp / STAGED_MARK).touch()
        check_stage_dir(folder)  # again, right before replacing it
        if folder.exists():
            os.replace(folder, work / "previous")  # removed with the work folder
        os.replace(tmp, folder)
    return staging


#: What ``upload`` returns in ``status``: a new commit on the branch (or PR ref) given, a new pull request,
#: nothing (the hub already holds these files), or a commit the hub made although no PR came of --create-pr.
PUSH_STATUSES = ("committed", "pr-opened", "unchanged", "committed-without-pr")
# huggingface_hub logs this (hf_api.create_commit and _upload_pipeline) when it skips an empty commit
_SKIPPED_COMMIT = "No files have been modified since last commit"
_SKIP_LOGGERS = ("huggingface_hub.hf_api", "huggingface_hub._upload_pipeline")
_PR_REF = re.compile(r"refs/pr/\d+")
_COMMIT_ID = re.compile(r"[0-9a-fA-F]{40}")
_INVALID_TOKEN = "Invalid credentials in Authorization header"  # huggingface.co's 401 for an unknown token


class _SkippedCommit(logging.Filter):
    """Notices huggingface_hub's "skipping an empty commit" warning, and keeps it off stderr: the summary
    says so instead."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = False

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage().startswith(_SKIPPED_COMMIT):
            self.seen = True
            return False
        return True


@contextlib.contextmanager
def _watch_skipped_commit() -> Iterator[_SkippedCommit]:
    watch = _SkippedCommit()
    loggers = [logging.getLogger(name) for name in _SKIP_LOGGERS]
    for logger in loggers:
        logger.addFilter(watch)
    try:
        yield watch
    finally:
        for logger in loggers:
            logger.removeFilter(watch)


def upload(staging: Staging, *, private: bool, revision: str | None, create_pr: bool, message: str) -> dict:
    """Create the repo if needed and upload the staged folder (consent already given) in one commit that
    also deletes the files of the repo's previous zoo release that this one does not stage; say what
    happened.

    ``revision`` is a branch (created from main if it does not exist, as ``hf upload --revision`` does) or
    an open PR's ``refs/pr/N``; ``create_pr`` opens a PR against main. Returns ``status`` (one of
    :data:`PUSH_STATUSES`), a one-line ``summary`` to print as is, ``revision`` (the branch or ref the
    files went to; main for a PR), ``branch_created``, ``commit`` and ``commit_url`` (the new commit, or
    the one already holding the files when ``unchanged``), and ``pr_url``/``pr_revision`` (None unless a
    PR was opened), and :func:`_compare`'s ``changes`` and ``compared_with``. Every failure is a one-line
    :class:`ZooError` that never shows the token.
    """
    from huggingface_hub import HfApi, get_token
    from huggingface_hub.utils import disable_progress_bars

    if not sys.stderr.isatty():
        disable_progress_bars()  # tqdm bars in a log are noise
    repo_id = staging.repo_id
    target = (revision or "main").removeprefix("refs/heads/")
    if create_pr and target != "main":  # upload_folder raises ValueError for it: PRs always target main
        raise ZooError(
            f"--create-pr opens a pull request against main, so it cannot go with --revision {revision}",
            hint="drop --revision to open the PR, or drop --create-pr to commit to the branch",
        )
    if _COMMIT_ID.fullmatch(target):
        raise ZooError(
            f"--revision {target} is a commit id; a push goes to a branch or an open PR (refs/pr/N)",
            hint="give a branch name",
        )
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    api = HfApi()
    token = get_token()
    try:
        api.create_repo(repo_id, private=private, exist_ok=True)
        head, branch_created = _revision_head(api, repo_id, target)
        comparison = _compare(api, staging, target, head)
        staged = staged_files(staging)
        operations = [
            CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(path)) for name, path in staged.items()
        ]
        operations += [
            CommitOperationDelete(path_in_repo=c["name"])
            for c in comparison["changes"]
            if c["change"] == "deleted"
        ]
        with _watch_skipped_commit() as skipped:
            # one commit: the new files and the deletion of what the previous release had and this one has not;
            # on top of the commit compared with (else the hub refuses it: a push meanwhile would be undone)
            info = api.create_commit(
                repo_id,
                operations,
                commit_message=message,
                parent_commit=head,
                revision=None if create_pr else target,
                create_pr=create_pr,
            )
        landed = _branch_head(api, repo_id, target) if create_pr and not info.pr_url else None
    except ZooError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure becomes one line, without the token
        raise _push_error(exc, repo_id, target, token) from None
    if info.pr_url:
        status = "pr-opened"
    elif skipped.seen or info.oid == head:  # a commit always gets a new id: the same one means none was made
        status = "unchanged"
    else:
        status = "committed-without-pr" if create_pr else "committed"
    result = {
        "status": status,
        "revision": target,
        "branch_created": branch_created,
        "commit": info.oid,
        "commit_url": info.commit_url,
        "pr_url": info.pr_url,
        "pr_revision": info.pr_revision,
    }
    result["summary"] = _summary(result, repo_id, create_pr=create_pr, landed=landed)
    return {**result, **comparison}


def staged_files(staging: Staging) -> dict[str, Path]:
    """``{name in the repo: staged copy}`` of every file the push uploads."""
    return {f.name: staging.folder / f.name for f in staging.files}


def _compare(api, staging: Staging, target: str, head: str | None) -> dict:
    """``changes`` (each file added, replaced, unchanged or deleted) and ``compared_with`` (the repo, the
    branch and commit compared with, where the previous release's file list came from, and ``kept``: the
    repo's files the push leaves as they are, such as a hand-written notes.md)."""
    from zoo.hub.release import GITATTRIBUTES, changes, read_remote

    remote = read_remote(api, staging.repo_id, target, head)
    found = changes(staged_files(staging), remote)
    kept = sorted(set(remote.files) - {c.name for c in found} - {GITATTRIBUTES})
    return {
        "changes": [{"name": c.name, "change": c.change, "size": c.size} for c in found],
        "compared_with": {
            "repo_id": remote.repo_id,
            "revision": remote.revision,
            "commit": remote.commit,
            "previous_release": remote.previous_from,
            "kept": kept,
        },
    }


def compare(staging: Staging, *, revision: str | None, create_pr: bool) -> dict:
    """What ``upload`` would add, replace and delete, read from the hub without writing (consent given: a
    dry run's ``--allow-download``); the same keys as :func:`_compare`. A branch that does not exist yet is
    compared with main, which it would be created from; a repo that does not exist, with nothing."""
    from huggingface_hub import HfApi, get_token
    from huggingface_hub.errors import RepositoryNotFoundError

    repo_id = staging.repo_id
    target = "main" if create_pr else (revision or "main").removeprefix("refs/heads/")
    api = HfApi()
    try:
        try:
            head = _branch_head(api, repo_id, target)
        except RepositoryNotFoundError:
            return _compare(api, staging, target, None)
        if head is None and _PR_REF.fullmatch(target):
            raise _missing_pr(repo_id, target)
        if head is None:
            head = _branch_head(api, repo_id, "main")
        return _compare(api, staging, target, head)
    except ZooError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure becomes one line, without the token
        raise _push_error(exc, repo_id, target, get_token(), reading=True) from None


def _summary(result: dict, repo_id: str, *, create_pr: bool, landed: str | None) -> str:
    """The one line ``zoo push --yes`` prints for ``result``."""
    status, target, url = result["status"], result["revision"], result["commit_url"]
    short = result["commit"][:7]
    created = f"created branch '{target}' in {repo_id} from main; " if result["branch_created"] else ""
    if status == "pr-opened":
        pr = result["pr_revision"]
        return f"opened pull request {pr} on {repo_id} against main (commit {short}): {result['pr_url']}"
    if status == "unchanged":
        why = "nothing changed, so no pull request was opened" if create_pr else "nothing changed"
        return f"{created}{why}: {repo_id} @ {target} already holds these files (commit {short})"
    if status == "committed-without-pr":
        where = f"straight to {repo_id} @ {target}" if landed == result["commit"] else f"to {repo_id}"
        return f"the hub opened no pull request: commit {short} went {where}: {url}"
    return f"{created}committed {short} to {repo_id} @ {target}: {url}"


def _branch_head(api, repo_id: str, target: str) -> str | None:
    """The commit the branch or PR ref ``target`` points at, None if the repo has no such ref."""
    refs = api.list_repo_refs(repo_id, include_pull_requests=True)
    for ref in [*refs.branches, *(refs.pull_requests or [])]:
        if target in (ref.name, ref.ref):
            return ref.target_commit
    return None


def _missing_pr(repo_id: str, target: str) -> ZooError:
    return ZooError(
        f"pull request {target} does not exist in {repo_id}",
        hint="give an open PR's refs/pr/N, or pass --create-pr to open a new one",
    )


def _revision_head(api, repo_id: str, target: str) -> tuple[str | None, bool]:
    """``target``'s head commit before the upload, and whether the branch had to be created for it.

    A missing branch is created from main, as ``hf upload --revision`` and transformers' ``push_to_hub``
    do; a missing PR ref is an error (a push cannot open PR number N)."""
    head = _branch_head(api, repo_id, target)
    if head is not None:
        return head, False
    if _PR_REF.fullmatch(target):
        raise _missing_pr(repo_id, target)
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    try:
        api.create_branch(repo_id, branch=target, exist_ok=True)  # exist_ok: another push may have made it
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else None
        if status in (401, 403) or isinstance(exc, RepositoryNotFoundError):
            raise  # the token's problem, said by _push_error
        said = " ".join((exc.response.headers.get("X-Error-Message") or "").split())[:300] if status else ""
        raise ZooError(
            f"branch '{target}' does not exist in {repo_id}, and {endpoint()} did not create it "
            f"({status}{': ' + said if said else ''})",
            hint="pass an existing branch, or create this one on the hub first",
        ) from None
    return _branch_head(api, repo_id, target), True


def _push_error(
    exc: Exception, repo_id: str, target: str, token: str | None, *, reading: bool = False
) -> ZooError:
    """One line for a failed push (or, ``reading``, a dry run's failed look at the repo), by what the hub
    answered; the token is never in it."""
    from huggingface_hub.errors import (
        BadRequestError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    hub, namespace = endpoint(), repo_id.split("/")[0]
    doing, doing_to = (
        (f"read {repo_id}", f"read {repo_id}") if reading else (f"push {repo_id}", f"push to {repo_id}")
    )

    def clean(text: str) -> str:
        line = " ".join(text.split())[:300]
        return line.replace(token, "<HF_TOKEN>") if token else line

    if isinstance(exc, OfflineModeIsEnabled):
        return NetworkError(
            f"HF_HUB_OFFLINE=1 is set, so zoo will not {doing}", hint="unset HF_HUB_OFFLINE to go online"
        )
    if not isinstance(exc, HfHubHTTPError):
        if isinstance(exc, OSError | TimeoutError) or type(exc).__module__.startswith(("httpx", "httpcore")):
            return NetworkError(
                clean(f"cannot reach {hub} to {doing}: {type(exc).__name__}: {exc}"),
                hint="check the network, HF_ENDPOINT, or that the hub is running",
            )
        return NetworkError(clean(f"{doing_to} failed: {type(exc).__name__}: {str(exc).splitlines()[0]}"))
    status = exc.response.status_code if exc.response is not None else None
    said = clean(exc.response.headers.get("X-Error-Message") or exc.server_message or "") if status else ""
    if status == 401 and token is None:
        return NetworkError(
            f"{hub} wants a token to {doing_to}, and none is set (401)",
            hint="set HF_TOKEN to a token with write access, or run `hf auth login`",
        )
    if status == 401 and (said == _INVALID_TOKEN or not isinstance(exc, RepositoryNotFoundError)):
        return NetworkError(
            f"{hub} does not accept the token in HF_TOKEN (401: unknown, revoked or expired)",
            hint="set HF_TOKEN to a valid token of this hub, or run `hf auth login` again",
        )
    if status == 403 and reading:
        return NetworkError(
            f"the token may not read {repo_id} on {hub} (403{': ' + said if said else ''})",
            hint="set HF_TOKEN to a token with access, or drop --allow-download",
        )
    if status == 403:
        return NetworkError(
            f"the token may not write to {namespace} on {hub} (403{': ' + said if said else ''})",
            hint=f"use a token with write access to {namespace}, or push to a namespace of yours",
        )
    if isinstance(exc, RevisionNotFoundError):
        return NetworkError(
            f"branch '{target}' does not exist in {repo_id} (or is not a branch)",
            hint="pass an existing branch, or a new name to create it from main",
        )
    if isinstance(exc, RepositoryNotFoundError):
        return NetworkError(
            f"repo {repo_id} not found on {hub} ({status})",
            hint="check --repo-id, and that HF_TOKEN may see the repo",
        )
    if status in (409, 412):
        return NetworkError(
            f"{repo_id} @ {target} changed while pushing ({status}{': ' + said if said else ''})",
            hint="push again",
        )
    if isinstance(exc, BadRequestError):
        return NetworkError(f"the hub refused the push to {repo_id}: {said or 'bad request (400)'}")
    return NetworkError(f"{doing_to} failed: HTTP {status}{': ' + said if said else ''}")


def card_files(
    staging_sources: list[tuple[str, Path]], model_file: str, labels: dict[str, str]
) -> list[dict]:
    """The card's file table, by name (a file made by one push and kept in the run dir by the next lists
    the same way, so that re-pushing an unchanged run changes nothing)."""
    names = sorted(name for name, _ in staging_sources) + ["README.md", MANIFEST]
    return [{"name": n, "what": labels.get(n) or describe(n, model_file)} for n in names]


def load_eval(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ZooError(f"cannot read {path}: {exc}", hint="rerun zoo eval on the run") from None


def _hub_names(target, taken: set[str], workdir: Path) -> tuple[list[tuple[str, Path]], dict[str, str]]:
    """The model (and the adapter's hub files) also under the names the framework's hub tools expect.

    huggingface_sb3 looks for ``{algo}-{env_id}.zip`` and ``vec_normalize.pkl``; a run dir holds them
    under other names. Identical content costs nothing twice: the hub stores blobs by sha256.
    """
    extra: dict[str, Path] = {}
    hub_name = target.entry.model_filename(env_id=target.env_id)
    if not any(c in hub_name for c in "*?[") and "/" not in hub_name:
        extra[hub_name] = target.model_file.resolve()
    files = target.adapter.hub_files(target.model_file, target.env_id, workdir)
    extra.update({name: path.resolve() for name, path in files.items()})
    library, model = target.adapter.hub.display_name, target.model_file.resolve()
    staged = {name: path for name, path in extra.items() if name not in taken}
    labels = {
        name: f"the model under the name {library}'s hub tools load"
        if path == model
        else f"for {library}'s own hub tools"
        for name, path in staged.items()
    }
    return list(staged.items()), labels


def latest_replay(target) -> Path | None:
    """The newest replay in the folders the run's adapter records evaluations (then training) into."""
    from zoo.envs import list_videos

    for folder in target.adapter.replay_dirs(target.run):
        videos = list_videos(folder)  # in episode order: the last one is the newest
        if videos:
            return videos[-1]
    return None


def check_publishable(
    target, folder: Path, *, max_mb: float, allow_large: bool, strip: bool = False
) -> list[tuple[str, Path]]:
    """What the push publishes of the target, after every refusal (secrets, links leaving the run, oversized
    files, an unwritable --stage-dir, code a library's own loader would run unless ``strip``): a run dir's
    files, or a lone model file with its companions (:func:`model_file_sources`). Called before anything
    is evaluated for the push, and again when staging."""
    run = target.run
    if target.exported is not None:
        raise ZooError(
            f"{run.path} is a policy zoo export wrote; zoo push publishes the run or model file it "
            "was exported from",
            hint=f"push {target.exported.get('checkpoint') or 'the checkpoint'}",
        )
    check_stage_dir(folder)
    if run.path.is_dir():
        sources = collect_run_files(run.path, max_mb=max_mb, allow_large=allow_large)
    else:
        sources = model_file_sources(target, max_mb=max_mb, allow_large=allow_large)
    sources = [(name, path) for name, path in sources if name not in (MANIFEST, "README.md")]
    refuse_unsafe(file_findings(target, sources), strip=strip)
    return sources


def release_forms(target, folder: Path, notify: Callable[[str], None] | None = None) -> dict[str, Path]:
    """The release's framework-free forms (:mod:`zoo.release.forms`), written and proven in ``folder``: ``{name in
    the repo: path}``. A policy zoo cannot export goes without them (``notify`` hears why); a form that fails its
    parity check stops the push (FormFailed)."""
    from zoo.errors import UnsupportedError
    from zoo.release.forms import forms_for_target, without_loader_files

    try:
        forms = {form.name: form.path for form in forms_for_target(target, folder)}
    except UnsupportedError as exc:
        if notify:
            notify(
                f"warning: no framework-free forms (agent.pt, model.safetensors, policy.onnx): {exc.message}"
            )
        return {}
    hub = target.adapter.hub
    kept = without_loader_files(forms, hub.loader_files)
    if notify and len(kept) < len(forms):
        left_out = ", ".join(sorted(set(forms) - set(kept)))
        notify(
            f"note: {left_out} left out: {hub.display_name}'s own hub loader reads the run's files of those names"
        )
    return kept


def release_context(target, forms: dict[str, Path]) -> dict:
    """What the card's "Use this model" section says of the framework-free forms: whether there are any, whether
    agent.pt takes Atari frames or keeps a recurrent state, and whether the evaluation protocol samples (then
    ``zoo enjoy`` takes the native file unless told ``--deterministic``)."""
    from zoo.release.agent import is_atari
    from zoo.release.config import CONFIG_FILE

    if CONFIG_FILE not in forms:
        return {"release": False, "atari": False, "recurrent": False, "samples": False}
    config = json.loads(forms[CONFIG_FILE].read_text(encoding="utf-8"))
    deterministic, _ = target.adapter.eval_mode(target.entry, target.env_id)
    return {
        "release": True,
        "atari": is_atari(target.env_id),
        "recurrent": bool(config.get("is_recurrent")),
        "samples": not deterministic,
    }


def prepare(
    target,
    *,
    repo_id: str,
    folder: Path,
    max_mb: float,
    allow_large: bool,
    workdir: Path,
    made: dict[str, Path] | None = None,
    strip: bool = False,
    forms: dict[str, Path] | None = None,
) -> Staging:
    """Stage the run dir (or a lone model file with its companions), the files ``made`` for this push (an
    eval.json, a replay the run lacks), the release's framework-free ``forms`` (over a run file of the same
    name), the model under its hub names (files the adapter makes for them go to ``workdir``), the rendered
    card and the release's manifest. Videos that are empty or do not decode are left out, with a warning. The
    run dir itself is never written to: ``strip`` stages copies without what would run code."""
    from zoo.artifacts.report import ERROR
    from zoo.hub.card import render_card
    from zoo.release.forms import PURPOSE

    run = target.run
    forms = forms or {}
    sources = check_publishable(target, folder, max_mb=max_mb, allow_large=allow_large, strip=strip)
    lone = (
        {}
        if run.path.is_dir()
        else {
            name: "read with the model when it is evaluated"
            for name, _ in sources
            if name not in (target.model_file.name, "eval.json")
        }
    )
    sources = [(name, path) for name, path in sources if name not in forms] + list(forms.items())
    made = dict(made or {})
    replay = made.pop("replay.mp4", None) or latest_replay(target)
    if replay is not None:
        _refuse_secret(replay, str(replay))
        sources.append(("replay.mp4", replay.resolve()))
    taken = {name for name, _ in sources}
    sources += [(name, path) for name, path in made.items() if name not in taken]
    sources, video_warnings = playable(sources)
    hub_sources, labels = _hub_names(target, {name for name, _ in sources}, workdir)
    labels.update(lone)
    sources += hub_sources
    labels.update({name: PURPOSE[name] for name in forms})
    found = file_findings(target, sources)
    refuse_unsafe(found, strip=strip)
    rewritten = strip_unsafe(target, sources, found) if strip else {}
    stripped = {name: [f.where.split(": ", 1)[-1] for f in found[name] if f.strippable] for name in rewritten}
    for name, parts in stripped.items():
        labels[name] = (
            f"{labels.get(name) or describe(name, target.model_file.name)}, stripped of {', '.join(parts)}"
        )
    eval_file = dict(sources).get("eval.json")
    if eval_file is None:
        raise ZooError(f"{run.path} has no eval.json to put on the card", hint="run zoo eval on it first")
    eval_data = load_eval(eval_file)
    taken = {name for name, _ in sources}
    images = [(name, path) for name, path in card_images(target, eval_data, workdir) if name not in taken]
    sources += images
    context = {
        "env_id": target.env_id,
        "seed": run.seed if run.seed is not None else 0,
        "repo_id": repo_id,
        "model_file": target.model_file.name,
        "eval": eval_data,
        "images": dict(images),
        "files": card_files(sources, target.model_file.name, labels),
        "exports": exported_policies(sources),
        **release_context(target, forms),
    }
    card = render_card(target, context)
    staging = stage(repo_id, folder, sources, target.model_file.name, str(card), labels, rewritten)
    staging.stripped = stripped
    staging.warnings = video_warnings + list(
        dict.fromkeys(f.message for items in found.values() for f in items if f.severity != ERROR)
    )
    return staging


def playable(sources: list[tuple[str, Path]]) -> tuple[list[tuple[str, Path]], list[str]]:
    """``sources`` without the videos that are empty or do not decode, and a warning for each left out
    (or published unchecked, without the video extra's decoder)."""
    from zoo.hub.videos import VIDEO_SUFFIXES, check_video

    kept, warnings = [], []
    for name, path in sources:
        publish, why = check_video(path) if name.endswith(VIDEO_SUFFIXES) else (True, None)
        if why:
            shown = name if Path(name).name == path.name else f"{name} ({path})"
            warnings.append(f"{shown} {why}" + ("" if publish else ": not staged"))
        if publish:
            kept.append((name, path))
    return kept, warnings


def card_images(target, eval_data: dict, workdir: Path) -> list[tuple[str, Path]]:
    """The card's PNGs, made in ``workdir``: the run's learning curve (from its events files; none without
    one) and the histogram of the eval returns it stages."""
    from zoo import plots

    folder = workdir / "images"
    folder.mkdir(parents=True, exist_ok=True)
    made: list[tuple[str, Path]] = []
    tag, points = target.adapter.train_returns(target.run)
    if points:
        title = f"{target.entry.name} on {target.env_id}: training returns ({tag})"
        curve = plots.learning_curves(
            {target.entry.name: [points]}, folder / "learning_curve.png", title=title
        )
        made.append((LEARNING_CURVE, curve))
    episodes = eval_data.get("episodes") if isinstance(eval_data.get("episodes"), list) else []
    returns = [
        e["return"] for e in episodes if isinstance(e, dict) and isinstance(e.get("return"), int | float)
    ]
    if returns:
        title = f"{target.entry.name} on {target.env_id}: {len(returns)} eval episodes"
        made.append((EVAL_RETURNS, plots.return_histogram(returns, folder / "eval_returns.png", title=title)))
    return made
