"""Captures a module's forward with torch.export: an ATen-level FX graph with
static shapes and dtypes on every node (node.meta["val"]), the parameters,
buffers and constants lifted to leading graph inputs, and source lines kept
in node.meta["stack_trace"]."""
import operator
import re
from dataclasses import dataclass

import torch
from torch.export.graph_signature import InputKind

from weft import npz


class UnsupportedOp(Exception):
    """An op (or a use of one) the importer cannot express in weft IR. The
    message names the op and the model's source line that produced it."""

    def __init__(self, node, reason=None):
        self.node = node
        self.op = op_name(node)
        self.source = source_line(node)
        text = f"unsupported op {self.op}"
        if reason:
            text += f" ({reason})"
        text += f" at {self.source}" if self.source else " (no source line recorded)"
        super().__init__(text)


class CaptureError(ValueError):
    """torch.export could not capture the forward (data-dependent control
    flow, unsupported Python, ...): the graph break a later slice will split
    around."""


def op_name(node):
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return str(target)  # aten.sort.default
    return getattr(target, "__name__", str(target))


_FRAME = re.compile(r'File "(?P<path>.*)", line (?P<line>\d+)(?:, in (?P<func>.*))?$')


def source_line(node):
    """'FILE:LINE in FUNC: CODE' of the innermost frame of the node's stack
    trace (the model's own line), or ''."""
    trace = node.meta.get("stack_trace") or ""
    lines = [line.strip() for line in trace.strip().splitlines() if line.strip()]
    for i in range(len(lines) - 1, -1, -1):
        frame = _FRAME.match(lines[i])
        if frame:
            where = f"{frame['path']}:{frame['line']}"
            where += f" in {frame['func']}" if frame["func"] else ""
            code = lines[i + 1] if i + 1 < len(lines) and not _FRAME.match(lines[i + 1]) else ""
            return where + (f": {code}" if code else "")
    return ""


def weft_dtype(dtype, node=None):
    name = npz.NAME_OF_TORCH_DTYPE.get(dtype)
    if name is None:
        if node is not None:
            raise UnsupportedOp(node, f"element type {dtype} has no weft type")
        raise ValueError(f"weft has no element type for {dtype}")
    return name


@dataclass(frozen=True)
class Argument:
    """One argument of the imported function: `kind` is "parameter", "buffer",
    "constant" or "input"; `target` is the state_dict key (None for inputs)."""
    name: str
    kind: str
    target: str
    shape: tuple
    dtype: str


_KINDS = {
    InputKind.PARAMETER: "parameter",
    InputKind.BUFFER: "buffer",
    InputKind.CONSTANT_TENSOR: "constant",
    InputKind.USER_INPUT: "input",
}


def capture(module, example_inputs):
    """(ExportedProgram, [Argument]) for module(*example_inputs). Arguments
    follow the program's input order: parameters, buffers, lifted constants,
    then the forward's tensor inputs."""
    example_inputs = tuple(example_inputs)
    for i, value in enumerate(example_inputs):
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"example input {i} is a {type(value).__name__}; "
                             "the importer takes tensors only")
    try:
        program = torch.export.export(module, example_inputs, strict=False)
    except Exception as error:  # export's own errors: many classes, one meaning
        raise CaptureError(f"torch.export could not capture "
                           f"{type(module).__name__}.forward: {error}") from error
    inline_set_grad_regions(program.graph_module)
    graph_inputs = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
    arguments = []
    for spec in program.graph_signature.input_specs:
        kind = _KINDS.get(spec.kind)
        node = graph_inputs[spec.arg.name]
        value = node.meta.get("val")
        if kind is None or not isinstance(value, torch.Tensor):
            raise CaptureError(f"input {spec.arg.name} ({spec.kind.name}) is not a tensor")
        arguments.append(Argument(spec.arg.name, kind, spec.target, tuple(value.shape),
                                  weft_dtype(value.dtype)))
    return program, arguments


def _region(node):
    """(body submodule node, its inputs, grad mode or None) of a region call
    the importer inlines, or None for other nodes: torch.export's
    wrap_with_set_grad_enabled (a forward under torch.no_grad(), as
    transformers' rotary embedding is) and wrap_with_autocast with autocast
    disabled (transformers' LLaMA rotary embedding under torch 2.11)."""
    if node.op != "call_function":
        return None
    hops = torch.ops.higher_order
    if node.target is getattr(hops, "wrap_with_set_grad_enabled", None):
        return node.args[1], node.args[2:], bool(node.args[0])
    if node.target is getattr(hops, "wrap_with_autocast", None):
        if node.args[2]:
            # Enabled autocast would cast the region's ops on a later trace;
            # torch.export leaves them uncast, so inlining would change them.
            raise UnsupportedOp(node, "a torch.autocast region enabled inside the model "
                                      "(autocast around the compiled call is supported)")
        return node.args[4], node.args[5:], None
    return None


def inline_set_grad_regions(graph_module):
    """Inlines the region calls of _region: their ops are plain ATen ops of
    the graph, which the importer maps; neither grad mode nor disabled
    autocast changes a forward's values. A no_grad region reading a tensor
    that requires grad is refused: inlined, it would pass gradients on."""
    graph = graph_module.graph
    # Regions nest (torch 2.11 captures transformers' LLaMA rotary embedding
    # as an autocast region inside a no_grad one): inline until none is left.
    while True:
        node = next((n for n in graph.nodes if _region(n) is not None), None)
        if node is None:
            break
        region = _region(node)
        submodule, args, grad = region
        body = getattr(graph_module, submodule.target)
        if grad is False and any(getattr(n.meta.get("val"), "requires_grad", False)
                                 for n in node.all_input_nodes):
            # Inlined, the region would pass gradients torch.no_grad() stops.
            # The call has no source line; the region's first op has the model's.
            traces = [n.meta["stack_trace"] for n in body.graph.nodes if n.meta.get("stack_trace")]
            node.meta.setdefault("stack_trace", traces[0] if traces else None)
            raise UnsupportedOp(node, "a torch.no_grad() region reading tensors that require "
                                      "grad (weft has no stop-gradient)")
        inputs = [n for n in body.graph.nodes if n.op == "placeholder"]
        copied = dict(zip(inputs, args))
        with graph.inserting_before(node):
            out = graph.graph_copy(body.graph, copied)
        # A nested region's body is an attribute of this body: move it up.
        for old_node, new_node in copied.items():
            if old_node.op == "get_attr":
                name = f"inlined_{len(list(graph_module.named_children()))}_{old_node.target}"
                graph_module.add_submodule(name, getattr(body, old_node.target))
                new_node.target = name
        for user in list(node.users):
            if user.op == "call_function" and user.target is operator.getitem:
                user.replace_all_uses_with(out[user.args[1]])
                graph.erase_node(user)
        if node.users:
            node.replace_all_uses_with(out)
        graph.erase_node(node)
        if not submodule.users:
            graph.erase_node(submodule)
    graph.lint()


def argument_values(program, arguments, inputs):
    """The tensors to pass, in argument order: the program's parameters,
    buffers and constants (the module's values at capture time), then
    `inputs`."""
    inputs = list(inputs)
    state = {**program.state_dict, **program.constants}
    values = []
    for argument in arguments:
        if argument.kind == "input":
            if not inputs:
                raise ValueError("fewer inputs than the captured forward takes")
            values.append(inputs.pop(0))
        else:
            values.append(state[argument.target].detach())
    if inputs:
        raise ValueError(f"{len(inputs)} more inputs than the captured forward takes")
    return values
