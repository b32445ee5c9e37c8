"""CUDA graphs that are not training calls: the forward alone (model.eval(),
torch.no_grad(), logits or any outputs) as an inference package, and, when
such a graph's outputs need gradients (the loss computed outside the
compiled graph), a backward that runs the VJP step of the same graph.

The inference package is the imported forward itself, compiled without
autodiff (weftCompileInferenceStep): argument i is the forward's argument
i, result j its output j. The VJP package is the training step (optimizer
none) of `vjp_text`: the forward as sum_j sum(y_j * dy_j) with one dy per
float output after the arguments, differentiated with respect to the
arguments that require grad; it recomputes the forward (its loss is
discarded). Both run on torch's current stream in an arena that is a torch
uint8 CUDA tensor, with weft.torch_gpu's package cache, loading and checks.
Outputs and gradients are new tensors (copies out of the arena: the next
call overwrites it). docs/torch-import.md, "CUDA tensors".
"""
import torch
from torch.utils import _pytree as pytree

from weft import runtime as rt
from weft import torch_gpu
from weft.torch_gpu import (TORCH_DTYPES, WEFT_DTYPES, GpuTrainingStep, LayoutError, StepLayout,
                            argument_buffers, check_tensor, compile_options, stream_handle,
                            training_package)
from weft.torch_import import new_seed, vjp_text


def package_options(memory_budget, inference):
    """The C API options of an inference or VJP package: the training
    step's (weft.torch_gpu.compile_options: fused kernels) with every input
    copied into the arena (execute() copies them; no argument is bound), and
    `memory_budget` (bytes, or None) as a bound on the planned arena, checked
    after planning (nothing is recomputed). "inference" makes
    weft.torch_gpu.training_package call weftCompileInferenceStep (and keeps
    the two packages' cache keys apart)."""
    options = compile_options(None)
    options.pop("bind_arguments", None)
    if memory_budget is not None:
        options["memory_budget"] = f"{int(memory_budget)}B"
    return {**options, "inference": True} if inference else options


class _Value:
    """A step buffer's expected shape and dtype (weft's name), with a name
    for messages: a forward output or a VJP cotangent."""

    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype


def output_values(imported):
    """The forward's outputs as _Value (shape, weft dtype), in output order."""
    program = imported.program
    node = next(n for n in program.graph.nodes if n.op == "output")
    leaves = [a for a in pytree.tree_leaves(node.args[0]) if isinstance(a, torch.fx.Node)]
    values = []
    for j, leaf in enumerate(leaves):
        val = leaf.meta["val"]
        if val.dtype not in WEFT_DTYPES:
            raise LayoutError(f"output {j} ({leaf.name}) is {val.dtype}, which no step buffer "
                              f"holds (weft's types: {', '.join(sorted(WEFT_DTYPES.values()))})")
        values.append(_Value(f"output {j} ({leaf.name})", val.shape, WEFT_DTYPES[val.dtype]))
    return values


class InferenceLayout:
    """Which buffer of an inference package is each argument (arg == i) and
    each output (result == j), every shape and dtype checked against the
    imported forward's: LayoutError names the buffer, expected and found."""

    def __init__(self, buffers, arguments, outputs):
        by_result = {b.result: b for b in buffers if b.result >= 0}
        self.inputs = argument_buffers(buffers, arguments)
        self.outputs = []
        for j, value in enumerate(outputs):
            buffer = by_result.get(j)
            if buffer is None:
                raise LayoutError(f"the step has no buffer for result {j}, {value.name}")
            StepLayout._check(buffer, value.shape, value.dtype, value.name)
            self.outputs.append(buffer)


class PackageRun(GpuTrainingStep):
    """One loaded package whose inputs are copied into its arena and whose
    result buffers are copied out as new tensors: an inference package
    (outputs) or a VJP package (loss and gradients). Loading (per device and
    stream, arena from torch's allocator, a CUDA graph of the schedule), the
    lifted constants and the arena views are GpuTrainingStep's."""

    def __init__(self, imported, text, options, cache, layout_of):
        self.imported, self.text, self.options = imported, text, options
        self.package, self.key = training_package(text, options, cache)
        prepared = rt.prepare_step(self.package, 90)
        try:
            self.layout = layout_of(prepared.buffers())
            self.arena_bytes = prepared.memory_info()["planned_bytes"]
        finally:
            prepared.free()
        self.loaded, self.pending, self.last, self._fast, self._lifted_on = {}, [], None, None, {}
        self._arena_views = {}  # loaded key -> {buffer index: its view in the arena}
        torch_gpu._LIVE.add(self)

    def execute(self, values, inputs, results):
        """Copies `values` (one tensor per buffer of `inputs`) into the arena,
        runs the package on torch's current stream and returns new tensors
        holding the `results` buffers."""
        device = next((v.device for v in values if v.device.type == self.device_type), None)
        if device is None:
            raise LayoutError(f"the step runs on {self.device_type} tensors; the call has none")
        step = self._step(device)
        if len(values) != len(inputs):
            raise LayoutError(f"the step takes {len(inputs)} tensors, the call gives {len(values)}")
        arguments, checked = self.imported.arguments, []
        for buffer, value in zip(inputs, values):
            value = value.detach()
            what = (f"argument {buffer.arg}, {arguments[buffer.arg].name}"
                    if buffer.arg < len(arguments) else
                    f"the cotangent of float output {buffer.arg - len(arguments)}")
            check_tensor(buffer, value, what, self.device_type)
            if buffer.size:
                checked.append((buffer, value))
        with torch_gpu._device_scope(device):
            if self.device_type == "cuda":
                return self._execute_in_arena(device, step, inputs, checked, results)
            for buffer, value in checked:
                step.copy_in_device(buffer.index, value.contiguous().data_ptr(), buffer.size)
            step.enqueue()
            torch_gpu.RUNS["steps"] += 1
            out = []
            for buffer in results:
                tensor = torch.empty(buffer.shape, dtype=TORCH_DTYPES[buffer.dtype], device=device)
                if buffer.size:
                    step.copy_out_device(buffer.index, tensor.data_ptr(), buffer.size)
                out.append(tensor)
            return out

    def _execute_in_arena(self, device, step, inputs, checked, results):
        key = (device.index, stream_handle(torch.cuda.current_stream(device)))
        if key not in self._arena_views:
            views = self._views(key, list(inputs) + list(results))
            buffers = list(inputs) + list(results)
            self._arena_views[key] = {b.index: v for b, v in zip(buffers, views)}
        views = self._arena_views[key]
        if checked:
            torch._foreach_copy_([views[b.index] for b, _ in checked], [v for _, v in checked])
        step.enqueue()
        torch_gpu.RUNS["steps"] += 1
        self.last = (key, checked)  # for weft.torch_gpu.profile()
        # Copies: the next run (of this or a later call) overwrites the arena.
        return [views[b.index].clone() for b in results]


class GpuInferenceStep(PackageRun):
    """The inference package of an imported forward."""

    def __init__(self, imported, memory_budget, cache):
        self.outputs = output_values(imported)
        super().__init__(imported, imported.text, package_options(memory_budget, True), cache,
                         lambda buffers: InferenceLayout(buffers, imported.arguments,
                                                         self.outputs))

    def run(self, tensors, seed=None):
        """The forward's outputs (new tensors) for the graph's tensor inputs."""
        values = self.imported.argument_values(*tensors, seed=seed)
        if self.imported.lifted:
            values = self._place_lifted(values)
        return self.execute(values, self.layout.inputs, self.layout.outputs)


class GpuVjpStep(PackageRun):
    """The VJP package: argument i the forward's argument i, then one dy per
    float output; result 0 sum(y * dy) (unused), result k + 1 the gradient
    of the k-th argument in `params` (indices among the arguments)."""

    def __init__(self, imported, params, memory_budget, cache):
        self.params = list(params)
        floats = [v for v in output_values(imported) if TORCH_DTYPES[v.dtype].is_floating_point]
        self.cotangents = [_Value(f"the cotangent of {v.name}", v.shape, v.dtype) for v in floats]
        text = vjp_text(imported, self.params, entry=imported.entry)
        super().__init__(imported, text, package_options(memory_budget, False), cache,
                         lambda buffers: StepLayout(buffers, imported.arguments + self.cotangents,
                                                    self.params))

    def run(self, tensors, dys, seed=None):
        """The gradients of sum(y * dy) for self.params (new tensors)."""
        values = self.imported.argument_values(*tensors, seed=seed)
        if self.imported.lifted:
            values = self._place_lifted(values)
        values = values + [dy.contiguous() for dy in dys]
        return self.execute(values, self.layout.inputs, self.layout.grads)


class GpuForwardFunction(torch.autograd.Function):
    """forward(graph, *tensors) -> the outputs, from the inference package;
    backward(*dys): the VJP package's gradients for the tensors that need
    them (the package recomputes the forward)."""

    @staticmethod
    def forward(ctx, graph, *tensors):
        # One dropout seed for the forward and its backward: the same masks.
        ctx.seed = new_seed(tensors[0].device) if graph.imported.has_seed and tensors else None
        outputs = graph.forward.run(tensors, ctx.seed)
        ctx.graph = graph
        ctx.save_for_backward(*tensors)
        ctx.mark_non_differentiable(*[o for o in outputs if not o.is_floating_point()])
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *dys):
        graph, tensors = ctx.graph, ctx.saved_tensors
        needs = [i for i, n in enumerate(ctx.needs_input_grad[1:]) if n]
        step = graph.vjp_step(needs)
        floats = [(dy, out) for dy, out in zip(dys, graph.forward.outputs)
                  if TORCH_DTYPES[out.dtype].is_floating_point]
        device = tensors[0].device
        cotangents = [torch.zeros(out.shape, dtype=TORCH_DTYPES[out.dtype], device=device)
                      if dy is None else dy for dy, out in floats]
        grads = dict(zip(needs, step.run(tensors, cotangents, ctx.seed)))
        return (None, *[grads.get(i) for i in range(len(tensors))])


class CompiledGpuInference:
    """What the backend keeps for one CUDA key whose graph is not a training
    call: the inference package, and the VJP packages (one per set of
    tensors needing gradients; the one for the tensors that require grad at
    compile time is built at once, so a GPU machine without the compiler
    finds it in the package cache)."""

    def __init__(self, imported, requires_grad, memory_budget, cache, dump=None):
        self.imported = imported
        self.inputs = [i for i, a in enumerate(imported.arguments) if a.kind == "input"]
        if len(self.inputs) != len(requires_grad):
            raise LayoutError(f"the captured graph takes {len(self.inputs)} tensor inputs, the "
                              f"call passes {len(requires_grad)}")
        self.memory_budget, self.cache, self.dump = memory_budget, cache, dump
        self.forward = GpuInferenceStep(imported, memory_budget, cache)
        if dump:
            dump(imported.text, "inference")
        self.steps = {}
        # A graph without a float output has nothing to differentiate.
        self.differentiable = any(TORCH_DTYPES[v.dtype].is_floating_point
                                  for v in self.forward.outputs)
        needs = [i for i, n in enumerate(requires_grad) if n]
        if needs and self.differentiable and torch.is_grad_enabled():
            self.vjp_step(needs)

    @property
    def out_spec(self):
        return self.imported.program.call_spec.out_spec

    def vjp_step(self, needs):
        """The VJP package for the call's tensors at positions `needs`."""
        key = tuple(needs)
        if key not in self.steps:
            params = [self.inputs[i] for i in needs]
            step = GpuVjpStep(self.imported, params, self.memory_budget, self.cache)
            if self.dump:
                self.dump(step.text, "vjp")
            self.steps[key] = step
        return self.steps[key]

    def __call__(self, tensors):
        """The outputs, flat, in output order."""
        if self.differentiable and torch.is_grad_enabled() and \
                any(t.requires_grad for t in tensors):
            return list(GpuForwardFunction.apply(self, *tensors))
        return self.forward.run(tensors)

    def free(self):
        self.forward.free()
        for step in self.steps.values():
            step.free()
