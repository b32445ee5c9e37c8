"""weft.torch_gpu_infer up to the first GPU call, on a machine without one:
the inference and VJP packages' layouts (compiled through the C API), the
backend's dispatch of non-training CUDA graphs (compile_only), and the
autograd Function end to end over simulated packages whose runs are the
inference step and the VJP step on weft-run (float64, against eager)."""
import ctypes
import os
import subprocess

import pytest
import torch
import torch.nn.functional as F

import weft
from harness import require_weft_run, run_ir, tool
from test_torch_gpu_host import Functional, need_capi, rel
from test_torch_infer_gpu import batch, make_logits_model
from weft import capi, torch_gpu, torch_gpu_infer
from weft import runtime as rt
from weft.torch_gpu_infer import package_options
from weft.torch_import import import_module, vjp_text

pytestmark = pytest.mark.skipif(
    not os.path.exists(rt.library_path()),
    reason=f"{rt.library_path()} is not built (ninja -C build weft_runtime_shared)")


def logits_import():
    idx, _ = batch("cpu")
    return import_module(make_logits_model().to(torch.bfloat16), (idx,), lift_constants=True)


def parameters(imported):
    return [i for i, a in enumerate(imported.arguments) if a.kind == "parameter"]


def test_inference_package_layout():
    need_capi()
    imported = logits_import()
    step = torch_gpu_infer.GpuInferenceStep(imported, None, None)
    layout = step.layout
    assert [b.arg for b in layout.inputs] == list(range(len(imported.arguments)))
    (logits,) = layout.outputs
    assert logits.shape == (2, 64, 512) and logits.dtype == "bf16" and logits.role == "output"
    assert step.arena_bytes > 0
    # The training step of the same forward is another package, under another key.
    assert step.options == package_options(None, True)
    assert "bind_arguments" not in step.options  # execute() copies every input
    assert torch_gpu.package_key(imported.text, step.options) != \
        torch_gpu.package_key(imported.text, torch_gpu.compile_options(None))
    # An output list the package was not compiled for is refused by name.
    wrong = [torch_gpu_infer._Value("output 0 (lm_head)", (2, 64, 256), "bf16")]
    with rt.prepare_step(step.package, 90) as prepared, \
            pytest.raises(torch_gpu.LayoutError, match=r"step buffer \w+ for output 0 \(lm_head\): "
                                                       r"expected \[2, 64, 256\] bf16, the step has "
                                                       r"\[2, 64, 512\] bf16"):
        torch_gpu_infer.InferenceLayout(prepared.buffers(), imported.arguments, wrong)


def test_vjp_package_layout():
    need_capi()
    imported = logits_import()
    params = parameters(imported)
    step = torch_gpu_infer.GpuVjpStep(imported, params, None, None)
    layout = step.layout
    n = len(imported.arguments)
    # The arguments, then the cotangent of the logits; the loss; the gradients.
    assert [b.arg for b in layout.inputs] == list(range(n + 1))
    assert layout.inputs[n].shape == (2, 64, 512) and layout.inputs[n].dtype == "bf16"
    assert layout.loss.shape == ()
    assert [b.shape for b in layout.grads] == [imported.arguments[i].shape for i in params]
    assert "dy0" in step.text and step.options == package_options(None, False)


def test_inference_step_refusals_through_the_c_api():
    need_capi()
    identity = ("func.func @forward(%x: tensor<2x4xbf16>) -> tensor<2x4xbf16> {\n"
                "  return %x : tensor<2x4xbf16>\n}\n")
    with capi.Context() as context:
        module = context.parse(identity)
        with pytest.raises(capi.CompileError, match="result 0 is argument 0 unchanged"):
            module.compile_inference_step("forward")
        with pytest.raises(capi.InvalidOptionError, match="optimizer must be none, got 'adamw'"):
            module.compile_inference_step("forward", optimizer="adamw")
        with pytest.raises(capi.InvalidOptionError, match="entry: no function @main"):
            module.compile_inference_step("main")


class SimulatedPackage:
    """A stand-in for rt.Step over host memory: argument buffers (arg i)
    then result buffers (result j), one after another in a CPU arena,
    device copies as memmoves, and a run that is @entry of `text` on
    weft-run."""

    def __init__(self, text, entry, arguments, results):
        self.text, self.entry, self.calls, self.layout, offset = text, entry, [], [], 0
        for arg, result, (shape, dtype) in [(i, -1, s) for i, s in enumerate(arguments)] + \
                [(-1, j, s) for j, s in enumerate(results)]:
            size = max(1, torch.Size(shape).numel()) * \
                torch.tensor([], dtype=torch_gpu.TORCH_DTYPES[dtype]).element_size()
            name = f"arg{arg}" if arg >= 0 else f"res{result}"
            self.layout.append(rt.StepBuffer(len(self.layout), name, "", "input" if arg >= 0
                                             else "output", offset, size, 0, 0, arg, result,
                                             tuple(shape), dtype, False, -1))
            offset += size
        self.arena = torch.zeros(offset, dtype=torch.uint8)

    def buffers(self):
        return self.layout

    def _view(self, b):
        return self.arena[b.offset:b.offset + b.size].view(torch_gpu.TORCH_DTYPES[b.dtype]) \
            .view(b.shape)

    def copy_in_device(self, index, source, nbytes):
        assert nbytes == self.layout[index].size
        self.calls.append("in")
        ctypes.memmove(self.arena.data_ptr() + self.layout[index].offset, source, nbytes)

    def copy_out_device(self, index, destination, nbytes):
        assert nbytes == self.layout[index].size
        self.calls.append("out")
        ctypes.memmove(destination, self.arena.data_ptr() + self.layout[index].offset, nbytes)

    def enqueue(self):
        self.calls.append("run")
        args = [self._view(b).clone() for b in self.layout if b.arg >= 0]
        results = run_ir(self.text, args, entry=self.entry)
        for b in self.layout:
            if b.result >= 0:
                self._view(b).copy_(results[b.result].reshape(b.shape))


def simulated(cls, simulation, layout, **fields):
    """A `cls` (a PackageRun) whose package is `simulation`, on "cpu"."""
    step = object.__new__(cls)
    step.__dict__.update(fields)
    step.device_type, step.layout = "cpu", layout
    step.loaded, step._lifted_on, step._arena_views, step.last = {}, {}, {}, None
    step._step = lambda device: simulation
    return step


def test_loss_outside_the_graph_over_simulated_packages():
    """CompiledGpuInference and GpuForwardFunction end to end on CPU in
    float64: the forward's logits from the inference package, a loss
    computed outside, and after backward every parameter's .grad (from the
    VJP package) equal to eager float64; under no_grad the forward alone."""
    require_weft_run()
    model = make_logits_model().double()
    params = [p.detach().clone().requires_grad_() for p in model.parameters()]
    idx, targets = batch("cpu")
    tensors = params + [idx]
    imported = import_module(Functional(model), tuple(tensors))
    outputs = torch_gpu_infer.output_values(imported)
    specs = [(a.shape, a.dtype) for a in imported.arguments]
    forward_sim = SimulatedPackage(imported.text, imported.entry, specs,
                                   [(v.shape, v.dtype) for v in outputs])
    forward = simulated(torch_gpu_infer.GpuInferenceStep, forward_sim,
                        torch_gpu_infer.InferenceLayout(forward_sim.buffers(), imported.arguments,
                                                        outputs),
                        imported=imported, outputs=outputs)
    needs = list(range(len(params)))
    text = subprocess.run([tool("weft-opt"), "-", "--weft-autodiff=entry=forward optimizer=none"],
                          input=vjp_text(imported, needs, entry="forward"), capture_output=True,
                          text=True, check=True).stdout
    cotangents = [torch_gpu_infer._Value(f"dy{j}", v.shape, v.dtype) for j, v in enumerate(outputs)]
    vjp_sim = SimulatedPackage(text, "forward_step", specs + [(v.shape, v.dtype) for v in outputs],
                               [((), "f64")] + [specs[i] for i in needs])
    vjp = simulated(torch_gpu_infer.GpuVjpStep, vjp_sim,
                    torch_gpu.StepLayout(vjp_sim.buffers(), imported.arguments + cotangents, needs),
                    imported=imported, params=needs, cotangents=cotangents)
    compiled = object.__new__(torch_gpu_infer.CompiledGpuInference)
    compiled.imported, compiled.inputs, compiled.forward = imported, list(range(len(tensors))), \
        forward
    compiled.steps, compiled.differentiable, compiled.dump = {tuple(needs): vjp}, True, None

    (logits,) = compiled(tensors)
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
    loss.backward()
    assert forward_sim.calls == ["in"] * len(tensors) + ["run", "out"]
    assert vjp_sim.calls == ["in"] * (len(tensors) + 1) + ["run"] + ["out"] * len(params)
    want_logits = model(idx)
    want = F.cross_entropy(want_logits.view(-1, want_logits.size(-1)), targets.view(-1))
    want.backward()
    assert rel(logits.detach(), want_logits.detach()) <= 1e-9
    for (name, p), got in zip(model.named_parameters(), params):
        assert rel(got.grad, p.grad) <= 1e-9, name
    with torch.no_grad():
        (again,) = compiled(tensors)
    assert rel(again, want_logits.detach()) <= 1e-9
    assert vjp_sim.calls.count("run") == 1  # no_grad: the forward alone
    with pytest.raises(torch_gpu.LayoutError, match=r"step buffer arg1 \(argument 1, .*\) "
                                                    r"expects \[64, 256\] f64 on cpu, got \[64, 255\]"):
        compiled(tensors[:1] + [torch.zeros(64, 255, dtype=torch.float64)] + tensors[2:])


def test_compile_only_compiles_inference_and_vjp_packages(tmp_path):
    """CPU tensors with compile_only: a graph returning logits compiles its
    inference package under no_grad, and with grad on its VJP package too
    (the same forward, so one inference package); both run eagerly."""
    need_capi()
    torch._dynamo.reset()
    model = make_logits_model().to(torch.bfloat16)
    compiled = weft.compile(model, strict=True, compile_only=True, package_cache=str(tmp_path))
    idx, _ = batch("cpu")
    with torch.no_grad():
        assert torch.equal(compiled(idx), model(idx))
    texts = [p.read_text() for p in tmp_path.glob("*.mlir")]
    assert len(texts) == 1 and "dy0" not in texts[0]
    compiled(idx).float().sum().backward()
    texts = [p.read_text() for p in tmp_path.glob("*.mlir")]
    assert len(list(tmp_path.glob("*.weftpkg"))) == 2
    assert sorted("dy0" in t for t in texts) == [False, True]
    assert all(p.grad is not None for p in model.parameters())  # eager's backward
    torch._dynamo.reset()

