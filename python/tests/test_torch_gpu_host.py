"""The GPU path of the torch backend (weft.torch_gpu) up to the first GPU
call, on a machine without one: F.cross_entropy and nanoGPT's position
embedding imported, the training step's gradients in the order the GPU path
binds them (checked on the reference interpreter against eager float64),
the package cache (hit without the compiler, miss with a clear message),
the step layout and tensor checks, the compile_only option, and the
runtime's step options through ctypes."""
import copy
import ctypes
import os
import subprocess

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import weft
from harness import require_weft_run, run_ir, tool
from test_torch_backend_gpu import GPT, make_model
from weft import capi, torch_gpu
from weft import runtime as rt
from weft.torch_import import UnsupportedOp, import_module, run_reference, training_text

pytestmark = pytest.mark.skipif(
    not os.path.exists(rt.library_path()),
    reason=f"{rt.library_path()} is not built (ninja -C build weft_runtime_shared)")


def rel(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-300)).item()


def batch(seq=64, vocab=512):
    generator = torch.Generator().manual_seed(3)
    return (torch.randint(0, vocab, (2, seq), generator=generator),
            torch.randint(0, vocab, (2, seq), generator=generator))


def parameter_indices(imported):
    return [i for i, a in enumerate(imported.arguments) if a.kind == "parameter"]


def need_capi():
    if not os.path.exists(capi.library_path()):
        pytest.skip(f"{capi.library_path()} is not built (set WEFT_CAPI_LIB)")


def compiled_package(model, inputs):
    """(imported, params, package) of the bf16 model's CUDA training step."""
    need_capi()
    imported = import_module(model, inputs)
    params = parameter_indices(imported)
    package, _key = torch_gpu.training_package(training_text(imported, params),
                                               torch_gpu.compile_options(None), None)
    return imported, params, package


def test_training_step_gradients_in_parameter_order():
    """The step the GPU path runs, on the reference interpreter in float64:
    result 0 the loss, result k + 1 the gradient of the k-th parameter in
    argument order, each matching eager PyTorch."""
    require_weft_run()
    model = make_model().double()
    idx, targets = batch()
    imported = import_module(model, (idx, targets))
    assert "weft.cross_entropy" in imported.text and "weft.attention" in imported.text
    assert imported.text.count("= weft.embedding") == 1  # wte; wpe(arange) is the table
    params = parameter_indices(imported)
    text = training_text(imported, params)
    step = subprocess.run([tool("weft-opt"), "-", "--weft-autodiff=entry=forward optimizer=none"],
                          input=text, capture_output=True, text=True, check=True).stdout
    results = run_ir(step, imported.argument_values(idx, targets), entry="forward_step")
    loss = model(idx, targets)
    loss.backward()
    assert rel(results[0], loss.detach()) <= 1e-9
    named = dict(model.named_parameters())
    assert len(results) == 1 + len(params)
    for k, index in enumerate(params):
        name = imported.arguments[index].target
        assert rel(results[k + 1], named[name].grad) <= 1e-9, name


def test_autocast_loss_reads_bf16_logits():
    """Under bf16 autocast the loss is cross_entropy(convert(bf16 logits));
    the pipeline's weft-fold-loss-convert makes it read the bf16 logits and
    its gradient write bf16 dlogits (no f32 copy of [rows, vocab] either
    way). With some targets ignored (-100), every gradient's error against
    eager float64 is within 2x eager bf16 autocast's."""
    require_weft_run()
    model = make_model()
    idx, targets = batch()
    targets[0, ::5] = -100
    with torch.autocast("cpu", dtype=torch.bfloat16):
        imported = import_module(model, (idx, targets))
        eager = model(idx, targets)
    eager.backward()
    eager_grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    reference = copy.deepcopy(model).double()
    loss64 = reference(idx, targets)
    loss64.backward()
    params = parameter_indices(imported)
    text = training_text(imported, params)
    step = subprocess.run([tool("weft-opt"), "-", "--weft-fold-loss-convert",
                           "--weft-autodiff=entry=forward optimizer=none"],
                          input=text, capture_output=True, text=True, check=True).stdout
    logits = "x".join(str(n) for n in (idx.numel(), 512))
    assert f"-> tensor<{logits}xf32>" not in step and f"tensor<{logits}xbf16>, tensor<" in step
    assert "ignore_index = -100" in step
    results = run_ir(step, imported.argument_values(idx, targets), entry="forward_step")
    assert abs(results[0].item() - loss64.item()) <= 2 * abs(eager.item() - loss64.item()) + 1e-3
    named = dict(reference.named_parameters())
    for k, index in enumerate(params):
        name = imported.arguments[index].target
        ref = named[name].grad
        bound = 2 * rel(eager_grads[name].double(), ref) + 1e-3
        assert rel(results[k + 1].double(), ref) <= bound, name


def test_position_embedding_is_a_slice_of_the_table():
    class Positions(nn.Module):
        def __init__(self):
            super().__init__()
            self.wpe = nn.Embedding(16, 8)

        def forward(self, x):
            return x + self.wpe(torch.arange(2, 2 + x.size(0)))
    imported = import_module(Positions().double(), (torch.randn(5, 8, dtype=torch.float64),))
    assert "weft.embedding" not in imported.text and "weft.split" in imported.text


@pytest.mark.parametrize("call, message", [
    (lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1), "label smoothing"),
    (lambda x, t: F.cross_entropy(x, t, reduction="sum"), "reduction other than mean"),
    (lambda x, t: F.cross_entropy(x.view(2, 3, 4).transpose(1, 2), t.view(2, 3)),
     "one per row"),
])
def test_cross_entropy_refusals(call, message):
    class Loss(nn.Module):
        def forward(self, x, t):
            return call(x, t)
    with pytest.raises(UnsupportedOp, match=message):
        import_module(Loss(), (torch.randn(6, 4), torch.randint(0, 4, (6,))))


def test_layout_of_the_compiled_package():
    model = make_model().to(torch.bfloat16)
    imported, params, package = compiled_package(model, batch())
    step = rt.prepare_step(package, 90)
    layout = torch_gpu.StepLayout(step.buffers(), imported.arguments, params)
    assert [b.arg for b in layout.inputs] == list(range(len(imported.arguments)))
    assert layout.loss.shape == () and layout.loss.dtype == "bf16"
    assert [b.shape for b in layout.grads] == [imported.arguments[i].shape for i in params]
    assert all(b.role == "gradient" for b in layout.grads)
    assert step.memory_info()["planned_bytes"] > 0
    # A parameter list the step was not compiled for is refused by name.
    with pytest.raises(torch_gpu.LayoutError,
                       match=r"step buffer \w+ for the gradient of argument 1 \(p_wpe_weight\): "
                             r"expected \[64, 256\] bf16, the step has \[512, 256\] bf16"):
        torch_gpu.StepLayout(step.buffers(), imported.arguments, params[1:])
    # The runtime refuses an arena smaller than the plan, naming both sizes.
    planned = step.memory_info()["planned_bytes"]
    with pytest.raises(rt.WeftError, match=f"has 4096 bytes but the step's planned arena needs "
                                           f"{planned} bytes"):
        rt.prepare_step(package, 90, arena=1 << 20, arena_bytes=4096)
    step.free()


def test_tensor_checks_name_buffer_expected_and_got():
    buffer = rt.StepBuffer(3, "arg3", "tensor<4x8xbf16>", "parameter", 0, 64, 0, 1, 3, -1,
                           (4, 8), "bf16", False, -1)
    with pytest.raises(torch_gpu.LayoutError, match=r"step buffer arg3 \(argument 3, w\) expects "
                                                    r"\[4, 8\] bf16 on cuda, got \[8, 4\] bf16 on cpu"):
        torch_gpu.check_tensor(buffer, torch.zeros(8, 4, dtype=torch.bfloat16), "argument 3, w")
    with pytest.raises(torch_gpu.LayoutError, match=r"got \[4, 8\] f32 on cpu"):
        torch_gpu.check_tensor(buffer, torch.zeros(4, 8), "argument 3, w")


def test_parameters_are_bound_in_place():
    """The GPU path's package binds the parameters: their buffers are outside
    the arena (offset 0, bound), the batch is copied, and the arena is
    smaller than the package without binding by at least the parameters'
    bytes (they live through the whole step: no bytes of theirs are reused)."""
    model = make_model().to(torch.bfloat16)
    imported, params, package = compiled_package(model, batch())
    assert torch_gpu.compile_options(None)["bind_arguments"] == "params"
    plain, _key = torch_gpu.training_package(
        training_text(imported, params), {**torch_gpu.compile_options(None), "bind_arguments": "none"},
        None)
    steps = [rt.prepare_step(p, 90) for p in (package, plain)]
    layout = torch_gpu.StepLayout(steps[0].buffers(), imported.arguments, params)
    assert layout.bound == params
    assert layout.copied == [i for i in range(len(imported.arguments)) if i not in params]
    assert all(layout.inputs[i].offset == 0 for i in params)
    param_bytes = sum(layout.inputs[i].size for i in params)
    arenas = [s.memory_info()["planned_bytes"] for s in steps]
    assert arenas[1] - arenas[0] >= param_bytes, (arenas, param_bytes)
    assert not any(b.bound for b in steps[1].buffers())
    for step in steps:
        step.free()


def test_torch_budget_leaves_the_rest_to_the_arena():
    """TorchBudget: what torch holds beside the arena from the graph alone,
    the arena's share, and a budget that leaves nothing named item by item."""
    model = make_model().to(torch.bfloat16)
    imported = import_module(model, batch())
    params = parameter_indices(imported)
    param_bytes = sum(p.numel() * 2 for p in model.parameters())
    budget = torch_gpu.TorchBudget(1 << 30)
    held = budget.held(imported, params)
    # The gradients are arena views handed to .grad: counted in the arena.
    assert set(held) == {"parameters", "inputs", "optimizer", "calls", "allocator"}
    assert held["parameters"] == param_bytes
    assert held["optimizer"] == 3 * param_bytes
    # Each tensor's block as torch's caching allocator counts it: 512-byte
    # rounding; over 10 MiB a segment rounded to 2 MiB, whole when <= 1 MiB
    # would remain; 1-10 MiB blocks share 20 MiB segments with <= 1 MiB tails.
    assert torch_gpu.allocated_bytes(1) == 512
    assert torch_gpu.allocated_bytes(9 << 20) == 9 << 20
    assert torch_gpu.allocated_bytes(11 << 20) == 12 << 20  # 1 MiB left: not split
    assert torch_gpu.allocated_bytes(154533888) == 148 << 20  # nanoGPT's wte, 147.4 MiB
    assert torch_gpu.allocated_bytes((12 << 20) + 512) == (12 << 20) + 512  # split
    assert torch_gpu.allocated_bytes((13 << 20) + 512) == 14 << 20
    assert torch_gpu.segment_tails([9 << 20] * 4 + [100]) == 4 << 20
    rounding = sum(torch_gpu.allocated_bytes(p.numel() * 2) - p.numel() * 2
                   for p in model.parameters())
    assert held["allocator"] >= 4 * rounding + (2 << 20)  # params, 3 optimizer sets, arena
    arena, _held = budget.arena_budget(imported, params)
    assert arena == (1 << 30) - sum(held.values())
    assert torch_gpu.TorchBudget(1 << 30, 0).held(imported, params)["optimizer"] == 0
    options = torch_gpu.compile_options(arena)
    assert options["memory_budget"] == f"{arena}B" and options["remat"] == "budget"
    with pytest.raises(torch_gpu.BudgetError, match=r"memory_budget 4096 bytes \(0.0 MiB\): "
                                                    r"torch holds .* \(parameters .* MiB, inputs "
                                                    r".*, optimizer .*; the parameter gradients "
                                                    r"are arena views\), which "
                                                    r"leaves no bytes for the arena"):
        torch_gpu.TorchBudget(4096).arena_budget(imported, params)


def test_budget_below_the_smallest_arena_is_refused(tmp_path):
    """A memory_budget the remat solver cannot meet: strict raises
    BudgetError naming the budget, what torch holds and the smallest peak;
    otherwise the graph runs eagerly with that warning."""
    need_capi()
    model = make_model().to(torch.bfloat16)
    imported = import_module(model, batch())
    held = torch_gpu.TorchBudget(0).held(imported, parameter_indices(imported))
    budget = sum(held.values()) + (1 << 20)  # 1 MiB for the arena
    for strict in (True, False):
        torch._dynamo.reset()
        compiled = weft.compile(model, memory_budget=budget, strict=strict, compile_only=True,
                                package_cache=str(tmp_path))
        if strict:
            with pytest.raises(torch_gpu.BudgetError,
                               match=r"which leaves 1048576 bytes \(1.0 MiB\) for Weft's arena; "
                                     r"the remat solver cannot fit the step in it: [\s\S]*the smallest "
                                     r"peak Weft can reach is"):
                compiled(*batch())
        else:
            with pytest.warns(UserWarning, match="running this graph in eager PyTorch: "
                                                 "memory_budget"):
                compiled(*batch())
    torch._dynamo.reset()


def test_package_cache_hit_without_the_compiler(tmp_path, monkeypatch):
    need_capi()
    imported = import_module(make_model().to(torch.bfloat16), batch())
    text = training_text(imported, parameter_indices(imported))
    options = torch_gpu.compile_options(1 << 30)
    package, key = torch_gpu.training_package(text, options, str(tmp_path))
    assert (tmp_path / f"{key}.weftpkg").read_bytes() == package
    assert (tmp_path / f"{key}.mlir").read_text() == text
    assert options["memory_budget"] == f"{1 << 30}B"
    # Without the compiler: the cache answers; a miss names key and cause.
    capi_path = capi.library_path()
    monkeypatch.setattr(capi, "_lib", None)
    monkeypatch.setenv("WEFT_CAPI_LIB", "/nonexistent/libweft_c.so")
    again, same = torch_gpu.training_package(text, options, str(tmp_path))
    assert (again, same) == (package, key)
    with pytest.raises(torch_gpu.PackageUnavailable,
                       match=r"is not in the package cache .* compiler cannot run here: "
                             r"libweft_c.so not found at /nonexistent"):
        torch_gpu.training_package(text.replace(" {weft.param}", "", 1), options, str(tmp_path))
    assert torch_gpu.package_key(text, options) != torch_gpu.package_key(text, {})
    # The miss left its request; where the compiler runs, it becomes the package.
    (request,) = tmp_path.glob("*.request.json")
    monkeypatch.setenv("WEFT_CAPI_LIB", capi_path)
    assert torch_gpu.main(["compile", str(tmp_path), "--into", str(tmp_path / "more")]) == 0
    assert (tmp_path / "more" / request.name.replace(".request.json", ".weftpkg")).exists()


def test_key_ignores_node_names_and_comments():
    text = ("func.func @forward(%x: tensor<2xbf16> {weft.param},  // x\n"
            "    %y_1: tensor<2xbf16>) -> tensor<bf16> {\n"
            "  %add = weft.add %x, %y_1 : (tensor<2xbf16>, tensor<2xbf16>) -> tensor<2xbf16>\n")
    renamed = text.replace("%y_1", "%arg_b").replace("%add", "%add_7").replace("// x", "// w")
    assert torch_gpu.package_key(text, {}) == torch_gpu.package_key(renamed, {})
    swapped = text.replace("%x, %y_1 :", "%y_1, %x :")
    assert torch_gpu.package_key(text, {}) != torch_gpu.package_key(swapped, {})


def test_compile_only_fills_the_cache_and_runs_eagerly(tmp_path):
    need_capi()
    torch._dynamo.reset()
    model = make_model().to(torch.bfloat16)
    compiled = weft.compile(model, strict=True, compile_only=True, package_cache=str(tmp_path))
    idx, targets = batch()
    loss = compiled(idx, targets)
    assert torch.equal(loss, model(idx, targets))  # eager
    assert len(list(tmp_path.glob("*.weftpkg"))) == 1
    torch._dynamo.reset()


def test_compile_only_graph_without_a_loss_compiles_inference_and_vjp(tmp_path, recwarn):
    """A graph without a loss is no longer refused: its inference and VJP
    packages (weft.torch_gpu_infer; test_torch_gpu_infer_host.py)."""
    need_capi()
    torch._dynamo.reset()
    model = nn.Linear(8, 8).to(torch.bfloat16)
    compiled = weft.compile(model, compile_only=True, package_cache=str(tmp_path))
    compiled(torch.randn(2, 8, dtype=torch.bfloat16))
    assert not [w for w in recwarn if "weft:" in str(w.message)]
    assert len(list(tmp_path.glob("*.weftpkg"))) == 2
    torch._dynamo.reset()


@pytest.mark.parametrize("options, name", [({"compile_only": "yes"}, "compile_only"),
                                           ({"package_cache": 3}, "package_cache")])
def test_new_options_are_checked(options, name):
    with pytest.raises(ValueError, match=f"weft option '{name}'"):
        weft.compile(nn.Linear(2, 2), **options)


def test_step_options_layout_matches_the_library():
    library = rt._step_lib()
    assert library.weft_step_options_size() == ctypes.sizeof(rt._StepOptions)
    with pytest.raises(ValueError, match="step option stream must be a non-negative int"):
        rt.prepare_step(b"", 90, stream=-1)
    with pytest.raises(rt.WeftError, match="cannot read the package"):
        rt.prepare_step(b"WEFTPKG", 90)
    assert torch_gpu.stream_handle(type("S", (), {"cuda_stream": 0})()) == rt.CU_STREAM_LEGACY
    assert torch_gpu.stream_handle(type("S", (), {"cuda_stream": 77})()) == 77


def test_loss_output_reasons():
    class Two(nn.Module):
        def forward(self, x):
            return x.sum(), x
    program = torch.export.export(Two(), (torch.randn(3),), strict=False)
    assert torch_gpu.loss_output(program) == "it returns 2 values, not one scalar loss"
    assert GPT  # the GPU test's model is importable without a GPU


class ArenaViewStep:
    """A forward that returns views of a CPU "arena" as its gradients, as the
    CUDA path does (GpuTrainingStep._run_in_arena with an owner)."""

    def __init__(self, shapes):
        self.arena = torch.arange(1, 1 + sum(torch.Size(s).numel() for s in shapes),
                                  dtype=torch.float32)
        self.views, start = [], 0
        for shape in shapes:
            count = torch.Size(shape).numel()
            self.views.append(self.arena[start:start + count].view(shape))
            start += count
        self.tensor_params = list(range(len(shapes)))
        self.step = self

    def run(self, tensors, owner=None):
        return self.arena.sum(), list(self.views)  # held here too, as _ArenaCalls does

    def release(self, owner):
        owner.grads = None


def test_backward_hands_the_arena_gradients_to_grad():
    """The .grad autograd keeps is the arena's gradient buffer scaled in place
    by grad_output, not a copy: TorchBudget counts the gradients once."""
    shapes = [(3, 4), (5,)]
    compiled = ArenaViewStep(shapes)
    params = [torch.zeros(s, requires_grad=True) for s in shapes]
    want = [v.clone() * 2 for v in compiled.views]
    loss = torch_gpu.GpuStepFunction.apply(compiled, *params)
    (2.0 * loss).backward()
    base = compiled.arena.untyped_storage().data_ptr()
    for p, w in zip(params, want):
        assert p.grad.untyped_storage().data_ptr() == base
        assert torch.equal(p.grad, w)


def test_a_grad_left_in_the_arena_is_copied_before_the_next_run():
    """A parameter whose .grad is still an arena view when the next run
    starts (no zero_grad: gradient accumulation) keeps its values in a copy."""
    arena = torch.arange(8, dtype=torch.float32)
    step = object.__new__(torch_gpu.GpuTrainingStep)
    step.params, step.loaded = [0, 1], {(0, 0): (None, arena)}
    inside, outside = torch.zeros(4, requires_grad=True), torch.zeros(2, requires_grad=True)
    inside.grad = arena[4:8]
    outside.grad = torch.ones(2)
    kept = outside.grad
    step._own_param_grads([inside, outside, torch.zeros(3)])
    assert inside.grad.untyped_storage().data_ptr() != arena.untyped_storage().data_ptr()
    assert torch.equal(inside.grad, torch.tensor([4.0, 5.0, 6.0, 7.0]))
    assert outside.grad is kept


class SimulatedStep:
    """A stand-in for rt.Step over host memory: the layout the GPU path
    binds (arguments, loss as result 0, gradients as results 1..), buffers
    one after another in a CPU arena, device copies as memmoves, and a run
    that is the training step on weft-run."""

    def __init__(self, imported, params, step_text, bind_params=False):
        self.text, self.calls, self.layout, offset = step_text, [], [], 0
        self.pointers = {}  # bound buffer -> the caller's address

        def add(name, role, arg, result, shape, dtype, bound=False):
            nonlocal offset
            size = max(1, torch.Size(shape).numel()) * torch.tensor([], dtype=torch_gpu.TORCH_DTYPES[dtype]).element_size()
            self.layout.append(rt.StepBuffer(len(self.layout), name, "", role,
                                             0 if bound else offset, size, 0, 0, arg, result,
                                             tuple(shape), dtype, False, -1, bound))
            offset += 0 if bound else size
        for i, a in enumerate(imported.arguments):
            add(f"arg{i}", "parameter" if i in params else "input", i, -1, a.shape, a.dtype,
                bind_params and i in params)
        add("loss", "output", -1, 0, (), "f64")
        for k, i in enumerate(params):
            add(f"grad{k}", "gradient", -1, k + 1, imported.arguments[i].shape,
                imported.arguments[i].dtype)
        self.arena = torch.zeros(offset, dtype=torch.uint8)

    def buffers(self):
        return self.layout

    def _view(self, b):
        flat = self.arena[b.offset:b.offset + b.size].view(torch_gpu.TORCH_DTYPES[b.dtype])
        return flat.view(b.shape)

    def bind_device(self, index, pointer, nbytes, dtype):
        buffer = self.layout[index]
        assert buffer.bound and nbytes == buffer.size and dtype == buffer.dtype
        self.calls.append(("bind", index))
        self.pointers[index] = pointer

    def copy_in_device(self, index, source, nbytes):
        assert nbytes == self.layout[index].size and not self.layout[index].bound
        self.calls.append(("in", index))
        ctypes.memmove(self.arena.data_ptr() + self.layout[index].offset, source, nbytes)

    def copy_out_device(self, index, destination, nbytes):
        assert nbytes == self.layout[index].size
        self.calls.append(("out", index))
        ctypes.memmove(destination, self.arena.data_ptr() + self.layout[index].offset, nbytes)

    def _argument(self, b):
        """A bound argument is read where the caller's tensor lies."""
        if not b.bound:
            return self._view(b)
        value = torch.empty(b.shape, dtype=torch_gpu.TORCH_DTYPES[b.dtype])
        ctypes.memmove(value.data_ptr(), self.pointers[b.index], b.size)
        return value

    def enqueue(self):
        self.calls.append(("run",))
        args = [self._argument(b) for b in self.layout if b.arg >= 0]
        results = run_ir(self.text, [a.clone() for a in args], entry="forward_step")
        for b in self.layout:
            if b.result >= 0:
                self._view(b).copy_(results[b.result].reshape(b.shape))


class Functional(nn.Module):
    """model(idx, targets) with the parameters as inputs, as Dynamo lifts them."""

    def __init__(self, model):
        super().__init__()
        # In a list, not a submodule: torch.export would lift its parameters too.
        self.model, self.names = [model], [n for n, _ in model.named_parameters()]

    def forward(self, *tensors):
        params = dict(zip(self.names, tensors[:len(self.names)]))
        return torch.func.functional_call(self.model[0], params, tensors[len(self.names):])


@pytest.mark.parametrize("bind_params", [False, True])
def test_autograd_function_over_a_simulated_step(bind_params):
    """CompiledGpuGraph and GpuStepFunction end to end on CPU: the call's
    tensors bound by position (with bind_params the parameters read in place,
    the batch copied), the loss returned, and after backward every
    parameter's .grad equal to eager float64 (the step on weft-run)."""
    require_weft_run()
    model = make_model().double()
    params = [p.detach().clone().requires_grad_() for p in model.parameters()]
    idx, targets = batch()
    tensors = params + [idx, targets]
    imported = import_module(Functional(model), tuple(tensors))
    assert [a.kind for a in imported.arguments] == ["input"] * len(tensors)
    indices = list(range(len(params)))
    text = subprocess.run([tool("weft-opt"), "-", "--weft-autodiff=entry=forward optimizer=none"],
                          input=training_text(imported, indices), capture_output=True, text=True,
                          check=True).stdout
    simulated = SimulatedStep(imported, indices, text, bind_params)
    step = object.__new__(torch_gpu.GpuTrainingStep)
    step.imported, step.params, step.device_type = imported, indices, "cpu"
    step.layout = torch_gpu.StepLayout(simulated.buffers(), imported.arguments, indices)
    step.loaded, step.pending, step._fast, step.last, step._lifted_on = {}, [], None, None, {}
    step._step = lambda device: simulated
    compiled = object.__new__(torch_gpu.CompiledGpuGraph)
    compiled.step, compiled.tensor_params = step, indices
    loss = compiled(tensors)
    (2.0 * loss).backward()  # grad_output 2 scales every gradient
    first = ["bind"] * len(params) + ["in"] * 2 if bind_params else ["in"] * len(tensors)
    assert [c[0] for c in simulated.calls] == first + ["run"] + ["out"] * (1 + len(params))
    if bind_params:
        assert simulated.pointers == {i: p.data_ptr() for i, p in enumerate(params)}
    want = model(idx, targets)
    (2.0 * want).backward()
    assert rel(loss.detach(), want.detach()) <= 1e-9
    for (name, p), got in zip(model.named_parameters(), params):
        assert rel(got.grad, p.grad) <= 1e-9, name
    with torch.no_grad():
        assert rel(compiled(tensors), want.detach()) <= 1e-9
    with pytest.raises(torch_gpu.LayoutError, match=r"step buffer arg1 \(argument 1, .*\) "
                                                    r"expects \[64, 256\] f64 on cpu, got \[64, 255\]"):
        compiled(tensors[:1] + [torch.zeros(64, 255, dtype=torch.float64)] + tensors[2:])


class Padded(nn.Module):
    """Folded constants a GPU package cannot fill: float positions (non-splat)
    and a -100 label pad (an integer splat), as HF's LLaMA and its loss make."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, labels):
        pos = torch.arange(x.size(0), dtype=x.dtype)[:, None]
        shifted = F.pad(labels[1:], (0, 1), value=-100)
        return F.cross_entropy(self.proj(x) + pos, shifted)


def test_constants_a_package_cannot_fill_are_lifted():
    require_weft_run()
    torch.manual_seed(0)
    model = Padded().double()
    x, labels = torch.randn(5, 8, dtype=torch.float64), torch.randint(0, 8, (5,))
    plain = import_module(model, (x, labels))
    lifted = import_module(model, (x, labels), lift_constants=True)
    kinds = [a.kind for a in lifted.arguments]
    assert kinds.count("lifted") == 2 and kinds[-2:] == ["lifted", "lifted"]
    assert "lifted" not in [a.kind for a in plain.arguments]
    assert "arith.constant dense<[" not in lifted.text and "xi64>" in lifted.text
    values = lifted.argument_values(x, labels)
    assert len(values) == len(lifted.arguments)
    (got,) = run_reference(lifted, x, labels)
    assert abs(got.item() - model(x, labels).item()) <= 1e-12
