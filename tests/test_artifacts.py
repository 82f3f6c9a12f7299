"""Static verification of model files: formats, truncation, corruption and pickles, nothing executed.

Every file here is written by ``torch.save`` (or mutated from one); the oracle for "loads" is
``torch.load(weights_only=True)`` itself.
"""

from __future__ import annotations

import io
import os
import pickle
import struct
import zipfile

import numpy as np
import pytest
import torch
from helpers import Canary, save_model, write_malicious

from zoo.artifacts.pickles import scan_pickles
from zoo.artifacts.torchfile import inspect_torch_file, torch_load
from zoo.artifacts.weights_only import TensorInfo


def _rezip(src, dst, change):
    """Copy a torch zip entry by entry, letting ``change(info, data)`` return new bytes (or None to drop)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            data = change(item, zin.read(item))
            if data is not None:
                zout.writestr(item, data)
    return dst


def test_state_dict_is_described_without_loading(tmp_path):
    path = save_model(tmp_path / "dqn.cleanrl_model", "dqn", "CartPole-v1")
    info = inspect_torch_file(path)
    assert info.kind == "torch-zip" and info.verified and not info.dangerous and not info.unknown
    real = torch.load(path, weights_only=True)
    assert list(info.content) == list(real)
    for key, tensor in real.items():
        assert info.content[key] == TensorInfo(
            tuple(tensor.shape),
            "float32",
            info.content[key].storage_key,
            tensor.numel(),
            False,
            tensor.storage_offset(),
            tensor.stride(),
        )


def test_c51_dict_and_td3_tuple_layouts(tmp_path):
    c51 = inspect_torch_file(save_model(tmp_path / "c51.cleanrl_model", "c51", "CartPole-v1"))
    assert c51.content["args"]["n_atoms"] == 101 and "network.4.weight" in c51.content["model_weights"]
    td3 = inspect_torch_file(
        save_model(tmp_path / "td3.cleanrl_model", "td3_continuous_action", "Pendulum-v1")
    )
    assert isinstance(td3.content, tuple) and len(td3.content) == 3
    assert td3.content[0]["action_scale"].shape == (1, 1)


def test_truncated_empty_and_foreign_files(tmp_path):
    good = save_model(tmp_path / "good.pt", "dqn", "CartPole-v1").read_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(good[: len(good) // 2])
    assert inspect_torch_file(cut).kind == "truncated"
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    assert inspect_torch_file(empty).kind == "empty"
    text = tmp_path / "notes.pt"
    text.write_text("hello, I am not a model")
    assert inspect_torch_file(text).kind == "not-torch"
    assert inspect_torch_file(tmp_path / "absent.pt").kind == "missing"
    loop = tmp_path / "loop.pt"
    loop.symlink_to(loop)
    assert (
        inspect_torch_file(loop).kind == "unreadable" and "symbolic links" in inspect_torch_file(loop).problem
    )
    assert inspect_torch_file(tmp_path).problem == "not a regular file"


@pytest.mark.parametrize("cut", [8, 200])
def test_a_storage_record_of_the_wrong_size_is_what_torch_refuses(tmp_path, cut):
    good = save_model(tmp_path / "good.pt", "dqn", "CartPole-v1")

    def resize(item, data):
        if not item.filename.endswith("data/0"):
            return data
        return data[:cut] if cut < len(data) else data + b"\0" * cut  # shorter, or longer than its tensors

    bad = _rezip(good, tmp_path / "bad.pt", resize)
    info = inspect_torch_file(bad)
    assert not info.verified and "storage 0 holds" in info.problem
    with pytest.raises(Exception, match="record size"):
        torch.load(bad, weights_only=True)


def test_a_flipped_byte_in_a_tensor_is_found_though_torch_would_load_it(tmp_path):
    good = save_model(tmp_path / "good.pt", "dqn", "CartPole-v1")
    raw = bytearray(good.read_bytes())
    with zipfile.ZipFile(good) as zf:
        item = next(i for i in zf.infolist() if i.filename.endswith("data/0"))
    name_len, extra_len = struct.unpack_from("<HH", raw, item.header_offset + 26)  # the local header's
    raw[item.header_offset + 30 + name_len + extra_len + 3] ^= 0xFF
    flipped = tmp_path / "flipped.pt"
    flipped.write_bytes(bytes(raw))
    torch.load(flipped, weights_only=True)  # torch never checks the CRC: it would load corrupted weights
    info = inspect_torch_file(flipped)
    assert not info.verified and info.problem == f"entry {item.filename} is corrupted (CRC-32 mismatch)"


def test_files_torch_cannot_read_are_not_ok(tmp_path):
    good = save_model(tmp_path / "good.pt", "dqn", "CartPole-v1")
    cases = {
        "no version record": lambda i, d: None if i.filename.endswith("/version") else d,
        "is not a file format version": lambda i, d: b"99\n" if i.filename.endswith("/version") else d,
        "byteorder record": lambda i, d: b"middle" if i.filename.endswith("/byteorder") else d,
    }
    for expected, change in cases.items():
        info = inspect_torch_file(_rezip(good, tmp_path / "x.pt", change))
        assert expected in info.problem, (expected, info.problem)
        with pytest.raises((RuntimeError, ValueError)):
            torch.load(tmp_path / "x.pt", weights_only=True)
    with zipfile.ZipFile(good) as zin, zipfile.ZipFile(tmp_path / "flat.pt", "w") as zout:
        for item in zin.infolist():
            zout.writestr(item.filename.split("/", 1)[1], zin.read(item))
    assert "is not in a folder" in inspect_torch_file(tmp_path / "flat.pt").problem
    shifted = tmp_path / "shifted.pt"
    shifted.write_bytes(b"\0" * 64 + good.read_bytes())
    shifted_info = inspect_torch_file(shifted)
    assert not shifted_info.verified and shifted_info.kind == "not-torch"
    scripted = tmp_path / "scripted.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), str(scripted))
    assert "TorchScript archive" in inspect_torch_file(scripted).problem


def test_malicious_pickles_are_flagged_and_never_run(tmp_path):
    canary = tmp_path / "canary"
    zipped = inspect_torch_file(write_malicious(tmp_path / "evil.pt", canary))
    plain = inspect_torch_file(write_malicious(tmp_path / "evil.pkl", canary, as_torch=False))
    assert zipped.dangerous == ["posix.system"] and not zipped.verified
    assert plain.kind == "pickle" and plain.dangerous == ["posix.system"]
    assert not canary.exists()


class _Getpid:
    def __reduce__(self):
        return (os.getpid, ())


def test_stack_global_through_the_memo_is_seen():
    # protocol 4 memoizes the module string "posix"; the second STACK_GLOBAL reads it back with BINGET
    data = pickle.dumps([Canary("/nonexistent"), _Getpid()], protocol=4)
    assert data.count(b"posix") == 1
    assert scan_pickles(data).globals == [("posix", "system"), ("posix", "getpid")]


def test_numpy_values_are_allowed_and_confirmed_by_torch_itself(tmp_path):
    path = tmp_path / "np.pt"
    torch.save({"w": torch.zeros(2), "stats": np.zeros(3), "gamma": np.float64(0.99)}, path)
    info = inspect_torch_file(path)
    assert info.is_safe and not info.verified and info.confirm
    assert any("numpy" in g for g in info.globals)
    loaded = torch_load(path)
    assert loaded["gamma"] == 0.99 and loaded["stats"].shape == (3,)


def test_a_global_outside_the_allowlist_is_unknown_not_a_warning(tmp_path):
    import argparse

    path = tmp_path / "ns.pt"
    torch.save({"w": torch.zeros(2), "args": argparse.Namespace(lr=0.1)}, path)
    info = inspect_torch_file(path)
    assert info.unknown == ["argparse.Namespace"] and not info.dangerous and not info.verified


def test_legacy_torch_format_is_confirmed_by_torch(tmp_path):
    path = tmp_path / "legacy.pt"
    torch.save({"w": torch.zeros(2)}, path, _use_new_zipfile_serialization=False)
    info = inspect_torch_file(path)
    assert info.kind == "torch-legacy" and info.is_safe and info.confirm and not info.verified
    assert torch_load(path)["w"].shape == (2,)


def test_an_unchecksummed_archive_is_noted(tmp_path):
    path = tmp_path / "nocrc.pt"
    torch.serialization.set_crc32_options(False)
    try:
        torch.save({"w": torch.zeros(2)}, path)
    finally:
        torch.serialization.set_crc32_options(True)
    info = inspect_torch_file(path)
    assert info.verified and any("no CRC-32" in n for n in info.notes)


def test_in_memory_and_on_disk_give_the_same_verdict(tmp_path):
    from zoo.artifacts.torchfile import inspect_torch_bytes

    path = save_model(tmp_path / "dqn.pt", "dqn", "CartPole-v1")
    disk, mem = inspect_torch_file(path), inspect_torch_bytes(path.read_bytes(), path)
    assert disk.verified and mem.verified and disk.content == mem.content
    buf = io.BytesIO()
    torch.save({"a": torch.ones(1)}, buf)
    assert inspect_torch_bytes(buf.getvalue(), path).verified


def test_trusting_a_file_for_its_globals_never_loads_corrupted_bytes(tmp_path):
    import argparse
    import random

    from fuzzing import in_place_entry_flip

    from zoo.artifacts.torchfile import refuse_unsafe
    from zoo.errors import BrokenFile, RefusedError

    path = tmp_path / "dqn.cleanrl_model"
    torch.save({"model": {"w": torch.arange(64.0)}, "args": argparse.Namespace(seed=1)}, path)
    refuse_unsafe(inspect_torch_file(path), trust_pickle=True)  # intact: trusting it is the user's call
    path.write_bytes(in_place_entry_flip(path.read_bytes(), random.Random(0), suffix="/data/0"))
    info = inspect_torch_file(path)
    assert info.unknown == ["argparse.Namespace"] and "CRC-32" in info.problem
    with pytest.raises(RefusedError, match="argparse.Namespace"):  # untrusted: the refusal comes first
        refuse_unsafe(info, trust_pickle=False)
    with pytest.raises(BrokenFile, match="CRC-32 mismatch"):
        refuse_unsafe(info, trust_pickle=True)


# ---------------------------------------------------------------------------------------------- non-finite weights
def _non_finite(path) -> list[tuple[str, int, int]]:
    info = inspect_torch_file(path)
    return [(f.name, f.count, f.numel) for f in info.nonfinite]


def test_non_finite_weights_are_counted_per_tensor_from_the_static_read(tmp_path):
    """Each view of a storage counts only its own values (offset and strides as torch.save wrote them), in
    every floating dtype; integers and optimizer states are not weights."""
    shared = torch.zeros(10)
    shared[7] = float("nan")
    bf16 = torch.ones(4, dtype=torch.bfloat16)
    bf16[1] = float("-inf")
    state = {
        "q.0.weight": torch.full((3, 4), float("nan")),
        "q.0.bias": torch.tensor([1.0, float("inf"), 2.0], dtype=torch.float64),
        "head.weight": shared[5:9],  # holds the NaN
        "head.bias": shared[:5],  # shares the storage, finite
        "strided": torch.tensor([[float("nan"), 1.0], [2.0, 3.0]]).t(),
        "half": torch.tensor([float("nan"), 0.0], dtype=torch.float16),
        "bf16": bf16,
        "steps": torch.arange(3),
        "optimizer_state_dict": {"state": {0: {"exp_avg": torch.full((2,), float("nan"))}}},
    }
    torch.save(state, tmp_path / "m.pt")
    assert inspect_torch_file(tmp_path / "m.pt").verified
    assert _non_finite(tmp_path / "m.pt") == [
        ("q.0.weight", 12, 12),
        ("q.0.bias", 1, 3),
        ("head.weight", 1, 4),
        ("strided", 1, 4),
        ("half", 1, 2),
        ("bf16", 1, 4),
    ]
    torch.save({"w": torch.ones(2, 2)}, tmp_path / "finite.pt")
    assert _non_finite(tmp_path / "finite.pt") == []


def test_non_finite_weights_of_a_file_torch_confirms_are_counted_too(tmp_path):
    torch.save(
        {"w": torch.tensor([float("nan"), 1.0])}, tmp_path / "old.pt", _use_new_zipfile_serialization=False
    )
    info = inspect_torch_file(tmp_path / "old.pt")
    assert info.kind == "torch-legacy" and info.confirm and info.nonfinite == []  # not read until confirmed
    from zoo.artifacts.torchfile import confirm_with_torch

    assert confirm_with_torch(info) is None
    assert [(f.name, f.count) for f in info.nonfinite] == [("w", 1)]
