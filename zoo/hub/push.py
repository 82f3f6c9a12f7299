"""``zoo push``: stage a run for the hub, refuse what must not leave the machine, upload on consent.

The default is a dry run: the exact folder that would be uploaded is built locally (a temp folder
renamed into place, so a failed staging leaves the previous one intact) and listed. Only ``--yes``
uploads it, in a single commit, through ``huggingface_hub``. Like CleanRL's own push, every file of
the run dir is staged, which is why secrets, symlinks leaving the run dir and oversized files are
refused before anything is copied.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from zoo.atomic import check_writable, private_workdir
from zoo.errors import RefusedError, ZooError
from zoo.hub.consent import endpoint

SECRET_NAME = re.compile(
    r"(^\.env(\..*)?$|token|secret|credential|passw|^\.netrc$|^id_(rsa|dsa|ecdsa|ed25519)$|\.(pem|key|p12|pfx)$)",
    re.IGNORECASE,
)
SECRET_CONTENT = re.compile(rb"-----BEGIN [A-Z ]*PRIVATE KEY-----|\bhf_[A-Za-z0-9]{30,}")
SCAN_BYTES = 1 << 20  # content is scanned in files up to this size (text, configs, json)
DEFAULT_MAX_MB = 100


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
    if name.endswith(".metadata.json"):
        return "export sidecar"
    if name.endswith((".onnx", ".ts")):
        return "exported policy"
    if name == "README.md":
        return "this model card"
    return "from the run dir"


def _refuse_secret(path: Path, shown: str) -> None:
    if SECRET_NAME.search(path.name):
        raise RefusedError(f"{shown} looks like a secret (by its name); refusing to push the run",
                           hint="move it out of the run dir")  # fmt: skip
    if path.stat().st_size <= SCAN_BYTES:
        if SECRET_CONTENT.search(path.read_bytes()):
            raise RefusedError(f"{shown} contains what looks like a private key or access token; refusing to push",
                               hint="remove it from the file or the run dir")  # fmt: skip
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
                    raise RefusedError(f"{shown} is a symlink to {real}, outside the run dir; refusing to push",
                                       hint="replace it with a copy of what it points to, or remove it")  # fmt: skip
                if not real.is_file():
                    continue
            _refuse_secret(path, shown)
            size_mb = path.stat().st_size / 1e6
            if size_mb > max_mb and not allow_large:
                raise RefusedError(f"{shown} is {size_mb:.0f} MB, over the {max_mb:g} MB limit",
                                   hint="pass --allow-large if it belongs in the repo")  # fmt: skip
            found.append((str(path.relative_to(run_dir)), path.resolve()))
    return found


def exported_policies(sources: list[tuple[str, Path]]) -> list[dict]:
    """Sidecars of the ``zoo export`` files in the run (each checked to match its file), for the card."""
    from zoo.export.runtime import EXPORT_SUFFIXES, read_sidecar

    names = {name for name, _ in sources}
    return [{"file": name, **read_sidecar(path)} for name, path in sources
            if path.suffix in EXPORT_SUFFIXES and f"{name}.metadata.json" in names]  # fmt: skip


def latest_video(run_dir: Path, run_name: str | None) -> Path | None:
    """The newest eval (else training) video beside ``runs/``, CleanRL's layout."""
    if not run_name:
        return None
    videos = run_dir.parent.parent / "videos"
    for folder in (videos / f"{run_name}-eval", videos / run_name):
        mp4s = sorted(folder.glob("*.mp4"), key=lambda p: p.stat().st_mtime) if folder.is_dir() else []
        if mp4s:
            return mp4s[-1]
    return None


def stage(
    repo_id: str, folder: Path, sources: list[tuple[str, Path]], model_file: str, card_text: str
) -> Staging:
    """Copy ``sources`` and the card into a fresh folder, then rename it over ``folder``."""
    with private_workdir(folder.parent, f".{folder.name}.") as work:
        tmp = work / "stage"
        tmp.mkdir()
        staging = Staging(repo_id, folder)
        for name, source in sources:
            dest = tmp / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest)
            staging.files.append(StagedFile(name, source, dest.stat().st_size, describe(name, model_file)))
        (tmp / "README.md").write_text(card_text, encoding="utf-8")
        staging.files.append(
            StagedFile("README.md", folder / "README.md", len(card_text.encode()), "this model card")
        )
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    return staging


def upload(staging: Staging, *, private: bool, revision: str | None, create_pr: bool, message: str) -> dict:
    """Create the repo if needed and upload the staged folder in one commit (consent already given)."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.utils import disable_progress_bars

    if not sys.stderr.isatty():
        disable_progress_bars()  # tqdm bars in a log are noise
    api = HfApi()
    try:
        api.create_repo(staging.repo_id, private=private, exist_ok=True)
        info = api.upload_folder(repo_id=staging.repo_id, folder_path=staging.folder, commit_message=message,
                                 revision=revision, create_pr=create_pr)  # fmt: skip
    except HfHubHTTPError as exc:
        raise ZooError(f"push to {staging.repo_id} failed: {str(exc).splitlines()[0]}",
                       hint="check HF_TOKEN's write access to the namespace") from None  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - connection refused, DNS, TLS, timeouts: one line each
        raise ZooError(f"cannot reach {endpoint()} to push {staging.repo_id}: {type(exc).__name__}: {exc}",
                       hint="check the network, HF_ENDPOINT, or that the hub is running") from None  # fmt: skip
    return {"commit_url": info.commit_url, "commit": info.oid, "pr_url": info.pr_url}


def card_files(staging_sources: list[tuple[str, Path]], model_file: str) -> list[dict]:
    names = [name for name, _ in staging_sources] + ["README.md"]
    return [{"name": n, "what": describe(n, model_file)} for n in names]


def load_eval(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ZooError(f"cannot read {path}: {exc}", hint="rerun zoo eval on the run") from None


def _hub_names(target, taken: set[str]) -> list[tuple[str, Path]]:
    """The model (and the adapter's companions) also under the names the framework's hub tools expect.

    huggingface_sb3 looks for ``{algo}-{env_id}.zip`` and ``vec_normalize.pkl``; a run dir holds them
    under other names. Identical content costs nothing twice: the hub stores blobs by sha256.
    """
    from zoo.check import adapter

    extra: dict[str, Path] = {}
    hub_name = target.entry.model_filename(env_id=target.env_id)
    if not any(c in hub_name for c in "*?[") and "/" not in hub_name:
        extra[hub_name] = target.model_file.resolve()
    companions = getattr(adapter(target.entry.framework), "hub_companions", None)
    if companions is not None:
        extra.update(
            {name: path.resolve() for name, path in companions(target.model_file, target.env_id).items()}
        )
    return [(name, path) for name, path in extra.items() if name not in taken]


def prepare(target, *, repo_id: str, folder: Path, eval_episodes: int | None, video: bool, max_mb: float,
            allow_large: bool, notify=print) -> Staging:  # fmt: skip
    """Check the run, make sure it has eval.json (and a video if asked), render the card, stage it all."""
    from zoo.artifacts.tensorboard import text_summary
    from zoo.hub.card import render_card
    from zoo.targets import load_plan_policy, plan_eval, run_eval

    run = target.run
    if not run.path.is_dir():
        raise ZooError(f"{run.path} is a file; zoo push publishes a run dir", hint="give the run dir")
    check_writable(folder, "--stage-dir", folder=True)
    sources = collect_run_files(run.path, max_mb=max_mb, allow_large=allow_large)
    replay = latest_video(run.path, run.run_name)
    if not (run.path / "eval.json").is_file() or (video and replay is None):
        plan = plan_eval(target, episodes=eval_episodes, num_envs=8, seed=0, deterministic=None, device="cpu",
                         out_path=None, capture_video=video and replay is None, trust_pickle=False)  # fmt: skip
        why = "to record a replay video" if (run.path / "eval.json").is_file() else "the run has no eval.json"
        notify(f"evaluating first ({why}): {plan.episodes} episodes, {plan.mode}")
        run_eval(plan, load_plan_policy(plan))
        sources = collect_run_files(run.path, max_mb=max_mb, allow_large=allow_large)
        replay = latest_video(run.path, run.run_name)
    if replay is not None:
        _refuse_secret(replay, str(replay))
        sources.append(("replay.mp4", replay.resolve()))
    sources += _hub_names(target, {name for name, _ in sources})
    eval_data = load_eval(run.path / "eval.json")
    events = run.events_file
    context = {
        "env_id": target.env_id, "seed": run.seed if run.seed is not None else 0, "repo_id": repo_id,
        "model_file": target.model_file.name, "eval": eval_data,
        "hyperparameters": text_summary(events) if events else None,
        "files": card_files(sources, target.model_file.name),
        "exports": exported_policies(sources),
    }  # fmt: skip
    card = render_card(target.entry, context)
    return stage(repo_id, folder, sources, target.model_file.name, str(card))
