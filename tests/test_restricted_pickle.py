"""The restricted unpickler builds allowlisted classes and refuses everything else before it runs."""

from __future__ import annotations

import pickle
from collections import OrderedDict

import numpy as np
import pytest
from helpers import Canary

from zoo.artifacts.restricted_pickle import RefusedGlobal, restricted_loads


def test_plain_values_load():
    value = {"a": [1, 2.5, (3, "x")], "b": OrderedDict(c={1, 2}), "d": b"\x00"}
    assert restricted_loads(pickle.dumps(value, protocol=2)) == value
    assert restricted_loads(pickle.dumps(value, protocol=5)) == value


def test_allowlisted_classes_load_and_others_are_refused_by_name(tmp_path):
    array = np.arange(4, dtype=np.float32)
    data = pickle.dumps(array)
    with pytest.raises(RefusedGlobal) as refused:
        restricted_loads(data)
    assert refused.value.module.startswith("numpy")
    numpy_globals = {(m, n) for m, n in [(refused.value.module, refused.value.name)]}
    numpy_globals |= {("numpy", "ndarray"), ("numpy", "dtype")}
    out = restricted_loads(data, numpy_globals)
    assert isinstance(out, np.ndarray) and out.tolist() == [0, 1, 2, 3]


def test_code_execution_is_refused_and_never_runs(tmp_path):
    canary = tmp_path / "canary"
    with pytest.raises(RefusedGlobal) as refused:
        restricted_loads(pickle.dumps({"cfg": Canary(canary)}))
    assert refused.value.qualname == "posix.system"
    assert not canary.exists()
