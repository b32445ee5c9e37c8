#!/usr/bin/env python3
"""GPU check of Weft's cuBLASLt GEMMs (weft_gemm_select / weft_gemm_run through
python/weft/runtime.py): every dtype x shape x transpose x batch x epilogue
against a float64 reference, judged against PyTorch's own error for the same
op in the same dtype; outputs NaN-poisoned and guarded. Prints a table, times
bf16 4096^3 next to torch.matmul, exits 1 on any failure.

    PYTHONPATH=python python3 test/gpu/gemm_check.py [--json FILE] [--quick]
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
import zlib
from collections import namedtuple

import torch
import torch.nn.functional as F

from weft.gpu.phases import REPO
from weft.gpu.poison import Poisoned

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
SHAPES = [(4096, 4096, 4096), (8192, 1536, 512), (77, 130, 61), (1, 4096, 4096)]
QUICK_SHAPES = [(77, 130, 61), (256, 384, 128)]
EPILOGUES = ("none", "bias", "gelu", "bias_gelu")  # bgrad_a: bias_grad_checks
BATCHES = (1, 3)
# Elements after each batch of a batched operand: NaN in inputs (a read past a
# matrix shows in D), and in D they must stay NaN (no write past a matrix).
BATCH_PAD = 8
WORKSPACE_LIMIT = 32 << 20
RATIO_BOUND = 2.0


class Case(namedtuple("Case", "dtype m n k trans_a trans_b batch epilogue")):
    """One GEMM of the sweep. Batched cases also scale (alpha 0.5) and read C
    (beta 0.75), so those paths run too; single ones are plain products."""

    @property
    def name(self):
        ops = ("T" if self.trans_a else "N") + ("T" if self.trans_b else "N")
        return f"{self.dtype}-m{self.m}-n{self.n}-k{self.k}-{ops}-b{self.batch}-{self.epilogue}"

    @property
    def alpha(self):
        return 1.0 if self.batch == 1 else 0.5

    @property
    def beta(self):
        return 0.0 if self.batch == 1 else 0.75

    @property
    def has_bias(self):
        return "bias" in self.epilogue

    @property
    def gelu(self):
        return "gelu" in self.epilogue

    def matrix(self, operand):
        return {"a": self.m * self.k, "b": self.k * self.n, "c": self.m * self.n,
                "d": self.m * self.n}[operand]

    def stride(self, operand):
        """Elements between batches: the matrix plus BATCH_PAD when batched."""
        return self.matrix(operand) + (BATCH_PAD if self.batch > 1 else 0)

    def shape(self, operand):
        """The stored row-major shape of one batch of an operand."""
        if operand == "a":
            return (self.k, self.m) if self.trans_a else (self.m, self.k)
        if operand == "b":
            return (self.n, self.k) if self.trans_b else (self.k, self.n)
        return (self.m, self.n)


def sweep(shapes=SHAPES, dtypes=tuple(DTYPES), batches=BATCHES, epilogues=EPILOGUES):
    return [Case(dtype, m, n, k, ta, tb, batch, epi)
            for dtype in dtypes for (m, n, k) in shapes for ta in (0, 1) for tb in (0, 1)
            for batch in batches for epi in epilogues]


def batched(case, operand, flat):
    """[batch, rows, cols] view of an operand's flat buffer."""
    rows, cols = case.shape(operand)
    return flat.as_strided((case.batch, rows, cols), (case.stride(operand), cols, 1))


def make_inputs(case, device):
    """Flat A, B (and C when beta != 0) of batch * stride elements ~ N(0, 1),
    NaN in the pads, plus the bias [n]; seeded by the case's name without its
    epilogue so the epilogues of one product share inputs."""
    seed = zlib.crc32(case.name.rsplit("-", 1)[0].encode())
    generator = torch.Generator(device=device).manual_seed(seed)
    dtype = DTYPES[case.dtype]

    def flat(operand):
        values = torch.full((case.batch * case.stride(operand),), float("nan"), dtype=dtype,
                            device=device)
        batched(case, operand, values).copy_(
            torch.randn((case.batch,) + case.shape(operand), generator=generator,
                        device=device, dtype=torch.float32))
        return values

    inputs = {"a": flat("a"), "b": flat("b"), "c": flat("c") if case.beta != 0 else None,
              "bias": None}
    if case.has_bias:
        inputs["bias"] = torch.randn(case.n, generator=generator, device=device,
                                     dtype=torch.float32).to(dtype)
    return inputs


def torch_op(case, inputs, dtype):
    """The case's op by PyTorch with operands and arithmetic in `dtype`:
    torch.float64 gives the reference, the case's dtype PyTorch's own result
    (F.linear with its fused bias where the op is a linear layer)."""
    a = batched(case, "a", inputs["a"]).to(dtype)
    b = batched(case, "b", inputs["b"]).to(dtype)
    op_a = a.transpose(-1, -2) if case.trans_a else a
    op_b = b.transpose(-1, -2) if case.trans_b else b
    bias = inputs["bias"].to(dtype) if case.has_bias else None
    if case.batch == 1 and case.alpha == 1.0 and case.beta == 0.0:
        out = F.linear(op_a[0], op_b[0].transpose(0, 1), bias).unsqueeze(0)
    else:
        out = torch.matmul(op_a, op_b)
        if case.alpha != 1.0:
            out = out * case.alpha
        if case.beta != 0.0:
            out = out + case.beta * batched(case, "c", inputs["c"]).to(dtype)
        if bias is not None:
            out = out + bias
    if case.gelu:
        out = F.gelu(out, approximate="tanh")
    return out


def gemm_desc(rt, case):
    return rt.gemm_desc(case.m, case.n, case.k, case.dtype, batch=case.batch,
                        trans_a=case.trans_a, trans_b=case.trans_b, epilogue=case.epilogue,
                        alpha=case.alpha, beta=case.beta, stride_a=case.stride("a"),
                        stride_b=case.stride("b"), stride_c=case.stride("c"),
                        stride_d=case.stride("d"))


def pointer(tensor):
    return tensor.data_ptr() if tensor is not None else None


def run_weft(rt, case, inputs, workspace, stream, algo=None, guarded=True):
    """Selects (unless `algo` is given) and runs the case into a NaN-filled,
    guarded D of batch * stride elements. Returns (Poisoned D, workspace bytes
    the algorithm needs)."""
    desc = gemm_desc(rt, case)
    needed = None
    if algo is None:
        algo, needed = rt.gemm_select(desc, WORKSPACE_LIMIT)
    d = Poisoned((case.batch * case.stride("d"),), DTYPES[case.dtype], inputs["a"].device,
                 guarded)
    rt.gemm_run(desc, algo, pointer(inputs["a"]), pointer(inputs["b"]), pointer(inputs["c"]),
                pointer(d.tensor), pointer(inputs["bias"]), pointer(workspace),
                workspace.numel() if workspace is not None else 0, stream)
    return d, needed


def max_abs_error(out, reference):
    """Max |out - reference| in float64; inf when out holds a NaN or inf."""
    out = out.to(torch.float64)
    if not torch.isfinite(out).all():
        return math.inf
    return float((out - reference).abs().max())


def judge(case, d, reference, torch_out, ratio_bound=RATIO_BOUND):
    """The verdict on one case: D complete (no NaN/inf), pads between batches
    and guards untouched, weft's error <= ratio_bound x torch's."""
    out = batched(case, "d", d.tensor)
    nonfinite = int((~torch.isfinite(out)).sum())
    pads = d.tensor.view(case.batch, case.stride("d"))[:, case.matrix("d"):]
    pads_written = int((~torch.isnan(pads)).sum())
    guards = d.guard_violations()
    weft_err = max_abs_error(out, reference)
    torch_err = max_abs_error(torch_out, reference)
    ratio = weft_err / torch_err if torch_err > 0 else (0.0 if weft_err == 0 else math.inf)
    reasons = []
    if nonfinite:
        reasons.append(f"{nonfinite} NaN/inf in D")
    if pads_written:
        reasons.append(f"{pads_written} pad elements between batches written")
    if guards:
        reasons.append(f"{guards} guard elements written")
    if not nonfinite and not weft_err <= ratio_bound * torch_err:
        reasons.append(f"error {weft_err:.3g} > {ratio_bound:g} x torch's {torch_err:.3g}")
    return {"case": case.name, "weft_err": weft_err, "torch_err": torch_err, "ratio": ratio,
            "passed": not reasons, "reasons": reasons}


def run_case(rt, case, device, workspace, stream, ratio_bound=RATIO_BOUND, algo=None):
    inputs = make_inputs(case, device)
    d, needed = run_weft(rt, case, inputs, workspace, stream, algo)
    reference = torch_op(case, inputs, torch.float64)
    torch_out = torch_op(case, inputs, DTYPES[case.dtype])
    if device != "cpu":
        torch.cuda.synchronize()
    result = judge(case, d, reference, torch_out, ratio_bound)
    result["workspace"] = needed
    return result


def format_row(result):
    status = "ok" if result["passed"] else "FAIL " + "; ".join(result["reasons"])
    workspace = "-" if result.get("workspace") is None else str(result["workspace"])
    return (f"{result['case']:<42} {result['weft_err']:>10.3e} {result['torch_err']:>10.3e} "
            f"{result['ratio']:>6.2f} {workspace:>9}  {status}")


HEADER = f"{'case':<42} {'weft err':>10} {'torch err':>10} {'ratio':>6} {'workspace':>9}  result"


def loaded_cublaslt():
    """Path of the libcublasLt this process mapped (PyTorch's), if any."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1]
                if "libcublasLt.so" in path:
                    return path
    except OSError:
        pass
    return None


ROUNDTRIP_CASE = Case("bf16", 96, 200, 72, 0, 1, 1, "bias_gelu")
# Loads this script as a module by its path (it is no package's module).
ROUNDTRIP_SELECT = """
import importlib.util
from weft import runtime as rt
spec = importlib.util.spec_from_file_location("gemm_check", {script!r})
gc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gc)
rt.context_ensure(0)
algo, needed = rt.gemm_select(gc.gemm_desc(rt, gc.{case!r}), gc.WORKSPACE_LIMIT)
print(algo.raw().hex(), needed)
"""


def roundtrip(rt, device, workspace, stream):
    """An algorithm selected in another process (as a package stores it) runs
    here: weft_gemm_run checks the bytes with cublasLtMatmulAlgoCheck."""
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    library = loaded_cublaslt()
    if library and not env.get("WEFT_CUBLASLT"):
        env["WEFT_CUBLASLT"] = library
    code = ROUNDTRIP_SELECT.format(script=os.path.abspath(__file__), case=ROUNDTRIP_CASE)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"selecting in a subprocess failed: {done.stderr.strip()[-2000:]}")
    hex_bytes, needed = done.stdout.split()
    algo = rt.GemmAlgo.from_raw(bytes.fromhex(hex_bytes))
    result = run_case(rt, ROUNDTRIP_CASE, device, workspace, stream, algo=algo)
    result["case"] = "roundtrip:" + result["case"]
    result["workspace"] = int(needed)
    return result


def short_workspace(rt, device, workspace, stream):
    """weft_gemm_run refuses a workspace smaller than the algorithm needs."""
    case = Case("bf16", 4096, 4096, 4096, 0, 0, 1, "none")
    algo, needed = rt.gemm_select(gemm_desc(rt, case), WORKSPACE_LIMIT)
    if needed == 0:
        return "short workspace: n/a (the 4096^3 algorithm needs none)"
    inputs = make_inputs(case, device)
    d = Poisoned((case.m * case.n,), DTYPES[case.dtype], device)
    try:
        rt.gemm_run(gemm_desc(rt, case), algo, pointer(inputs["a"]), pointer(inputs["b"]), None,
                    pointer(d.tensor), None, pointer(workspace), needed - 1, stream)
    except rt.WeftError as error:
        if error.status == rt.ERROR_INVALID_ARGUMENT and "workspace" in error.message:
            return None
        return f"short workspace: unexpected {error}"
    return f"short workspace: {needed - 1} bytes accepted where {needed} are needed"


# The bias-gradient epilogue (bgrad_a: db[m] = sum over k of op(A)[m, k], D
# unchanged). The compiler forms it for dW = dY^T X only (trans_a, not
# trans_b); the other layouts are probed to record what cuBLASLt offers.
BGRAD_SHAPES = [(77, 130, 61), (1024, 256, 4096), (16384, 4096, 4096), (4096, 16384, 4096)]
BGRAD_LAYOUT = (1, 0)
BGRAD_BOUND = 1e-2


def bias_grad_case(rt, dtype, m, n, k, trans_a, trans_b, device, workspace, stream):
    """One bgrad_a GEMM against float64: dW and db each within BGRAD_BOUND
    (max |error| / max |reference|), D and db complete, db's guards intact."""
    case = Case(dtype, m, n, k, trans_a, trans_b, 1, "bgrad_a")
    inputs = make_inputs(case._replace(epilogue="none"), device)
    desc = gemm_desc(rt, case)
    algo, needed = rt.gemm_select(desc, WORKSPACE_LIMIT)
    d = Poisoned((m * n,), DTYPES[dtype], device)
    db = Poisoned((m,), DTYPES[dtype], device)
    rt.gemm_run(desc, algo, pointer(inputs["a"]), pointer(inputs["b"]), None, pointer(d.tensor),
                pointer(db.tensor), pointer(workspace),
                workspace.numel() if workspace is not None else 0, stream)
    if device != "cpu":
        torch.cuda.synchronize()
    a = batched(case, "a", inputs["a"])[0].to(torch.float64)
    op_a = a.t() if trans_a else a
    b = batched(case, "b", inputs["b"])[0].to(torch.float64)
    op_b = b.t() if trans_b else b
    reference = op_a @ op_b
    bias_reference = op_a.sum(dim=1)
    dw_err = max_abs_error(d.tensor.view(m, n), reference) / float(reference.abs().max())
    db_err = max_abs_error(db.tensor, bias_reference) / float(bias_reference.abs().max())
    reasons = []
    if not dw_err <= BGRAD_BOUND:
        reasons.append(f"dW relative error {dw_err:.3g} > {BGRAD_BOUND:g}")
    if not db_err <= BGRAD_BOUND:
        reasons.append(f"db relative error {db_err:.3g} > {BGRAD_BOUND:g}")
    for name, buffer in (("D", d), ("db", db)):
        if buffer.guard_violations():
            reasons.append(f"{buffer.guard_violations()} guard elements of {name} written")
    return {"case": case.name, "weft_err": dw_err, "torch_err": db_err, "ratio": 0.0,
            "passed": not reasons, "reasons": reasons, "workspace": needed}


def bias_grad_checks(rt, device, workspace, stream, shapes=BGRAD_SHAPES):
    """Every dtype x shape x layout of bgrad_a. Returns (results, failures):
    the compiler's layout must pass; another layout cuBLASLt refuses is
    reported, not failed (the compiler never forms it)."""
    results, failures = [], []
    print(f"bias gradient (bgrad_a): relative errors dW / db, bound {BGRAD_BOUND:g}")
    for dtype in DTYPES:
        for (m, n, k) in shapes:
            for trans_a in (0, 1):
                for trans_b in (0, 1):
                    required = (trans_a, trans_b) == BGRAD_LAYOUT
                    try:
                        result = bias_grad_case(rt, dtype, m, n, k, trans_a, trans_b, device,
                                                workspace, stream)
                    except rt.WeftError as error:
                        result = {"case": Case(dtype, m, n, k, trans_a, trans_b, 1,
                                               "bgrad_a").name,
                                  "weft_err": math.inf, "torch_err": math.inf, "ratio": math.inf,
                                  "passed": False, "reasons": [str(error)]}
                    if not required and not result["passed"]:
                        result["reasons"].insert(0, "unsupported layout (not formed)")
                    result["required"] = required
                    results.append(result)
                    print(format_row(result), flush=True)
                    if required and not result["passed"]:
                        failures.append(result["case"])
    return results, failures


def benchmark(rt, device, workspace, stream):
    """bf16 4096^3 (NN, no epilogue): weft_gemm_run next to torch.matmul, in
    TFLOP/s (report only)."""
    case = Case("bf16", 4096, 4096, 4096, 0, 0, 1, "none")
    inputs = make_inputs(case, device)
    desc = gemm_desc(rt, case)
    algo, _ = rt.gemm_select(desc, WORKSPACE_LIMIT)
    d = torch.empty(case.m * case.n, dtype=torch.bfloat16, device=device)
    a = batched(case, "a", inputs["a"])[0]
    b = batched(case, "b", inputs["b"])[0]
    out = torch.empty(case.m, case.n, dtype=torch.bfloat16, device=device)
    args = (desc, algo, a.data_ptr(), b.data_ptr(), None, d.data_ptr(), None,
            workspace.data_ptr(), workspace.numel(), stream)
    try:
        from triton.testing import do_bench
        timer = "triton.testing.do_bench"
    except ImportError:
        do_bench, timer = event_bench, "CUDA events"
    weft_ms = float(do_bench(lambda: rt.gemm_run(*args)))
    torch_ms = float(do_bench(lambda: torch.matmul(a, b, out=out)))
    flops = 2.0 * case.m * case.n * case.k
    return (f"bf16 4096^3 ({timer}): weft {weft_ms:.3f} ms = {flops / weft_ms / 1e9:.0f} TFLOP/s, "
            f"torch.matmul {torch_ms:.3f} ms = {flops / torch_ms / 1e9:.0f} TFLOP/s")


def event_bench(fn, repeats=50):
    for _ in range(5):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / repeats


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small shapes only")
    parser.add_argument("--cases", help="regex on case names")
    parser.add_argument("--list", action="store_true", help="print the case names and exit")
    parser.add_argument("--ratio-bound", type=float, default=RATIO_BOUND)
    parser.add_argument("--json", help="write every result here")
    parser.add_argument("--no-bench", action="store_true")
    parser.add_argument("--bgrad", choices=("yes", "no", "only"), default="yes",
                        help="the bias-gradient epilogue's checks (bias_grad_checks)")
    args = parser.parse_args(argv)

    cases = [] if args.bgrad == "only" else sweep(QUICK_SHAPES if args.quick else SHAPES)
    if args.cases:
        cases = [c for c in cases if re.search(args.cases, c.name)]
    if args.list:
        print("\n".join(c.name for c in cases))
        return 0

    from weft import runtime as rt
    device = "cuda"
    torch.cuda.init()
    # PyTorch's cuBLASLt is mapped by its first matmul; the runtime's dlopen of
    # the same soname then finds it.
    torch.ones(8, 8, device=device) @ torch.ones(8, 8, device=device)
    rt.context_ensure(0)  # keeps PyTorch's context
    stream = torch.cuda.current_stream().cuda_stream
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, cuBLASLt "
          f"{rt.gemm_library_version()} ({loaded_cublaslt() or 'path unknown'})")
    workspace = torch.empty(WORKSPACE_LIMIT, dtype=torch.uint8, device=device)

    started = time.monotonic()
    results, failures = [], []
    print(HEADER)
    for case in cases:
        try:
            result = run_case(rt, case, device, workspace, stream, args.ratio_bound)
        except rt.WeftError as error:
            result = {"case": case.name, "weft_err": math.inf, "torch_err": math.nan,
                      "ratio": math.inf, "passed": False, "reasons": [str(error)]}
        results.append(result)
        print(format_row(result), flush=True)
        if not result["passed"]:
            failures.append(result["case"])
    if not args.cases:
        for check in (roundtrip,):
            try:
                result = check(rt, device, workspace, stream)
            except (rt.WeftError, RuntimeError) as error:
                result = {"case": check.__name__, "weft_err": math.inf, "torch_err": math.nan,
                          "ratio": math.inf, "passed": False, "reasons": [str(error)]}
            results.append(result)
            print(format_row(result), flush=True)
            if not result["passed"]:
                failures.append(result["case"])
        problem = short_workspace(rt, device, workspace, stream)
        print(problem or "short workspace: refused with WEFT_ERROR_INVALID_ARGUMENT (ok)")
        if problem and not problem.endswith("needs none)"):
            failures.append("short-workspace")
    if args.bgrad != "no":
        bgrad_results, bgrad_failures = bias_grad_checks(
            rt, device, workspace, stream, BGRAD_SHAPES[:2] if args.quick else BGRAD_SHAPES)
        results += [r for r in bgrad_results if r["required"]]
        failures += bgrad_failures
    elapsed = time.monotonic() - started
    worst = max((r["ratio"] for r in results), default=0.0)
    print(f"{len(results) - len(failures)}/{len(results)} passed in {elapsed:.1f} s; "
          f"worst ratio {worst:.2f} (bound {args.ratio_bound:g})")
    if not args.no_bench and not args.quick:
        print(benchmark(rt, device, workspace, stream))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if failures:
        print("FAILED: " + ", ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
