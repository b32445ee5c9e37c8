#!/usr/bin/env python3
"""H100 check of dropout inside Weft's flash-attention kernels (the units
`scripts/check-kernels OUT_DIR` writes to OUT_DIR/dropout: p = 0.1, rng_id 7,
mma.sync forward and backward). See README.md:

    PYTHONPATH=python python3 test/gpu/attention_dropout_check.py \
        --kernels OUT_DIR/dropout --json FILE

Per point (batch 3, 4 q heads over 2 kv heads, an odd and an even length,
every head_dim the units have (64, 128, 256), causal and not, bf16 and f16):

(a) the mask, bit for bit: V is an identity window (for window w of d keys,
    V[j, :] = e_{j - w d} for j in the window, else 0), so O = P * M / (1 - p)
    over that window's keys; a launch per window. O's zeros at the keys a
    row sees must be exactly the dropped elements of weft's rule (numpy
    Philox, python/weft/philox.py), and every kept value within 2% of the
    float64 P / (1 - p) (beyond 2^-24, f16's subnormal step).
(b) out, dq, dk, dv against a float64 reference with the same mask, each
    within 2x (--ratio-bound) the error of the same math in the dtype (bf16
    / f16 matmuls, f32 softmax, same mask) against float64; lse within 2e-3.
Outputs are NaN-poisoned inside guard bytes: NaN or a guard write fails.

`--dry-run` needs no GPU: it checks this script's mask (the Philox index
rule) and its identity-window decoding against the reference interpreter
(build/bin/weft-run on a small float64 attention with dropout), and the
float64 reference against the interpreter's output and gradients.
Prints one summary line; writes every number to --json.
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import torch

from weft import npz, philox
from weft.gpu import attention_reference as ar
from weft.gpu import kernel_units as ku
from weft.gpu.poison import Poisoned
from weft.gpu.results import write_json

BATCH, Q_HEADS, KV_HEADS = 3, 4, 2
SEQS = (1001, 256)
SEED = 0x5EED1234ABCD
KEPT_REL_TOL = 0.02
KEPT_ABS_TOL = 2.0 ** -24
GRADED = ("out", "dq", "dk", "dv")


def keep_mask(b, hq, sq, sk, p, seed, rng_id):
    """Weft's rule over the [b, hq, sq, sk] probabilities (bool, numpy)."""
    return philox.keep_mask((b, hq, sq, sk), p, seed, rng_id)


def visible_mask(sq, sk, causal):
    """[sq, sk] bool: keys a query row sees (top-left causal, sq == sk)."""
    if not causal:
        return np.ones((sq, sk), dtype=bool)
    return np.tril(np.ones((sq, sk), dtype=bool), k=sk - sq)


def identity_window_v(b, hkv, sk, d, window, dtype, device):
    """V with V[j, :] = e_{j - window d} for keys j of the window, else 0."""
    v = torch.zeros(b, hkv, sk, d, dtype=dtype, device=device)
    lo, hi = window * d, min(sk, (window + 1) * d)
    idx = torch.arange(lo, hi, device=device)
    v[:, :, idx, idx - lo] = 1
    return v


def decode_window(out, window, sk, d):
    """The [b, h, sq, keys] block of P M / (1 - p) an identity-window out holds."""
    lo, hi = window * d, min(sk, (window + 1) * d)
    return out[..., :hi - lo], lo, hi


def dropped_probs_f64(q, k, scale, causal, keep, p):
    """P (float64, [b, hq, sq, sk]) and P * M / (1 - p)."""
    hq = q.shape[1]
    k64 = ar.expand_kv(k.to(torch.float64), hq)
    scores = torch.matmul(q.to(torch.float64), k64.transpose(-1, -2)) * scale
    sq, sk = scores.shape[-2:]
    if causal:
        scores = scores.masked_fill(ar.causal_mask(sq, sk, scores.device), float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    keep_t = torch.as_tensor(keep, device=probs.device)
    return probs, torch.where(keep_t, probs / (1.0 - p), torch.zeros_like(probs))


def attention_with_mask(q, k, v, dout, causal, scale, keep, p, dtype):
    """out, lse, dq, dk, dv of dropout attention by autograd in `dtype`: the
    matmuls in the dtype, softmax in f32 (as SDPA's math backend), the mask
    `keep`; float64 for the reference."""
    hq, hkv = q.shape[1], k.shape[1]
    compute = torch.float32 if dtype != torch.float64 else torch.float64
    qc = q.to(dtype).clone().requires_grad_()
    kc = k.to(dtype).clone().requires_grad_()
    vc = v.to(dtype).clone().requires_grad_()
    keep_t = torch.as_tensor(keep, device=q.device)
    with torch.enable_grad():
        kx, vx = ar.expand_kv(kc, hq), ar.expand_kv(vc, hq)
        scores = torch.matmul(qc, kx.transpose(-1, -2)).to(compute) * scale
        sq, sk = scores.shape[-2:]
        if causal:
            scores = scores.masked_fill(ar.causal_mask(sq, sk, q.device), float("-inf"))
        lse = torch.logsumexp(scores.detach(), dim=-1)
        probs = torch.softmax(scores, dim=-1)
        dropped = torch.where(keep_t, probs / (1.0 - p), torch.zeros_like(probs)).to(dtype)
        out = torch.matmul(dropped, vx)
        out.backward(dout.to(dtype))
    return {"out": out.detach(), "lse": lse, "dq": qc.grad, "dk": kc.grad, "dv": vc.grad}


def run_unit(rt, loaded, values, shapes, stream):
    loaded.launch(rt, values, shapes, stream)
    torch.cuda.synchronize()


def gpu_point(rt, fwd, bwd, dtype_name, d, causal, s, device, stream, opts):
    """One point: (a) the mask via identity windows, (b) the 2x rule."""
    dtype = torch.bfloat16 if dtype_name == "bf16" else torch.float16
    gen = torch.Generator(device="cpu").manual_seed(zlib.crc32(f"{dtype_name}{d}{causal}{s}".encode()))
    q = torch.randn(BATCH, Q_HEADS, s, d, generator=gen).to(dtype).to(device)
    k = torch.randn(BATCH, KV_HEADS, s, d, generator=gen).to(dtype).to(device)
    v = torch.randn(BATCH, KV_HEADS, s, d, generator=gen).to(dtype).to(device)
    dout = torch.randn(BATCH, Q_HEADS, s, d, generator=gen).to(dtype).to(device)
    scale = 1.0 / math.sqrt(d)
    p, rng_id = fwd.unit.dropout_p, fwd.unit.rng_id
    keep = keep_mask(BATCH, Q_HEADS, s, s, p, opts.seed, rng_id)
    shapes = dict(batch=BATCH, q_heads=Q_HEADS, kv_heads=KV_HEADS, q_len=s, k_len=s)
    seed_t = torch.tensor([opts.seed], dtype=torch.int64, device=device)
    record = dict(name=f"{dtype_name}-d{d}-{'causal' if causal else 'full'}-s{s}",
                  reasons=[])
    visible = visible_mask(s, s, causal)

    # (a) identity windows.
    probs, _ = dropped_probs_f64(q, k, scale, causal, keep, p)
    mismatches, worst_rel = 0, 0.0
    # The Hopper forward's keep mask (bits; not graded).
    masks = {name: torch.empty(ku.workspace_floats(fwd.unit, BATCH, Q_HEADS, s, s),
                               dtype=torch.float32, device=device)
             for name, _ in fwd.unit.workspaces}
    for window in range(math.ceil(s / d)):
        vw = identity_window_v(BATCH, KV_HEADS, s, d, window, dtype, device)
        out = Poisoned((BATCH, Q_HEADS, s, d), dtype, device)
        lse = Poisoned((BATCH, Q_HEADS, s), torch.float32, device)
        run_unit(rt, fwd, dict(shapes, scale=scale, q=q, k=k, v=vw, out=out.tensor,
                               lse=lse.tensor, seed=seed_t, **masks), shapes, stream)
        if out.guard_violations() or lse.guard_violations():
            record["reasons"].append(f"window {window}: a write outside out / lse")
        block, lo, hi = decode_window(out.tensor, window, s, d)
        if ar.nonfinite_count(block):
            record["reasons"].append(f"window {window}: NaN/inf in out")
            continue
        got_kept = (block != 0).cpu().numpy()
        want = keep[..., lo:hi] & visible[:, lo:hi]
        mismatches += int((got_kept != want).sum())
        ref = probs[..., lo:hi] / (1.0 - p)
        kept_t = torch.as_tensor(want, device=device)
        if kept_t.any():
            # Past the relative bound only by more than f16's subnormal
            # spacing 2^-24 (an f16 O of 1e-6 holds 6% steps).
            excess = ((block.to(torch.float64) - ref).abs() - KEPT_ABS_TOL).clamp_min(0)
            rel = (excess / ref.clamp_min(1e-30))[kept_t]
            worst_rel = max(worst_rel, float(rel.max()))
    record["mask_mismatches"], record["kept_worst_rel"] = mismatches, worst_rel
    if mismatches:
        record["reasons"].append(f"mask: {mismatches} elements differ from weft's rule")
    if not worst_rel <= KEPT_REL_TOL:
        record["reasons"].append(f"kept values: rel err {worst_rel:.3e} > {KEPT_REL_TOL}")

    # (b) forward and backward against float64, judged by the dtype's math.
    ref = attention_with_mask(q, k, v, dout, causal, scale, keep, p, torch.float64)
    base = attention_with_mask(q, k, v, dout, causal, scale, keep, p, dtype)
    bufs = {"out": Poisoned((BATCH, Q_HEADS, s, d), dtype, device),
            "lse": Poisoned((BATCH, Q_HEADS, s), torch.float32, device),
            "dq": Poisoned((BATCH, Q_HEADS, s, d), dtype, device),
            "dk": Poisoned((BATCH, KV_HEADS, s, d), dtype, device),
            "dv": Poisoned((BATCH, KV_HEADS, s, d), dtype, device)}
    values = dict(shapes, scale=scale, q=q, k=k, v=v, dout=dout, seed=seed_t, **masks,
                  **{name: buf.tensor for name, buf in bufs.items()})
    workspaces = [name for name, _ in bwd.unit.workspaces]
    for name in workspaces:
        floats = ku.workspace_floats(bwd.unit, BATCH, Q_HEADS, s, s)
        bufs[name] = Poisoned((floats,), torch.float32, device)
        values[name] = bufs[name].tensor
    run_unit(rt, fwd, values, shapes, stream)
    run_unit(rt, bwd, values, shapes, stream)
    weft_err = {name: ar.error_of(bufs[name].tensor, ref[name])[0] for name in GRADED}
    base_err = {name: ar.error_of(base[name], ref[name])[0] for name in GRADED}
    lse_err = ar.error_of(bufs["lse"].tensor, ref["lse"])[0]
    # A workspace is finite in its delta head only: the keep mask after it
    # is bits, not floats.
    rows = BATCH * Q_HEADS * s
    nonfinite = {name: ar.nonfinite_count(buf.tensor[:rows] if name in workspaces else buf.tensor)
                 for name, buf in bufs.items()}
    passed, reasons, ratios = ar.judge(weft_err, base_err, lse_err, nonfinite,
                                       ratio_bound=opts.ratio_bound)
    record["reasons"] += reasons
    for name, buf in bufs.items():
        if buf.guard_violations():
            record["reasons"].append(f"{name}: a write outside the tensor")
    record.update(weft_err=weft_err, base_err=base_err, ratios=ratios, lse_err=lse_err)
    record["passed"] = not record["reasons"]
    return record


def find_units(kernels):
    """{(dtype, d, causal): (forward, backward)} of the dropout units."""
    units = [u for u in ku.load_units(kernels) if u.dropout_p > 0]
    pairs = {}
    for unit in units:
        key = (unit.dtype, unit.head_dim, unit.causal)
        pair = pairs.setdefault(key, [None, None])
        pair[unit.direction == "backward"] = unit
    return {key: pair for key, pair in pairs.items() if pair[0] and pair[1]}


def run_gpu(opts):
    if not torch.cuda.is_available():
        print("error: torch sees no CUDA device (use --dry-run here)")
        return 1
    pairs = find_units(opts.kernels)
    if not pairs:
        print(f"error: no dropout forward + backward units under {opts.kernels}")
        return 1
    device = "cuda"
    torch.zeros(1, device=device)
    import weft.runtime as rt
    rt.init()
    rt.context_ensure(torch.cuda.current_device())
    records = []
    for (dtype_name, d, causal), (fwd, bwd) in sorted(pairs.items()):
        loaded_f, loaded_b = ku.LoadedUnit(rt, fwd), ku.LoadedUnit(rt, bwd)
        for s in opts.seqs:
            record = gpu_point(rt, loaded_f, loaded_b, dtype_name, d, causal, s, device,
                               torch.cuda.current_stream().cuda_stream, opts)
            records.append(record)
            ratios = " ".join(f"{n} {record['ratios'][n]:.2f}" for n in GRADED)
            print(f"{'PASS' if record['passed'] else 'FAIL'} {record['name']}: mask "
                  f"{record['mask_mismatches']} off, kept rel {record['kept_worst_rel']:.2e}, "
                  f"ratios {ratios}, lse {record['lse_err']:.1e}"
                  + ("" if record["passed"] else "; " + "; ".join(record["reasons"])))
            write_json(opts.json, dict(mode="gpu", records=records))
    failed = [r["name"] for r in records if not r["passed"]]
    worst = max(max(r["ratios"].values()) for r in records)
    print(f"attention dropout: {len(records) - len(failed)}/{len(records)} points pass, "
          f"mask mismatches {sum(r['mask_mismatches'] for r in records)}, worst ratio "
          f"{worst:.2f}" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


def dry_run(opts):
    """The mask rule and the reference against the interpreter (no GPU)."""
    weft_run = os.path.join(opts.build, "bin", "weft-run")
    b, hq, hkv, s, d, p, rng_id, causal = 3, 2, 1, 13, 8, 0.25, 7, True
    q_t = f"tensor<{b}x{hq}x{s}x{d}xf64>"
    kv_t = f"tensor<{b}x{hkv}x{s}x{d}xf64>"
    attrs = f"{{causal, dropout_p = {p} : f64, weft.rng_id = {rng_id} : i64}}"
    ir = (f"func.func @main(%q: {q_t}, %k: {kv_t}, %v: {kv_t}, %do: {q_t}, %seed: tensor<i64>)"
          f" -> ({q_t}, {q_t}, {kv_t}, {kv_t}) {{\n"
          f"  %o, %lse = weft.attention %q, %k, %v, %seed {attrs} : ({q_t}, {kv_t}, {kv_t}, "
          f"tensor<i64>) -> ({q_t}, tensor<{b}x{hq}x{s}xf32>)\n"
          f"  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse, %seed {attrs} : "
          f"({q_t}, {q_t}, {kv_t}, {kv_t}, {q_t}, tensor<{b}x{hq}x{s}xf32>, tensor<i64>) -> "
          f"({q_t}, {kv_t}, {kv_t})\n"
          f"  return %o, %dq, %dk, %dv : {q_t}, {q_t}, {kv_t}, {kv_t}\n}}\n")
    gen = torch.Generator().manual_seed(3)
    q = torch.randn(b, hq, s, d, generator=gen, dtype=torch.float64)
    k = torch.randn(b, hkv, s, d, generator=gen, dtype=torch.float64)
    dout = torch.randn(b, hq, s, d, generator=gen, dtype=torch.float64)
    keep = keep_mask(b, hq, s, s, p, opts.seed, rng_id)
    scale = 1.0 / math.sqrt(d)
    visible = visible_mask(s, s, causal)
    reasons, mismatches = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        ir_path = os.path.join(tmp, "dropout.mlir")
        with open(ir_path, "w") as f:
            f.write(ir)

        def interpret(v):
            inputs, outputs = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
            npz.save(inputs, {"arg0": q, "arg1": k, "arg2": v, "arg3": dout,
                              "arg4": torch.tensor(opts.seed, dtype=torch.int64)})
            result = subprocess.run([weft_run, ir_path, "--entry=main", f"--inputs={inputs}",
                                     f"--outputs={outputs}"], capture_output=True, text=True)
            if result.returncode:
                raise RuntimeError(f"weft-run failed:\n{result.stdout}{result.stderr}")
            got = npz.load(outputs)
            return [got[f"res{i}"] for i in range(4)]

        # The identity windows through the interpreter: its mask is the rule's.
        for window in range(math.ceil(s / d)):
            out = interpret(identity_window_v(b, hkv, s, d, window, torch.float64, "cpu"))[0]
            block, lo, hi = decode_window(out, window, s, d)
            want = keep[..., lo:hi] & visible[:, lo:hi]
            mismatches += int(((block != 0).numpy() != want).sum())
        if mismatches:
            reasons.append(f"mask: {mismatches} elements differ from the interpreter's")
        # The float64 reference with the mask against the interpreter.
        v = torch.randn(b, hkv, s, d, generator=gen, dtype=torch.float64)
        got = dict(zip(GRADED, interpret(v)))
        ref = attention_with_mask(q, k, v, dout, causal, scale, keep, p, torch.float64)
        errors = {name: ar.error_of(got[name], ref[name])[1] for name in GRADED}
        for name, err in errors.items():
            if not err <= 1e-10:
                reasons.append(f"{name}: reference vs interpreter rel err {err:.2e}")
    # The units, when given, parse and carry the dropout config.
    units = find_units(opts.kernels) if opts.kernels else {}
    record = dict(mode="dry-run", mask_mismatches=mismatches, reference_rel_err=errors,
                  dropout_units=len(units), reasons=reasons, passed=not reasons)
    write_json(opts.json, record)
    print(f"attention dropout dry run: {'PASS' if not reasons else 'FAIL'}: mask mismatches "
          f"{mismatches} over {b}x{hq}x{s}x{s}, reference vs interpreter max rel err "
          f"{max(errors.values()):.1e}, {len(units)} dropout unit pairs"
          + ("" if not reasons else "; " + "; ".join(reasons)))
    return 0 if not reasons else 1


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", help="OUT_DIR/dropout of scripts/check-kernels")
    parser.add_argument("--json", required=True, help="where to write every number")
    parser.add_argument("--seed", type=int, default=SEED, help="the dropout seed")
    parser.add_argument("--seqs", type=int, nargs="+", default=list(SEQS))
    parser.add_argument("--ratio-bound", type=float, default=ar.RATIO_BOUND)
    parser.add_argument("--dry-run", action="store_true",
                        help="no GPU: check the mask rule and reference against weft-run")
    parser.add_argument("--build", default=os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "build"))
    return parser.parse_args(argv)


def main(argv=None):
    opts = parse_args(argv)
    if opts.dry_run:
        return dry_run(opts)
    if not opts.kernels:
        print("error: --kernels DIR is required (scripts/check-kernels OUT_DIR writes "
              "OUT_DIR/dropout)")
        return 1
    return run_gpu(opts)


if __name__ == "__main__":
    sys.exit(main())
