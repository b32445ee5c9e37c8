#!/usr/bin/env python3
"""Megatron-core's GPT blocks with tensor parallelism (tp = world size), with
and without sequence parallelism, on the anchor model of
../shared/anchors/tp_sp_anchors.py: 4 blocks, hidden 4096, 32 heads, ffn
4 x hidden, tanh GELU, LayerNorm, biases on every linear, causal attention,
bf16, batch 1, seq 8192, loss mean(x^2) over the blocks' output. Forward +
backward per step (no optimizer), timed and reported as the anchor does:
median of 10 CUDA-event-timed steps after 3 warm-ups, and per-GPU peak
torch.cuda.max_memory_allocated, both the maximum over the ranks.

The blocks are a megatron.core TransformerBlock built from
get_gpt_layer_local_spec() (no Transformer Engine) with one change: its norm
is TorchLayerNorm below, since the spec's fallback without apex refuses
sequence parallelism. Input is sequence-first [s, b, h]; with sequence
parallelism each rank holds its s/T rows of the same full input, the loss is
sum(x^2) / (s*b*h) over those rows, so every gradient is that of the full
mean(x^2), and the step sums the sequence-parallel parameters' gradients
over the ranks as Megatron's finalize_model_grads does.

  torchrun --nproc-per-node T bench/megatron_tp_sp.py --out FILE.json \\
      [--seq 8192] [--layers 4] [--quick]
  # no GPU: tiny fp32 blocks on gloo, checked against plain PyTorch
  torchrun --nproc-per-node 2 bench/megatron_tp_sp.py --cpu-smoke
"""
import argparse
import contextlib
import gc
import json
import os
import traceback

os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "1")  # Megatron's TP linears rely on it

import torch
import torch.distributed as dist
import torch.nn.functional as F
from megatron.core import package_info, parallel_state, tensor_parallel
from megatron.core.fusions import fused_softmax
from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
from megatron.core.transformer.transformer_block import TransformerBlock
from megatron.core.transformer.transformer_config import TransformerConfig

SMOKE_DIMS = {"seq": 32, "layers": 2, "hidden": 64, "heads": 4}


class TorchLayerNorm(torch.nn.LayerNorm):
    """torch.nn.LayerNorm with Megatron's norm signature. The local spec's
    norm without apex (WrappedTorchNorm) asserts that sequence parallelism is
    off; like apex's FusedLayerNorm this marks its parameters
    `sequence_parallel`, whose per-rank partial gradients are then summed."""

    def __init__(self, config, hidden_size, eps=1e-5, **_):
        super().__init__(hidden_size, eps=eps)
        for prm in self.parameters():
            prm.sequence_parallel = config.sequence_parallel


def parse_args():
    """Command line; --cpu-smoke swaps in the tiny dimensions."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="JSON file written by rank 0")
    p.add_argument("--seq", type=int, default=8192)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--quick", action="store_true", help="1 warm-up and 3 timed steps")
    p.add_argument("--cpu-smoke", action="store_true",
                   help="gloo, CPU, fp32, tiny blocks; checks against plain PyTorch")
    a = p.parse_args()
    if a.cpu_smoke:
        vars(a).update(SMOKE_DIMS)
    return a


def fused_softmax_available():
    """Whether Megatron's fused causal-softmax CUDA extensions import."""
    try:
        import scaled_masked_softmax_cuda  # noqa: F401
        import scaled_upper_triang_masked_softmax_cuda  # noqa: F401
    except ImportError:
        return False
    return True


def transformer_config(a, world, sp):
    """The anchor model as a TransformerConfig. The fusions are Megatron-LM's
    training defaults: bias+GELU (the tanh GELU, as the anchor) and
    bias+dropout+add compiled by torch.compile; the fused softmax only where
    its extension is installed. Dropout is off."""
    return TransformerConfig(
        num_layers=a.layers, hidden_size=a.hidden, num_attention_heads=a.heads,
        ffn_hidden_size=4 * a.hidden, tensor_model_parallel_size=world,
        sequence_parallel=sp, add_bias_linear=True, normalization="LayerNorm",
        activation_func=F.gelu, bias_activation_fusion=True, bias_dropout_fusion=True,
        masked_softmax_fusion=fused_softmax_available(),
        hidden_dropout=0.0, attention_dropout=0.0,
        bf16=not a.cpu_smoke, params_dtype=torch.float32 if a.cpu_smoke else torch.bfloat16,
        use_cpu_initialization=a.cpu_smoke)


def build_block(cfg, device, dtype):
    """TransformerBlock of the local layer spec, norm swapped, no final norm
    (the anchor has none)."""
    spec = get_gpt_layer_local_spec()
    spec.submodules.input_layernorm = TorchLayerNorm
    spec.submodules.pre_mlp_layernorm = TorchLayerNorm
    block = TransformerBlock(cfg, spec, post_layer_norm=False)
    return block.to(device=device, dtype=dtype).train()


def attention_path(block, seq):
    """What the built block's attention runs, read off its first layer."""
    attn = block.layers[0].self_attention
    core = attn.core_attention
    smx = core.scale_mask_softmax
    try:
        fused = smx.is_kernel_available(None, 1, core.num_attention_heads_per_partition, seq, seq)
    except ImportError:
        fused = False
    softmax = ("fused ScaledUpperTriangMaskedSoftmax (scaled_upper_triang_masked_softmax_cuda)"
               if fused else "torch.nn.Softmax over the masked scores"
               + (" in fp32" if smx.softmax_in_fp32 else ""))
    cls = type(core)
    return {"self_attention": type(attn).__name__,
            "core_attention": f"{cls.__module__}.{cls.__name__}",
            "scores": "torch.baddbmm into [b*heads/T, s, s], then torch.bmm with V",
            "softmax_module": type(smx).__name__,
            "masked_softmax_fusion": smx.scaled_masked_softmax_fusion,
            "softmax": softmax,
            "norm": type(block.layers[0].input_layernorm).__name__,
            "linears": [type(attn.linear_qkv).__name__, type(attn.linear_proj).__name__]}


def local_input(a, world, rank, sp, device, dtype):
    """The same full [s, 1, h] input on every rank; with sequence parallelism
    this rank's s/T rows (a copy, so Megatron does not see a view)."""
    g = torch.Generator(device=device).manual_seed(1)
    x = torch.randn(a.seq, 1, a.hidden, device=device, dtype=dtype, generator=g)
    return x.chunk(world, dim=0)[rank].clone() if sp else x


def sum_sequence_parallel_grads(block):
    """Sum the gradients of the `sequence_parallel` parameters (norms,
    row-parallel biases) over the TP group in one flat all-reduce."""
    grads = [p.grad for p in block.parameters()
             if getattr(p, "sequence_parallel", False) and p.grad is not None]
    flat = torch._utils._flatten_dense_tensors(grads)
    dist.all_reduce(flat, group=parallel_state.get_tensor_model_parallel_group())
    for g, s in zip(grads, torch._utils._unflatten_dense_tensors(flat, grads)):
        g.copy_(s)


def forward_backward(block, x, full_numel, sp):
    """One step: forward, loss sum(out^2) / full_numel, backward; returns the
    (local) output."""
    out = block(x, attention_mask=None)
    (out.float().pow(2).sum() / full_numel).backward()
    if sp:
        sum_sequence_parallel_grads(block)
    return out


def time_steps(fn, warmup, iters):
    """The anchor's timing: warm-ups, a barrier, then the median of CUDA-event
    times of single steps."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def fresh_memory_buffer():
    """A new Megatron global memory buffer (it holds the attention scores),
    so one run's buffer is not counted in the next run's memory."""
    parallel_state.destroy_global_memory_buffer()
    parallel_state._set_global_memory_buffer()


def measure(a, world, rank, sp):
    """Build, time and measure one variant; ms and peak GiB are the maxima
    over the ranks."""
    torch.manual_seed(0)
    fresh_memory_buffer()
    block = build_block(transformer_config(a, world, sp), "cuda", torch.bfloat16)
    x = local_input(a, world, rank, sp, "cuda", torch.bfloat16)
    full_numel = a.seq * a.hidden

    def step():
        forward_backward(block, x, full_numel, sp)
        for prm in block.parameters():
            prm.grad = None

    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    warmup, iters = (1, 3) if a.quick else (3, 10)
    ms = time_steps(step, warmup, iters)
    peak = torch.cuda.max_memory_allocated()
    t = torch.tensor([ms, peak], device="cuda", dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return {"ms": t[0].item(), "peak_gib": t[1].item() / 2**30}, attention_path(block, a.seq)


def cpu_shims():
    """For the gloo smoke run only: Megatron allocates on
    torch.cuda.current_device(), forks the CUDA RNG around dropout and builds
    the causal mask on "cuda"; send all three to the CPU."""
    torch.cuda.current_device = lambda: "cpu"
    tensor_parallel.random.CudaRNGStatesTracker.fork = (
        lambda self, name=None: contextlib.nullcontext())
    fused_softmax.get_default_causal_mask = (
        lambda sq: torch.triu(torch.ones(sq, sq, dtype=torch.bool), diagonal=1))


def gather_full(tensor, prm, world):
    """A tensor-parallel parameter's (or its gradient's) full value."""
    if world == 1 or not getattr(prm, "tensor_model_parallel", False):
        return tensor.detach()
    parts = [torch.empty_like(tensor) for _ in range(world)]
    dist.all_gather(parts, tensor.detach().contiguous(),
                    group=parallel_state.get_tensor_model_parallel_group())
    return torch.cat(parts, dim=prm.partition_dim)


def reference_blocks(p, x, layers, heads):
    """The anchor's blocks in plain PyTorch on Megatron's full parameters
    (linear_qkv's rows are [head, q|k|v, head_dim])."""
    s, b, h = x.shape
    for i in range(layers):
        w = {k.split(".", 2)[2]: v for k, v in p.items() if k.startswith(f"layers.{i}.")}
        y = F.layer_norm(x, (h,), w["input_layernorm.weight"], w["input_layernorm.bias"])
        qkv = F.linear(y, w["self_attention.linear_qkv.weight"], w["self_attention.linear_qkv.bias"])
        q, k, v = qkv.view(s, b, heads, 3, h // heads).permute(3, 1, 2, 0, 4)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        o = o.permute(2, 0, 1, 3).reshape(s, b, h)
        x = x + F.linear(o, w["self_attention.linear_proj.weight"], w["self_attention.linear_proj.bias"])
        y = F.layer_norm(x, (h,), w["pre_mlp_layernorm.weight"], w["pre_mlp_layernorm.bias"])
        y = F.gelu(F.linear(y, w["mlp.linear_fc1.weight"], w["mlp.linear_fc1.bias"]), approximate="tanh")
        x = x + F.linear(y, w["mlp.linear_fc2.weight"], w["mlp.linear_fc2.bias"])
    return x


def smoke_check(a, world, rank, sp):
    """One Megatron step on the CPU against the reference: the largest error of
    the output and of every parameter gradient, relative to its largest value."""
    torch.manual_seed(0)
    block = build_block(transformer_config(a, world, sp), "cpu", torch.float32)
    out = forward_backward(block, local_input(a, world, rank, sp, "cpu", torch.float32),
                           a.seq * a.hidden, sp)
    if sp:
        parts = [torch.empty_like(out) for _ in range(world)]
        dist.all_gather(parts, out.detach().contiguous())
        out = torch.cat(parts)
    named = dict(block.named_parameters())
    full = {n: gather_full(prm, prm, world).requires_grad_() for n, prm in named.items()}
    ref = reference_blocks(full, local_input(a, 1, 0, False, "cpu", torch.float32), a.layers, a.heads)
    ref.pow(2).mean().backward()
    errs = {"output": ((out.detach() - ref).abs().max() / ref.abs().max()).item()}
    for n, prm in named.items():
        g = gather_full(prm.grad, prm, world)
        errs[n] = ((g - full[n].grad).abs().max() / full[n].grad.abs().max()).item()
    return errs, attention_path(block, a.seq)


def run_variant(a, world, rank, sp):
    """A variant's result, or its error as the anchor records one."""
    try:
        if a.cpu_smoke:
            errs, path = smoke_check(a, world, rank, sp)
            worst = max(errs, key=errs.get)
            return {"max_rel_err": errs[worst], "worst": worst, "ok": errs[worst] < 1e-4}, path
        return measure(a, world, rank, sp)
    except Exception as e:
        return {"error": traceback.format_exc()[-600:] if rank == 0 else repr(e)}, None


def init(a):
    """Process group, device and Megatron's parallel state (tp = world)."""
    if a.cpu_smoke:
        cpu_shims()
        dist.init_process_group("gloo")
    else:
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        dist.init_process_group("nccl")
    world = dist.get_world_size()
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=world,
                                             create_gloo_process_groups=False)
    if not a.cpu_smoke:
        tensor_parallel.model_parallel_cuda_manual_seed(1234)
    return dist.get_rank(), world


def main():
    """Measure (or, with --cpu-smoke, check) TP and TP+SP; rank 0 prints and
    writes the JSON. A failed smoke check exits 1."""
    a = parse_args()
    rank, world = init(a)
    results = {"framework": "megatron-core", "megatron_core": package_info.__version__,
               "device": "cpu (gloo smoke)" if a.cpu_smoke else torch.cuda.get_device_name(),
               "torch": torch.__version__, "world": world, "seq": a.seq, "layers": a.layers,
               "hidden": a.hidden, "heads": a.heads, "layer_spec": "get_gpt_layer_local_spec",
               "cuda_device_max_connections": os.environ["CUDA_DEVICE_MAX_CONNECTIONS"],
               "runs": {}}
    for name, sp in (("tp", False), ("tp_sp", True)):
        results["runs"][name], path = run_variant(a, world, rank, sp)
        if path:
            results["attention"] = path
        if rank == 0:
            print(name, results["runs"][name], flush=True)
        gc.collect()
        dist.barrier()
    if rank == 0:
        print("attention", results.get("attention"), flush=True)
        if a.out:
            with open(a.out, "w") as f:
                json.dump(results, f, indent=1)
    parallel_state.destroy_model_parallel()
    dist.destroy_process_group()
    if a.cpu_smoke and not all(r.get("ok") for r in results["runs"].values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
