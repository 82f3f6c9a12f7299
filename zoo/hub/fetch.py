"""Local-first model resolution for ``zoo enjoy``: local run, then HF cache, then (consented) download.
``zoo export ORG/REPO`` first reads the repo's model card the same way (:func:`fetch_card`).

Every hub call goes through ``huggingface_hub``. A download is verified against the checksum the
server reported in its metadata (sha256 for LFS files, the git blob sha1 otherwise) before the
file is loaded; a mismatch deletes the cached copy.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.artifacts.digest import git_blob_sha1, sha256_file
from zoo.artifacts.runs import Run
from zoo.errors import BrokenFile, NetworkError, UsageError, ZooError
from zoo.hub.consent import endpoint, offline, require_network

if TYPE_CHECKING:
    from zoo.registry import Entry

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_SHA1 = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class HubFile:
    """Where a model file would come from on the hub, and how the id was derived."""

    repo_id: str
    filename: str
    revision: str
    derived_from: str  # the flags that made repo_id, for error messages
    companions: tuple[str, ...] = ()  # files beside the model that evaluation needs, fetched when present
    framework: str = ""  # the adapter that reads a fetched run
    run_files: tuple[str, ...] = ()  # the repo holds a run: these globs are fetched as one folder


@dataclass
class Source:
    """Where the model that gets evaluated came from."""

    kind: str  # local-run | cache | download
    path: Path
    repo_id: str | None = None
    revision: str | None = None
    commit: str | None = None
    run: Run | None = None

    def describe(self) -> str:
        if self.kind == "local-run":
            return f"local run {self.run.path if self.run else self.path}"
        commit = f", commit {self.commit[:12]}" if self.commit else ""
        what = "downloaded from" if self.kind == "download" else "HF cache of"
        return f"{what} {self.repo_id} @ {self.revision}{commit}"

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "path": str(self.path),
            "repo_id": self.repo_id,
            "revision": self.revision,
            "commit": self.commit,
        }


def hub_file(
    entry: Entry,
    *,
    env_id: str,
    run_seed: int,
    hf_entity: str | None,
    hf_repository: str | None,
    revision: str,
) -> HubFile:
    """The repo and file to fetch. The user or org: ``hf_entity``, else the entry's ``hub.org``, else the
    framework's usual one (CleanRL's models live under ``cleanrl``)."""
    from zoo.frameworks import get_adapter

    hub = get_adapter(entry.framework).hub
    filename = entry.model_filename(env_id=env_id)
    if hf_repository:
        return HubFile(
            hf_repository,
            filename,
            revision,
            "--hf-repository",
            hub.companions,
            entry.framework,
            hub.run_files,
        )
    hf_entity = hf_entity or entry.hub.get("org") or hub.default_org
    if not hf_entity:
        raise UsageError(
            f"no hub user or org for {entry.name}: {hub.display_name} models have no usual home",
            hint="pass --hf-entity ORG or --hf-repository ORG/NAME",
        )
    if "repo" not in entry.hub:
        raise UsageError(
            f"registry entry {entry.name!r} has no hub.repo pattern", hint="pass --hf-repository ORG/NAME"
        )
    repo_id = entry.hub_repo(hf_entity=hf_entity, env_id=env_id, seed=run_seed)
    derived = (
        f"pattern {entry.hub['repo']!r} with --hf-entity {hf_entity} --env-id {env_id} --run-seed {run_seed}"
    )
    return HubFile(repo_id, filename, revision, derived, hub.companions, entry.framework, hub.run_files)


def from_cache(target: HubFile) -> Path | None:
    """The cached file, or None. A cached "does not exist" answer is an error unless we may ask again. The path is
    absolute, as a download's is, whatever ``HF_HOME`` is relative to: eval.json records it."""
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.file_download import _CACHED_NO_EXIST

    cached = try_to_load_from_cache(target.repo_id, target.filename, revision=target.revision)
    if cached is _CACHED_NO_EXIST:
        return None
    return Path(cached).absolute() if isinstance(cached, str) else None


def cached_absence(target: HubFile) -> bool:
    """True when an earlier download learned that the file is not in the repo at this revision."""
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.file_download import _CACHED_NO_EXIST

    return (
        try_to_load_from_cache(target.repo_id, target.filename, revision=target.revision) is _CACHED_NO_EXIST
    )


def verify(path: Path, etag: str | None) -> None:
    """Compare the file with the checksum the server reported; delete it on mismatch."""
    etag = (etag or "").strip('"').removeprefix("W/").strip('"')
    if _SHA256.match(etag):
        actual, kind = sha256_file(path), "sha256"
    elif _SHA1.match(etag):
        actual, kind = git_blob_sha1(path), "git sha1"
    else:
        raise ZooError(f"the hub reported no usable checksum for {path.name} (ETag {etag!r}); not loading it")
    if actual != etag:
        blob = path.resolve()  # the HF cache links snapshots/<commit>/<file> to blobs/<etag>
        path.unlink(missing_ok=True)
        blob.unlink(missing_ok=True)
        raise ZooError(
            f"{path.name}: {kind} {actual} does not match the hub's {etag}; the download was deleted",
            hint="retry the download; if it persists, the file on the hub is corrupt",
        )


def _hub_error(exc: Exception, target: HubFile) -> ZooError:
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = f"{target.repo_id} @ {target.revision}"
    if isinstance(exc, LocalEntryNotFoundError):  # the client could not reach the hub and had no cached copy
        return NetworkError(
            f"cannot reach {endpoint()} to download {target.filename} of {where}",
            hint="check the network or HF_ENDPOINT",
        )
    if isinstance(exc, GatedRepoError):
        return NetworkError(
            f"{target.repo_id} is gated or private", hint="set HF_TOKEN to a token with access"
        )
    if isinstance(exc, RepositoryNotFoundError) and not target.derived_from:  # the user named the repo itself
        return NetworkError(
            f"repo {target.repo_id} not found on {endpoint()}",
            hint="check the repo id (ORG/NAME), or set HF_TOKEN if it is private",
        )
    if isinstance(exc, RepositoryNotFoundError):
        return NetworkError(
            f"repo {target.repo_id} not found on {endpoint()} (derived from {target.derived_from})",
            hint="override with --hf-repository ORG/NAME, or set HF_TOKEN if it is private",
        )
    if isinstance(exc, RevisionNotFoundError):
        return NetworkError(
            f"revision {target.revision!r} not found in {target.repo_id}", hint="check --revision"
        )
    if isinstance(exc, EntryNotFoundError):
        return NetworkError(
            f"{where} has no file {target.filename}", hint="check --exp-name, or the repo's files"
        )
    if isinstance(exc, HfHubHTTPError):
        return NetworkError(f"hub error for {where}: {str(exc).splitlines()[0]}")
    return NetworkError(
        f"cannot reach {endpoint()} for {where}: {type(exc).__name__}: {exc}",
        hint="check the network or HF_ENDPOINT",
    )


def download(target: HubFile) -> Source:
    """Fetch the file (consent already given), verified against the server's checksum."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url
    from huggingface_hub.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # its retry warnings would bury zoo's one-line error
    try:
        # download first: huggingface_hub then also caches "no such file" answers
        path = Path(hf_hub_download(target.repo_id, target.filename, revision=target.revision))
        commit = _commit_of(path) or target.revision
        meta = get_hf_file_metadata(hf_hub_url(target.repo_id, target.filename, revision=commit))
    except Exception as exc:  # noqa: BLE001 - every failure becomes one clear line
        raise _hub_error(exc, target) from None
    verify(path, meta.etag)
    for name in target.companions:
        _download_companion(target, name, commit)
    return Source("download", path, target.repo_id, target.revision, meta.commit_hash or commit)


def _download_companion(target: HubFile, name: str, commit: str) -> None:
    """Fetch (and verify) a file the model needs beside it, from the same commit; absent is fine."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url
    from huggingface_hub.errors import EntryNotFoundError

    try:
        path = Path(hf_hub_download(target.repo_id, name, revision=commit))
        meta = get_hf_file_metadata(hf_hub_url(target.repo_id, name, revision=commit))
    except EntryNotFoundError:
        return
    except Exception as exc:  # noqa: BLE001
        raise _hub_error(exc, target) from None
    verify(path, meta.etag)


def _run_snapshot(target: HubFile, *, local_only: bool) -> Path | None:
    """The repo's run files (the adapter's ``run_files`` globs) as one snapshot folder of the HF cache,
    each download verified; with ``local_only`` only what is cached (None when it is not)."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url, snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError
    from huggingface_hub.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    patterns = list(target.run_files)
    try:
        folder = Path(
            snapshot_download(
                target.repo_id, revision=target.revision, allow_patterns=patterns, local_files_only=local_only
            )
        )
    except LocalEntryNotFoundError as exc:
        if local_only:
            return None
        raise _hub_error(exc, target) from None
    except Exception as exc:  # noqa: BLE001 - every failure becomes one clear line
        raise _hub_error(exc, target) from None
    if local_only:
        return folder if any(p.is_file() for p in folder.rglob("*")) else None
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = path.relative_to(folder).as_posix()
        try:
            meta = get_hf_file_metadata(hf_hub_url(target.repo_id, name, revision=folder.name))
        except Exception as exc:  # noqa: BLE001
            raise _hub_error(exc, target) from None
        verify(path, meta.etag)
    return folder


def _snapshot_source(kind: str, target: HubFile, folder: Path) -> Source:
    """The run a snapshot folder holds (its latest checkpoint is the model, its config beside it)."""
    from zoo.frameworks import get_adapter

    adapter = get_adapter(target.framework)
    runs = [adapter.identify(run) for run in adapter.discover(folder) if run.model_file]
    if not runs:
        raise NetworkError(
            f"{target.repo_id} @ {target.revision} holds no {target.framework} checkpoint "
            f"({', '.join(target.run_files)})",
            hint="check --exp-name, or the repo's files",
        )
    run = runs[0]
    return Source(kind, run.model_file, target.repo_id, target.revision, folder.name, run=run)


def release_file(target: HubFile) -> HubFile:
    """The release's framework-free form in the same repo: ``config.json``, with ``model.safetensors`` beside it."""
    import dataclasses

    from zoo.release.config import CONFIG_FILE, WEIGHTS_FILE

    return dataclasses.replace(target, filename=CONFIG_FILE, companions=(WEIGHTS_FILE,), run_files=())


def _release_source(source: Source) -> Source:
    """A fetched config.json's source as the model that gets evaluated: the weights beside it."""
    import dataclasses

    from zoo.release.config import WEIGHTS_FILE

    return dataclasses.replace(source, path=source.path.with_name(WEIGHTS_FILE))


def _download_release(target: HubFile) -> Source | None:
    """The release's framework-free form, downloaded and verified; None when the repo has none (an older release,
    or one whose policy zoo cannot export)."""
    from huggingface_hub.errors import EntryNotFoundError

    try:
        return _release_source(download(release_file(target)))
    except NetworkError as exc:
        if isinstance(exc.__cause__ or exc.__context__, EntryNotFoundError):
            return None
        raise


def resolve_model(
    target: HubFile,
    local: Run | None,
    allow_download: bool,
    notify: Callable[[str], None] | None = None,
    release: bool = False,
) -> Source:
    """Local run, then cache, then the network only with consent (HF_HUB_OFFLINE always wins). A repo that
    holds a run (the adapter's ``run_files``) is fetched and cached as one snapshot folder. ``notify`` hears,
    before the first request, which host is asked for what: an unreachable hub can take the client's
    retries (half a minute) to fail, and that wait must say what it waits for."""
    if local is not None:
        return Source("local-run", local.model_file, run=local)
    cached_release = from_cache(release_file(target)) if release else None
    if cached_release is not None:
        return _release_source(
            Source("cache", cached_release, target.repo_id, target.revision, _commit_of(cached_release))
        )
    if target.run_files:
        what = f"the run ({', '.join(target.run_files)})"
        folder = _run_snapshot(target, local_only=True)
        if folder is not None:
            return _snapshot_source("cache", target, folder)
    else:
        what = target.filename
        cached = from_cache(target)
        if cached is not None:
            return Source("cache", cached, target.repo_id, target.revision, _commit_of(cached))
    if release:
        from zoo.release.config import CONFIG_FILE, WEIGHTS_FILE

        what = f"{CONFIG_FILE} + {WEIGHTS_FILE} (or else {what})"
    if offline():
        raise ZooError(
            f"offline (HF_HUB_OFFLINE=1) and {what} of {target.repo_id} @ "
            f"{target.revision} is not in the cache",
            hint="unset HF_HUB_OFFLINE and pass --allow-download",
        )
    if not target.run_files and cached_absence(target) and not allow_download:
        raise ZooError(
            f"{target.repo_id} @ {target.revision} has no file {target.filename} "
            "(remembered from an earlier download)",
            hint="pass --allow-download to ask the hub again",
        )
    require_network(
        f"download {what} from {target.repo_id} at revision {target.revision}",
        "--allow-download",
        allow_download,
    )
    if notify is not None:
        notify(f"downloading {what} of {target.repo_id} @ {target.revision} from {endpoint()} ...")
    fetched = _download_release(target) if release and not cached_absence(release_file(target)) else None
    if fetched is not None:
        return fetched
    if not target.run_files:
        return download(target)
    folder = _run_snapshot(target, local_only=False)
    assert folder is not None
    return _snapshot_source("download", target, folder)


#: Bytes of a model card zoo reads to learn what a repo holds: cards are KiB; a larger one is not downloaded.
MAX_CARD_BYTES = 1 << 20
CARD = "README.md"


def fetch_card(
    repo_id: str, revision: str, allow_download: bool, notify: Callable[[str], None] | None = None
) -> Source:
    """The repo's model card (``zoo export ORG/REPO`` reads what the repo holds from it), found as
    :func:`resolve_model` finds a model: the cache, then the hub only with consent (HF_HUB_OFFLINE always wins).
    Its size is asked for first, so that a card over :data:`MAX_CARD_BYTES` is never downloaded."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.errors import EntryNotFoundError
    from huggingface_hub.utils import logging as hf_logging

    target = HubFile(repo_id, CARD, revision, derived_from="")
    cached = from_cache(target)
    if cached is not None:
        return Source("cache", cached, repo_id, revision, _commit_of(cached))
    if offline():
        raise ZooError(
            f"offline (HF_HUB_OFFLINE=1) and {CARD} of {repo_id} @ {revision} is not in the cache",
            hint="unset HF_HUB_OFFLINE and pass --allow-download, or say what the repo holds with "
            "--exp-name and --env-id",
        )
    require_network(
        f"download {CARD} of {repo_id} at revision {revision} to learn what the repo holds, then the "
        "model file it names",
        "--allow-download",
        allow_download,
    )
    if notify is not None:
        notify(f"downloading {CARD} of {repo_id} @ {revision} from {endpoint()} ...")
    hf_logging.set_verbosity_error()
    try:
        size = get_hf_file_metadata(hf_hub_url(repo_id, CARD, revision=revision)).size
    except EntryNotFoundError:
        raise ZooError(
            f"{repo_id} @ {revision} has no {CARD} to say what it holds",
            hint="say it with --exp-name and --env-id",
        ) from None
    except Exception as exc:  # noqa: BLE001 - every failure becomes one clear line
        raise _hub_error(exc, target) from None
    if size is not None and size > MAX_CARD_BYTES:
        raise BrokenFile(
            f"{CARD} of {repo_id} is {size:,} bytes, over the {MAX_CARD_BYTES >> 20} MiB a model card "
            "may take; not downloading it",
            hint="say what the repo holds with --exp-name and --env-id",
        )
    return download(target)


def _commit_of(cached: Path) -> str | None:
    """The commit a cached file belongs to: its snapshot folder's name."""
    parts = cached.parts
    return parts[parts.index("snapshots") + 1] if "snapshots" in parts else None
