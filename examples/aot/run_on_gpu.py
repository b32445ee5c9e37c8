#!/usr/bin/env python3
"""Runs the AOT C example on a GPU and compares it with PyTorch.

  python examples/aot/run_on_gpu.py [--example build/examples/aot/attention_example]

Makes random bf16 q, k, v, dout for the shapes of attention.mlir (read from
the units' JSON next to the binary), writes the example's input file, runs
it, reads out / lse / dq / dk / dv back and checks, for out, dq, dk and dv,
that the max abs error against a float64 reference is at most 2x the error
of torch SDPA run in bf16 (plus lse against the float64 log-sum-exp), and
that nothing is NaN. Prints a table; exits 1 on any failure.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sdpa(q, k, v, causal, scale):
    hq, hkv = q.shape[1], k.shape[1]
    try:
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=causal, scale=scale, enable_gqa=hq != hkv)
    except TypeError:  # torch without enable_gqa
        group = hq // hkv
        return torch.nn.functional.scaled_dot_product_attention(
            q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1),
            is_causal=causal, scale=scale)


def reference(q, k, v, dout, causal, scale):
    """float64 attention, its lse and gradients (explicit, GQA by repeat)."""
    q, k, v = (t.detach().double().requires_grad_() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    kr, vr = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scores = scale * q @ kr.transpose(-1, -2)
    if causal:
        sq, sk = scores.shape[-2:]
        mask = torch.ones(sq, sk, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    out = torch.softmax(scores, dim=-1) @ vr
    out.backward(dout.double())
    return out.detach(), lse.detach(), q.grad, k.grad, v.grad


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--example", default=os.path.join(
        os.environ.get("WEFT_BUILD_DIR", os.path.join(ROOT, "build")),
        "examples", "aot", "attention_example"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("run_on_gpu: no CUDA device visible to torch", file=sys.stderr)
        return 1
    unit_dir = os.path.dirname(os.path.abspath(args.example))
    with open(os.path.join(unit_dir, "example_attention_0.json")) as f:
        meta = json.load(f)
    s, c = meta["shapes"], meta["config"]
    b, hq, hkv, sq, sk, d = (s["batch"], s["q_heads"], s["kv_heads"], s["q_len"],
                             s["k_len"], s["head_dim"])
    scale, causal = s["scale"], c["causal"]
    assert c["dtype"] == "bf16", "the example is bf16"

    torch.manual_seed(args.seed)
    dev = torch.device("cuda")
    q = torch.randn(b, hq, sq, d, device=dev, dtype=torch.bfloat16)
    k = torch.randn(b, hkv, sk, d, device=dev, dtype=torch.bfloat16)
    v = torch.randn(b, hkv, sk, d, device=dev, dtype=torch.bfloat16)
    dout = torch.randn(b, hq, sq, d, device=dev, dtype=torch.bfloat16)

    sizes = dict(line.split() for line in subprocess.run(
        [args.example, "--print-sizes"], check=True, capture_output=True,
        text=True).stdout.splitlines())
    tensors_in = [q, k, v, dout]
    raw = b"".join(t.contiguous().view(torch.int16).cpu().numpy().tobytes() for t in tensors_in)
    if len(raw) != int(sizes["input_bytes"]):
        print(f"run_on_gpu: input is {len(raw)} bytes, the example wants {sizes['input_bytes']}",
              file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as work:
        inp, outp = os.path.join(work, "input.bin"), os.path.join(work, "output.bin")
        with open(inp, "wb") as f:
            f.write(raw)
        run = subprocess.run([args.example, inp, outp], capture_output=True, text=True)
        print(run.stdout + run.stderr, end="")
        if run.returncode != 0:
            print(f"run_on_gpu: the example failed (exit {run.returncode})", file=sys.stderr)
            return 1
        with open(outp, "rb") as f:
            data = f.read()
    if len(data) != int(sizes["output_bytes"]):
        print(f"run_on_gpu: output is {len(data)} bytes, expected {sizes['output_bytes']}",
              file=sys.stderr)
        return 1

    layout = [("out", (b, hq, sq, d), torch.bfloat16), ("lse", (b, hq, sq), torch.float32),
              ("dq", (b, hq, sq, d), torch.bfloat16), ("dk", (b, hkv, sk, d), torch.bfloat16),
              ("dv", (b, hkv, sk, d), torch.bfloat16)]
    got, offset = {}, 0
    for name, shape, dtype in layout:
        count = math.prod(shape)
        width = 2 if dtype == torch.bfloat16 else 4
        chunk = bytearray(data[offset:offset + count * width])
        offset += count * width
        raw_dtype = torch.int16 if dtype == torch.bfloat16 else torch.float32
        got[name] = torch.frombuffer(chunk, dtype=raw_dtype).view(dtype).reshape(shape).to(dev)

    ref = dict(zip(["out", "lse", "dq", "dk", "dv"], reference(q, k, v, dout, causal, scale)))
    qt, kt, vt = (t.detach().clone().requires_grad_() for t in (q, k, v))
    torch_out = sdpa(qt, kt, vt, causal, scale)
    torch_out.backward(dout)
    torch_val = {"out": torch_out.detach(), "dq": qt.grad, "dk": kt.grad, "dv": vt.grad}

    failures = []
    print(f"{'tensor':<6} {'weft err':>12} {'torch err':>12} {'bound':>12}  verdict")
    for name in ["out", "lse", "dq", "dk", "dv"]:
        mine = got[name].double()
        err = (mine - ref[name]).abs().max().item()
        if name == "lse":
            # f32 statistics: compared with the float64 value directly.
            torch_err, bound = float("nan"), 1e-3 * max(1.0, ref[name].abs().max().item())
        else:
            torch_err = (torch_val[name].double() - ref[name]).abs().max().item()
            bound = 2 * torch_err
        nan = bool(torch.isnan(got[name]).any())
        ok = not nan and err <= bound
        print(f"{name:<6} {err:>12.3e} {torch_err:>12.3e} {bound:>12.3e}  "
              f"{'ok' if ok else 'FAIL'}{' (NaN)' if nan else ''}")
        if not ok:
            failures.append(name)
    if failures:
        print(f"run_on_gpu: FAILED: {', '.join(failures)}", file=sys.stderr)
        return 1
    print("run_on_gpu: the AOT units match PyTorch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
