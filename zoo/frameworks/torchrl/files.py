"""TorchRL's checkpoint files, read without TorchRL, tensordict or a pickle.

Three kinds of file hold a TorchRL policy's weights:

- the unified ``torchrl.checkpoint`` (TorchRL >= 0.14, ``Checkpoint.save`` and ``CheckpointRotation``), a
  directory or a zip archive of the same tree: ``manifest.json`` names each component's folder; a state-dict
  component is ``state.json`` (the dict's tree: keys, JSON values and tensor references) with ``state/meta.json``
  (each tensor's dtype and shape) and one raw little-endian ``state/<key>.memmap`` per tensor. zoo reads these
  JSON files and raw bytes only: tensordict's ``load_memmap`` would resolve ``_type`` strings and may unpickle
  sidecars, and the replay buffer's ``prefetch.pkl`` is a pickle; neither is ever opened;
- the legacy payload of ``torchrl.render.save_render_checkpoint`` (the 0.14 default), a ``torch.save`` dict with
  ``model_state_dict``, ``env_name`` and, for normalized observations, the frozen ``vecnorm`` ``{loc, scale}``;
- a plain ``torch.save(policy.state_dict())``.

The torch files go through zoo's static reader (:func:`zoo.artifacts.torchfile.inspect_torch_file`) and
``torch.load(weights_only=True)``. Every size is bounded before it is read.
"""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zoo.errors import BrokenFile, LayoutMismatch, UnsupportedError

MANIFEST = "manifest.json"
FORMAT = "torchrl.checkpoint"
#: The component sota-implementations save the acting module under (``Checkpoint(policy=...)``,
#: ``save_render_checkpoint``).
POLICY = "policy"
ENV_METADATA = "environment_metadata"
#: JSON files zoo reads from a checkpoint: a manifest, a state tree, a tensor table, a JSON component.
MAX_JSON_BYTES = 16 << 20
#: Entries of a zip archive zoo reads (a checkpoint with its optimizer and buffer has a few hundred).
MAX_ENTRIES = 100_000
#: Bytes of one tensor file (a policy's largest layer is far below it).
MAX_TENSOR_BYTES = 1 << 30
#: Tensors in one component.
MAX_TENSORS = 10_000
#: Nesting of a state tree.
MAX_DEPTH = 32

#: torch dtypes a policy's tensors may have, by the name meta.json writes, with their size in bytes.
DTYPES = {
    "torch.float32": 4,
    "torch.float64": 8,
    "torch.float16": 2,
    "torch.bfloat16": 2,
    "torch.int64": 8,
    "torch.int32": 4,
    "torch.uint8": 1,
    "torch.bool": 1,
}


@dataclass(frozen=True)
class StoredTensor:
    """A tensor of a unified checkpoint as ``meta.json`` describes it: read only when the policy is loaded."""

    key: str  # ``tensor_00000000``: its file is ``state/<key>.memmap``
    dtype: str  # "torch.float32"
    shape: tuple[int, ...]
    member: str  # the file, relative to the checkpoint's root

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * DTYPES[self.dtype]


@dataclass
class Unified:
    """A unified checkpoint: its manifest and the two components a policy needs, decoded."""

    root: Path  # the directory, or the archive file
    archive: bool
    manifest: dict[str, Any]
    components: list[str]
    policy: dict[str, Any]  # {state-dict key: StoredTensor} (or the tree's other values)
    env_metadata: dict[str, Any] = field(default_factory=dict)  # JSON values and StoredTensors (vecnorm)
    versions: dict[str, str] = field(default_factory=dict)


class _Container:
    """Reads members of a checkpoint directory or zip archive by their path inside it, within bounds."""

    def __init__(self, root: Path):
        self.root = root
        self.zip: zipfile.ZipFile | None = None
        if root.is_file():
            try:
                self.zip = zipfile.ZipFile(root)
            except (zipfile.BadZipFile, OSError) as exc:
                raise BrokenFile(f"{root}: not a readable zip archive ({exc})") from None
            infos = self.zip.infolist()
            if len(infos) > MAX_ENTRIES:
                raise BrokenFile(f"{root}: {len(infos)} entries, over zoo's bound of {MAX_ENTRIES}")
            self.members = {info.filename: info for info in infos}

    def close(self) -> None:
        if self.zip is not None:
            self.zip.close()

    def size(self, name: str) -> int | None:
        """The member's size in bytes, None when it is missing."""
        if self.zip is not None:
            info = self.members.get(name)
            return None if info is None or info.is_dir() else info.file_size
        path = self._path(name)
        return path.stat().st_size if path.is_file() else None

    def _path(self, name: str) -> Path:
        path = (self.root / name).resolve()
        if not path.is_relative_to(self.root.resolve()):
            raise LayoutMismatch(f"{self.root}: {name!r} points outside the checkpoint")
        return path

    def read(self, name: str, limit: int) -> bytes:
        size = self.size(name)
        if size is None:
            raise BrokenFile(f"{self.root}: {name} is missing", "re-save the checkpoint with TorchRL")
        if size > limit:
            raise BrokenFile(f"{self.root}: {name} is {size} bytes, over zoo's bound of {limit}")
        try:
            if self.zip is not None:
                with self.zip.open(self.members[name]) as fh:
                    data = fh.read(limit + 1)
            else:
                data = self._path(name).read_bytes()
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise BrokenFile(f"{self.root}: cannot read {name} ({exc})") from None
        if len(data) != size:
            raise BrokenFile(f"{self.root}: {name} is cut short ({len(data)} of {size} bytes)")
        return data

    def json(self, name: str) -> Any:
        try:
            return json.loads(self.read(name, MAX_JSON_BYTES))
        except (ValueError, RecursionError) as exc:
            raise BrokenFile(f"{self.root}: {name} is not valid JSON ({exc})") from None


def unified_root(model_file: Path) -> Path:
    """The checkpoint a model file stands for: a directory checkpoint's folder (its ``manifest.json`` is the
    run's model file), or the archive itself."""
    return model_file.parent if model_file.name == MANIFEST else model_file


def is_archive(path: Path) -> bool:
    """Whether ``path`` is a zip holding a ``manifest.json`` at its root (a TorchRL archive; its name is free)."""
    if not zipfile.is_zipfile(path):
        return False
    try:
        with zipfile.ZipFile(path) as zf:
            return MANIFEST in zf.NameToInfo and "data.pkl" not in {
                n.rsplit("/", 1)[-1] for n in zf.namelist()
            }
    except (zipfile.BadZipFile, OSError):
        return False


def read_unified(root: Path) -> Unified:
    """The checkpoint at ``root`` (a directory or an archive): its manifest checked, and its ``policy`` and
    ``environment_metadata`` components decoded from JSON; no tensor is read yet, each tensor file's size is
    checked against its dtype and shape."""
    box = _Container(root)
    try:
        manifest = box.json(MANIFEST)
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise LayoutMismatch(
                f"{root}: manifest.json is not a torchrl.checkpoint manifest",
                "is this a TorchRL checkpoint?",
            )
        if manifest.get("format_version") != 1:
            raise UnsupportedError(
                f"{root}: torchrl.checkpoint format_version {manifest.get('format_version')!r} (zoo reads 1)",
                "re-save it with TorchRL 0.14, or update zoo",
            )
        components = manifest.get("components")
        if not isinstance(components, dict):
            raise BrokenFile(f"{root}: manifest.json has no components")
        if POLICY not in components:
            raise LayoutMismatch(
                f"{root}: the checkpoint has no {POLICY!r} component (it holds {', '.join(sorted(components))})",
                "save the acting module as Checkpoint(policy=...), as TorchRL's sota-implementations do",
            )
        policy = _state_component(box, components[POLICY], POLICY)
        env_metadata: dict[str, Any] = {}
        if ENV_METADATA in components:
            env_metadata = _component(box, components[ENV_METADATA], ENV_METADATA)
            if not isinstance(env_metadata, dict):
                env_metadata = {}
        versions = manifest.get("versions")
        versions = versions if isinstance(versions, dict) else {}
        return Unified(
            root,
            box.zip is not None,
            manifest,
            sorted(components),
            policy,
            env_metadata,
            {str(k): str(v) for k, v in versions.items()},
        )
    finally:
        box.close()


def _component(box: _Container, spec: Any, name: str) -> Any:
    """A JSON component's value or a state-dict component's tree. Other adapters (``torchrl.dump_load``: the
    replay buffer, whose files include a pickle) are not zoo's to read."""
    if not isinstance(spec, dict) or not isinstance(spec.get("path"), str):
        raise BrokenFile(f"{box.root}: manifest.json's {name!r} component has no path")
    adapter = spec.get("adapter")
    if adapter == "torchrl.json":
        return box.json(f"{spec['path']}/value.json")
    if adapter == "torchrl.state_dict":
        return _state_component(box, spec, name)
    raise UnsupportedError(
        f"{box.root}: component {name!r} is saved with {adapter!r}, which zoo does not read"
    )


def _state_component(box: _Container, spec: Any, name: str) -> dict[str, Any]:
    if not isinstance(spec, dict) or spec.get("adapter") != "torchrl.state_dict":
        adapter = spec.get("adapter") if isinstance(spec, dict) else None
        raise UnsupportedError(
            f"{box.root}: component {name!r} is saved with {adapter!r}, not torchrl.state_dict",
            "save the policy module itself in the checkpoint",
        )
    base = spec.get("path")
    if not isinstance(base, str) or base.startswith("/") or ".." in base.split("/"):
        raise BrokenFile(f"{box.root}: component {name!r} has a bad path {base!r}")
    tree = box.json(f"{base}/state.json")
    meta = box.json(f"{base}/state/meta.json")
    if not isinstance(meta, dict):
        raise BrokenFile(f"{box.root}: {base}/state/meta.json is not a table of tensors")
    count = [0]
    value = _decode(tree, meta, box, f"{base}/state", count, 0)
    if not isinstance(value, dict):
        raise LayoutMismatch(f"{box.root}: component {name!r} is not a state dict")
    return value


def _decode(node: Any, meta: dict, box: _Container, folder: str, count: list[int], depth: int) -> Any:
    """A state tree node of ``state.json`` as plain values, with :class:`StoredTensor` leaves (checked, not read)."""
    if depth > MAX_DEPTH:
        raise BrokenFile(f"{box.root}: state tree nested over {MAX_DEPTH} levels")
    kind = node.get("kind") if isinstance(node, dict) else None
    if kind == "value":
        value = node.get("value")
        if isinstance(value, (dict, list)):
            raise BrokenFile(f"{box.root}: a state value is not a scalar")
        return value
    if kind in ("dict", "ordered_dict"):
        items = node.get("items")
        if not isinstance(items, list):
            raise BrokenFile(f"{box.root}: a {kind} node has no items")
        out: dict[str, Any] = {}
        for pair in items:
            if not isinstance(pair, list) or len(pair) != 2:
                raise BrokenFile(f"{box.root}: a {kind} item is not a key and a value")
            key = _decode(pair[0], meta, box, folder, count, depth + 1)
            out[str(key)] = _decode(pair[1], meta, box, folder, count, depth + 1)
        return out
    if kind in ("list", "tuple"):
        items = node.get("items")
        if not isinstance(items, list):
            raise BrokenFile(f"{box.root}: a {kind} node has no items")
        return [_decode(item, meta, box, folder, count, depth + 1) for item in items]
    if kind == "tensor":
        count[0] += 1
        if count[0] > MAX_TENSORS:
            raise BrokenFile(f"{box.root}: over {MAX_TENSORS} tensors in one component")
        return _tensor(str(node.get("key")), meta, box, folder)
    raise UnsupportedError(f"{box.root}: state.json holds a {kind!r} node, which zoo does not read")


def _tensor(key: str, meta: dict, box: _Container, folder: str) -> StoredTensor:
    info = meta.get(key)
    if not isinstance(info, dict) or "/" in key or key.startswith("."):
        raise BrokenFile(f"{box.root}: tensor {key!r} is not in {folder}/meta.json")
    dtype, shape = info.get("dtype"), info.get("shape")
    if dtype not in DTYPES:
        raise UnsupportedError(f"{box.root}: tensor {key} has dtype {dtype!r}, which zoo does not read")
    if (
        info.get("is_nested")
        or not isinstance(shape, list)
        or not all(isinstance(d, int) and d >= 0 for d in shape)
    ):
        raise BrokenFile(f"{box.root}: tensor {key} has no plain shape")
    tensor = StoredTensor(key, dtype, tuple(shape), f"{folder}/{key}.memmap")
    if tensor.nbytes > MAX_TENSOR_BYTES:
        raise BrokenFile(f"{box.root}: tensor {key} is {tensor.nbytes} bytes, over zoo's bound")
    size = box.size(tensor.member)
    if size != tensor.nbytes:
        found = "missing" if size is None else f"{size} bytes"
        raise BrokenFile(
            f"{box.root}: {tensor.member} is {found}, its dtype and shape say {tensor.nbytes}",
            "re-save the checkpoint with TorchRL",
        )
    return tensor


def load_tensors(root: Path, tree: Any) -> Any:
    """``tree`` with each :class:`StoredTensor` read from its raw bytes as a torch tensor (no unpickling)."""
    import torch

    box = _Container(root)
    try:

        def load(node: Any) -> Any:
            if isinstance(node, StoredTensor):
                data = bytearray(box.read(node.member, node.nbytes))
                dtype = getattr(torch, node.dtype.removeprefix("torch."))
                flat = torch.frombuffer(data, dtype=dtype) if data else torch.empty(0, dtype=dtype)
                return flat.reshape(node.shape).clone()
            if isinstance(node, Mapping):
                return {key: load(value) for key, value in node.items()}
            if isinstance(node, list):
                return [load(value) for value in node]
            return node

        return load(tree)
    finally:
        box.close()
