"""Turns a captured ATen graph into one weft function: raised patterns first
(patterns.py), then the nodes still needed, in graph order, one handler each
(ops.py). A node no output depends on is never lowered, so the pieces of a
raised pattern leave nothing behind. A node computed from constants alone
(position ids, causal masks built from arange) is evaluated at import time."""
import math
import operator

import torch
import torch.fx

from weft import npz

from weft.models.ir import (FunctionBuilder, I64Array, Value, format_float, module_text,
                            tensor_type)

from .capture import UnsupportedOp, weft_dtype
from .layers import block_layers

FLOAT_TYPES = ("f64", "f32", "f16", "bf16")
FLOAT_BITS = {"f64": 64, "f32": 32, "f16": 16, "bf16": 16}


class ImportBuilder(FunctionBuilder):
    """FunctionBuilder plus splat constants (arith.constant), which the
    importer needs for scalar operands and default norm parameters."""

    def constant(self, number, shape, dtype, hint="cst"):
        value = Value(self._fresh(hint), tuple(shape), dtype)
        literal = format_float(number) if dtype in FLOAT_TYPES else str(int(number))
        self.lines.append(f"{value.name} = arith.constant dense<{literal}> "
                          f": {tensor_type(shape, dtype)}")
        return value

    def dense_constant(self, tensor, dtype, hint="cst"):
        """An arith.constant holding every element of a (small) tensor."""
        value = Value(self._fresh(hint), tuple(tensor.shape), dtype)
        flat = tensor.detach().reshape(-1).tolist()
        if dtype == "i1":
            items = ["true" if v else "false" for v in flat]
        elif dtype in FLOAT_TYPES:
            items = [format_float(v) for v in flat]
        else:
            items = [str(int(v)) for v in flat]
        literal = items[0] if tensor.dim() == 0 else _nested(items, list(tensor.shape))
        self.lines.append(f"{value.name} = arith.constant dense<{literal}> "
                          f": {tensor_type(tensor.shape, dtype)}")
        return value


def _nested(items, shape):
    if len(shape) == 1:
        return "[" + ", ".join(items) + "]"
    step = len(items) // shape[0] if shape[0] else 0
    return "[" + ", ".join(_nested(items[i * step:(i + 1) * step], shape[1:])
                           for i in range(shape[0])) + "]"


def result_type(node):
    """(shape, weft dtype) of a node's single tensor result."""
    value = node.meta.get("val")
    if not isinstance(value, torch.Tensor):
        raise UnsupportedOp(node, "its result is not a single tensor")
    return tuple(int(d) for d in value.shape), weft_dtype(value.dtype, node)


def is_tensor_node(arg):
    return isinstance(arg, torch.fx.Node) and isinstance(arg.meta.get("val"), torch.Tensor)


def is_number(arg):
    return isinstance(arg, (int, float)) and not isinstance(arg, bool)


# Values computed from constants are folded into the IR up to this size; a
# larger one would bloat it, so it is refused.
MAX_FOLDED_ELEMENTS = 1 << 16


class Lowering:
    """The function being built, the weft value of each lowered node, and
    the tensor of each node evaluated at import time (`constants`: emitted
    as an arith.constant when a lowered op reads one)."""

    def __init__(self, name):
        self.f = ImportBuilder(name)
        self.values = {}
        self.constants = {}
        self.raised = []
        self.node = None  # the node being lowered, for error messages
        self.layer = None  # its block's index (weft.layer), None outside the blocks
        self.lifted = None  # a list: constants GPU packages cannot hold become arguments
        self.trailing = None  # a list: (name, kind) of each argument made while lowering
        self.seed_value = None  # the dropout seed argument, made at the first dropout
        self.rng_ids = 0  # weft.rng_id of the next random op
        # (value, dtype) -> its conversion: autocast converts one activation
        # for each linear that reads it (q, k and v; gate and up), one is enough.
        self.converted = {}
        # widened value -> the narrower value it was converted from exactly
        # (bf16 -> f32): converting it back is that value, no kernel.
        self.widened = {}

    # -- values -------------------------------------------------------------

    def value(self, arg):
        if not isinstance(arg, torch.fx.Node):
            raise UnsupportedOp(self.node, f"expected a tensor operand, got {arg!r}")
        if arg not in self.values and arg in self.constants:
            tensor = self.constants[arg]
            if tensor.numel() > MAX_FOLDED_ELEMENTS:
                raise UnsupportedOp(arg, f"a constant of {tensor.numel()} elements (at most "
                                         f"{MAX_FOLDED_ELEMENTS} are folded into the IR)")
            dtype = weft_dtype(tensor.dtype, arg)
            if self.lifted is not None and _needs_lifting(tensor):
                self.values[arg] = self.f.arg(f"lifted_{arg.name}", tuple(tensor.shape), dtype,
                                              comment="a constant passed as an argument")
                self.lifted.append((f"lifted_{arg.name}", tensor))
                self._record(f"lifted_{arg.name}", "lifted")
            else:
                self.values[arg] = self.f.dense_constant(tensor, dtype, hint=arg.name)
        if arg not in self.values:
            raise UnsupportedOp(self.node, f"operand {arg.name} was not lowered")
        value = self.values[arg]
        if isinstance(value, list):
            raise UnsupportedOp(self.node, f"operand {arg.name} is a list of tensors")
        return value

    def float_value(self, arg, dtype=None):
        """The operand as a float tensor, converted to `dtype` if given."""
        value = self.value(arg)
        if value.dtype not in FLOAT_TYPES:
            raise UnsupportedOp(self.node, f"operand {arg.name} has element type "
                                           f"{value.dtype}; weft computes on floats")
        return self.convert(value, dtype) if dtype else value

    # -- emission helpers -----------------------------------------------------

    def op(self, name, operands, shape, dtype, attrs=None):
        if self.layer is not None:
            attrs = dict(attrs or {})
            attrs["weft.layer"] = self.layer
        return self.f.op(name, operands, (tuple(shape), dtype), attrs, hint=self.node.name)

    def convert(self, value, dtype):
        if value.dtype == dtype:
            return value
        if dtype not in FLOAT_TYPES or value.dtype not in FLOAT_TYPES:
            raise UnsupportedOp(self.node, f"conversion {value.dtype} -> {dtype}")
        origin = self.widened.get(value)
        if origin is not None and origin.dtype == dtype:
            return origin
        if (value, dtype) not in self.converted:
            result = self.op("convert", [value], value.shape, dtype)
            self.converted[value, dtype] = result
            if FLOAT_BITS[dtype] > FLOAT_BITS[value.dtype]:
                self.widened[result] = value
        return self.converted[value, dtype]

    def reshape(self, value, shape):
        shape = tuple(shape)
        return value if value.shape == shape else self.op("reshape", [value], shape, value.dtype)

    def constant(self, number, dtype, shape=()):
        self.check_finite(number)
        if self.lifted is not None and dtype not in FLOAT_TYPES:
            # A GPU package fills float splats only: an integer one (label
            # padding) is passed as an argument.
            name = f"lifted_{self.node.name}_c{len(self.lifted)}"
            tensor = torch.full(tuple(shape), int(number), dtype=npz.TORCH_DTYPES[dtype])
            self.lifted.append((name, tensor))
            self._record(name, "lifted")
            return self.f.arg(name, tuple(shape), dtype, comment="a constant passed as an argument")
        return self.f.constant(float(number), shape, dtype, hint=f"{self.node.name}.c")

    def _record(self, name, kind):
        if self.trailing is not None:
            self.trailing.append((name, kind))

    def random(self):
        """(the dropout seed, a fresh weft.rng_id) for one random op. The seed
        is one trailing i64 argument, made at the first random op, whose value
        the caller draws anew for each call (kind "seed"). Without a
        `trailing` list (a split region) random ops are refused."""
        if self.trailing is None:
            raise UnsupportedOp(self.node, "training-mode dropout in a graph region split "
                                           "around an unsupported op (its seed cannot be "
                                           "passed); only whole graphs import dropout")
        if self.seed_value is None:
            self.seed_value = self.f.arg("seed", (), "i64",
                                         comment="the dropout seed, drawn anew each call")
            self._record("seed", "seed")
        self.rng_ids += 1
        return self.seed_value, self.rng_ids - 1

    def scale(self, value, factor):
        self.check_finite(factor)
        return value if factor == 1 else self.op("scale", [value], value.shape, value.dtype,
                                                 {"value": float(factor)})


    def check_finite(self, number):
        if not math.isfinite(float(number)):
            raise UnsupportedOp(self.node, f"the non-finite constant {number}")


def live_nodes(graph, matches):
    """Nodes an output depends on; a raised pattern's root depends on its
    match's inputs instead of its own arguments."""
    live, work = set(), [n for n in graph.nodes if n.op == "output"]
    while work:
        node = work.pop()
        if node in live:
            continue
        live.add(node)
        if node in matches:
            work.extend(matches[node].inputs)
        else:
            work.extend(node.all_input_nodes)
    return live


def _fold(lowering, node):
    """node's tensor when every tensor it reads was evaluated at import time
    (factories read none) and it is a plain ATen op; else None."""
    if not isinstance(node.target, torch._ops.OpOverload) or \
            not isinstance(node.meta.get("val"), torch.Tensor) or \
            torch.Tag.nondeterministic_seeded in node.target.tags:
        return None
    inputs = node.all_input_nodes
    if any(n not in lowering.constants for n in inputs):
        return None
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: lowering.constants[n])
    kwargs = {k: v for k, v in kwargs.items() if k not in ("device", "pin_memory")}
    if "device" in node.kwargs:
        kwargs["device"] = "cpu"
    value = node.target(*args, **kwargs)
    return value if isinstance(value, torch.Tensor) else None


def _needs_lifting(tensor):
    """Whether a folded constant is one a GPU package cannot fill (its fill
    kernel takes one float: a non-splat tensor, or one of integers)."""
    if not tensor.is_floating_point():
        return True
    flat = tensor.reshape(-1)
    return flat.numel() > 1 and not bool((flat == flat[0]).all())


def lower_graph(graph, arguments, name, matches, handlers, params=(), vjp=False, lifted=None,
                trailing=None):
    """weft IR text of `graph` as func @name(arguments...). The arguments at
    indices `params` are marked {weft.param}. With `vjp`, the function takes
    one more argument dy_i per float output y_i (after the graph's arguments)
    and returns the 0-d sum_i sum(y_i * dy_i), whose gradients (weft-autodiff)
    are the vector-Jacobian product. With `lifted` (a list), the folded
    constants a GPU package cannot fill become trailing arguments instead,
    appended to it as (argument name, tensor) in argument order. With
    `trailing` (a list), every argument made while lowering (lifted
    constants, the dropout seed) is appended to it as (name, kind) in
    argument order; without it, training-mode dropout is refused."""
    lowering = Lowering(name)
    lowering.lifted = lifted
    lowering.trailing = trailing
    graph_inputs = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    for index, argument in enumerate(arguments):
        node = graph_inputs[argument.name]
        attrs = {"weft.param": True} if index in params else None
        lowering.values[node] = lowering.f.arg(argument.name, argument.shape, argument.dtype,
                                               attrs, comment=argument.target or argument.kind)
    live = live_nodes(graph, matches)
    layers = block_layers(graph)
    for node in graph.nodes:
        if node not in live or node.op == "placeholder":
            continue
        lowering.node = node
        lowering.layer = layers.get(node)
        if node.op == "output":
            outputs = [lowering.value(v) for v in _flatten_outputs(node)]
            lowering.f.ret(*(_vjp_loss(lowering, outputs) if vjp else outputs))
        elif node.op != "call_function":
            raise UnsupportedOp(node, f"FX node kind {node.op}")
        elif (folded := _fold(lowering, node)) is not None:
            lowering.constants[node] = folded
        elif node in matches:
            lowering.values[node] = matches[node].emit(lowering)
            lowering.raised.append(matches[node].kind)
            _check_result(lowering, node)
        elif node.target is operator.getitem:
            pieces = lowering.values[node.args[0]]
            lowering.values[node] = pieces[node.args[1]]
        else:
            handler = handlers.get(node.target)
            if handler is None:
                raise UnsupportedOp(node)
            lowering.values[node] = handler(lowering, node)
            _check_result(lowering, node)
    return module_text([lowering.f]), lowering.raised


def _vjp_loss(lowering, outputs):
    """[sum_i sum(y_i * dy_i)] over the float outputs, dy_i new arguments,
    accumulated in the widest float type among them."""
    floats = [y for y in outputs if y.dtype in FLOAT_TYPES]
    if not floats:
        raise UnsupportedOp(lowering.node, "no float output to differentiate")
    dtype = next(t for t in FLOAT_TYPES if any(y.dtype == t for y in floats))
    loss = None
    for i, y in enumerate(floats):
        dy = lowering.f.arg(f"dy{i}", y.shape, y.dtype, comment=f"cotangent of result {i}")
        term = lowering.op("mul", [y, dy], y.shape, y.dtype)
        if y.shape:
            term = lowering.op("reduce_sum", [term], (), y.dtype,
                               {"dims": I64Array(tuple(range(len(y.shape))))})
        term = lowering.convert(term, dtype)
        loss = term if loss is None else lowering.op("add", [loss, term], (), dtype)
    return [loss]


def _flatten_outputs(node):
    outputs = []

    def walk(arg):
        if isinstance(arg, (tuple, list)):
            for item in arg:
                walk(item)
        elif isinstance(arg, torch.fx.Node):
            outputs.append(arg)
        else:
            raise UnsupportedOp(node, f"the forward returns a non-tensor {arg!r}")
    walk(node.args[0])
    return outputs


def _check_result(lowering, node):
    """Every lowered value has the shape and type torch traced, so a wrong
    lowering fails here, naming the node, rather than as invalid IR."""
    got = lowering.values[node]
    if isinstance(got, list):
        expected = node.meta.get("val")
        if len(got) != len(expected):
            raise UnsupportedOp(node, f"lowered to {len(got)} pieces, torch has {len(expected)}")
        return
    shape, dtype = result_type(node)
    if (got.shape, got.dtype) != (shape, dtype):
        raise UnsupportedOp(node, f"lowered to {got.type}, torch has {tensor_type(shape, dtype)}")
