#!/usr/bin/env python3
"""GPU check of Weft's split-KV decode kernels (flash decoding) on an H100.

  python test/gpu/decode_check.py DIR [--time] [--json FILE] [--points REGEX]
                                      [--time-points REGEX]

DIR holds the units `scripts/decode-units DIR` writes on the build machine
(json + cubin; python + torch + the driver are all this needs): one per point of

    dtype {bf16, f16} x head_dim {64, 128, 256} x causal (bottom-right) and not
    x batch {1, 8, 64} x q rows {1, 4} x cache {4k, 16k, 32k, 128k}, 32 q
    heads over 4 kv heads (GQA 8:1), without batch 64 x 128k at head_dim 256
                                                                 (280 points)

For each point, with fresh random q, k, v ~ N(0, 1) in the dtype and scale
1/sqrt(d): a float64 reference of out and lse (per (batch, kv head), the
q heads of the group together), PyTorch SDPA in the dtype (enable_gqa, the
bottom-right mask as a boolean attn_mask), and Weft's two kernels launched
through weft.gpu.decode_units with out, lse and the split workspace filled
with NaN inside sentinel guards. A point passes when Weft's max |out - f64|
is at most 2x SDPA's (plus 1e-6 for outputs that round exactly), its max
|lse - f64| at most 2e-3, no NaN/inf is left in out or lse and no guard
changed. Before the sweep, launches with a wrong dtype, shape, layout,
alignment, lse dtype and workspace must be refused with a message
(LaunchRefused), never launched. --deadline SECONDS (whole run) reports the
points it had no time for as NOT RUN (a failure) and the timings as NOT TIMED.

--time: per point, the median over --iters runs (CUDA events around 20
back-to-back launches queued behind a GPU sleep, so host overhead is not
timed) of Weft's two kernels (the combine kernel a programmatic dependent
launch, as the unit's C launcher does it; "plain": launched plainly), of its
split kernel alone and of SDPA
(enable_gqa, same mask), as achieved K+V read bandwidth (bytes of K and V /
time) beside the device copy bandwidth (a 1 GiB torch copy, read + write
bytes / time), printed as a table and kept in the --json file's "timings"
(--time-points REGEX: only the points it matches); "L2" marks caches
small enough (< 40 MiB of K+V) to stay in the 50 MB L2 between launches,
where both sides read from L2.
Exit 1 on any failure.
"""
import argparse
import json
import math
import os
import re
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "python"))
from weft.gpu.decode_units import DecodeUnit, LaunchRefused, find_decode_units  # noqa: E402
from weft.gpu.poison import Poisoned  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
Q_HEADS, KV_HEADS = 32, 4
LSE_TOL = 2e-3
RATIO_BOUND = 2.0
ABS_FLOOR = 1e-6


def point_name(u):
    c, s = u["config"], u["shapes"]
    return (f"{c['dtype']}-d{c['head_dim']}-{'causal' if c['causal'] else 'full'}-"
            f"b{s['batch']}-q{s['q_len']}-k{s['k_len']}")


def bottom_right_mask(q_len, k_len, device):
    """True where query i may see key j: j <= i + k_len - q_len."""
    i = torch.arange(q_len, device=device).view(-1, 1)
    j = torch.arange(k_len, device=device).view(1, -1)
    return j <= i + (k_len - q_len)


def reference(q, k, v, scale, causal):
    """float64 out [b, hq, sq, d] and lse [b, hq, sq], per (batch, kv head)."""
    b, hq, sq, d = q.shape
    hkv, sk = k.shape[1], k.shape[2]
    g = hq // hkv
    out = torch.empty(q.shape, dtype=torch.float64, device=q.device)
    lse = torch.empty((b, hq, sq), dtype=torch.float64, device=q.device)
    mask = bottom_right_mask(sq, sk, q.device) if causal else None
    for bi in range(b):
        for h in range(hkv):
            kk = k[bi, h].double()
            vv = v[bi, h].double()
            qq = q[bi, h * g:(h + 1) * g].double()           # [g, sq, d]
            scores = torch.matmul(qq, kk.t()) * scale          # [g, sq, sk]
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            row_lse = torch.logsumexp(scores, dim=-1)
            out[bi, h * g:(h + 1) * g] = torch.matmul(torch.exp(scores - row_lse[..., None]), vv)
            lse[bi, h * g:(h + 1) * g] = row_lse
            del kk, vv, scores
    return out, lse


def sdpa(q, k, v, scale, mask):
    """PyTorch's SDPA in the inputs' dtype; `mask` (bool, True = visible) or None."""
    try:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale,
                                              enable_gqa=True)
    except TypeError:  # a PyTorch without enable_gqa: repeat the kv heads
        g = q.shape[1] // k.shape[1]
        return F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1),
                                              v.repeat_interleave(g, 1), attn_mask=mask,
                                              scale=scale)


def mask_of(unit):
    s = unit.shapes
    return bottom_right_mask(s["q_len"], s["k_len"], "cuda") if unit.config["causal"] else None


def refusals(unit):
    """Wrong dtype, shape, layout and workspace: each must raise LaunchRefused."""
    s = unit.shapes
    dtype = DTYPES[unit.config["dtype"]]
    other = torch.float16 if dtype == torch.bfloat16 else torch.bfloat16
    q = torch.zeros(s["batch"], s["q_heads"], s["q_len"], s["head_dim"], dtype=dtype, device="cuda")
    k = torch.zeros(s["batch"], s["kv_heads"], s["k_len"], s["head_dim"], dtype=dtype, device="cuda")
    out = torch.empty_like(q)
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device="cuda")
    ws = torch.empty(unit.workspace_bytes, dtype=torch.uint8, device="cuda")
    good = {"q": q, "k": k, "v": k, "out": out, "lse": lse}
    bad = {
        "dtype": (dict(good, q=q.to(other)), ws),
        "shape": (dict(good, k=k[:, :, :-8]), ws),
        # k_len > 1, so the seq-major copy viewed as [b, h, s, d] is not contiguous.
        "layout (seq_major k)": (dict(good, k=k.transpose(1, 2).contiguous().transpose(1, 2)), ws),
        # v two bytes past a 16-byte boundary: the 16-byte loads would fault.
        "alignment": (dict(good, v=torch.empty(k.numel() + 1, dtype=dtype, device="cuda")[1:]
                           .view(k.shape)), ws),
        "lse dtype": (dict(good, lse=lse.to(dtype)), ws),
        "workspace": (good, ws[:-16]),
    }
    failures = []
    for what, (tensors, workspace) in bad.items():
        try:
            unit.launch(tensors, workspace)
            failures.append(f"a wrong {what} was launched")
        except LaunchRefused as refused:
            print(f"  refused ({what}): {refused}")
    torch.cuda.synchronize()
    return failures


def run_point(unit, seed):
    s, c = unit.shapes, unit.config
    dtype = DTYPES[c["dtype"]]
    gen = torch.Generator(device="cuda").manual_seed(seed)
    shape_q = (s["batch"], s["q_heads"], s["q_len"], s["head_dim"])
    shape_kv = (s["batch"], s["kv_heads"], s["k_len"], s["head_dim"])
    q = torch.randn(shape_q, generator=gen, device="cuda").to(dtype)
    k = torch.randn(shape_kv, generator=gen, device="cuda").to(dtype)
    v = torch.randn(shape_kv, generator=gen, device="cuda").to(dtype)
    scale = s["scale"]
    ref_out, ref_lse = reference(q, k, v, scale, c["causal"])
    # Per batch element: the math backend repeats k and v per q head.
    mask = mask_of(unit)
    sdpa_err = max((sdpa(q[i:i + 1], k[i:i + 1], v[i:i + 1], scale, mask).double()
                    - ref_out[i:i + 1]).abs().max().item() for i in range(s["batch"]))
    out = Poisoned(shape_q, dtype, "cuda")
    lse = Poisoned(shape_q[:3], torch.float32, "cuda")
    workspace = torch.full((unit.workspace_bytes // 4,), float("nan"), device="cuda").view(torch.uint8)
    unit.launch({"q": q, "k": k, "v": v, "out": out.tensor, "lse": lse.tensor}, workspace)
    torch.cuda.synchronize()
    result = {"point": point_name(unit.meta), "sdpa_err": sdpa_err}
    reasons = []
    for name, buf in (("out", out), ("lse", lse)):
        if not torch.isfinite(buf.tensor).all():
            reasons.append(f"{name} holds NaN/inf (unwritten or broken)")
        if buf.guard_violations():
            reasons.append(f"{name}: {buf.guard_violations()} guard elements changed")
    err = (out.tensor.double() - ref_out).abs().max().item()
    lse_err = (lse.tensor.double() - ref_lse).abs().max().item()
    result.update(err=err, lse_err=lse_err, ratio=err / max(sdpa_err, 1e-30))
    if not err <= RATIO_BOUND * sdpa_err + ABS_FLOOR:
        reasons.append(f"out error {err:.3e} > {RATIO_BOUND} x SDPA's {sdpa_err:.3e}")
    if not lse_err <= LSE_TOL:
        reasons.append(f"lse error {lse_err:.3e} > {LSE_TOL}")
    result["reasons"] = reasons
    return result


def median_ms(fn, iters, batch=20):
    """Median over `iters` runs of `batch` back-to-back calls of fn, each run
    queued behind a GPU sleep so the host's launch overhead is not timed
    (fewer of both for calls over a millisecond)."""
    fn()
    torch.cuda.synchronize()
    begin = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    if time.perf_counter() - begin > 1e-3:
        iters, batch = min(iters, 10), 1
    times = []
    for _ in range(iters):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(4_000_000)
        start.record()
        for _ in range(batch):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / batch)
    return statistics.median(times)


def copy_bandwidth(iters):
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src), max(3, iters // 10), batch=1)
    del src, dst
    return 2 * (1 << 30) / (ms * 1e-3) / 1e9


def time_point(unit, iters):
    s, c = unit.shapes, unit.config
    dtype = DTYPES[c["dtype"]]
    q = torch.randn(s["batch"], s["q_heads"], s["q_len"], s["head_dim"], device="cuda").to(dtype)
    k = torch.randn(s["batch"], s["kv_heads"], s["k_len"], s["head_dim"], device="cuda").to(dtype)
    v = torch.randn_like(k)
    out = torch.empty_like(q)
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device="cuda")
    ws = torch.empty(unit.workspace_bytes, dtype=torch.uint8, device="cuda")
    tensors = {"q": q, "k": k, "v": v, "out": out, "lse": lse}
    kv_bytes = 2 * k.numel() * k.element_size()
    weft_ms = median_ms(unit.prepare(tensors, ws), iters)
    plain_ms = median_ms(unit.prepare(tensors, ws, programmatic=False), iters)
    split_ms = median_ms(unit.prepare(tensors, ws, roles=("decode_split",)), iters)
    try:
        mask = mask_of(unit)
        sdpa_ms = median_ms(lambda: sdpa(q, k, v, s["scale"], mask), iters)
    except RuntimeError as error:  # a backend without this mask / GQA
        print(f"  sdpa: {error}".splitlines()[0])
        sdpa_ms = float("nan")
    return kv_bytes, weft_ms, plain_ms, split_ms, sdpa_ms


_units = {}


def load_unit(meta):
    """One DecodeUnit (one loaded module) per unit name."""
    if meta["name"] not in _units:
        _units[meta["name"]] = DecodeUnit(meta)
    return _units[meta["name"]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("directory")
    parser.add_argument("--time", action="store_true")
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--points", default="")
    parser.add_argument("--time-points", default="")
    parser.add_argument("--json")
    parser.add_argument("--deadline", type=float, default=0.0)
    args = parser.parse_args()
    started = time.time()
    metas = [m for m in find_decode_units(args.directory) if re.search(args.points, point_name(m))]
    if not metas:
        print(f"no decode units in {args.directory} match '{args.points}'")
        return 1
    print(f"{len(metas)} decode units, {torch.cuda.get_device_name()}")
    failures, results = [], []
    first = load_unit(metas[0])
    failures += [f"{first.name}: {f}" for f in refusals(first)]
    for index, meta in enumerate(sorted(metas, key=point_name)):
        name = point_name(meta)
        if args.deadline and time.time() - started > args.deadline:
            print(f"NOT RUN {name} (deadline)")
            failures.append(f"{name}: not run")
            continue
        unit = load_unit(meta)
        r = run_point(unit, seed=1000 + index)
        r["splits"] = unit.decode["num_splits"]
        results.append(r)
        status = "PASS" if not r["reasons"] else "FAIL"
        print(f"{status} {name:36s} splits {r['splits']:4d} err {r['err']:.3e} sdpa {r['sdpa_err']:.3e} "
              f"ratio {r['ratio']:.2f} lse {r['lse_err']:.1e} {'; '.join(r['reasons'])}", flush=True)
        if r["reasons"]:
            failures.append(f"{name}: {'; '.join(r['reasons'])}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"results": results, "failures": failures}, f, indent=1)
    timings = []
    if args.time:
        copy = copy_bandwidth(args.iters)
        print(f"\ndevice copy bandwidth (1 GiB torch copy, read + write): {copy:.0f} GB/s")
        print(f"{'point':36s} {'KV MiB':>8s} {'weft us':>9s} {'GB/s':>7s} {'%copy':>6s} "
              f"{'plain us':>9s} {'split us':>9s} {'sdpa us':>9s} {'GB/s':>7s} {'speedup':>7s}")
        for meta in sorted(metas, key=point_name):
            if not re.search(args.time_points, point_name(meta)):
                continue
            if args.deadline and time.time() - started > args.deadline:
                print(f"NOT TIMED {point_name(meta)} (deadline)")
                continue
            unit = load_unit(meta)
            kv_bytes, weft_ms, plain_ms, split_ms, sdpa_ms = time_point(unit, args.iters)
            timings.append({"point": point_name(meta), "kv_bytes": kv_bytes, "weft_us": weft_ms * 1e3,
                            "plain_us": plain_ms * 1e3, "split_us": split_ms * 1e3,
                            "sdpa_us": sdpa_ms * 1e3, "copy_gbps": copy})
            if args.json:
                with open(args.json, "w") as f:
                    json.dump({"results": results, "failures": failures, "timings": timings},
                              f, indent=1)
            weft_bw = kv_bytes / (weft_ms * 1e-3) / 1e9
            sdpa_bw = kv_bytes / (sdpa_ms * 1e-3) / 1e9 if sdpa_ms == sdpa_ms else float("nan")
            print(f"{point_name(meta):36s} {kv_bytes / 2**20:8.1f} {weft_ms * 1e3:9.1f} "
                  f"{weft_bw:7.0f} {100 * weft_bw / copy:5.0f}% {plain_ms * 1e3:9.1f} "
                  f"{split_ms * 1e3:9.1f} "
                  f"{sdpa_ms * 1e3:9.1f} "
                  f"{sdpa_bw:7.0f} {sdpa_ms / weft_ms:7.2f}"
                  f"{'  L2' if kv_bytes < 40 * 2**20 else ''}", flush=True)
    print(f"\n{len(results)} points run, {len(failures)} failures")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
