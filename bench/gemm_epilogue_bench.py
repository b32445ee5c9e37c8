#!/usr/bin/env python3
"""Weft's cuBLASLt GEMMs (weft_gemm_select / weft_gemm_run) at a model's
shapes, with and without their epilogues, against the same products in
PyTorch (F.linear, torch.matmul): TFLOP/s of each, triton.testing.do_bench
medians. Where a training step's GEMM time goes when Weft's GEMMs trail
torch.compile's (issue 19's GPT-2: the bias epilogue of the forward, the
bias-gradient epilogue of the weight gradients).

    PYTHONPATH=python python3 bench/gemm_epilogue_bench.py [--tokens 8192 --hidden 768] [--json OUT]
"""
import argparse
import json
import sys

import torch
import torch.nn.functional as F

from weft import runtime as rt

WORKSPACE = 32 << 20


def cases(tokens, hidden):
    """(name, m, n, k, trans_a, trans_b, Weft epilogues, torch function of (a, b, bias))."""
    out = []
    for name, width, inner in (("qkv", 3 * hidden, hidden), ("fc", 4 * hidden, hidden),
                               ("mlp proj", hidden, 4 * hidden), ("attn proj", hidden, hidden)):
        # Forward y[t, width] = x[t, inner] w[width, inner]^T + b.
        out.append((f"{name} forward", tokens, width, inner, False, True, ("none", "bias"),
                    lambda a, b, bias: F.linear(a, b, bias)))
        # Data gradient dx[t, inner] = dy[t, width] w[width, inner].
        out.append((f"{name} data gradient", tokens, inner, width, False, False, ("none",),
                    lambda a, b, bias: torch.matmul(a, b)))
        # Weight gradient dw[width, inner] = dy[t, width]^T x[t, inner], db = sum of dy.
        out.append((f"{name} weight gradient", width, inner, tokens, True, False,
                    ("none", "bgrad_a"), lambda a, b, bias: torch.matmul(a.t(), b)))
    return out


def operand(rows, cols, device):
    return torch.randn(rows, cols, device=device, dtype=torch.bfloat16)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--json")
    args = parser.parse_args()
    from triton.testing import do_bench
    device = torch.device("cuda")
    torch.cuda.init()
    rt.context_ensure(0)
    workspace = torch.empty(WORKSPACE, dtype=torch.uint8, device=device)
    stream = torch.cuda.current_stream().cuda_stream
    rows = []
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, cuBLASLt "
          f"{rt.gemm_library_version()}; bf16, tokens {args.tokens}, hidden {args.hidden}")
    print(f"{'case':28s} {'m x n x k':>18s} {'epilogue':>9s} {'weft TFLOP/s':>13s} {'torch':>7s} {'ratio':>6s}")
    for name, m, n, k, ta, tb, epilogues, torch_fn in cases(args.tokens, args.hidden):
        a = operand(k, m, device) if ta else operand(m, k, device)
        b = operand(n, k, device) if tb else operand(k, n, device)
        bias = torch.randn(m if ta else n, device=device, dtype=torch.bfloat16)
        d = torch.empty(m, n, device=device, dtype=torch.bfloat16)
        flops = 2.0 * m * n * k
        torch_ms = float(do_bench(lambda: torch_fn(a, b, bias if not ta else None)))
        for epilogue in epilogues:
            desc = rt.gemm_desc(m, n, k, "bf16", trans_a=ta, trans_b=tb, epilogue=epilogue)
            algo, _ = rt.gemm_select(desc, WORKSPACE)
            bias_ptr = bias.data_ptr() if epilogue != "none" else None
            run = lambda: rt.gemm_run(desc, algo, a.data_ptr(), b.data_ptr(), None, d.data_ptr(),
                                      bias_ptr, workspace.data_ptr(), WORKSPACE, stream)
            weft_ms = float(do_bench(run))
            row = {"case": name, "m": m, "n": n, "k": k, "trans_a": ta, "trans_b": tb,
                   "epilogue": epilogue, "weft_ms": weft_ms, "torch_ms": torch_ms,
                   "weft_tflops": flops / weft_ms / 1e9, "torch_tflops": flops / torch_ms / 1e9}
            rows.append(row)
            print(f"{name:28s} {f'{m}x{n}x{k}':>18s} {epilogue:>9s} {row['weft_tflops']:13.0f} "
                  f"{row['torch_tflops']:7.0f} {torch_ms / weft_ms:6.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "cublaslt": rt.gemm_library_version(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
