"""A policy's computation as data: a ``torch.export`` graph written as JSON, run back with plain torch.

Why not pickle (``torch.save`` of a module) or TorchScript: both carry code that the loader runs. Here the
graph is a list of nodes, each one ATen operator from :data:`ALLOWED_OPS` applied to earlier nodes, the
policy's tensors (``model.safetensors``) and JSON literals. Loading it runs nothing but those operators:
no import, no attribute lookup, no Python a file could name. Every framework's export module
(:class:`~zoo.policy.ExportSpec`) becomes the same kind of graph, so one small interpreter
(:class:`GraphModule`) runs every release, with torch alone.

The node list is what ``torch.export.export`` (non-strict, the batch axis dynamic) gives, without
decompositions: ``aten.linear`` stays one node and runs the very kernel the framework's module ran, so the
interpreted policy computes bit for bit what the source does. docs/release-format.md is the schema.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch

from zoo.errors import BrokenFile, ZooError

#: The ATen operators (``aten.NAME.OVERLOAD`` by NAME) a graph may use: pure tensor math, shapes and the
#: layers policies are made of. Nothing here reads or writes files or calls back into Python; the ops that
#: take a size (:data:`SIZE_OPS`) are bounded by :func:`check_graph`.
_ALLOWED = """
    abs acos add addmm alias broadcast_tensors broadcast_to isfinite isinf isnan masked_fill nan_to_num amax amin any all argmax argmin asin atan atan2 avg_pool1d avg_pool2d
    adaptive_avg_pool1d adaptive_avg_pool2d baddbmm batch_norm bitwise_and bitwise_not bitwise_or bmm cat ceil
    chunk clamp clamp_max clamp_min clip clone contiguous conv1d conv2d conv3d convolution cos cosh cumsum detach
    div dropout elu embedding eq erf exp expand expand_as expm1 feature_dropout flatten flip floor floor_divide
    fmod full_like ge gelu gru gt hardsigmoid hardswish hardtanh index index_select instance_norm
    layer_norm le leaky_relu lerp lift_fresh_copy linear log log1p log_sigmoid log_softmax logical_and
    logical_not logical_or logsumexp lstm lt matmul max max_pool1d max_pool2d maximum mean min minimum mish
    mm mul native_batch_norm native_layer_norm ne neg norm one_hot ones_like permute
    pow prod reciprocal relu relu6 remainder repeat reshape round rsqrt rsub select selu sigmoid
    sign silu sin sinh slice softmax softplus split split_with_sizes sqrt square squeeze stack std sub sum
    sym_size t tanh to transpose tril triu type_as unbind unflatten unsqueeze var view where zeros_like
    _assert_tensor_metadata _native_batch_norm_legit_no_training _to_copy _log_softmax _softmax _unsafe_view
"""
ALLOWED_OPS = frozenset(_ALLOWED.split())
#: Python operators ``torch.export`` leaves between nodes: tuple items (an LSTM's outputs) and size arithmetic.
PYTHON_OPS = {
    "getitem": operator.getitem,
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "floordiv": operator.floordiv,
    "neg": operator.neg,
}
DTYPES = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
    "uint8": torch.uint8,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "bool": torch.bool,
}
_DTYPE_NAMES = {dtype: name for name, dtype in DTYPES.items()}
_MEMORY_FORMATS = {
    "contiguous": torch.contiguous_format,
    "preserve": torch.preserve_format,
    "channels_last": torch.channels_last,
}
_MEMORY_NAMES = {fmt: name for name, fmt in _MEMORY_FORMATS.items()}
#: Bounds on what a graph may hold, checked before anything runs.
MAX_NODES = 20_000
MAX_ARG_ITEMS = 4096  # items in one argument list (a shape, a list of tensors)
MAX_DEPTH = 4  # nested lists in one argument
#: Ops whose int arguments are sizes: each at most MAX_DIM and their product at most MAX_ELEMENTS, so that no
#: literal makes torch allocate more than a policy's activations could need.
SIZE_OPS = frozenset({"expand", "repeat", "view", "reshape", "broadcast_to", "_unsafe_view", "unflatten"})
MAX_DIM, MAX_ELEMENTS = 1 << 24, 1 << 28


class ExportFailed(ZooError):
    """The policy's module is not a graph zoo can describe (an op off the list, control flow on data)."""


# ----------------------------------------------------------------------------- writing
def _encode(value: Any, names: dict[str, str]) -> Any:
    """A node argument as JSON: nodes and tensors by name, dtypes and devices by their names."""
    import torch.fx

    if isinstance(value, torch.fx.Node):
        key = names.get(value.name)
        return {"tensor": key} if key is not None else {"node": value.name}
    if isinstance(value, list | tuple):
        return [_encode(v, names) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, torch.dtype):
        return {"dtype": _DTYPE_NAMES[value]}
    if isinstance(value, torch.device):
        return {"device": "cpu"}  # a release runs where it is loaded
    if isinstance(value, torch.memory_format):
        return {"memory_format": _MEMORY_NAMES[value]}
    if isinstance(value, torch.layout):
        return {"layout": "strided"}
    raise ExportFailed(f"an argument of type {type(value).__name__} has no JSON form")


def _op_name(target: Any) -> str:
    if isinstance(target, torch._ops.OpOverload):
        name = target._schema.name.removeprefix("aten::")
        if not target._schema.name.startswith("aten::") or name not in ALLOWED_OPS:
            raise ExportFailed(f"operator {target._schema.name} is not one a release may use")
        return f"aten.{name}.{target._overloadname}"
    if getattr(target, "__module__", None) in ("_operator", "operator") and target.__name__ in PYTHON_OPS:
        return f"operator.{target.__name__}"
    raise ExportFailed(f"{target!r} is not an operator a release may use")


def trace(
    module: torch.nn.Module, example: tuple[torch.Tensor, ...], input_names: list[str]
) -> tuple[dict, dict]:
    """``(graph, tensors)``: ``module``'s computation on inputs like ``example`` (dim 0 of the first is the
    batch, as are dim 1 of recurrent states), and every tensor it reads, by a stable name."""
    import torch.export

    batch = torch.export.Dim("batch", min=1, max=1 << 20)
    shapes = tuple({0: batch} if i == 0 else {1: batch} for i in range(len(example)))
    from zoo.exporter.writers import quiet

    try:
        with quiet(), torch.no_grad():
            program = torch.export.export(module, example, dynamic_shapes=shapes, strict=False)
            program = program.run_decompositions({})  # inlines grad-mode regions; linear, lstm stay whole
    except Exception as exc:  # noqa: BLE001 - torch.export fails in many ways, each a finding
        text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ExportFailed(
            f"torch.export cannot capture the policy: {type(exc).__name__}: {text[:300]}"
        ) from None
    sig = program.graph_signature
    tensors: dict[str, torch.Tensor] = {}
    names: dict[str, str] = {}  # placeholder -> tensor key
    state = {**program.state_dict, **program.constants}
    shared: dict[tuple, str] = {}  # one tensor reached under several names (SB3's shared CNN): stored once
    for spec in sig.input_specs:
        if spec.target is not None:
            tensor = state[spec.target].detach().cpu()
            key = (tensor.data_ptr(), tensor.dtype, tuple(tensor.shape), tuple(tensor.stride()))
            names[spec.arg.name] = shared.setdefault(key, spec.target)
            if names[spec.arg.name] == spec.target:
                tensors[spec.target] = tensor.contiguous()
    user_inputs = [s.arg.name for s in sig.input_specs if s.target is None]
    renamed = dict(zip(user_inputs, input_names, strict=True))
    nodes = []
    output = None
    for node in program.graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "output":
            output = _encode(node.args[0], names)
            continue
        nodes.append(
            {
                "name": node.name,
                "op": _op_name(node.target),
                "args": _encode(list(node.args), names),
                "kwargs": _encode_kwargs(node.kwargs, names),
            }
        )
    graph = {"inputs": input_names, "nodes": nodes, "outputs": output}
    return _rename_inputs(graph, renamed), tensors


def _encode_kwargs(kwargs: dict, names: dict[str, str]) -> dict:
    return {key: _encode(value, names) for key, value in kwargs.items()}


def _rename_inputs(graph: Any, renamed: dict[str, str]) -> Any:
    """The user inputs under the release's names (``obs``, ``h``, ``c``) wherever nodes refer to them."""
    if isinstance(graph, dict):
        if set(graph) == {"node"} and graph["node"] in renamed:
            return {"node": renamed[graph["node"]]}
        return {key: _rename_inputs(value, renamed) for key, value in graph.items()}
    if isinstance(graph, list):
        return [_rename_inputs(value, renamed) for value in graph]
    return graph


# ----------------------------------------------------------------------------- reading
def _bad(message: str) -> BrokenFile:
    return BrokenFile(f"config.json: {message}", hint="the release is damaged or not zoo's; push it again")


def _resolve_op(name: Any):
    if not isinstance(name, str):
        raise _bad(f"an op is {type(name).__name__}, not a name")
    parts = name.split(".")
    if len(parts) == 2 and parts[0] == "operator" and parts[1] in PYTHON_OPS:
        return PYTHON_OPS[parts[1]]
    if len(parts) != 3 or parts[0] != "aten" or parts[1] not in ALLOWED_OPS:
        raise _bad(f"op {name[:80]!r} is not one a release may use (docs/release-format.md lists them)")
    packet = getattr(torch.ops.aten, parts[1], None)
    overload = getattr(packet, parts[2], None) if packet is not None and parts[2].isidentifier() else None
    if not isinstance(overload, torch._ops.OpOverload):
        raise _bad(f"op {name[:80]!r} does not exist in torch {torch.__version__}")
    return overload


def _check_arg(value: Any, known: set[str], tensors: set[str], depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise _bad("an argument nests lists deeper than zoo reads")
    if isinstance(value, list):
        if len(value) > MAX_ARG_ITEMS:
            raise _bad(f"an argument list has {len(value)} items, over {MAX_ARG_ITEMS}")
        for item in value:
            _check_arg(item, known, tensors, depth + 1)
    elif isinstance(value, dict):
        if len(value) != 1:
            raise _bad("an argument object must have one key")
        ((kind, ref),) = value.items()
        ok = {
            "node": lambda r: r in known,
            "tensor": lambda r: r in tensors,
            "dtype": lambda r: r in DTYPES,
            "device": lambda r: r == "cpu",
            "layout": lambda r: r == "strided",
            "memory_format": lambda r: r in _MEMORY_FORMATS,
            "float": lambda r: r in ("inf", "-inf", "nan"),
        }
        if kind not in ok or not isinstance(ref, str) or not ok[kind](ref):
            raise _bad(f"argument {str(value)[:80]} names nothing defined before it")
    elif not (value is None or isinstance(value, bool | int | float | str)):
        raise _bad(f"an argument is {type(value).__name__}")


def _ints(value: Any) -> list[int]:
    if isinstance(value, list):
        return [i for item in value for i in _ints(item)]
    return [value] if isinstance(value, int) and not isinstance(value, bool) else []


def _check_sizes(args: list, name: str) -> None:
    sizes = [abs(i) for i in _ints(args)]
    if any(i > MAX_DIM for i in sizes) or math.prod(i for i in sizes if i > 0) > MAX_ELEMENTS:
        raise _bad(
            f"node {name[:40]!r} asks for sizes over zoo's bounds ({MAX_DIM} per axis, {MAX_ELEMENTS} in all)"
        )


def check_graph(graph: Any, tensors: set[str]) -> None:
    """Raise BrokenFile unless ``graph`` is a well-formed graph over ``tensors``: bounded, every op allowed,
    every reference to an input, a tensor or an earlier node."""
    if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list):
        raise _bad("graph.nodes is missing")
    inputs, nodes = graph.get("inputs"), graph["nodes"]
    if (
        not isinstance(inputs, list)
        or not all(isinstance(i, str) for i in inputs)
        or not 1 <= len(inputs) <= 3
    ):
        raise _bad("graph.inputs must name one to three inputs")
    if len(nodes) > MAX_NODES:
        raise _bad(f"the graph has {len(nodes)} nodes, over {MAX_NODES}")
    known = set(inputs)
    for node in nodes:
        if not isinstance(node, dict) or not isinstance(node.get("name"), str) or node["name"] in known:
            raise _bad("a node has no name, or one used before")
        _resolve_op(node.get("op"))
        if not isinstance(node.get("args"), list) or not isinstance(node.get("kwargs", {}), dict):
            raise _bad(f"node {node['name'][:40]!r}: args must be a list and kwargs an object")
        _check_arg(node["args"], known, tensors)
        if node["op"].split(".")[1] in SIZE_OPS:
            _check_sizes(node["args"], node["name"])
        _check_arg(list(node.get("kwargs", {}).values()), known, tensors)
        known.add(node["name"])
    _check_arg(graph.get("outputs"), known, tensors)


def _decode(value: Any, env: dict[str, Any], tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(value, list):
        return [_decode(v, env, tensors) for v in value]
    if isinstance(value, dict):
        ((kind, ref),) = value.items()
        if kind == "node":
            return env[ref]
        if kind == "tensor":
            return tensors[ref]
        if kind == "dtype":
            return DTYPES[ref]
        if kind == "device":
            return torch.device("cpu")
        if kind == "layout":
            return torch.strided
        if kind == "memory_format":
            return _MEMORY_FORMATS[ref]
        return float(ref)
    return value


class GraphModule(torch.nn.Module):
    """A checked graph over its tensors, run node by node: ``forward(obs[, h, c])`` as the source policy's
    export module computes it."""

    def __init__(self, graph: dict, tensors: dict[str, torch.Tensor]):
        super().__init__()
        check_graph(graph, set(tensors))
        self.graph = graph
        self.tensors = tensors
        self.ops = [_resolve_op(node["op"]) for node in graph["nodes"]]

    def forward(self, *inputs: torch.Tensor) -> Any:
        return self._run(inputs, self.tensors)

    def _run(self, inputs: tuple, tensors: dict[str, torch.Tensor], bound: bool = False) -> Any:
        env: dict[str, Any] = dict(zip(self.graph["inputs"], inputs, strict=True))
        for node, op in zip(self.graph["nodes"], self.ops, strict=True):
            args = _decode(node["args"], env, tensors)
            kwargs = {k: _decode(v, env, tensors) for k, v in node.get("kwargs", {}).items()}
            try:
                env[node["name"]] = op(*args, **kwargs)
            except (RuntimeError, TypeError, ValueError, IndexError) as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
                raise _bad(
                    f"node {node['name'][:40]!r} ({node['op']}) fails on its inputs: {first}"
                ) from None
            if bound and any(t.numel() > MAX_ELEMENTS for t in _tensors_of(env[node["name"]])):
                raise _bad(
                    f"node {node['name'][:40]!r} ({node['op']}) makes a tensor over {MAX_ELEMENTS} elements"
                )
        out = _decode(self.graph["outputs"], env, tensors)
        return out[0] if isinstance(out, list) and len(out) == 1 else tuple(out)

    def check_shapes(self, *inputs: torch.Tensor) -> None:
        """Run the graph on ``inputs``' shapes without data (torch's meta device): every node must run and make
        tensors within :data:`MAX_ELEMENTS`, before a real tensor is allocated (a hostile ``one_hot`` of 2**36
        classes is refused here, not attempted)."""
        meta = {name: tensor.to("meta") for name, tensor in self.tensors.items()}
        self._run(tuple(torch.empty(t.shape, dtype=t.dtype, device="meta") for t in inputs), meta, bound=True)


def _tensors_of(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for item in value for t in _tensors_of(item)]
    return []
