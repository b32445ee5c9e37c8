"""The "weft" torch.compile backend on CUDA tensors (weft.torch_gpu): a
nanoGPT-style model (2 blocks, hidden 256, 4 heads, seq 64, batch 2, bf16;
hidden 256 rather than 128 because Weft's GPU attention kernels take head_dim
64 or 128, and 4 heads of 128 would be 32)
whose forward returns its cross-entropy loss runs as Weft's compiled
training step on the GPU runtime, on torch's stream and in an arena from
torch's allocator. Three torch.optim.AdamW steps; at each, the loss and
every parameter's .grad are compared with eager PyTorch at the same
parameters, by the rule of ARCHITECTURE.md: the error against float32 eager
is at most twice eager bf16's own (with a floor for tensors bf16 computes
exactly), NaN fails. torch.cuda.max_memory_allocated is reported for both.
The parameters must be read in place (bound: no arena copy, their
data_ptr given to the runtime), and a second run with memory_budget (what
torch holds beside the arena plus BUDGET_SHARE of the unbudgeted arena)
must keep torch.cuda.max_memory_allocated under the budget.

Two modes (bench/torch_backend_gpu_check.sh runs them):
  --compile-only (a machine without a GPU): the same model on CPU tensors
      with the backend's compile_only option: each graph's CUDA training
      package is compiled through the C API into $WEFT_PACKAGE_CACHE.
  default (a GPU machine): the CUDA run, reading packages from
      $WEFT_PACKAGE_CACHE when set (the compiler need not be there);
      skipped when torch.cuda.is_available() is false or the runtime
      library is missing.
Runs without pytest too: python test_torch_backend_gpu.py [--compile-only].
"""
import copy
import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import weft  # noqa: E402
from weft import runtime as rt  # noqa: E402
from weft import torch_gpu  # noqa: E402

VOCAB, HIDDEN, HEADS, SEQ, BATCH, LAYERS = 512, 256, 4, 64, 2, 2
STEPS = 3
# The budgeted run's arena share: this fraction of the arena without a
# budget. This model's arena (7.6 MiB) shrinks by at most 1.7 % (the solver's
# smallest peak is 7.51 MiB: its activations are small beside the cuBLASLt
# workspaces and the logits), so the budget sits just above that.
BUDGET_SHARE = 0.99
FLOOR = 2.0**-6  # bf16 has 8 significant bits: errors below this are its rounding


class Block(nn.Module):
    """nanoGPT's Block: LayerNorm, causal SDPA, an MLP with tanh GELU written out."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def attention(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    def mlp(self, x):
        h = self.c_fc(x)
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        return self.mlp_proj(h)

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT: token and position embeddings, blocks, final LayerNorm, LM
    head; forward(idx, targets) returns the mean cross-entropy loss."""

    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, HIDDEN), nn.Embedding(SEQ, HIDDEN)
        self.blocks = nn.ModuleList(Block(HIDDEN, HEADS) for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(HIDDEN)
        self.lm_head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, idx, targets):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def make_model():
    torch.manual_seed(0)
    model = GPT()
    with torch.no_grad():  # nanoGPT's init: N(0, 0.02), biases zero
        for name, p in model.named_parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.02)
            elif name.endswith("bias"):
                p.zero_()
    return model


def batches(device):
    generator = torch.Generator().manual_seed(1)
    for _ in range(STEPS):
        idx = torch.randint(0, VOCAB, (BATCH, SEQ), generator=generator)
        targets = torch.randint(0, VOCAB, (BATCH, SEQ), generator=generator)
        # F.cross_entropy's default ignore_index: about one target in eight
        # is ignored (the mean is over the others), as padded labels are.
        ignored = torch.rand((BATCH, SEQ), generator=generator) < 0.125
        targets[ignored] = -100
        yield idx.to(device), targets.to(device)


def rel(a, b):
    """max |a - b| / max |b| in float64; NaN or inf anywhere gives inf."""
    a, b = a.double(), b.double()
    if not torch.isfinite(a).all():
        return math.inf
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def package_cache():
    return os.environ.get("WEFT_PACKAGE_CACHE")


def compile_packages():
    """--compile-only: the CPU run that fills the package cache."""
    cache = package_cache()
    if not cache:
        raise SystemExit("--compile-only needs WEFT_PACKAGE_CACHE (the directory to fill)")
    torch._dynamo.reset()
    model = make_model().to(torch.bfloat16)
    compiled = weft.compile(model, strict=True, compile_only=True, package_cache=cache)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for idx, targets in batches("cpu"):
        optimizer.zero_grad()
        compiled(idx, targets).backward()
        optimizer.step()
    torch._dynamo.reset()
    model = make_model().to(torch.bfloat16)
    budget = memory_budget(model)
    compiled = weft.compile(model, memory_budget=budget, strict=True, compile_only=True,
                            package_cache=cache)
    for idx, targets in batches("cpu"):
        compiled(idx, targets).backward()
    packages = sorted(f for f in os.listdir(cache) if f.endswith(".weftpkg"))
    print(f"compile-only: {len(packages)} package(s) in {cache}: {packages}")
    assert packages, f"no package was compiled into {cache}"
    return packages


def memory_budget(model):
    """The budgeted run's memory_budget, the same here and on the GPU (the
    package key depends on it): what torch holds beside the arena
    (TorchBudget) plus BUDGET_SHARE of the arena the step plans without a
    budget, which the C API compiles here (or the cache holds)."""
    idx, targets = next(iter(batches("cpu")))
    from weft.torch_import import import_module, training_text
    imported = import_module(model, (idx, targets))
    params = [i for i, a in enumerate(imported.arguments) if a.kind == "parameter"]
    package, _key = torch_gpu.training_package(training_text(imported, params),
                                               torch_gpu.compile_options(None), package_cache())
    step = rt.prepare_step(package, 90)
    arena = step.memory_info()["planned_bytes"]
    step.free()
    held = torch_gpu.TorchBudget(0).held(imported, params)
    return sum(held.values()) + int(BUDGET_SHARE * arena)


def gpu_skip_reason():
    if not torch.cuda.is_available():
        return "torch.cuda.is_available() is false: the GPU path needs a CUDA device"
    if not os.path.exists(rt.library_path()):
        return (f"the Weft runtime library is missing at {rt.library_path()} "
                "(set WEFT_RUNTIME_LIB or build weft_runtime_shared)")
    return None


def reference_grads(model, dtype, idx, targets):
    """Eager loss and .grad of a copy of `model` in `dtype`."""
    reference = copy.deepcopy(model).to(dtype)
    with torch.autocast("cuda", enabled=False):
        loss = reference(idx, targets)
    loss.backward()
    return loss.detach(), {n: p.grad for n, p in reference.named_parameters()}


def train_and_compare():
    """The CUDA run: three AdamW steps of the compiled model, each compared
    with eager bf16 and float32 at the same parameters. Returns the report."""
    device = torch.device("cuda")
    torch._dynamo.reset()
    model = make_model().to(device=device, dtype=torch.bfloat16)
    compiled = weft.compile(model, strict=True, package_cache=package_cache())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    runs_before = torch_gpu.RUNS["steps"]
    report = {"steps": [], "device": torch.cuda.get_device_name(device)}
    for step, (idx, targets) in enumerate(batches(device)):
        loss32, grads32 = reference_grads(model, torch.float32, idx, targets)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        loss16, grads16 = reference_grads(model, torch.bfloat16, idx, targets)
        torch.cuda.synchronize()
        eager_peak = torch.cuda.max_memory_allocated(device) - base

        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        loss = compiled(idx, targets)
        loss.backward()
        torch.cuda.synchronize()
        weft_peak = torch.cuda.max_memory_allocated(device) - base

        errors = {"loss": (rel(loss.detach(), loss32), rel(loss16, loss32))}
        for name, p in model.named_parameters():
            assert p.grad is not None, f"step {step}: {name} has no .grad"
            errors[name] = (rel(p.grad, grads32[name]), rel(grads16[name], grads32[name]))
        failures = [f"{name}: weft {got:.3g} vs eager bf16 {own:.3g} (relative to float32)"
                    for name, (got, own) in errors.items() if not got <= max(2 * own, FLOOR)]
        report["steps"].append({"loss": loss.item(), "eager_bf16_loss": loss16.item(),
                                "eager_f32_loss": loss32.item(),
                                "weft_peak_bytes": weft_peak, "eager_bf16_peak_bytes": eager_peak,
                                "worst": max(errors.items(), key=lambda e: e[1][0])[0],
                                "failures": failures})
        print(f"step {step}: loss weft {loss.item():.5f} eager bf16 {loss16.item():.5f} "
              f"f32 {loss32.item():.5f}; max_memory_allocated over the step: weft "
              f"{weft_peak / 2**20:.2f} MiB, eager bf16 {eager_peak / 2**20:.2f} MiB; "
              f"{len(failures)} tensor(s) out of tolerance", flush=True)
        assert not failures, f"step {step}:\n" + "\n".join(failures)
        optimizer.step()
    # Bound in place: every parameter's storage is what the runtime reads,
    # and no step holds an arena copy of a parameter.
    pointers = torch_gpu.RUNS["bound_pointers"]
    missing = [n for n, p in model.named_parameters() if p.data_ptr() not in pointers]
    assert not missing, f"parameters not bound in place (copied into the arena?): {missing}"
    for live in list(torch_gpu._LIVE):
        if live.loaded:
            assert all(live.layout.inputs[i].bound for i in live.params), (
                "a parameter's buffer is in the arena")
    report["weft_step_runs"] = torch_gpu.RUNS["steps"] - runs_before
    report["weft_arena_bytes"] = torch_gpu.RUNS["arena_bytes"]
    print(f"weft's arena (a torch uint8 tensor): {report['weft_arena_bytes'] / 2**20:.2f} MiB; "
          f"torch.cuda.max_memory_allocated: {torch.cuda.max_memory_allocated(device) / 2**20:.2f} "
          "MiB since the last reset", flush=True)
    assert report["weft_step_runs"] == STEPS, (
        f"{report['weft_step_runs']} of {STEPS} calls ran on Weft's step (the rest ran eagerly)")
    out = os.environ.get("WEFT_GPU_REPORT")
    if out:
        with open(out, "w") as f:
            json.dump(report, f, indent=1)
    return report


def train_with_budget():
    """Three AdamW steps of a fresh model compiled with memory_budget:
    torch.cuda.max_memory_allocated over them (from before the model was
    made) stays under the budget."""
    device = torch.device("cuda")
    torch._dynamo.reset()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    model = make_model().to(dtype=torch.bfloat16)
    budget = memory_budget(model)
    model = model.to(device)
    compiled = weft.compile(model, memory_budget=budget, strict=True,
                            package_cache=package_cache())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for idx, targets in batches(device):
        optimizer.zero_grad(set_to_none=True)
        compiled(idx, targets).backward()
        optimizer.step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated(device) - before
    print(f"memory_budget {budget / 2**20:.2f} MiB: torch.cuda.max_memory_allocated "
          f"{peak / 2**20:.2f} MiB over {STEPS} AdamW steps; arena "
          f"{torch_gpu.RUNS['arena_bytes'] / 2**20:.2f} MiB", flush=True)
    assert peak <= budget, f"max_memory_allocated {peak} bytes exceeds the budget {budget}"
    return {"budget_bytes": budget, "max_memory_allocated": peak,
            "arena_bytes": torch_gpu.RUNS["arena_bytes"]}


try:
    import pytest
except ImportError:  # the script mode below needs no pytest
    pytest = None

if pytest is not None:
    def test_nanogpt_training_on_weft_matches_eager(request):
        if request.config.getoption("--compile-only", default=False):
            compile_packages()
            return
        reason = gpu_skip_reason()
        if reason:
            pytest.skip(reason)
        train_and_compare()

    def test_memory_budget_bounds_torch_peak(request):
        if request.config.getoption("--compile-only", default=False):
            return  # compile_packages() compiled the budgeted package too
        reason = gpu_skip_reason()
        if reason:
            pytest.skip(reason)
        train_with_budget()


if __name__ == "__main__":
    if "--compile-only" in sys.argv[1:]:
        compile_packages()
    else:
        reason = gpu_skip_reason()
        if reason:
            print("SKIPPED:", reason)
            sys.exit(0)
        report = train_and_compare()
        report["budget"] = train_with_budget()
        print(json.dumps(report, indent=1))
        print("PASSED")
