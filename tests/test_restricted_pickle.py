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


NUMPY = {("numpy._core.multiarray", "_reconstruct"), ("numpy", "ndarray"), ("numpy", "dtype")}


@pytest.mark.parametrize("dtype", ["bool", "<f8", ">f4"])
def test_numpy_dtype_states_as_numpy_writes_them_load_and_others_are_refused(dtype):
    """BUILD hands a dtype's __setstate__ its flags unchecked: a bool dtype told it holds object references
    makes numpy fail while freeing the array, in a traceback it can only print. Only the state numpy writes
    for the dtype (any byte order) passes; nothing is left for numpy to print."""
    import gc
    import pickletools
    import sys

    array = np.arange(3).astype(dtype)
    data = pickle.dumps(array, protocol=2)
    loaded = restricted_loads(data, NUMPY)
    assert (
        np.array_equal(loaded, array) and loaded.dtype == pickle.loads(data).dtype
    )  # what pickle itself gives
    ops = list(pickletools.genops(data))
    at = next(
        i for i, (op, arg, _) in enumerate(ops) if op.name == "BININT" and arg == -1
    )  # (3, '<', ..., -1, -1, 0)
    flags = ops[at + 2]
    assert flags[0].name == "BININT1" and flags[1] == 0
    for value in (1, 16, 63):
        mutated = bytearray(data)
        mutated[flags[2] + 1] = value
        printed = []
        hook, sys.unraisablehook = sys.unraisablehook, printed.append
        try:
            with pytest.raises(
                pickle.UnpicklingError, match="numpy dtype state .* is not the one numpy writes"
            ):
                restricted_loads(bytes(mutated), NUMPY)
            gc.collect()
        finally:
            sys.unraisablehook = hook
        assert printed == []
