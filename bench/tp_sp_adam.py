"""Issue 18's first acceptance item for the AdamW step: three steps from one
initial state, on one GPU and at tp = T with and without SP, the losses and
the updated parameters (gathered from the ranks) of Weft against PyTorch in
float64 and in bf16 autocast (f32 parameters, the usual mixed precision),
from the same state and batches.

The rule (gpt_step_bench.gradient_check's, applied to the update): for each
parameter, with d(p) = p after the steps - p before,
  weft error  = |d(weft) - d(float64)| / |d(float64)|
  torch error = |d(torch bf16) - d(float64)| / |d(float64)|
  partitioned against one GPU = |d(weft tp) - d(weft one GPU)| / |d(float64)|
and both Weft errors must be <= 2 x torch's. The update, not the parameter:
after 3 steps of lr 1e-3 the parameters are still their initial values to
three digits, so an error relative to them could not fail. The losses of
each step: |weft - float64| <= 2 |torch bf16 - float64| + |float64| 2^-8.

AdamW's settings are weft-compile's defaults (lr 1e-3, betas 0.9 / 0.999,
eps 1e-8, weight decay 0.01, decoupled as torch.optim.AdamW does). The
float64 reference recomputes each block in the backward and runs attention
four heads at a time (checkpointed), so the anchor at seq 8192 fits on one
H100.
"""
import os

STEPS = 3
ADAMW = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
HEADS_AT_ONCE = 4


def lean_sdpa(q, k, v, is_causal=True, enable_gqa=False):
    """Causal attention a few heads at a time, each group recomputed in the
    backward: float64 scores for 32 heads at seq 8192 would take 17 GiB a
    layer."""
    import torch
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint
    if enable_gqa:
        group = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)

    def heads(q, k, v):
        s = q.shape[-2]
        scores = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
        causal = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
        return F.softmax(scores.masked_fill(causal, float("-inf")), dim=-1) @ v
    return torch.cat([checkpoint(heads, q[:, h:h + HEADS_AT_ONCE], k[:, h:h + HEADS_AT_ONCE],
                                 v[:, h:h + HEADS_AT_ONCE], use_reentrant=False)
                      for h in range(0, q.shape[1], HEADS_AT_ONCE)], dim=1)


def step_inputs(config, directory, name):
    """DIR/NAME_state.npz (the parameters as f32 masters, drawn on the GPU:
    the anchor has 805M; weft-run --init-state gives the moments, zero) and DIR/NAME_data.npz (the
    batch of each step, the step counter 1..STEPS, then the seed: the
    order weft-autodiff gives the AdamW step's arguments after the state).
    Returns (state, data) paths; made once."""
    state, data = (os.path.join(directory, f"{name}_{k}.npz") for k in ("state", "data"))
    if os.path.exists(state) and os.path.exists(data):
        return state, data
    import torch
    from weft import npz
    from weft.models.arguments import argument_specs, rope_tables
    from weft.models.config import ModelConfig
    cfg = ModelConfig(**config)
    specs = argument_specs(cfg)
    params = [s for s in specs if s.is_param]
    n = len(params)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator(device).manual_seed(11)

    def draw(spec):
        x = torch.randn(spec.shape, generator=gen, device=device, dtype=torch.float32)
        scale = {"linear": lambda: x / spec.shape[1] ** 0.5, "bias": lambda: 0.1 * x,
                 "norm_weight": lambda: 1.0 + 0.1 * x, "embedding": lambda: x}[spec.init]
        return scale().cpu()
    values = {f"arg{i}": draw(s) for i, s in enumerate(params)}
    npz.save(state, values)
    del values
    batch, j = {}, 3 * n
    cos, sin = rope_tables(cfg.seq, cfg.head_dim, cfg.rope_base)
    for s in specs:
        if s.is_param or s.kind == "seed":
            continue
        if s.kind == "hidden":
            value = torch.randn((STEPS,) + tuple(s.shape), generator=gen, device=device)
        elif s.kind in ("rope_cos", "rope_sin"):
            value = torch.from_numpy(cos if s.kind == "rope_cos" else sin)
        else:
            raise ValueError(f"the AdamW check takes hidden-state models, not {s.kind}")
        batch[f"arg{j}"] = value.to(torch.bfloat16).float().cpu()  # the IR's bf16, exactly
        j += 1
    batch[f"arg{j}"] = torch.arange(1, STEPS + 1, dtype=torch.int64)
    batch[f"arg{j + 1}"] = torch.tensor(5, dtype=torch.int64)
    npz.save(data, batch)
    return state, data


def torch_steps(config, state, data, f64):
    """PyTorch's losses and parameters after STEPS AdamW steps: float64, or
    f32 parameters under bf16 autocast."""
    import torch
    from weft import npz
    from weft.models.arguments import argument_specs
    from weft.models.config import ModelConfig
    from weft.models.torch_model import Transformer
    cfg = ModelConfig(**config)
    specs = argument_specs(cfg)
    n = sum(s.is_param for s in specs)
    dtype = torch.float64 if f64 else torch.float32
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    net = Transformer(cfg).to(device, dtype)
    values = npz.load(state)
    net.load_arguments([values[f"arg{i}"].to(dtype) for i in range(n)])
    del values
    if f64:
        net.checkpoint_blocks = True
        for block in net.layers:
            block.attn.sdpa = lean_sdpa
    batch = npz.load(data)
    inputs = [s for s in specs if not s.is_param and s.kind != "seed"]
    args = {s.kind: batch[f"arg{3 * n + i}"].to(device, dtype) for i, s in enumerate(inputs)}
    optimizer = torch.optim.AdamW(net.parameters(), foreach=False, **ADAMW)
    losses = []
    for step in range(STEPS):
        with torch.autocast(device, dtype=torch.bfloat16, enabled=not f64):
            loss = net(args["hidden"][step], None, args.get("rope_cos"), args.get("rope_sin"))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    params = [p.detach().double().cpu() for p in net.parameters()]
    del net, optimizer
    if device == "cuda":
        torch.cuda.empty_cache()
    return losses, params


class AdamCheck:
    """The references once per model, then one entry per package."""

    def __init__(self, sh):
        self.sh, self.refs = sh, {}

    def reference(self, model, config):
        if model not in self.refs:
            from weft import npz
            state, data = step_inputs(config, self.sh.dir, f"adam_{model}")
            f64_losses, f64 = torch_steps(config, state, data, True)
            bf_losses, bf = torch_steps(config, state, data, False)
            values = npz.load(state)
            start = [values[f"arg{i}"].double() for i in range(len(f64))]
            self.refs[model] = dict(state=state, data=data, start=start, f64_losses=f64_losses,
                                    f64=[p - s for p, s in zip(f64, start)],
                                    bf_losses=bf_losses, bf=[p - s for p, s in zip(bf, start)])
        return self.refs[model]

    def run(self, model, config, variant, ranks):
        """Weft's package adam_<model>_<variant>: losses and updates, and the
        check against the references (and against its one-GPU run)."""
        from tp_sp_phases import rank_steps
        from weft import npz
        sh, ref = self.sh, self.reference(model, config)
        package = f"adam_{model}_{variant}.weftpkg" if model != "anchor" else \
            f"adam_{variant}.weftpkg"
        saved = sh.path(f"adam3_{model}_{variant}.npz")
        out = sh.weft(package, "--steps", STEPS, "--load-state", ref["state"], "--init-state", 0,
                      "--data", ref["data"], "--save-state", saved + (".json" if ranks > 1 else ""),
                      ranks=ranks, log=f"adam3_{model}_{variant}")
        if ranks > 1:
            sh.run([sh.path("weft-run"), "--gather-state", saved + ".json", "--to", saved], 1,
                   f"adam3_{model}_{variant}", env=sh.weft_env)
        losses = [loss for loss, _ in rank_steps(out)]
        got = npz.load(saved)
        updates = [got[f"arg{i}"].double().reshape(s.shape) - s
                   for i, s in enumerate(ref["start"])]
        for suffix in ("", ".json"):
            if os.path.exists(saved + suffix):
                os.remove(saved + suffix)
        if variant == "one":
            ref["one"] = updates
            return compare(ref, losses, updates, None)
        return compare(ref, losses, updates, ref.get("one"))


def compare(ref, losses, updates, one):
    f64_l, bf_l = ref["f64_losses"], ref["bf_losses"]
    loss_rows = [{"weft": w, "torch_f64": e, "torch_bf16": b,
                  "ok": abs(w - e) <= 2 * abs(b - e) + abs(e) * 2.0 ** -8}
                 for w, e, b in zip(losses, f64_l, bf_l)]
    rows, worst = [], 0.0
    for i, (d, exact, bf) in enumerate(zip(updates, ref["f64"], ref["bf"])):
        norm = exact.norm().item() or 1.0
        we, te = (d - exact).norm().item() / norm, (bf - exact).norm().item() / norm
        row = {"param": i, "weft_rel_err": we, "torch_bf16_rel_err": te, "ok": we <= 2 * te}
        if one is not None:
            row["vs_one_gpu_rel_err"] = (d - one[i]).norm().item() / norm
            row["ok"] = row["ok"] and row["vs_one_gpu_rel_err"] <= 2 * te
        worst = max(worst, max(we, row.get("vs_one_gpu_rel_err", 0.0)) / max(te, 1e-30))
        rows.append(row)
    ok = len(losses) == STEPS and all(r["ok"] for r in loss_rows + rows)
    return {"ok": bool(ok), "worst_ratio": worst, "losses": loss_rows, "updates": rows}
