"""rl_zoo3's hub layout: the repo-root files ``python -m rl_zoo3.load_from_hub`` needs beside the model.

rl_zoo3's own push (``rl_zoo3/push_to_hub.py``, rl_zoo3 2.9.2, ``package_to_hub``) puts at the repo root,
besides ``{algo}-{env_name}.zip`` and, for a VecNormalize run, ``vec_normalize.pkl``:

- ``config.yml``: a copy of ``{run}/{env_name}/config.yml`` (the saved hyperparameters, a ``yaml.dump``
  of an ``OrderedDict``);
- ``args.yml``: a copy of ``{run}/{env_name}/args.yml`` (the ``rl_zoo3.train`` arguments, same format);
- ``env_kwargs.yml``: ``yaml.dump(env_kwargs)``, generated: the ``env_kwargs`` of ``args.yml`` (``{}`` when
  null). rl_zoo3's push also adds ``render_mode: rgb_array`` when it renders a replay; nothing reads
  the file after download (``enjoy`` takes ``env_kwargs`` from ``args.yml``), so zoo writes the
  training arguments only;
- ``train_eval_metrics.zip``: generated, a flat zip of the run's ``evaluations.npz`` (when there is one)
  and its ``*.csv`` monitor files, an empty zip when it has neither.

``rl_zoo3.load_from_hub.download_from_hub`` downloads all four without a fallback (only
``vec_normalize.pkl`` is optional), copies the YAML files into ``{env_name}/`` of a new run folder and
extracts the zip into it. Here nothing is unpickled (``evaluations.npz`` and the monitor files are copied
as bytes) and the YAML is read with :func:`zoo.safeyaml.read`'s config policy.

``env_name`` is huggingface_sb3's ``EnvironmentName``: the env id with ``/`` replaced by ``-`` and a
``module:`` prefix dropped; rl_zoo3 names its folders with it.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Files ``rl_zoo3.load_from_hub`` downloads with no fallback, besides the model.
REQUIRED = ("config.yml", "args.yml", "env_kwargs.yml", "train_eval_metrics.zip")
#: What goes into ``train_eval_metrics.zip``: rl_zoo3's push takes these from the run folder, flat.
_METRICS_NPZ = "evaluations.npz"
_ALGO = re.compile(r"^[a-z][a-z0-9_]*$")
#: A fixed timestamp makes the generated zip the same bytes for the same files, so a second push of an
#: unchanged run uploads nothing new.
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def env_name(env_id: str) -> str:
    """huggingface_sb3's ``EnvironmentName``: ``ALE/Pong-v5`` -> ``ALE-Pong-v5``, ``mod:Env-v0`` -> ``Env-v0``."""
    name = env_id.replace("/", "-")
    parts = name.split(":")
    if len(parts) > 2:
        raise ValueError(f"environment name {env_id} contains more than one colon")
    return parts[-1]


@dataclass
class RlZooFiles:
    """The repo-root files of an rl_zoo3 hub repo for one model.

    ``copied`` maps a name in the repo to a file of the run folder, ``generated`` to its bytes.
    ``algo`` is rl_zoo3's algorithm name from ``args.yml`` (``ppo``, ``qrdqn``, ``ppo_lstm``...)."""

    algo: str | None
    env_name: str
    copied: dict[str, Path] = field(default_factory=dict)
    generated: dict[str, bytes] = field(default_factory=dict)

    @property
    def model_name(self) -> str | None:
        """The file ``load_from_hub`` downloads as the model: ``{algo}-{env_name}.zip``."""
        return f"{self.algo}-{self.env_name}.zip" if self.algo else None

    def write(self, folder: Path) -> dict[str, Path]:
        """Write the generated files into ``folder``; every file by its name in the repo."""
        folder.mkdir(parents=True, exist_ok=True)
        out = dict(self.copied)
        for name, data in self.generated.items():
            path = folder / name
            path.write_bytes(data)
            out[name] = path
        return out


def _read_yaml(path: Path) -> dict[str, Any] | None:
    from zoo.frameworks.sb3.zooyaml import read_zoo_yaml

    data = read_zoo_yaml(path) if path.is_file() else {}
    return data or None


def config_folder(model_file: Path, env_id: str) -> Path | None:
    """Where the rl_zoo3 run of ``model_file`` keeps ``config.yml`` and ``args.yml``.

    rl_zoo3 writes them to ``{run}/{env_name}/`` beside ``{run}/{env_name}.zip`` (and ``best_model.zip``,
    ``rl_model_{n}_steps.zip``); a repo ``load_from_hub`` (or rl_zoo3's push) made holds them at the root.
    A folder counts only if its ``args.yml`` names this env (so another tool's ``config.yml`` never does)."""
    folder = model_file.parent
    try:
        wanted = env_name(env_id)
    except ValueError:
        return None
    for candidate in dict.fromkeys((folder / wanted, folder / env_id, folder)):
        if not (candidate / "config.yml").is_file():
            continue
        args = _read_yaml(candidate / "args.yml")
        env = args.get("env") if args else None
        if isinstance(env, str):
            try:
                if env_name(env) == wanted:
                    return candidate
            except ValueError:
                continue
    return None


#: rl_zoo3's YAML files: ``enjoy``, ``record_video`` and ``load_from_hub`` read them with ``yaml.UnsafeLoader``.
YAML_FILES = ("config.yml", "args.yml", "env_kwargs.yml")


def yaml_candidates(model_file: Path, env_id: str | None) -> list[Path]:
    """Every place rl_zoo3's YAML files of ``model_file`` may be: ``{run}/{env_name}/`` (and the env id and
    the model's stem as folder names), then beside the model, as a hub repo holds them."""
    folder = model_file.parent
    names = [model_file.stem]
    if env_id:
        names = [env_id, *names]
        with contextlib.suppress(ValueError):  # an id with two colons: no env_name
            names.insert(0, env_name(env_id))
    folders = dict.fromkeys([*(folder / name for name in names), folder])
    return [where / name for where in folders for name in YAML_FILES]


def _metrics_sources(run_dir: Path) -> list[Path]:
    """``evaluations.npz`` and ``*.csv`` of the run folder, as rl_zoo3's push takes them (not recursive),
    regular files inside the folder only."""
    root = run_dir.resolve()
    names = [_METRICS_NPZ, *sorted(p.name for p in run_dir.glob("*.csv"))]
    found = []
    for name in names:
        path = run_dir / name
        if path.is_file() and path.resolve().is_relative_to(root):
            found.append(path)
    return found


def metrics_zip(run_dir: Path) -> bytes:
    """``train_eval_metrics.zip``: the run's ``evaluations.npz`` and monitor ``*.csv``, flat, as bytes."""
    import io

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in _metrics_sources(run_dir):
            info = zipfile.ZipInfo(path.name, date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, path.read_bytes())
    return buffer.getvalue()


def env_kwargs_yaml(args: dict[str, Any]) -> bytes:
    """``env_kwargs.yml``: the ``env_kwargs`` of ``args.yml`` (``{}`` when null), ``yaml.safe_dump``-ed.

    Values under a Python tag other than tuples and OrderedDicts were never built by
    :func:`zoo.safeyaml.read` and are written as null."""
    import yaml

    kwargs = args.get("env_kwargs")
    if not isinstance(kwargs, dict):
        kwargs = {}
    try:
        text = yaml.safe_dump(kwargs, default_flow_style=False)
    except yaml.YAMLError:
        text = "{}\n"
    return text.encode("utf-8")


def rlzoo_files(model_file: Path, env_id: str | None) -> RlZooFiles | None:
    """The repo-root files ``rl_zoo3.load_from_hub`` needs for ``model_file``; None when the model is not
    part of an rl_zoo3 run (no ``config.yml`` and ``args.yml`` for this env beside it).

    ``copied`` holds ``config.yml`` and ``args.yml`` (the run's own files) and the model under rl_zoo3's
    name ``{algo}-{env_name}.zip``; ``generated`` holds ``env_kwargs.yml`` and ``train_eval_metrics.zip``.
    ``vec_normalize.pkl`` is not here: :func:`zoo.frameworks.sb3.normalize.find_stats` finds it."""
    if not env_id:
        return None
    folder = config_folder(model_file, env_id)
    if folder is None:
        return None
    args = _read_yaml(folder / "args.yml") or {}
    algo = args.get("algo")
    files = RlZooFiles(algo if isinstance(algo, str) and _ALGO.match(algo) else None, env_name(env_id))
    files.copied["config.yml"] = folder / "config.yml"
    files.copied["args.yml"] = folder / "args.yml"
    if files.model_name:
        files.copied[files.model_name] = model_file
    if (folder / "env_kwargs.yml").is_file():  # a repo load_from_hub made, pushed again: keep its file
        files.copied["env_kwargs.yml"] = folder / "env_kwargs.yml"
    else:
        files.generated["env_kwargs.yml"] = env_kwargs_yaml(args)
    run_dir = model_file.parent
    if (run_dir / "train_eval_metrics.zip").is_file() and folder == run_dir:
        files.copied["train_eval_metrics.zip"] = run_dir / "train_eval_metrics.zip"
    else:
        files.generated["train_eval_metrics.zip"] = metrics_zip(run_dir)
    return files


def hub_files(model_file: Path, env_id: str | None, workdir: Path) -> dict[str, Path]:
    """``{name in repo: file}`` for :func:`rlzoo_files`, generated files written under ``workdir`` (the
    push's private folder); ``{}`` for a model outside an rl_zoo3 run."""
    files = rlzoo_files(model_file, env_id)
    if files is None:
        return {}
    if not files.generated:
        return dict(files.copied)
    workdir.mkdir(parents=True, exist_ok=True)
    return files.write(Path(tempfile.mkdtemp(prefix="rlzoo-", dir=workdir)))
