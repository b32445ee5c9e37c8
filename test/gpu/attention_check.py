#!/usr/bin/env python3
"""H100 correctness sweep of Weft's flash-attention kernels: forward and
backward against a float64 reference, judged against PyTorch SDPA's own error
in the same dtype, with NaN-poisoned and guarded outputs. See README.md:

    PYTHONPATH=python python3 test/gpu/attention_check.py --kernels DIR [--json FILE]
"""
import argparse
import os
import re
import sys
import threading
import time
import traceback

import torch

from weft.gpu import attention_reference as ar
from weft.gpu import kernel_units as ku
from weft.gpu.poison import Poisoned
from weft.gpu.progress import ContextLost, Deadline, add_deadline_option, check_context
from weft.gpu.results import write_json

OUTPUTS = ("out", "lse", "delta", "dq", "dk", "dv")


class Watchdog:
    """A kernel that never finishes would hang the one device run with nothing
    said; this names the point, saves the JSON and ends the process instead."""

    def __init__(self, limit, on_hang):
        self.limit, self.on_hang = limit, on_hang
        self.label, self.since = None, 0.0
        self.lock = threading.Lock()
        if limit:
            threading.Thread(target=self._watch, daemon=True).start()

    def start(self, label):
        with self.lock:
            self.label, self.since = label, time.monotonic()

    def stop(self):
        with self.lock:
            self.label = None

    def _watch(self):
        while True:
            time.sleep(1.0)
            with self.lock:
                label = self.label
                hung = label is not None and time.monotonic() - self.since > self.limit
            if hung:
                self.on_hang(label)
                os._exit(1)


def synchronize(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def stream_handle(device):
    return torch.cuda.current_stream().cuda_stream if torch.device(device).type == "cuda" else 0


def layout_inputs(layout, q, k, v, dout):
    """The kernels' inputs for `layout` from [b, h, s, d] tensors: as they
    are, [b, s, h, d] contiguous copies, or q, k, v packed into one
    [b, s, hq + 2 hkv, d] tensor (each name then maps to its start)."""
    if layout == "head_major":
        return dict(q=q, k=k, v=v, dout=dout)
    q_s, k_s, v_s = (x.transpose(1, 2).contiguous() for x in (q, k, v))
    dout_s = dout.transpose(1, 2).contiguous()
    if layout == "seq_major":
        return dict(q=q_s, k=k_s, v=v_s, dout=dout_s)
    if layout == "packed_grouped":
        # Per kv head: its g q heads, then k, then v ([b, s, hkv, g + 2, d]).
        b, s, hkv, d = k_s.shape
        g = q_s.shape[2] // hkv
        qkv = torch.cat([q_s.reshape(b, s, hkv, g, d), k_s.unsqueeze(3), v_s.unsqueeze(3)],
                        dim=3).reshape(b, s, (g + 2) * hkv, d).contiguous()
    else:
        qkv = torch.cat([q_s, k_s, v_s], dim=2).contiguous()
    return dict(q=qkv, k=qkv, v=qkv, dout=dout_s, qkv=qkv)


def packed_views(packed, layout, hq, hkv):
    """dq, dk, dv ([b, s, h, d]) of a packed gradient in `layout`."""
    if layout == "packed":
        return packed[:, :, :hq], packed[:, :, hq:hq + hkv], packed[:, :, hq + hkv:]
    b, s, _, d = packed.shape
    g = hq // hkv
    grouped = packed.view(b, s, hkv, g + 2, d)
    return (grouped[:, :, :, :g].reshape(b, s, hq, d), grouped[:, :, :, g],
            grouped[:, :, :, g + 1])


def run_weft(rt, forward, backward, point, q, k, v, dout, device, guarded=True, times=None,
             layout="head_major"):
    """Weft's forward, then its backward on Weft's own out and lse (as a
    training step runs them). forward/backward: kernel_units.LoadedUnit;
    q, k, v, dout [b, h, s, d], laid out for `layout` here. Returns
    ({buffer: Poisoned}, {output: its [b, h, s, d] view}, [launch records]):
    the buffers are what the kernels wrote (every element must be written:
    a packed dqkv as a whole), the views what the reference grades."""
    b, hq, hkv, s, d = point.batch, point.q_heads, point.kv_heads, point.seq, point.head_dim
    dtype = q.dtype
    seq_first = layout != "head_major"
    # [b, h, s, d] shapes of the kernels' tensors in this layout, and the
    # view back to [b, h, s, d].
    def shape(heads):
        return (b, s, heads, d) if seq_first else (b, heads, s, d)

    def view(t):
        return t.transpose(1, 2) if seq_first else t

    inputs = layout_inputs(layout, q, k, v, dout)
    bufs = {"out": Poisoned(shape(hq), dtype, device, guarded),
            "lse": Poisoned((b, hq, s), torch.float32, device, guarded)}
    values = dict(point.shapes, scale=point.scale, q=inputs["q"], k=inputs["k"], v=inputs["v"])
    stream = stream_handle(device)
    t0 = time.perf_counter()
    values.update(out=bufs["out"].tensor, lse=bufs["lse"].tensor)
    launched = forward.launch(rt, values, point.shapes, stream)
    synchronize(device)
    t1 = time.perf_counter()
    views = {"out": view(bufs["out"].tensor), "lse": bufs["lse"].tensor}
    if layout.startswith("packed"):
        bufs["dqkv"] = Poisoned((b, s, hq + 2 * hkv, d), dtype, device, guarded)
        packed = bufs["dqkv"].tensor
        grads = {"dq": packed, "dk": packed, "dv": packed}
        # Graded after the backward: a grouped dq is a copy, not a view.
    else:
        bufs["dq"] = Poisoned(shape(hq), dtype, device, guarded)
        bufs["dk"] = Poisoned(shape(hkv), dtype, device, guarded)
        bufs["dv"] = Poisoned(shape(hkv), dtype, device, guarded)
        grads = {name: bufs[name].tensor for name in ("dq", "dk", "dv")}
        views.update({name: view(bufs[name].tensor) for name in ("dq", "dk", "dv")})
    for name, _ in backward.unit.workspaces:
        floats = ku.workspace_floats(backward.unit, b, hq, s, s)
        bufs[name] = Poisoned((floats,), torch.float32, device, guarded)
        views[name] = bufs[name].tensor[:b * hq * s].view(b, hq, s)
    values.update(grads, dout=inputs["dout"])
    values.update({name: bufs[name].tensor for name, _ in backward.unit.workspaces})
    launched += backward.launch(rt, values, point.shapes, stream)
    synchronize(device)
    if layout.startswith("packed"):
        dq, dk, dv = packed_views(bufs["dqkv"].tensor, layout, hq, hkv)
        views.update(dq=view(dq), dk=view(dk), dv=view(dv))
    if times is not None:
        times["weft_fwd"] = t1 - t0
        times["weft_bwd"] = time.perf_counter() - t1
    return bufs, views, launched


class Loader:
    """Loads each unit once through the runtime; remembers a failed load so
    every point of that configuration reports the same message."""

    def __init__(self, rt):
        self.rt, self.loaded = rt, {}

    def get(self, unit):
        # By cubin: units of other layouts or MMA kinds, in other
        # directories, share names (bf16_d128_causal_attention_0).
        key = os.path.abspath(unit.cubin_path)
        if key not in self.loaded:
            try:
                self.loaded[key] = ku.LoadedUnit(self.rt, unit)
            except Exception as e:  # the binding's WeftError, or a bad cubin path
                self.loaded[key] = e
        result = self.loaded[key]
        if isinstance(result, Exception):
            raise RuntimeError(f"loading unit {unit.name} ({unit.cubin_path}) failed: {result}")
        return result


def variants_for(groups, point):
    return sorted(key for key in groups if key[:3] == (point.dtype, point.head_dim, point.causal))


def layout_of(group):
    return next(iter(group.values())).layout


def written(name, buf, views):
    """What a buffer's kernels must write: the whole tensor, but of the
    backward's workspace only delta (with the atomic dQ the f32 accumulator
    follows at a 256-byte boundary; the bytes between are never written)."""
    return views[name] if name == "delta" else buf.tensor


def compare_weft(bufs, views, ref, sdpa_err, dout, lse_tol, ratio_bound):
    """Errors (of the [b, h, s, d] views), non-finite counts and guards (of
    the whole buffers) of Weft's outputs; the verdict."""
    weft_err, weft_rel = {}, {}
    for name in ar.GRADED:
        weft_err[name], weft_rel[name] = ar.error_of(views[name], ref[name])
    lse_err, _ = ar.error_of(views["lse"], ref["lse"])
    nonfinite = {name: ar.nonfinite_count(written(name, buf, views))
                 for name, buf in bufs.items()}
    guards = {name: buf.guard_violations() for name, buf in bufs.items()}
    passed, reasons, ratios = ar.judge(weft_err, sdpa_err, lse_err, nonfinite, lse_tol,
                                       ratio_bound)
    for name, count in guards.items():
        if count:
            passed = False
            reasons.append(f"{name}: {count} guard elements overwritten (a write out of bounds)")
    delta_err = None
    if "delta" in bufs:
        # Reported, not judged: a wrong delta already shows in dq and dk.
        delta_ref = (dout.to(torch.float64) * views["out"].to(torch.float64)).sum(-1)
        delta_err = ar.error_of(views["delta"], delta_ref)[0]
    return {"weft_err": weft_err, "weft_rel": weft_rel, "lse_err": lse_err, "ratios": ratios,
            "nonfinite": nonfinite, "guard_violations": guards, "delta_err": delta_err,
            "passed": passed, "reasons": reasons}


def run_point(rt, loader, groups, point, device, opts):
    """One sweep point: inputs, f64 reference, SDPA, then each kernel variant
    of the point's configuration. Returns its JSON record."""
    record = {"name": point.name, "point": vars_of(point), "variants": [], "times": {}}
    times = record["times"]
    variants = variants_for(groups, point)
    if not variants:
        record.update(status="FAIL", reasons=[f"no units for {point.dtype} d{point.head_dim} "
                                              f"{'causal' if point.causal else 'full'} in the "
                                              f"kernels directory"])
        return record
    if torch.device(device).type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    q, k, v, dout = ar.make_inputs(point, device)
    synchronize(device)
    times["inputs"] = time.perf_counter() - t
    t = time.perf_counter()
    ref = ar.reference_f64(q, k, v, dout, point.causal, point.scale, opts.reference_chunk_bytes)
    synchronize(device)
    times["reference"] = time.perf_counter() - t
    t = time.perf_counter()
    sdpa, record["sdpa_gqa"] = ar.sdpa_in_dtype(q, k, v, dout, point.causal, point.scale,
                                               opts.sdpa_gqa)
    sdpa_err, sdpa_rel = {}, {}
    for name in ar.GRADED:
        sdpa_err[name], sdpa_rel[name] = ar.error_of(sdpa[name], ref[name])
    del sdpa
    synchronize(device)
    times["sdpa"] = time.perf_counter() - t
    record.update(sdpa_err=sdpa_err, sdpa_rel=sdpa_rel)
    passed_all, reasons_all = True, []
    for key in variants:
        unit_fwd, unit_bwd = groups[key].get("forward"), groups[key].get("backward")
        variant = {"config": ku.pair_name(groups[key])}
        record["variants"].append(variant)
        if unit_fwd is None or unit_bwd is None:
            missing = "forward" if unit_fwd is None else "backward"
            variant.update(passed=False, reasons=[f"{variant['config']}: no {missing} unit"])
        else:
            variant["units"] = [unit_fwd.name, unit_bwd.name]
            try:
                bufs, views, variant["launches"] = run_weft(
                    rt, loader.get(unit_fwd), loader.get(unit_bwd), point, q, k, v, dout,
                    device, guarded=True, times=times, layout=layout_of(groups[key]))
            except Exception as e:
                variant.update(passed=False, reasons=[f"launch failed: {e}"])
                check_context(device)
            else:
                t = time.perf_counter()
                variant.update(compare_weft(bufs, views, ref, sdpa_err, dout, opts.lse_tol,
                                            opts.ratio_bound))
                del bufs, views
                times["compare"] = times.get("compare", 0.0) + time.perf_counter() - t
        passed_all &= variant["passed"]
        reasons_all += variant["reasons"]
    del q, k, v, dout, ref
    if torch.device(device).type == "cuda":
        record["peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
    record.update(status="PASS" if passed_all else "FAIL", reasons=reasons_all)
    return record


def vars_of(point):
    return {"batch": point.batch, "q_heads": point.q_heads, "kv_heads": point.kv_heads,
            "seq": point.seq, "head_dim": point.head_dim, "causal": point.causal,
            "dtype": point.dtype}


def point_line(record):
    head = f"{record['status']:4} {record['name']}"
    parts = []
    for variant in record.get("variants", []):
        if "weft_err" not in variant:
            continue
        cells = [f"{n} {variant['weft_err'][n]:.2e}/{record['sdpa_err'][n]:.2e} "
                 f"x{variant['ratios'][n]:.2f}" for n in ar.GRADED]
        cells.append(f"lse {variant['lse_err']:.1e}")
        prefix = f"[{variant['config']}] " if len(record["variants"]) > 1 else ""
        parts.append(prefix + " | ".join(cells))
    times = record.get("times", {})
    timing = " ".join(f"{k} {v:.2f}s" for k, v in times.items())
    line = head + ("  " + "  ".join(parts) if parts else "") + (f"  ({timing})" if timing else "")
    for reason in record.get("reasons", []):
        line += f"\n       {reason}"
    return line


def summarize(records):
    """Counts and the worst weft/sdpa ratio per graded output, with its point."""
    summary = {"points": len(records),
               "passed": sum(r["status"] == "PASS" for r in records),
               "failed": sum(r["status"] == "FAIL" for r in records),
               "not_run": sum(r["status"] == "NOT RUN" for r in records),
               "worst_ratio": {}, "worst_lse_err": None, "phase_seconds": {}}
    for r in records:
        for phase, seconds in r.get("times", {}).items():
            summary["phase_seconds"][phase] = summary["phase_seconds"].get(phase, 0.0) + seconds
        for variant in r.get("variants", []):
            for name, ratio in variant.get("ratios", {}).items():
                worst = summary["worst_ratio"].get(name)
                if worst is None or ratio > worst[0]:
                    summary["worst_ratio"][name] = (ratio, r["name"])
            if "lse_err" in variant:
                worst = summary["worst_lse_err"]
                if worst is None or variant["lse_err"] > worst[0]:
                    summary["worst_lse_err"] = (variant["lse_err"], r["name"])
    summary["peak_gib"] = max((r.get("peak_gib", 0.0) for r in records), default=0.0)
    return summary


def print_summary(summary, lse_tol, ratio_bound):
    print(f"\n== {summary['points']} points: {summary['passed']} passed, {summary['failed']} "
          f"failed, {summary['not_run']} not run (bound: weft err <= {ratio_bound:g} x sdpa err; "
          f"lse abs err <= {lse_tol:.1e}; no NaN/inf; guards intact)")
    for name in ar.GRADED:
        if name in summary["worst_ratio"]:
            ratio, where = summary["worst_ratio"][name]
            print(f"   worst {name:3} ratio {ratio:.3f}  at {where}")
    if summary["worst_lse_err"]:
        err, where = summary["worst_lse_err"]
        print(f"   worst lse abs err {err:.2e}  at {where}")
    phases = "  ".join(f"{k} {v:.1f}s" for k, v in summary["phase_seconds"].items())
    print(f"   time by phase: {phases}")
    print(f"   peak GPU memory of a point: {summary['peak_gib']:.1f} GiB")


def select_points(opts):
    points = ar.quick_sweep() if opts.quick else ar.full_sweep()
    if opts.points:
        pattern = re.compile(opts.points)
        points = [p for p in points if pattern.search(p.name)]
    return points


def sanitize_points(groups, pattern):
    """b=1, hq=4, hkv=2 at s=77 (ragged tiles) and s=128, per configuration."""
    configs = sorted({key[:3] for key in groups})
    points = [ar.SweepPoint(1, 4, 2, s, d, causal, dtype)
              for dtype, d, causal in configs for s in (77, 128)]
    return [p for p in points if not pattern or re.search(pattern, p.name)]


def run_sanitize(rt, loader, groups, opts, device):
    """One small forward + backward per unit; only a NaN check, so the process
    is quick under compute-sanitizer. Returns the number of failures."""
    failures = 0
    for point in sanitize_points(groups, opts.points):
        for key in variants_for(groups, point):
            label = f"{point.name} [{ku.pair_name(groups[key])}]"
            try:
                fwd, bwd = groups[key].get("forward"), groups[key].get("backward")
                if fwd is None or bwd is None:
                    raise RuntimeError("the configuration lacks a "
                                       f"{'forward' if fwd is None else 'backward'} unit")
                q, k, v, dout = ar.make_inputs(point, device)
                bufs, views, _ = run_weft(rt, loader.get(fwd), loader.get(bwd), point, q, k,
                                          v, dout, device, guarded=False,
                                          layout=layout_of(groups[key]))
                bad = {n: ar.nonfinite_count(written(n, b, views)) for n, b in bufs.items()}
                bad = {n: c for n, c in bad.items() if c}
                if bad:
                    raise RuntimeError(f"NaN/inf elements: {bad}")
                print(f"ok   {label}", flush=True)
            except ContextLost:
                raise
            except Exception as e:
                failures += 1
                print(f"FAIL {label}: {e}", flush=True)
                check_context(device)
    return failures


def time_layouts(rt, loader, groups, opts):
    """Forward + backward of each pair at opts.time (B,H,S,D; bf16, every
    causal setting the units have), median of CUDA-event timings over
    opts.time_iters runs after 3 warm-ups; the layouts' inputs are built
    once, outside the timing. Prints one line per pair and returns them."""
    b, h, s, d = (int(x) for x in opts.time.split(","))
    rows = []
    for key in sorted(groups):
        group = groups[key]
        if key[1] != d or "forward" not in group or "backward" not in group:
            continue
        point = ar.SweepPoint(b, h, h, s, d, key[2], key[0])
        q, k, v, dout = ar.make_inputs(point, opts.device)
        fwd, bwd = loader.get(group["forward"]), loader.get(group["backward"])
        layout = layout_of(group)
        samples = []
        for i in range(3 + opts.time_iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            inputs = layout_inputs(layout, q, k, v, dout)
            out = torch.empty((b, s, h, d) if layout != "head_major" else (b, h, s, d),
                              dtype=q.dtype, device=opts.device)
            lse = torch.empty((b, h, s), dtype=torch.float32, device=opts.device)
            delta = torch.empty_like(lse)
            if layout.startswith("packed"):
                dqkv = torch.empty_like(inputs["qkv"])
                grads = dict(dq=dqkv, dk=dqkv, dv=dqkv)
            else:
                grads = {n: torch.empty_like(inputs[n[1:]]) for n in ("dq", "dk", "dv")}
            values = dict(point.shapes, scale=point.scale, q=inputs["q"], k=inputs["k"],
                          v=inputs["v"], dout=inputs["dout"], out=out, lse=lse, delta=delta,
                          **grads)
            stream = stream_handle(opts.device)
            torch.cuda.synchronize()
            start.record()
            fwd.launch(rt, values, point.shapes, stream)
            bwd.launch(rt, values, point.shapes, stream)
            end.record()
            torch.cuda.synchronize()
            if i >= 3:
                samples.append(start.elapsed_time(end))
        samples.sort()
        ms = samples[len(samples) // 2]
        # The forward is 2 matmuls of 2 b h s^2 d FLOPs, the backward 5: 3.5x.
        flops = 4 * b * h * s * s * d * (0.5 if key[2] else 1.0) * 3.5
        row = {"pair": ku.pair_name(group), "layout": layout, "mma": group["forward"].mma,
               "ms": ms, "tflops": flops / ms / 1e9}
        rows.append(row)
        print(f"time b={b} h={h} s={s} d={d}: {row['pair']}: fwd+bwd {ms:.3f} ms "
              f"({row['tflops']:.0f} TFLOP/s)", flush=True)
        del q, k, v, dout
    by_problem = {}
    for row in rows:
        by_problem.setdefault((row["pair"].split(" ")[0], row["mma"]), []).append(row)
    for (problem, mma), entries in by_problem.items():
        base = next((r for r in entries if r["layout"] == "head_major"), None)
        for r in entries:
            if base and r is not base:
                print(f"time {problem} {mma}: {r['layout']} / head_major = "
                      f"{r['ms'] / base['ms']:.3f} ({r['ms']:.3f} vs {base['ms']:.3f} ms)")
    return rows


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--kernels", help="directory made by scripts/check-kernels")
    p.add_argument("--json", help="write every number here (rewritten after each point)")
    p.add_argument("--quick", action="store_true",
                   help="b=1, s in {128, 1000}, kv heads 16 and 4, every dtype/d/causal")
    p.add_argument("--points", help="regex on point names, e.g. 'bf16-d128-causal.*s8192'")
    p.add_argument("--list", action="store_true", help="print the selected points and exit")
    p.add_argument("--sanitize-config", action="store_true",
                   help="one small launch of each unit (for compute-sanitizer)")
    add_deadline_option(p, "points")
    p.add_argument("--lse-tol", type=float, default=ar.LSE_ABS_TOL)
    p.add_argument("--ratio-bound", type=float, default=ar.RATIO_BOUND)
    p.add_argument("--sdpa-gqa", choices=("auto", "native", "repeat"), default="auto",
                   help="how SDPA does GQA: enable_gqa, or k/v repeated (auto: native if any)")
    p.add_argument("--reference-chunk-bytes", type=int, default=ar.REFERENCE_CHUNK_BYTES)
    p.add_argument("--point-timeout", type=float, default=180.0,
                   help="seconds one point may take before the run is declared hung")
    p.add_argument("--device", default="cuda")
    p.add_argument("--layout", choices=ku.LAYOUTS + ("all",), default="head_major",
                   help="the units of this layout (their JSON config \"layout\"); all: each "
                        "point runs every layout's pair")
    p.add_argument("--split-mma", action="store_true",
                   help="pair warp and warpgroup units of one problem apart, so a point "
                        "runs both")
    p.add_argument("--time", metavar="B,H,S,D",
                   help="after the checks, time each pair's forward + backward at this "
                        "b, q heads (= kv heads), s, d for the selected dtype/causal units")
    p.add_argument("--time-iters", type=int, default=20)
    return p.parse_args(argv)


def describe_units(units, notes):
    for unit in units:
        regs = ", ".join(f"{k.role} {k.registers} regs spill {k.spill_store_bytes}/"
                         f"{k.spill_load_bytes}B smem {k.dynamic_smem_bytes}B"
                         for k in unit.kernels)
        print(f"unit {unit.name}: {ku.config_name(unit.config_key)} {unit.direction} "
              f"{unit.arch}: {regs}")
    for note in notes:
        print(f"note: {note}")


def init_runtime(device):
    """The runtime binding, on the device (and primary context) torch uses."""
    torch.zeros(1, device=device)  # torch makes the primary context current first
    try:
        import weft.runtime as rt
        rt.init()
        rt.context_ensure(torch.device(device).index or torch.cuda.current_device())
    except Exception as e:
        print(f"error: the Weft runtime binding (python/weft/runtime.py, build/lib/"
              f"libweft_runtime.so) does not start: {e!r}")
        return None
    return rt


def main(argv=None):
    opts = parse_args(argv)
    if opts.list:
        for point in select_points(opts):
            print(point.name)
        return 0
    if not opts.kernels:
        print("error: --kernels DIR is required (make it with scripts/check-kernels DIR)")
        return 1
    try:
        units = ku.load_units(opts.kernels)
    except ku.UnitError as e:
        print(f"error: {e}")
        return 1
    if opts.layout != "all":
        units = [u for u in units if u.layout == opts.layout]
        if not units:
            print(f"error: no {opts.layout} units under {opts.kernels}")
            return 1
    groups, notes = ku.group_by_problem(units, by_layout=opts.layout == "all",
                                        by_mma=opts.split_mma)
    describe_units(units, notes)
    if not torch.cuda.is_available():
        print("error: torch sees no CUDA device")
        return 1
    rt = init_runtime(opts.device)
    if rt is None:
        return 1
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    arch = getattr(rt, "device_arch", lambda: "?")()
    print(f"device {props.name} ({arch}), torch {torch.__version__} (CUDA {torch.version.cuda}), "
          f"SDPA enable_gqa {'yes' if ar.SDPA_HAS_GQA else 'no'}, scale arg "
          f"{'yes' if ar.SDPA_HAS_SCALE else 'no'}", flush=True)
    loader = Loader(rt)
    if opts.sanitize_config:
        try:
            failures = run_sanitize(rt, loader, groups, opts, opts.device)
        except ContextLost as e:
            print(f"FAIL the CUDA context is lost: {e}")
            return 1
        print(f"== sanitize-config: {failures} failures")
        return 1 if failures else 0
    points = select_points(opts)
    report = {"device": props.name, "arch": arch, "torch": torch.__version__,
              "torch_cuda": torch.version.cuda, "kernels_dir": os.path.abspath(opts.kernels),
              "lse_tol": opts.lse_tol, "ratio_bound": opts.ratio_bound,
              "units": [{"name": u.name, "config": ku.config_name(u.config_key),
                         "direction": u.direction,
                         "kernels": [vars(k) for k in u.kernels]} for u in units],
              "notes": notes, "points": []}
    deadline = Deadline(opts.deadline)
    lost = None

    def on_hang(name):
        print(f"FAIL {name}: no progress in {opts.point_timeout:g}s (a kernel that never "
              f"finishes?); stopping the sweep", flush=True)
        report["points"].append({"name": name, "status": "FAIL",
                                 "reasons": [f"hung for {opts.point_timeout:g}s"]})
        report["summary"] = summarize(report["points"])
        write_json(opts.json, report)

    watchdog = Watchdog(opts.point_timeout, on_hang)
    for i, point in enumerate(points):
        if lost or deadline.passed():
            why = f"the CUDA context was lost ({lost})" if lost else \
                f"the {opts.deadline:g}s deadline passed"
            record = {"name": point.name, "point": vars_of(point), "status": "NOT RUN",
                      "reasons": [why]}
        else:
            watchdog.start(point.name)
            try:
                record = run_point(rt, loader, groups, point, opts.device, opts)
            except ContextLost as e:
                lost = str(e).splitlines()[0] if str(e) else "unknown error"
                record = {"name": point.name, "point": vars_of(point), "status": "FAIL",
                          "reasons": [f"the CUDA context was lost: {e}"]}
            except Exception as e:
                record = {"name": point.name, "point": vars_of(point), "status": "FAIL",
                          "reasons": [f"harness error: {e!r}",
                                      traceback.format_exc().strip().splitlines()[-3]]}
                try:
                    check_context(opts.device)
                except ContextLost as lost_error:
                    lost = str(lost_error).splitlines()[0]
            watchdog.stop()
            if torch.device(opts.device).type == "cuda":
                torch.cuda.empty_cache()
        report["points"].append(record)
        print(f"[{i + 1}/{len(points)}] {point_line(record)}", flush=True)
        report["summary"] = summarize(report["points"])
        write_json(opts.json, report)
    summary = summarize(report["points"])
    summary["wall_seconds"] = deadline.elapsed()
    report["summary"] = summary
    write_json(opts.json, report)
    print_summary(summary, opts.lse_tol, opts.ratio_bound)
    print(f"   wall {summary['wall_seconds']:.1f}s")
    if opts.time:
        report["timing"] = time_layouts(rt, loader, groups, opts)
        write_json(opts.json, report)
    ok = summary["passed"] == summary["points"]
    print("== PASS" if ok else "== FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
