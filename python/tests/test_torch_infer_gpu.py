"""The "weft" torch.compile backend on CUDA graphs that are not training
calls (weft.torch_gpu_infer): test_torch_backend_gpu.py's nanoGPT (2 blocks,
hidden 256, 4 heads, seq 64, batch 2, bf16) with a forward that returns its
logits.

  eval:     model.eval() under torch.no_grad(): the forward alone runs as
            Weft's inference package; the logits' error against eager
            float64 is at most twice eager bf16's own.
  outside:  the loss computed outside the compiled graph (F.cross_entropy of
            the compiled logits, in float32): the forward runs the inference
            package, loss.backward() the VJP package; the loss and every
            parameter's .grad against eager float64 by the rule of
            test_torch_backend_gpu.py (at most twice eager bf16's error, floor
            2^-6 for tensors bf16 computes exactly).

Each checks that the calls ran on Weft (weft.torch_gpu.RUNS) under
strict=True (a fallback is an error). Two modes, as test_torch_backend_gpu.py:
--compile-only (no GPU: the same calls on CPU tensors compile the inference
and VJP packages into $WEFT_PACKAGE_CACHE) and default (the CUDA run).
Runs without pytest too: python test_torch_infer_gpu.py [--compile-only].
"""
import copy
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import weft  # noqa: E402
from weft import torch_gpu  # noqa: E402
from test_torch_backend_gpu import (BATCH, FLOOR, GPT, SEQ, VOCAB, gpu_skip_reason,  # noqa: E402
                                    make_model, package_cache, rel)


class GPTLogits(GPT):
    """nanoGPT whose forward(idx) returns the logits [batch, seq, vocab]."""

    def forward(self, idx):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def make_logits_model():
    model = GPTLogits()
    model.load_state_dict(make_model().state_dict())
    return model


def batch(device):
    generator = torch.Generator().manual_seed(2)
    idx = torch.randint(0, VOCAB, (BATCH, SEQ), generator=generator)
    targets = torch.randint(0, VOCAB, (BATCH, SEQ), generator=generator)
    return idx.to(device), targets.to(device)


def outside_loss(logits, targets):
    """The loss the caller computes outside the compiled graph: in float32
    (float64 for the float64 reference)."""
    wide = logits if logits.dtype == torch.float64 else logits.float()
    return F.cross_entropy(wide.view(-1, wide.size(-1)), targets.view(-1))


def compile_packages():
    """--compile-only: the calls of both checks on CPU tensors, filling the
    package cache with the inference package and the VJP package."""
    cache = package_cache()
    if not cache:
        raise SystemExit("--compile-only needs WEFT_PACKAGE_CACHE (the directory to fill)")
    before = {f for f in os.listdir(cache) if f.endswith(".weftpkg")} \
        if os.path.isdir(cache) else set()
    torch._dynamo.reset()
    model = make_logits_model().to(torch.bfloat16)
    compiled = weft.compile(model, strict=True, compile_only=True, package_cache=cache)
    idx, targets = batch("cpu")
    model.eval()
    with torch.no_grad():
        compiled(idx)
    model.train()
    outside_loss(compiled(idx), targets).backward()
    added = sorted({f for f in os.listdir(cache) if f.endswith(".weftpkg")} - before)
    print(f"compile-only: {len(added)} new package(s) in {cache}: {added}")
    return added


def eval_logits(device):
    """eval: logits of the compiled model under no_grad against eager."""
    torch._dynamo.reset()
    model = make_logits_model().to(device=device, dtype=torch.bfloat16).eval()
    compiled = weft.compile(model, strict=True, package_cache=package_cache())
    idx, _ = batch(device)
    runs = torch_gpu.RUNS["steps"]
    with torch.no_grad():
        got = compiled(idx)
        got_again = compiled(idx)  # the second call reuses the loaded package
        want16 = model(idx)
        want64 = copy.deepcopy(model).double()(idx)
    torch.cuda.synchronize()
    assert torch_gpu.RUNS["steps"] - runs == 2, "the calls did not run on Weft's package"
    assert torch.equal(got, got_again), "two runs of the inference package differ"
    error, own = rel(got, want64), rel(want16, want64)
    print(f"eval logits: weft {error:.3g}, eager bf16 {own:.3g} (relative to float64)",
          flush=True)
    assert got.dtype == torch.bfloat16 and got.shape == want16.shape
    assert error <= 2 * own, f"logits: weft {error:.3g} vs eager bf16 {own:.3g}"
    return {"logits_error": error, "eager_bf16_error": own}


def outside_loss_grads(device):
    """outside: the compiled forward, the loss outside it, gradients through
    the VJP package, against eager bf16 and float64."""
    torch._dynamo.reset()
    model = make_logits_model().to(device=device, dtype=torch.bfloat16)
    compiled = weft.compile(model, strict=True, package_cache=package_cache())
    idx, targets = batch(device)
    runs = torch_gpu.RUNS["steps"]
    loss = outside_loss(compiled(idx), targets)
    loss.backward()
    torch.cuda.synchronize()
    assert torch_gpu.RUNS["steps"] - runs == 2, "forward and backward did not both run on Weft"
    references = {}
    for dtype in (torch.bfloat16, torch.float64):
        reference = copy.deepcopy(model).to(dtype)
        reference.zero_grad(set_to_none=True)
        ref_loss = outside_loss(reference(idx), targets)
        ref_loss.backward()
        references[dtype] = (ref_loss.detach(), {n: p.grad for n, p in reference.named_parameters()})
    loss16, grads16 = references[torch.bfloat16]
    loss64, grads64 = references[torch.float64]
    errors = {"loss": (rel(loss.detach(), loss64), rel(loss16, loss64))}
    for name, p in model.named_parameters():
        assert p.grad is not None, f"{name} has no .grad"
        errors[name] = (rel(p.grad, grads64[name]), rel(grads16[name], grads64[name]))
    failures = [f"{name}: weft {got:.3g} vs eager bf16 {own:.3g} (relative to float64)"
                for name, (got, own) in errors.items() if not got <= max(2 * own, FLOOR)]
    worst = max(errors.items(), key=lambda e: e[1][0])
    print(f"outside loss: weft {loss.item():.5f} eager bf16 {loss16.item():.5f} float64 "
          f"{loss64.item():.5f}; worst {worst[0]} weft {worst[1][0]:.3g} eager bf16 "
          f"{worst[1][1]:.3g}; {len(failures)} tensor(s) out of tolerance", flush=True)
    assert not failures, "\n".join(failures)
    return {"loss": loss.item(), "worst": worst[0], "errors": errors}


def run_all():
    device = torch.device("cuda")
    report = {"device": torch.cuda.get_device_name(device), "eval": eval_logits(device),
              "outside": outside_loss_grads(device)}
    out = os.environ.get("WEFT_GPU_REPORT")
    if out:
        with open(out.replace(".json", "_infer.json"), "w") as f:
            json.dump(report, f, indent=1)
    return report


try:
    import pytest
except ImportError:  # the script mode below needs no pytest
    pytest = None

if pytest is not None:
    def _gpu_or_compile(request):
        if request.config.getoption("--compile-only", default=False):
            return "compile"
        reason = gpu_skip_reason()
        if reason:
            pytest.skip(reason)
        return "gpu"

    def test_eval_forward_logits_match_eager(request):
        if _gpu_or_compile(request) == "compile":
            compile_packages()
            return
        eval_logits(torch.device("cuda"))

    def test_loss_outside_the_graph_gradients_match_eager(request):
        if _gpu_or_compile(request) == "compile":
            return  # compile_packages (above) compiled both checks' packages
        outside_loss_grads(torch.device("cuda"))


if __name__ == "__main__":
    if "--compile-only" in sys.argv[1:]:
        compile_packages()
    else:
        reason = gpu_skip_reason()
        if reason:
            print("SKIPPED:", reason)
            sys.exit(0)
        print(json.dumps(run_all(), indent=1, default=str))
        print("PASSED")
