"""Static inspection of model files: formats, truncation and dangerous pickles, nothing executed."""

from __future__ import annotations

import os
import pickle

import numpy as np
import torch
from helpers import Canary, save_model, write_malicious

from zoo.artifacts.pickles import TensorInfo, scan_globals
from zoo.artifacts.torchfile import inspect_torch_file


def test_state_dict_is_described_without_loading(tmp_path):
    path = save_model(tmp_path / "dqn.cleanrl_model", "dqn", "CartPole-v1")
    info = inspect_torch_file(path)
    assert info.kind == "torch-zip" and info.weights_only_ok and not info.dangerous
    real = torch.load(path, weights_only=True)
    assert list(info.content) == list(real)
    for key, tensor in real.items():
        assert info.content[key] == TensorInfo(tuple(tensor.shape), "float32", info.content[key].storage_key,
                                               tensor.numel())  # fmt: skip


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


def test_storage_shorter_than_its_tensors_is_truncation(tmp_path):
    import zipfile

    good = save_model(tmp_path / "good.pt", "dqn", "CartPole-v1")
    shrunk = tmp_path / "shrunk.pt"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(shrunk, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            dst.writestr(item, data[:8] if item.filename.endswith("data/0") else data)
    info = inspect_torch_file(shrunk)
    assert info.kind == "truncated" and "storage 0" in info.problem


def test_malicious_pickles_are_flagged_and_never_run(tmp_path):
    canary = tmp_path / "canary"
    zipped = inspect_torch_file(write_malicious(tmp_path / "evil.pt", canary))
    plain = inspect_torch_file(write_malicious(tmp_path / "evil.pkl", canary, as_torch=False))
    assert zipped.dangerous == ["posix.system"] and not zipped.weights_only_ok
    assert plain.kind == "pickle" and plain.dangerous == ["posix.system"]
    assert not canary.exists()


class _Getpid:
    def __reduce__(self):
        return (os.getpid, ())


def test_stack_global_through_the_memo_is_seen():
    # protocol 4 memoizes the module string "posix"; the second STACK_GLOBAL reads it back with BINGET
    data = pickle.dumps([Canary("/nonexistent"), _Getpid()], protocol=4)
    assert data.count(b"posix") == 1
    assert scan_globals(data) == [("posix", "system"), ("posix", "getpid")]


def test_numpy_objects_are_not_weights_only(tmp_path):
    path = tmp_path / "np.pt"
    torch.save({"w": torch.zeros(2), "stats": np.zeros(3)}, path)
    info = inspect_torch_file(path)
    assert not info.dangerous and not info.weights_only_ok
    assert any("numpy" in g for g in info.disallowed)


def test_legacy_torch_format_is_recognised(tmp_path):
    path = tmp_path / "legacy.pt"
    torch.save({"w": torch.zeros(2)}, path, _use_new_zipfile_serialization=False)
    info = inspect_torch_file(path)
    assert info.kind == "torch-legacy" and not info.dangerous and not info.weights_only_ok
