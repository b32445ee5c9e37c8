#!/usr/bin/env python3
"""Anchor: FlashInfer's GQA decode attention on one GPU, as K+V read bandwidth.

  python3 bench/flashinfer_decode.py [--json FILE] [--points REGEX] [--deadline S]
      [--jit-only] [--no-fa3] [--iters N] [--dry-list]

Points: dtype {bf16, f16} x head_dim {64, 128} x batch {1, 8, 64} x q rows {1, 4} x
cache {4k, 16k, 32k, 128k}, 32 q heads over 4 kv heads, non-causal, no cache over
12 GiB of K+V (92). K and V (NHD) are read as "paged16" (16-token pages in random
order) and "contig" (sequences back to back: single_*_with_kv_cache at batch 1,
else the ragged prefill wrapper, or pages in order for cuda-core). q rows 1:
BatchDecodeWithPagedKVCacheWrapper, use_tensor_cores False ("cuda-core") and True
("tensor-core", fa2); q rows 4: BatchPrefillWithPagedKVCacheWrapper, fa2 and fa3
(auto's pick on H100). "flashinfer" is the fastest correct variant. q ~ 3 N(0, 1)
makes outputs O(1), so a misuse (max |out - float32 SDPA| >= 2e-2) reads WRONG.

Timing: test/gpu/decode_check.py's median_ms; K+V bytes / time beside a 1 GiB copy.
The JIT modules are built first and apart (MAX_JOBS; FLASHINFER_WORKSPACE_BASE
/tmp/flashinfer-bench unless set); a build cut by --deadline resumes next run, if
flashinfer was not reinstalled (new header mtimes rebuild all). Exit 3: no import
or a JIT build failed; 2: build not finished in time; 1: WRONG/ERROR.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
Q_HEADS, KV_HEADS, PAGE, TOL = 32, 4, 16, 2e-2
torch = None  # imported in main(), after --dry-list


class Point:
    def __init__(self, dtype, d, batch, rows, k_len):
        self.dtype, self.d, self.batch, self.rows, self.k_len = dtype, d, batch, rows, k_len
        self.kv_bytes = 2 * batch * k_len * KV_HEADS * d * 2
        self.name = f"{dtype}-d{d}-b{batch}-q{rows}-k{k_len}"


def all_points():
    points = (Point(t, d, b, r, k) for t in ("bf16", "f16") for d in (64, 128) for b in (1, 8, 64)
              for r in (1, 4) for k in (4096, 16384, 32768, 131072))
    return [p for p in points if p.kv_bytes <= 12 << 30]


def variants(p, fa3):
    names = ("cuda-core", "tensor-core") if p.rows == 1 else ("fa2", "fa3") if fa3 else ("fa2",)
    return [(layout, v) for layout in ("paged16", "contig") for v in names]


def module_key(p, layout, variant):
    """The JIT module a variant runs: (kind, backend, dtype, head_dim)."""
    single = layout == "contig" and p.batch == 1
    if variant == "cuda-core":
        return ("single_decode" if single else "batch_decode", "", p.dtype, p.d)
    backend = "fa2" if variant == "tensor-core" else variant
    return ("single_prefill" if single else "batch_prefill", backend, p.dtype, p.d)


def key_name(key):
    return f"{key[0]}{'-' + key[1] if key[1] else ''}-{key[2]}-d{key[3]}"


def fail(message, error=None):
    print(f"FLASHINFER UNAVAILABLE: {message}")
    if error is not None:
        print("".join(traceback.format_exception(error)[-12:]).rstrip())
    sys.exit(3)


def jit_spec(key):
    """The spec flashinfer's own get_*_module builds for this key (same arguments)."""
    from flashinfer.jit.attention import modules as m
    kind, backend, dtype, d = key
    t = {"bf16": torch.bfloat16, "f16": torch.float16}[dtype]
    if kind == "batch_decode":
        return m.gen_batch_decode_module(t, t, t, torch.int32, d, d, 0, False, False)
    if kind == "single_decode":
        return m.gen_single_decode_module(t, t, t, d, d, 0, False, False)
    if kind == "single_prefill":
        return m.gen_single_prefill_module(backend, t, t, t, d, d, 0, False, False, False)
    gen = m._gen_batch_prefill_primary_module if backend == "fa2" else m.gen_batch_prefill_module
    return gen(backend, t, t, t, torch.int32, d, d, 0, False, False, False)


def prebuild(keys, deadline_at):
    """Runs each module's ninja file in its build dir, as spec.build() does (so the
    .ninja_log is the one flashinfer checks later), four modules at a time.
    Returns {key: last log lines} of the failed ones, or None at the deadline."""
    pending, running, failed = [], [], {}
    for key in keys:
        try:
            spec = jit_spec(key)
            if not spec.jit_library_path.exists():
                spec.write_ninja()
                pending.append((key, spec))
        except Exception as error:  # noqa: BLE001 -- e.g. a backend this GPU lacks
            failed[key] = traceback.format_exception(error)[-3:]
    jobs = str(max(1, int(os.environ["MAX_JOBS"]) // 4))
    while pending or running:
        while pending and len(running) < 4:
            key, spec = pending.pop(0)
            log = open(spec.build_dir / "bench_ninja.log", "w")
            cmd = ["ninja", "-C", str(spec.build_dir), "-f", str(spec.ninja_path), "-j", jobs]
            running.append((key, log, time.time(), subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)))
        time.sleep(0.5)
        if deadline_at and time.time() > deadline_at:
            for *_, proc in running:
                os.killpg(proc.pid, 15)
                proc.wait()
            return None
        for item in [r for r in running if r[3].poll() is not None]:
            running.remove(item)
            key, log, begin, proc = item
            log.close()
            print(f"  JIT {key_name(key)}: {'FAILED' if proc.returncode else 'built'} in "
                  f"{time.time() - begin:.0f} s", flush=True)
            if proc.returncode:
                failed[key] = open(log.name).read().splitlines()[-25:]
    return failed


def reference(q, k_of, v_of, sdpa):
    """float32 SDPA (enable_gqa) per sequence, [batch, rows, 32, d]."""
    out = []
    for b in range(q.shape[0]):
        k, v = (t(b).float().transpose(0, 1).unsqueeze(0) for t in (k_of, v_of))
        o = sdpa(q[b].float().transpose(0, 1).unsqueeze(0), k, v, q.shape[-1] ** -0.5, None)
        out.append(o[0].transpose(0, 1))
    return torch.stack(out)


def make_call(fi, p, layout, variant, q, k, v, perm, wrappers, workspace):
    """Plans one variant; returns a function of no arguments that runs it."""
    b, qf = p.batch, q.view(p.batch * p.rows, Q_HEADS, p.d)
    if layout == "contig" and b == 1:
        k1, v1 = k.view(p.k_len, KV_HEADS, p.d), v.view(p.k_len, KV_HEADS, p.d)
        if p.rows == 1:
            tc = variant == "tensor-core"
            return lambda: fi.single_decode_with_kv_cache(qf[0], k1, v1, kv_layout="NHD",
                                                          use_tensor_cores=tc)
        return lambda: fi.single_prefill_with_kv_cache(qf, k1, v1, causal=False, kv_layout="NHD",
                                                       backend=variant)
    i32 = dict(dtype=torch.int32, device="cuda")
    kw, out = dict(q_data_type=q.dtype, kv_data_type=q.dtype), torch.empty_like(qf)
    qo_indptr, backend = torch.arange(b + 1, **i32) * p.rows, variant.replace("tensor-core", "fa2")
    if variant == "cuda-core" or (p.rows == 1 and layout == "paged16"):
        kind = "decode"
    else:
        kind = "ragged" if layout == "contig" else "paged"
    if (kind, variant) not in wrappers:  # one wrapper per API and variant, planned per point
        if kind == "decode":
            wrappers[kind, variant] = fi.BatchDecodeWithPagedKVCacheWrapper(
                workspace, "NHD", use_tensor_cores=variant == "tensor-core")
        else:
            api = (fi.BatchPrefillWithRaggedKVCacheWrapper if kind == "ragged"
                   else fi.BatchPrefillWithPagedKVCacheWrapper)
            wrappers[kind, variant] = api(workspace, "NHD", backend=backend)
    w = wrappers[kind, variant]
    if kind == "ragged":  # sequences back to back, token offsets
        w.plan(qo_indptr, torch.arange(b + 1, **i32) * p.k_len, Q_HEADS, KV_HEADS, p.d,
               causal=False, **kw)
        return lambda: w.run(qf, k, v, out=out)
    n = p.k_len // PAGE  # pages per sequence: perm's random order, or in order for contig
    indices = perm if layout == "paged16" else torch.arange(b * n, **i32)
    indptr, last = torch.arange(b + 1, **i32) * n, torch.full((b,), PAGE, **i32)
    if kind == "decode":
        w.plan(indptr, indices, last, Q_HEADS, KV_HEADS, p.d, PAGE, **kw)
    else:
        w.plan(qo_indptr, indptr, indices, last, Q_HEADS, KV_HEADS, p.d, PAGE, causal=False, **kw)
    cache = (k.view(-1, PAGE, KV_HEADS, p.d), v.view(-1, PAGE, KV_HEADS, p.d))
    return lambda: w.run(qf, cache, out=out)


def run_point(fi, dc, p, args, state):
    """Times every variant of one point; appends one record per layout to state."""
    dt = {"bf16": torch.bfloat16, "f16": torch.float16}[p.dtype]
    gen = torch.Generator(device="cuda").manual_seed(len(state["records"]) + 1)
    q = (torch.randn(p.batch, p.rows, Q_HEADS, p.d, generator=gen, device="cuda") * 3).to(dt)
    k = torch.randn(p.batch * p.k_len, KV_HEADS, p.d, generator=gen, device="cuda", dtype=dt)
    v = torch.randn(k.shape, generator=gen, device="cuda", dtype=dt)
    n = p.k_len // PAGE  # pages per sequence; logical page j of sequence b is perm[b * n + j]
    perm = torch.randperm(p.batch * n, generator=gen, device="cuda").to(torch.int32)
    views = {"contig": lambda t: lambda b: t.view(p.batch, p.k_len, KV_HEADS, p.d)[b],
             "paged16": lambda t: lambda b: t.view(-1, PAGE, KV_HEADS, p.d)[
                 perm[b * n:(b + 1) * n].long()].reshape(p.k_len, KV_HEADS, p.d)}
    records = {}
    for layout, variant in variants(p, not args.no_fa3):
        if args.deadline and time.time() - state["started"] > args.deadline:
            print(f"NOT TIMED {p.name} {layout} {variant} (deadline)")
            continue
        rec = records.setdefault(layout, dict(
            dtype=p.dtype, head_dim=p.d, batch=p.batch, q_rows=p.rows, k_len=p.k_len, layout=layout,
            kv_bytes=p.kv_bytes, us=None, gbps=None, pct_copy=None, best=None, variants={}))
        r = rec["variants"][variant] = dict(status="ERROR", us=None, gbps=None, err=None)
        key = module_key(p, layout, variant)
        try:
            if "ref" not in rec:
                rec["ref"] = reference(q, views[layout](k), views[layout](v), dc.sdpa)
            if key in state["jit_failed"]:
                raise RuntimeError(f"JIT build of {key_name(key)} failed")
            begin = time.time()
            call = make_call(fi, p, layout, variant, q, k, v, perm, state["wrappers"], state["ws"])
            out = call()
            torch.cuda.synchronize()
            r["first_call_s"] = round(time.time() - begin, 3)  # plan + module load (+ JIT if missed)
            r["err"] = (out.float().reshape(rec["ref"].shape) - rec["ref"]).abs().max().item()
            r["status"] = "OK" if r["err"] < TOL else "WRONG"  # a wrong result is not timed
            if r["status"] == "OK":
                ms = dc.median_ms(call, args.iters)
                r["us"], r["gbps"] = ms * 1e3, p.kv_bytes / (ms * 1e-3) / 1e9
        except Exception as error:  # noqa: BLE001 -- reported per variant, the sweep goes on
            text = "".join(traceback.format_exception_only(error)).strip().replace("\n", " | ")
            r["error"] = text if len(text) < 500 else text[:150] + " ... " + text[-350:]
            if "Ninja build failed" in str(error):
                state["jit_failed"].add(key)
        pct = 100 * r["gbps"] / state["copy_gbps"] if r["gbps"] else 0.0
        if r["status"] == "OK" and (rec["us"] is None or r["us"] < rec["us"]):
            rec.update(us=r["us"], gbps=r["gbps"], best=variant, pct_copy=pct)
        print(f"{p.name:24s} {layout:8s} {variant:11s} {p.kv_bytes / 2**20:9.1f} "
              f"{r.get('first_call_s', 0):6.2f} {r['us'] or 0:9.1f} {r['gbps'] or 0:7.0f} {pct:5.0f}% "
              f"{r['err'] if r['err'] is not None else float('nan'):8.1e} {r['status']}{'  L2' if p.kv_bytes < 40 << 20 else ''} "
              f"{r.get('error', '')}", flush=True)
    for rec in records.values():
        rec.pop("ref", None)
        state["records"].append(rec)
    del q, k, v, records
    torch.cuda.empty_cache()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json")
    parser.add_argument("--points", default="", help="regex on names like bf16-d128-b8-q1-k32768")
    parser.add_argument("--deadline", type=float, default=0.0, help="seconds for the whole run")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--jit-only", action="store_true", help="build the JIT modules and stop")
    parser.add_argument("--no-fa3", action="store_true", help="q rows 4 on fa2 only (less JIT)")
    parser.add_argument("--dry-list", action="store_true", help="print the points, touch no GPU")
    args = parser.parse_args()
    started = time.time()
    points = [p for p in all_points() if re.search(args.points, p.name)]
    keys = sorted({module_key(p, *lv) for p in points for lv in variants(p, not args.no_fa3)},
                  key=lambda k: (k[1] == "fa3", k))  # fa3's slow builds last
    if args.dry_list:
        for p in points:
            print(f"{p.name:24s} K+V {p.kv_bytes / 2**20:9.1f} MiB  "
                  + " ".join(f"{l}/{v}" for l, v in variants(p, not args.no_fa3)))
        print(f"{len(points)} points; {len(keys)} JIT modules: " + ", ".join(map(key_name, keys)))
        return 0
    os.environ.setdefault("FLASHINFER_WORKSPACE_BASE", "/tmp/flashinfer-bench")
    os.environ.setdefault("TVM_FFI_CACHE_DIR", "/tmp/flashinfer-bench/tvm-ffi")
    os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 8))
    if not os.environ.get("CUDA_HOME") and not shutil.which("nvcc"):
        os.environ["CUDA_HOME"] = "/usr/local/cuda"  # flashinfer's own fallback
    nvcc = shutil.which("nvcc") or os.path.join(os.environ["CUDA_HOME"], "bin", "nvcc")
    for tool in (nvcc, "ninja", os.environ.get("CXX", "c++")):
        if not shutil.which(tool):
            fail(f"{tool} not found: the JIT needs nvcc, ninja and a host C++ compiler")
    global torch
    import torch
    sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
    import decode_check as dc
    begin = time.time()
    try:
        import flashinfer as fi
    except Exception as error:  # noqa: BLE001
        fail("import flashinfer failed", error)
    import_s = time.time() - begin
    nvcc_v = (subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip()
              .splitlines() or ["nvcc ?"])[-1]
    print(f"flashinfer {fi.__version__} (import {import_s:.1f} s), torch {torch.__version__} "
          f"(CUDA {torch.version.cuda}), {nvcc_v}, {torch.cuda.get_device_name()}, "
          f"MAX_JOBS={os.environ['MAX_JOBS']}, cache {os.environ['FLASHINFER_WORKSPACE_BASE']}")
    begin = time.time()
    try:
        failed = prebuild(keys, started + args.deadline if args.deadline else 0)
    except Exception as error:  # noqa: BLE001
        fail("generating the JIT modules failed", error)
    jit_s = time.time() - begin
    if failed is None:
        print(f"JIT NOT FINISHED after {jit_s:.0f} s (deadline): run again, the build resumes")
        print("\n".join(f"NOT TIMED {p.name} (deadline)" for p in points))
        return 2
    for key, tail in failed.items():
        print(f"JIT FAILED {key_name(key)}, ninja's last lines:\n  " + "\n  ".join(tail))
    print(f"JIT: {len(keys)} modules ready in {jit_s:.0f} s (not timed), {len(failed)} failed")
    if failed and len(failed) == len(keys):
        fail("every JIT module failed to build")
    if args.jit_only:
        return 3 if failed else 0
    state = dict(started=started, records=[], wrappers={}, jit_failed=set(failed),
                 ws=torch.empty(256 << 20, dtype=torch.uint8, device="cuda"))
    state["copy_gbps"] = dc.copy_bandwidth(args.iters)
    print(f"device copy bandwidth (1 GiB torch copy, read + write): {state['copy_gbps']:.0f} GB/s")
    print(f"{'point':24s} {'layout':8s} {'variant':11s} {'K+V MiB':>9s} {'1st s':>6s} {'us':>9s} "
          f"{'GB/s':>7s} {'%copy':>6s} {'max err':>8s} status")
    not_timed = []
    for p in points + [None]:
        if p and args.deadline and time.time() - started > args.deadline:
            print(f"NOT TIMED {p.name} (deadline)")
            not_timed.append(p.name)
        elif p:
            run_point(fi, dc, p, args, state)
        if args.json:  # after every point, so a run cut short keeps what it measured
            with open(args.json, "w") as f:
                json.dump(dict(device=torch.cuda.get_device_name(), flashinfer=fi.__version__,
                               torch=torch.__version__, nvcc=nvcc_v, copy_gbps=state["copy_gbps"],
                               import_s=import_s, jit_s=jit_s, records=state["records"],
                               jit_failed=sorted(map(key_name, state["jit_failed"])),
                               not_timed=not_timed), f, indent=1)
    print(f"\nflashinfer (fastest correct variant); device copy {state['copy_gbps']:.0f} GB/s")
    for r in state["records"]:
        print(f"{r['dtype']}-d{r['head_dim']}-b{r['batch']}-q{r['q_rows']}-k{r['k_len']:<7d} "
              f"{r['layout']:8s} {r['best'] or '-':11s} {r['us'] or 0:9.1f} us "
              f"{r['gbps'] or 0:7.0f} GB/s {r['pct_copy'] or 0:4.0f}%")
    bad = [v for r in state["records"] for v in r["variants"].values() if v["status"] != "OK"]
    print(f"{len(state['records'])} records, {len(bad)} variants WRONG/ERROR, "
          f"{len(not_timed)} points not timed")
    return 3 if state["jit_failed"] else 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
