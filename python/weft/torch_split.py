"""Graph splitting for the "weft" backend: when a captured ATen graph holds
ops Weft cannot import, those ops run in eager PyTorch and every connected
region of the others becomes a Weft graph of its own (issue 19's fallback).

    split = split_graph(program, arguments, compile_part, warn)

`program` and `arguments` are torch_import.capture's; the ops are sorted by
the importer's own handlers and pattern matchers, then
torch.fx's CapabilityBasedPartitioner groups the supported ones into
submodules, each replaced by `compile_part(graph, arguments)`'s module. A
handler can still refuse one use of an op (div with a rounding mode, a
non-finite constant): its part is compiled again without that node, until
every part imports. `warn(op, source)` is called once per op left eager.
"""
import operator
from types import SimpleNamespace

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from torch.utils import _pytree as pytree

from .torch_import import ImportedModule
from .torch_import.capture import (Argument, UnsupportedOp, argument_values, op_name,
                                   source_line, weft_dtype)
from .torch_import.lowering import lower_graph
from .torch_import.ops import HANDLERS
from .torch_import.patterns import find_matches

__all__ = ["SplitCompiled", "SplitGraph", "split_graph", "supported_nodes"]


def _covered(match, root):
    """The nodes a raised pattern replaces: from its root back to its inputs."""
    inside, work, stop = set(), [root], set(match.inputs)
    while work:
        node = work.pop()
        if node in inside or node in stop or node.op != "call_function":
            continue
        inside.add(node)
        work.extend(node.all_input_nodes)
    return inside


def supported_nodes(graph, refused=()):
    """The call_function nodes the importer can lower (a handler, or a part
    of a raised pattern), less `refused`."""
    supported = set()
    for root, match in find_matches(graph).items():
        supported |= _covered(match, root)
    for node in graph.nodes:
        if node.op == "call_function" and node.target in HANDLERS:
            supported.add(node)
    for node in graph.nodes:  # a tuple's pieces go where the tuple is made
        if node.op == "call_function" and node.target is operator.getitem:
            source = node.args[0]
            if isinstance(source, torch.fx.Node) and source in supported:
                supported.add(node)
            else:
                supported.discard(node)
    return supported - set(refused)


class _Support(OperatorSupportBase):
    def __init__(self, names):
        self.names = names

    def is_node_supported(self, submodules, node):
        return node.name in self.names


def part_arguments(graph):
    """Arguments of a partition's graph: every placeholder an input."""
    arguments = []
    for node in graph.nodes:
        if node.op != "placeholder":
            continue
        value = node.meta.get("val")
        if not isinstance(value, torch.Tensor):
            raise UnsupportedOp(node, "a partition input that is not a tensor")
        arguments.append(Argument(node.name, "input", None, tuple(value.shape),
                                  weft_dtype(value.dtype, node)))
    return arguments


class SplitGraph(torch.nn.Module):
    """The captured graph with the supported regions as Weft submodules
    (`parts`, by name) and the rest as eager ATen calls."""

    def __init__(self, module, parts, eager_ops):
        super().__init__()
        self.module = module
        self.parts = parts
        self.eager_ops = eager_ops

    def forward(self, *values):
        return self.module(*values)


def split_graph(program, arguments, compile_part, warn, max_rounds=32):
    """SplitGraph of `program`'s graph, or None when no part holds an op
    worth compiling (everything is then eager)."""
    graph_module = torch.fx.GraphModule(torch.nn.Module(), program.graph)
    refused = set()
    for _ in range(max_rounds):
        gm = torch.fx.GraphModule(torch.nn.Module(), _copy(graph_module.graph))
        names = {n.name for n in supported_nodes(gm.graph)} - refused
        partitioner = CapabilityBasedPartitioner(gm, _Support(names),
                                                 allows_single_node_partition=False)
        partitioned = partitioner.partition_and_fuse()
        parts, retry = {}, False
        for node in list(partitioned.graph.nodes):
            if node.op != "call_module":
                continue
            sub = getattr(partitioned, node.target)
            try:
                parts[node.target] = compile_part(sub.graph, part_arguments(sub.graph))
            except UnsupportedOp as error:
                culprit = getattr(error, "node", None)
                if culprit is None or culprit.name in refused:
                    raise
                refused.add(culprit.name)
                retry = True
                break
        if retry:
            continue
        if not parts:
            return None
        for name, module in parts.items():
            setattr(partitioned, name, module)
        eager = {}
        for node in partitioned.graph.nodes:
            if node.op == "call_function":
                eager.setdefault(op_name(node), source_line(node))
        for op, source in eager.items():
            if op != "getitem":
                warn(op, source)
        return SplitGraph(partitioned, parts, sorted(eager))
    raise UnsupportedOp(next(iter(program.graph.nodes)),
                        f"graph splitting did not settle in {max_rounds} rounds")


def _copy(graph):
    new = torch.fx.Graph()
    mapping = {}
    output = new.graph_copy(graph, mapping)
    new.output(output)
    return new


class _GraphProgram:
    """What the backend's compiled graphs read of an ExportedProgram, for a
    partition's graph: the graph, no state, no output tree."""

    def __init__(self, graph):
        self.graph = graph
        self.call_spec = SimpleNamespace(out_spec=None)
        self.state_dict, self.constants = {}, {}


class WeftPart(torch.nn.Module):
    """One supported region: imported from its graph, run by `compiled`
    (the backend's per-graph runner) and differentiated through `function`
    (its autograd.Function) when an input requires grad."""

    def __init__(self, graph, arguments, make_compiled, function):
        super().__init__()
        text, raised = lower_graph(graph, arguments, "forward", find_matches(graph), HANDLERS)
        self.imported = ImportedModule(text, "forward", arguments, raised, _GraphProgram(graph))
        self.compiled = make_compiled(self.imported)
        self.function = function
        output = next(n for n in graph.nodes if n.op == "output")
        self.single = isinstance(output.args[0], torch.fx.Node)

    def forward(self, *tensors):
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            outputs = self.function.apply(self.compiled, *tensors)
        else:
            outputs = self.compiled.forward(tensors)
        return outputs[0] if self.single else tuple(outputs)


class SplitCompiled:
    """A graph the backend runs split: the program's state and inputs in,
    its user outputs out as the forward's tree."""

    def __init__(self, program, arguments, split):
        self.program, self.arguments, self.split = program, arguments, split
        self.out_spec = program.call_spec.out_spec

    def __call__(self, tensors):
        outputs = self.split(*argument_values(self.program, self.arguments, tensors))
        flat = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
        leaves = self.out_spec.num_leaves if self.out_spec is not None else len(flat)
        return pytree.tree_unflatten(flat[len(flat) - leaves:], self.out_spec) \
            if self.out_spec is not None else flat
