"""Issue 19's acceptance run: PyTorch models no one wrote for Weft, trained in
bf16 autocast over f32 parameters with torch.optim.AdamW (fused) on the
shipped character data (examples/data/charlang.txt, bytes as tokens), as
eager PyTorch, torch.compile (default backend) and torch.compile(backend=
"weft"), one process, one GPU.

  python bench/torch_train_bench.py [--models nanogpt,llama,gpt2] [--steps 200]
                                    [--check 20] [--json OUT.json]
                                    [--modes float64,eager,compiled,weft,weft_budget,compiled_budget]

Per model and mode: the median step time (forward + backward + optimizer,
CUDA events) of 10 steps after 3 warm-ups, torch.cuda.max_memory_allocated
over them, and the losses of `--steps` steps from the same initialisation and
batches. Accuracy: the first `--check` losses of eager bf16 and of Weft
against an eager float64 run (same batches, f64 AdamW): Weft's largest error
must be within 2x eager bf16's; and Weft must not fall back (strict).

Models (random initialisation, no download):
  nanogpt  a nanoGPT-style GPT written as its users write it (12 x 768,
           12 heads, seq 1024, batch 8, vocab 50304, tied lm_head)
  llama    transformers' LlamaForCausalLM (hidden 1024, 8 layers, 16 heads,
           4 kv heads, seq 2048, batch 4, vocab 32000)
  gpt2     transformers' GPT2LMHeadModel (GPT-2 small, seq 1024, batch 8)
The GPU machine compiles Weft's packages itself when libweft_c.so and its
libraries are shipped (bench/torch_backend_gpu_check.sh prepare
--with-compiler: build/weftc, WEFT_CAPI_LIB / LD_LIBRARY_PATH).
"""
import argparse
import copy
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
DATA = os.path.join(ROOT, "examples", "data", "charlang.txt")


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head, self.n_embd = n_head, n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, vocab_size=50304, block_size=1024, n_layer=12, n_head=12, n_embd=768):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(n_embd)))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class HFLoss(nn.Module):
    """A Hugging Face causal LM called as (idx, targets) -> loss."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, idx, targets):
        return self.model(input_ids=idx, labels=targets).loss


# nanoGPT's 3e-4; the Hugging Face models ("same": they shift their labels)
# at ../shared/anchors/hf_train_anchors.py's 1e-4. At 3e-4 GPT-2 with its
# dropouts spiked at step 11 in every run, float64 included (14.0 from 5.1),
# so the 20-loss check measured the spike, not the arithmetic
# (bench/results/h200-2026-11-27-torch-train-gpt2-lr3e-4.json).
LEARNING_RATES = {"shift": 3e-4, "same": 1e-4}


def make(name):
    torch.manual_seed(0)
    if name == "nanogpt":
        return GPT(), 8, 1024, 50304, "shift"
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
    if name == "llama":
        return HFLoss(LlamaForCausalLM(LlamaConfig(
            hidden_size=1024, intermediate_size=2816, num_hidden_layers=8, num_attention_heads=16,
            num_key_value_heads=4, max_position_embeddings=2048, vocab_size=32000,
            attn_implementation="sdpa"))), 4, 2048, 32000, "same"
    if name in ("gpt2", "gpt2-nodrop"):
        # gpt2: its default dropouts, 0.1 (embedding, attention, residuals);
        # gpt2-nodrop: all three 0 (the same model without randomness).
        drop = {} if name == "gpt2" else {"resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0}
        model = GPT2LMHeadModel(GPT2Config(
            n_embd=768, n_layer=12, n_head=12, n_positions=1024, vocab_size=50304,
            attn_implementation="sdpa", **drop))
        # GPT2LMHeadModel has no loss_type; transformers' warning about it
        # breaks the graph before the loss (torch.compile's too).
        model.loss_type = "ForCausalLM"
        return HFLoss(model), 8, 1024, 50304, "same"
    raise SystemExit(f"unknown model {name!r}: nanogpt, llama, gpt2 or gpt2-nodrop")


def batches(batch, seq, labels, count, device):
    """`count` batches of windows of the character data: inputs and targets
    (the next characters; HF models shift the labels themselves)."""
    data = torch.frombuffer(bytearray(open(DATA, "rb").read()), dtype=torch.uint8).long()
    generator = torch.Generator().manual_seed(1)
    for _ in range(count):
        starts = torch.randint(0, len(data) - seq - 1, (batch,), generator=generator)
        window = torch.stack([data[s:s + seq + 1] for s in starts.tolist()])
        idx = window[:, :seq]
        targets = window[:, 1:] if labels == "shift" else idx
        yield idx.contiguous().to(device), targets.contiguous().to(device)


def summarize(steps, top=25):
    """Per step: the timed total, time by entry kind, and the `top` kernels
    by time (same-named entries summed)."""
    out = []
    for step in steps:
        by_kind, by_name = {}, {}
        for e in step["entries"]:
            by_kind[e["kind"]] = by_kind.get(e["kind"], 0.0) + e["ms"]
            name = (f"gemm {e['m']}x{e['n']}x{e['k']}" if e["kind"] == "gemm" else e["name"])
            count, ms = by_name.get(name, (0, 0.0))
            by_name[name] = (count + 1, ms + e["ms"])
        ranked = sorted(by_name.items(), key=lambda kv: -kv[1][1])[:top]
        out.append({"total_ms": step["total_ms"], "by_kind_ms": by_kind,
                    "top": [{"name": n, "count": c, "ms": ms} for n, (c, ms) in ranked]})
    return out


def has_dropout(model):
    return any(isinstance(m, nn.Dropout) and m.p > 0 for m in model.modules())


def step_seeds(steps):
    """The dropout seed of each step: eager and float64 runs draw weft's
    masks with it (weft.eager_masks), Weft's runs take it as the seed
    argument, so all three apply the same masks and their losses compare
    step for step. The timed eager and torch.compile runs keep torch's own
    masks; a model with dropout adds the run "eager_masked" (eager bf16 with
    weft's masks, --check steps) for the accuracy check."""
    return torch.randint(0, 1 << 31, (steps,), generator=torch.Generator().manual_seed(5)).tolist()


def seeded(mode, uses_dropout):
    """(context, begin(seed)) making `mode`'s run use weft's masks."""
    import contextlib
    if not uses_dropout or mode in ("compiled", "eager"):
        return contextlib.nullcontext(), lambda seed: None
    if mode == "weft":
        import weft.torch_import
        current = [0]
        weft.torch_import.new_seed = lambda device=None: torch.full(
            (), current[0], dtype=torch.int64, device=device)
        return contextlib.nullcontext(), lambda seed: current.__setitem__(0, seed)
    from weft.eager_masks import EagerMasks
    masks = EagerMasks()
    return masks, masks.begin


def torch_kernel_profile(run_step, top):
    """torch.profiler over 3 steps of `run_step`: CUDA kernel time per step
    by category (GEMM, attention, Triton, other) and the `top` kernels."""
    from torch.profiler import ProfilerActivity, profile as tprofile
    with tprofile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            run_step()
        torch.cuda.synchronize()
    by_name = {}
    for e in prof.key_averages():
        us = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if us and e.key:
            by_name[e.key] = (e.count // 3, us / 3e3)
    def kind(name):
        low = name.lower()
        if any(k in low for k in ("gemm", "cutlass", "sm90_xmma", "nvjet", "matmul")):
            return "gemm"
        if any(k in low for k in ("flash", "fmha", "attention", "cudnn")):
            return "attention"
        return "triton" if low.startswith("triton") else "other"
    by_kind = {}
    for name, (_, ms) in by_name.items():
        by_kind[kind(name)] = by_kind.get(kind(name), 0.0) + ms
    ranked = sorted(by_name.items(), key=lambda kv: -kv[1][1])[:top]
    return {"total_ms": sum(ms for _, ms in by_name.values()), "by_kind_ms": by_kind,
            "top": [{"name": n, "count": c, "ms": ms} for n, (c, ms) in ranked]}


def train(model, mode, spec, steps, device, budget=None, autocast=True, profile=False,
          top=25, activation_budget=None, warmup=0):
    """Losses of `steps` steps, and the median time and peak memory of steps
    3..12 (forward + backward + AdamW). activation_budget: torch.compile's
    torch._functorch.config.activation_memory_budget for mode "compiled"."""
    import torch._dynamo
    import torch._functorch.config as functorch_config
    torch._dynamo.reset()
    functorch_config.activation_memory_budget = 1.0 if activation_budget is None else activation_budget
    # Each mode's peak is its own: torch's cuBLAS workspaces (allocated by
    # an earlier mode's GEMMs through the caching allocator, ~50 MiB on the
    # H100, and counted by max_memory_allocated) are freed first; what is
    # still allocated is reported as start_mib.
    if hasattr(torch._C, "_cuda_clearCublasWorkspaces"):
        torch._C._cuda_clearCublasWorkspaces()
    torch.cuda.empty_cache()
    start_allocated = torch.cuda.memory_allocated()
    _, batch, seq, _, labels = spec
    f64 = mode == "float64"
    dtype = torch.float64 if f64 else torch.float32 if autocast else torch.bfloat16
    model = model.to(device=device, dtype=dtype).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATES[labels], fused=not f64)
    # --warmup N: the learning rate ramps linearly over the first N steps
    # (nanoGPT's and HF's recipes warm up; every mode gets the same ramp).
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup)) if warmup else None
    if mode == "compiled":
        forward = torch.compile(model)
    elif mode == "weft":
        import weft
        # Fused AdamW holds exp_avg and exp_avg_sq, no parameter-sized
        # temporary (the foreach update's), so its bytes are 2x the
        # parameters' (weft.compile assumes 3x without them).
        fused_state = 2 * sum(p.numel() * p.element_size() for p in model.parameters())
        forward = weft.compile(model, strict=True, memory_budget=budget,
                               optimizer_bytes=fused_state if budget and not f64 else None)
    else:
        forward = model
    losses, times = [], []
    uses_dropout = has_dropout(model)
    context, begin = seeded(mode, uses_dropout)
    seeds = step_seeds(steps)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    def one_step(idx, targets, seed):
        begin(seed)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast and not f64), context:
            loss = forward(idx, targets)
        loss.backward()
        optimizer.step()
        if schedule:
            schedule.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    for step, (idx, targets) in enumerate(batches(batch, seq, labels, steps, device)):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        loss = one_step(idx, targets, seeds[step])
        end.record()
        losses.append(loss.detach())
        if 3 <= step < 13:
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
    losses = [float(x) for x in losses]
    result = {"losses": losses, "ms": sorted(times)[len(times) // 2] if times else None,
              "peak_gib": torch.cuda.max_memory_allocated() / 2**30,
              "start_mib": start_allocated / 2**20}
    if mode == "weft" and profile:
        from weft import torch_gpu
        try:
            result["profile"] = summarize(torch_gpu.profile(), top)
        except Exception as error:  # the timings above stand without it
            result["profile_error"] = " ".join(repr(error).split())[-600:]
    if mode == "compiled" and profile:
        try:
            result["profile"] = [torch_kernel_profile(
                lambda: one_step(idx, targets, seeds[-1]), top)]
        except Exception as error:
            result["profile_error"] = " ".join(repr(error).split())[-600:]
    del optimizer, forward
    functorch_config.activation_memory_budget = 1.0
    torch.cuda.empty_cache()
    return result


def first_gradients(model, mode, spec, device, autocast=True):
    """The parameters' gradients (float64, on the CPU) of step 0's batch,
    under `mode`'s masks (see seeded)."""
    import torch._dynamo
    torch._dynamo.reset()
    _, batch, seq, _, labels = spec
    f64 = mode == "float64"
    model = model.to(device=device, dtype=torch.float64 if f64 else torch.float32).train()
    forward = model
    if mode == "weft":
        import weft
        forward = weft.compile(model, strict=True)
    uses_dropout = has_dropout(model)
    context, begin = seeded(mode, uses_dropout)
    idx, targets = next(batches(batch, seq, labels, 1, device))
    begin(step_seeds(1)[0])
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast and not f64), context:
        loss = forward(idx, targets)
    loss.backward()
    out = {name: p.grad.detach().to("cpu", torch.float64) for name, p in model.named_parameters()
           if p.grad is not None}
    del forward, model
    torch.cuda.empty_cache()
    return float(loss.detach()), out


def gradient_check(name, base, spec, args, device):
    """Step 0's parameter gradients of eager bf16 (with weft's masks when
    the model has dropout) and Weft against eager float64: the relative
    error ||g - g64|| / ||g64|| per parameter, and the parameters where
    Weft's error is the largest multiple of eager's (where a loss error
    comes from)."""
    uses_dropout = has_dropout(base)
    eager = "eager_masked" if uses_dropout else "eager"
    runs = {mode: first_gradients(copy.deepcopy(base), mode, spec, device,
                                  args.precision == "autocast")
            for mode in ("float64", eager, "weft")}
    ref_loss, ref = runs["float64"]
    rows = []
    for pname, g64 in ref.items():
        norm = float(g64.norm()) or 1.0
        errs = {m: float((runs[m][1][pname] - g64).norm()) / norm if pname in runs[m][1]
                else math.inf for m in (eager, "weft")}
        rows.append({"param": pname, "eager": errs[eager], "weft": errs["weft"],
                     "ratio": errs["weft"] / max(errs[eager], 1e-30)})
    rows.sort(key=lambda r: -r["ratio"])
    print(f"{name}: step 0 loss float64 {ref_loss:.6f}, {eager} {runs[eager][0]:.6f}, "
          f"weft {runs['weft'][0]:.6f}", flush=True)
    norm2 = sum(float((g * g).sum()) for g in ref.values())
    total = {m: math.sqrt(sum(float((runs[m][1][k] - g).norm()) ** 2 for k, g in ref.items())
                          / norm2) for m in (eager, "weft")}
    print(f"{name}: all gradients' relative error: {eager} {total[eager]:.3e}, "
          f"weft {total['weft']:.3e}", flush=True)
    # The error's component along the float64 gradient, <g - g64, g64> /
    # |g64|^2: a scale error of the whole gradient (a systematic one moves
    # the next losses; a random one of the same norm mostly does not).
    along = {m: sum(float(((runs[m][1][k] - g) * g).sum()) for k, g in ref.items()) / norm2
             for m in (eager, "weft")}
    print(f"{name}: error along the float64 gradient: {eager} {along[eager]:+.3e}, "
          f"weft {along['weft']:+.3e}", flush=True)
    for r in rows[:12]:
        print(f"  {r['param']:55s} {eager} {r['eager']:.3e}  weft {r['weft']:.3e}  "
              f"x{r['ratio']:.2f}", flush=True)
    adam = adam_first_step(ref, {m: runs[m][1] for m in (eager, "weft")},
                           LEARNING_RATES[spec[4]])
    print(f"{name}: AdamW's first step, the loss change to first order -lr <g64, u(g)> "
          f"against float64's: {eager} {adam['total'][eager]:+.3e}, weft "
          f"{adam['total']['weft']:+.3e}; sign disagreements {eager} "
          f"{adam['flips'][eager]:.4f}, weft {adam['flips']['weft']:.4f}", flush=True)
    for r in adam["params"][:8]:
        print(f"  {r['param']:55s} {eager} {r[eager]:+.3e} ({r['flips_' + eager]:.4f})  "
              f"weft {r['weft']:+.3e} ({r['flips_weft']:.4f})", flush=True)
    return {"eager_mode": eager, "total": total, "along_f64": along, "params": rows,
            "adam_first_step": adam}


def adam_first_step(ref, grads, lr, eps=1e-8):
    """AdamW's first update is lr * g / (|g| + eps) per element (m and v
    bias-corrected to g and g^2), blind to any gradient scale but not to
    signs: the first-order change of the loss it makes, -lr <g64, u(g)>,
    each mode's minus float64's, per parameter and in all (the step-1 loss
    error a mode's gradients explain), and the fraction of elements whose
    sign differs from float64's."""
    def moved(g64, g):
        return -lr * float((g64 * (g / (g.abs() + eps))).sum())
    rows, total, flips, count = [], dict.fromkeys(grads, 0.0), dict.fromkeys(grads, 0), 0
    for pname, g64 in ref.items():
        base = moved(g64, g64)
        row = {"param": pname}
        for m, g in grads.items():
            row[m] = moved(g64, g[pname]) - base
            wrong = int(((g[pname] > 0) != (g64 > 0)).sum())
            row["flips_" + m] = wrong / g64.numel()
            total[m] += row[m]
            flips[m] += wrong
        count += g64.numel()
        rows.append(row)
    rows.sort(key=lambda r: -abs(r.get("weft", 0.0)))
    return {"total": total, "flips": {m: f / count for m, f in flips.items()}, "params": rows}


def compiled_at_budget(base, spec, target, args, device):
    """torch.compile with activation_memory_budget tuned to `target` bytes:
    the budgets of --torch-budgets in ascending order (peak grows with the
    budget), each compiled and run for 13 steps, until one's peak exceeds
    the target. Returns the sweep and the largest budget that fits (or
    None when even the smallest does not)."""
    sweep, chosen = [], None
    for value in sorted(float(v) for v in args.torch_budgets.split(",")):
        try:
            run = train(copy.deepcopy(base), "compiled", spec, 13, device,
                        autocast=args.precision == "autocast", activation_budget=value,
                        warmup=args.warmup)
            entry = {"activation_memory_budget": value, "ms": run["ms"],
                     "peak_gib": run["peak_gib"]}
        except Exception as error:
            entry = {"activation_memory_budget": value,
                     "error": " ".join(repr(error).split())[-600:]}
        sweep.append(entry)
        print(f"  torch.compile activation_memory_budget {value}: "
              + (f"{entry['ms']} ms, peak {entry['peak_gib']:.2f} GiB" if "error" not in entry
                 else entry["error"]), flush=True)
        if "error" in entry or entry["peak_gib"] * 2**30 > target:
            break
        chosen = entry
    return {"target_bytes": target, "sweep": sweep, "chosen": chosen,
            "fits": chosen is not None}


def run_model(name, args, device):
    spec = make(name)
    base = spec[0]
    out = {"params_m": sum(p.numel() for p in base.parameters()) / 1e6,
           "batch": spec[1], "seq": spec[2], "runs": {}}
    modes = [m for m in args.modes.split(",") if m]
    if has_dropout(base) and "eager" in modes:
        modes.insert(modes.index("eager") + 1, "eager_masked")
    if args.grad_check:
        out["gradient_check"] = gradient_check(name, base, spec, args, device)
    for mode in modes:
        steps = args.check if mode in ("float64", "eager_masked") else args.steps
        t0 = time.time()
        if mode == "compiled_budget":  # torch.compile tuned to weft_budget's budget
            t0 = time.time()
            target = int(args.budget_fraction * out["runs"]["compiled"]["peak_gib"] * 2**30)
            out["runs"][mode] = compiled_at_budget(base, spec, target, args, device)
            chosen = out["runs"][mode]["chosen"]
            print(f"{name} {mode}: " + (f"budget {chosen['activation_memory_budget']}: "
                                        f"{chosen['ms']} ms, peak {chosen['peak_gib']:.2f} GiB"
                                        if chosen else f"no activation_memory_budget of "
                                        f"{args.torch_budgets} fits {target / 2**30:.2f} GiB"),
                  f"({time.time() - t0:.0f} s)", flush=True)
            continue
        try:
            budget = None
            if mode == "weft_budget":  # --budget-fraction of torch.compile's peak
                budget = int(args.budget_fraction * out["runs"]["compiled"]["peak_gib"] * 2**30)
                out["runs"][mode] = {"budget_bytes": budget}
            run = train(copy.deepcopy(base), "weft" if mode == "weft_budget" else mode, spec,
                        args.check if mode == "weft_budget" else steps, device, budget=budget,
                        autocast=args.precision == "autocast",
                        profile=args.profile and mode in ("weft", "compiled"),
                        top=args.profile_top, warmup=args.warmup)
            out["runs"][mode] = {**out["runs"].get(mode, {}), **run}
        except Exception as error:  # one model's failure must not hide the others
            out["runs"][mode] = {**out["runs"].get(mode, {}),
                                 "error": " ".join(repr(error).split())[-1500:]}
        out["runs"][mode]["wall_s"] = time.time() - t0
        r = out["runs"][mode]
        losses = r.get("losses") or [math.nan]
        print(f"{name} {mode}: " + (f"{r['ms']} ms/step, peak {r['peak_gib']:.2f} GiB, loss "
                                    f"{losses[0]:.4f} -> {losses[-1]:.4f}"
                                    if "error" not in r else r["error"][-600:]),
              f"({r['wall_s']:.0f} s)", flush=True)
        for p in r.get("profile", []):
            print(f"  {mode} kernels (weft: entry by entry; compiled: torch.profiler): "
                  f"{p['total_ms']:.2f} ms; by kind "
                  + ", ".join(f"{k} {v:.2f}" for k, v in p["by_kind_ms"].items()), flush=True)
            for t in p["top"][:15]:
                print(f"    {t['ms']:7.3f} ms  x{t['count']:<3d} {t['name']}", flush=True)
    ref = out["runs"].get("float64", {}).get("losses")
    if ref:
        for mode in ("eager", "eager_masked", "weft"):
            losses = out["runs"].get(mode, {}).get("losses")
            if losses:
                n = min(len(ref), len(losses), args.check)
                out["runs"][mode]["max_loss_error_vs_f64"] = max(
                    abs(a - b) if math.isfinite(a) else math.inf for a, b in zip(losses[:n], ref[:n]))
        eager = "eager_masked" if "eager_masked" in out["runs"] else "eager"
        e, w = (out["runs"].get(m, {}).get("max_loss_error_vs_f64") for m in (eager, "weft"))
        if e is not None and w is not None:
            out["loss_check"] = {"weft": w, "eager_bf16": e, "passes": w <= 2 * e}
            print(f"{name}: first {args.check} losses vs float64: weft {w:.4g}, eager bf16 "
                  f"{e:.4g} -> {'within' if w <= 2 * e else 'NOT within'} 2x", flush=True)
    wb, cb = out["runs"].get("weft_budget", {}), out["runs"].get("compiled_budget", {})
    if wb.get("ms") and cb.get("chosen"):
        out["weft_budget_over_compiled_budget"] = wb["ms"] / cb["chosen"]["ms"]
        print(f"{name}: at the budget, weft / torch.compile = "
              f"{out['weft_budget_over_compiled_budget']:.3f}", flush=True)
    if wb.get("ms"):
        print(f"{name}: weft_budget peak {wb['peak_gib']:.3f} GiB against the budget "
              f"{wb['budget_bytes'] / 2**30:.3f} GiB: "
              f"{'under' if wb['peak_gib'] * 2**30 <= wb['budget_bytes'] else 'OVER'}", flush=True)
    c, w = (out["runs"].get(m, {}).get("ms") for m in ("compiled", "weft"))
    if c and w:
        out["weft_over_compiled"] = w / c
        print(f"{name}: weft / torch.compile step time = {w / c:.3f}", flush=True)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="nanogpt,llama,gpt2")
    parser.add_argument("--modes", default="float64,eager,compiled,weft")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--check", type=int, default=20)
    parser.add_argument("--precision", choices=("autocast", "bf16"), default="autocast",
                        help="bf16 autocast over f32 parameters (the acceptance run), or "
                             "bf16 parameters without autocast")
    parser.add_argument("--profile", action="store_true",
                        help="after Weft's steps, time its step entry by entry (3 runs); "
                             "torch.compile's kernels by torch.profiler")
    parser.add_argument("--profile-top", type=int, default=25,
                        help="kernels kept per profile (by time; same names summed)")
    parser.add_argument("--budget-fraction", type=float, default=0.6,
                        help="mode weft_budget: memory_budget = this fraction of "
                             "torch.compile's peak (run after mode compiled)")
    parser.add_argument("--torch-budgets", default="0.0,0.1,0.3,0.6",
                        help="mode compiled_budget: the activation_memory_budget values "
                             "tried (ascending) to match weft_budget's budget")
    parser.add_argument("--grad-check", action="store_true",
                        help="first, step 0's gradients of eager bf16 and Weft against "
                             "float64, parameter by parameter")
    parser.add_argument("--warmup", type=int, default=0,
                        help="linear learning-rate warmup over this many steps, every mode "
                             "(0: the constant rate)")
    parser.add_argument("--json")
    args = parser.parse_args()
    # weft_budget trains --check steps and times steps 3..12 of them.
    if "weft_budget" in args.modes.split(",") and args.check < 13:
        parser.error(f"mode weft_budget trains --check steps and times steps 3..12: "
                     f"--check must be at least 13, got {args.check}")
    device = torch.device("cuda")
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "precision": args.precision, "warmup": args.warmup,
              "date": time.strftime("%Y-%m-%d"), "models": {}}
    for name in args.models.split(","):
        report["models"][name] = run_model(name, args, device)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
