#!/usr/bin/env python3
"""GPU check of the cuBLASLt GELU epilogues with an aux matrix
(weft_gemm_select_aux / weft_gemm_run_aux): GELU_AUX_BIAS and GELU_AUX (D =
gelu_tanh(x w^T [+ b]), aux = the pre-activation) and DGELU (D = (dy w) *
gelu_tanh'(u), u read as aux), bf16 and f16, against a float64 reference,
each output's error at most 2x PyTorch's own error for the same op in the
same dtype (+ 1e-6). Rows of the aux matrix padded to aux_ld > n once, the
padding NaN-poisoned and checked untouched. Exits 1 on any failure.

    PYTHONPATH=python python3 test/gpu/gelu_epilogue_check.py
"""
import ctypes
import sys

import torch
import torch.nn.functional as F

from weft import runtime as rt

# weft_gemm_epilogue values of the aux epilogues (weft_runtime.h).
GELU_AUX, GELU_AUX_BIAS, DGELU = 5, 6, 7
DTYPES = {"bf16": (torch.bfloat16, 2), "f16": (torch.float16, 3)}
SHAPES = [(2048, 1024, 256), (77, 136, 61), (1, 8, 16)]
WORKSPACE = 32 << 20


def declare(lib):
    desc, algo = ctypes.POINTER(rt.GemmDesc), ctypes.POINTER(rt.GemmAlgo)
    c_void_p, c_size_t, c_ll = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_longlong
    lib.weft_gemm_select_aux.restype = ctypes.c_int
    lib.weft_gemm_select_aux.argtypes = [desc, c_ll, c_size_t, algo, ctypes.POINTER(c_size_t)]
    lib.weft_gemm_run_aux.restype = ctypes.c_int
    lib.weft_gemm_run_aux.argtypes = [desc, algo] + [c_void_p] * 6 + [c_ll, c_void_p, c_size_t,
                                                                       c_void_p]


def check_status(lib, status, what):
    if status:
        raise RuntimeError(f"{what}: {lib.weft_last_error().decode()}")


def run_aux(lib, desc, a, b, d, bias, aux, aux_ld, workspace):
    algo, needed = rt.GemmAlgo(), ctypes.c_size_t()
    check_status(lib, lib.weft_gemm_select_aux(ctypes.byref(desc), aux_ld, WORKSPACE,
                                               ctypes.byref(algo), ctypes.byref(needed)),
                 "weft_gemm_select_aux")
    check_status(lib, lib.weft_gemm_run_aux(ctypes.byref(desc), ctypes.byref(algo), a.data_ptr(),
                                            b.data_ptr(), None, d.data_ptr(),
                                            bias.data_ptr() if bias is not None else None,
                                            aux.data_ptr(), aux_ld, workspace.data_ptr(),
                                            WORKSPACE, None),
                 "weft_gemm_run_aux")
    torch.cuda.synchronize()


def error(x, ref):
    return (x.double() - ref).abs().max().item()


def main():
    lib = rt.lib()
    rt._gemm_lib()
    declare(lib)
    lib.weft_last_error.restype = ctypes.c_char_p
    torch.manual_seed(0)
    workspace = torch.empty(WORKSPACE, dtype=torch.uint8, device="cuda")
    failures = 0

    def grade(name, out, ours_ref, torch_out):
        nonlocal failures
        ours, theirs = error(out, ours_ref), error(torch_out, ours_ref)
        ok = ours <= 2 * theirs + 1e-6 and torch.isfinite(out).all().item()
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'} {name}: |weft - f64| {ours:.3e}, "
              f"|torch - f64| {theirs:.3e}", flush=True)

    for dname, (dtype, code) in DTYPES.items():
        for m, n, k in SHAPES:
            for bias_on in (True, False):
                x = torch.randn(m, k, device="cuda").to(dtype)
                w = (torch.randn(n, k, device="cuda") / k ** 0.5).to(dtype)
                b = torch.randn(n, device="cuda").to(dtype) if bias_on else None
                pad = 8 if (m, n, k) == SHAPES[1] else 0
                aux_ld = n + pad
                aux = torch.full((m, aux_ld), float("nan"), device="cuda").to(dtype)
                d = torch.full((m, n), float("nan"), device="cuda").to(dtype)
                desc = rt.gemm_desc(m, n, k, dname, trans_b=True)
                desc.epilogue = GELU_AUX_BIAS if bias_on else GELU_AUX
                run_aux(lib, desc, x, w, d, b, aux, aux_ld, workspace)
                pre = x.double() @ w.double().T + (b.double() if bias_on else 0)
                pre_t = F.linear(x, w, b)
                tag = f"{dname} {'GELU_AUX_BIAS' if bias_on else 'GELU_AUX'} m{m} n{n} k{k}"
                grade(f"{tag} D", d, F.gelu(pre, approximate="tanh"),
                      F.gelu(pre_t, approximate="tanh"))
                grade(f"{tag} aux (ld {aux_ld})", aux[:, :n], pre, pre_t)
                if pad:
                    kept = torch.isnan(aux[:, n:].float()).all().item()
                    failures += not kept
                    print(f"{'PASS' if kept else 'FAIL'} {tag}: aux row padding untouched")
            for trans_b in (False, True):
                dy = torch.randn(m, k, device="cuda").to(dtype)
                w = (torch.randn(n, k, device="cuda") if trans_b else
                     torch.randn(k, n, device="cuda")) / k ** 0.5
                w = w.to(dtype)
                u = torch.randn(m, n, device="cuda").to(dtype)
                d = torch.full((m, n), float("nan"), device="cuda").to(dtype)
                desc = rt.gemm_desc(m, n, k, dname, trans_b=trans_b)
                desc.epilogue = DGELU
                run_aux(lib, desc, dy, w, d, None, u, n, workspace)
                wd = w.double().T if trans_b else w.double()
                dg64 = dy.double() @ wd
                dg_t = dy @ (w.T if trans_b else w)
                ref = torch.ops.aten.gelu_backward(dg64, u.double(), approximate="tanh")
                theirs = torch.ops.aten.gelu_backward(dg_t, u, approximate="tanh")
                grade(f"{dname} DGELU trans_b={int(trans_b)} m{m} n{n} k{k} D", d, ref, theirs)
    print("FAILED" if failures else "ALL PASSED", f"({failures} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
