"""weft-tile-attention on the CPU: the tiled forward and backward (weft-opt
--weft-tile-attention, then weft-cpu-run through LLVM's JIT) against the
reference interpreter (weft-run on the untiled IR), on the same inputs.

Each case is one function computing out, lse = attention(q, k, v) and
dq, dk, dv = attention_grad(dout, q, k, v, out, lse), so every output of both
nests is compared. Sequence lengths are odd and not multiples of the tiles
(tails), sq != sk, causal (bottom-right aligned, sq <= sk) and not, MHA / GQA / MQA, dropout 0 and 0.1, f32 and
f64, several tile shapes.

Tolerances (relative to the largest reference magnitude, as harness.rel_err):
- f64: 1e-10. The nest computes in f64 throughout (the backward recomputes the
  row log-sum-exp in f64 rather than reading the f32 lse operand), so only
  summation order differs from the interpreter: ~1e-15.
- f32: 1e-5. The tiles compute in f32 while the interpreter computes in f64
  and rounds once: each score is a d-term f32 dot product (relative error
  ~d * 6e-8 of |q||k|), exp turns an absolute score error into a relative
  probability error, the backward reads the f32 lse and out of the forward, and
  sums over up to sk = 130 terms; measured errors are 1e-7..1e-6.
With dropout, a single element whose mask differs (a kept probability dropped
or the reverse) changes results by ~|P| / (1 - p), far above these bounds, so
agreement to rounding means the Philox masks are bit-identical.
"""
import os
import subprocess
import tempfile

import numpy as np
import pytest
import torch

from harness import REPO, rel_err, randn, tool
from weft import npz

F64_TOL = 1e-10
F32_TOL = 1e-5
HEADS = {"mha": (4, 4), "gqa": (4, 2), "mqa": (4, 1)}
RESULT_NAMES = ("out", "lse", "dq", "dk", "dv")


def tensor_type(shape, dtype):
    return "tensor<" + "x".join(str(s) for s in shape) + ("x" if shape else "") + dtype + ">"


def attention_module(dtype, b, hq, hkv, sq, sk, d, dv, causal, dropout, scale=None, rng_id=7):
    """@main(q, k, v, dout[, seed]) -> (out, lse, dq, dk, dv)."""
    q_t = tensor_type((b, hq, sq, d), dtype)
    k_t = tensor_type((b, hkv, sk, d), dtype)
    v_t = tensor_type((b, hkv, sk, dv), dtype)
    o_t = tensor_type((b, hq, sq, dv), dtype)
    lse_t = tensor_type((b, hq, sq), "f32")
    attrs = []
    if causal:
        attrs.append("causal")
    if scale is not None:
        attrs.append(f"scale = {scale:.9g} : f32")
    args = ["%q", "%k", "%v"]
    arg_types = [q_t, k_t, v_t]
    seed_decl = ""
    if dropout:
        attrs += [f"dropout_p = {dropout:.17g} : f64", f"weft.rng_id = {rng_id} : i64"]
        seed_decl = ", %seed: tensor<i64>"
    attr_text = "{" + ", ".join(attrs) + "}" if attrs else ""
    seed_use = ", %seed" if dropout else ""
    seed_type = ", tensor<i64>" if dropout else ""
    return f"""
func.func @main(%q: {q_t}, %k: {k_t}, %v: {v_t}, %do: {o_t}{seed_decl}) -> ({o_t}, {lse_t}, {q_t}, {k_t}, {v_t}) {{
  %o, %lse = weft.attention %q, %k, %v{seed_use} {attr_text} : ({q_t}, {k_t}, {v_t}{seed_type}) -> ({o_t}, {lse_t})
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse{seed_use} {attr_text} : ({o_t}, {q_t}, {k_t}, {v_t}, {o_t}, {lse_t}{seed_type}) -> ({q_t}, {k_t}, {v_t})
  return %o, %lse, %dq, %dk, %dv : {o_t}, {lse_t}, {q_t}, {k_t}, {v_t}
}}
"""


def run(cmd, what):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.fail(f"{what} failed (rc {proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-4000:]}")
    return proc


def tiled_and_reference(text, inputs, block_q, block_k, opt_level=0, reference_text=None):
    """(tiled results, reference results) of @main on `inputs`; the reference
    runs `reference_text` when given (else the same IR)."""
    case_dir = tempfile.mkdtemp(prefix="weft-tile-", dir=os.environ.get("WEFT_TEST_TMP"))
    ir_path = os.path.join(case_dir, "case.mlir")
    tiled_path = os.path.join(case_dir, "tiled.mlir")
    in_path = os.path.join(case_dir, "inputs.npz")
    ref_path = os.path.join(case_dir, "reference.npz")
    cpu_path = os.path.join(case_dir, "cpu.npz")
    ref_ir_path = os.path.join(case_dir, "reference.mlir")
    with open(ir_path, "w") as f:
        f.write(text)
    with open(ref_ir_path, "w") as f:
        f.write(reference_text or text)
    npz.save(in_path, {f"arg{i}": t for i, t in enumerate(inputs)})
    run([tool("weft-run"), ref_ir_path, "--entry", "main", "--inputs", in_path,
         "--outputs", ref_path], "weft-run (reference)")
    run([tool("weft-opt"), ir_path, f"--weft-tile-attention=block-q={block_q} block-k={block_k}",
         "-o", tiled_path], "weft-opt --weft-tile-attention")
    with open(tiled_path) as f:
        tiled_text = f.read()
    assert "weft.attention" not in tiled_text, "weft-tile-attention left an attention op"
    run([tool("weft-cpu-run"), tiled_path, "--entry", "main", "--inputs", in_path,
         "--outputs", cpu_path, f"--opt-level={opt_level}"], "weft-cpu-run")
    return npz.ordered(npz.load(cpu_path), "res"), npz.ordered(npz.load(ref_path), "res")


def case_inputs(rng, dtype, heads, sq, sk, d, dv, dropout, b=2):
    hq, hkv = HEADS[heads]
    inputs = [randn(rng, (b, hq, sq, d), dtype), randn(rng, (b, hkv, sk, d), dtype),
              randn(rng, (b, hkv, sk, dv), dtype), randn(rng, (b, hq, sq, dv), dtype)]
    if dropout:
        # Above 2^32: the key takes the seed's low 32 bits.
        inputs.append(torch.tensor(int(rng.integers(0, 2**40)), dtype=torch.int64))
    return inputs


def check_case(rng, dtype, heads, sq, sk, causal, dropout, block_q, block_k, d=8, dv=6,
               opt_level=0, scale=None):
    hq, hkv = HEADS[heads]
    b = 2
    inputs = case_inputs(rng, dtype, heads, sq, sk, d, dv, dropout, b)
    text = attention_module(dtype, b, hq, hkv, sq, sk, d, dv, causal, dropout, scale)
    got, ref = tiled_and_reference(text, inputs, block_q, block_k, opt_level)
    assert len(got) == len(ref) == 5
    tol = F64_TOL if dtype == "f64" else F32_TOL
    errors = {}
    for name, x, r in zip(RESULT_NAMES, got, ref):
        assert x.dtype == r.dtype and x.shape == r.shape, f"{name}: {x.dtype}{tuple(x.shape)} vs {r.dtype}{tuple(r.shape)}"
        errors[name] = rel_err(x, r)
    bad = {k: v for k, v in errors.items() if not v <= tol}
    assert not bad, f"relative errors above {tol:g}: {bad} (all: {errors})"
    return errors


# (sq, sk, heads, tiles): odd lengths (tails in every tile shape), sq != sk
# both ways, each head layout and each tile shape at least once.
SHAPES = [(77, 77, "mha", (16, 16)), (130, 61, "gqa", (32, 64)),
          (45, 130, "mqa", (64, 32)), (77, 130, "gqa", (64, 32))]


@pytest.mark.parametrize("dtype", ["f64", "f32"])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
@pytest.mark.parametrize("sq,sk,heads,tiles", SHAPES,
                         ids=[f"{q}x{k}-{h}-{t[0]}x{t[1]}" for q, k, h, t in SHAPES])
def test_tiled_matches_reference(rng, dtype, causal, sq, sk, heads, tiles):
    if causal and sq > sk:
        pytest.skip("causal is bottom-right aligned: the verifier rejects sq > sk")
    # JIT at -O0 keeps the suite fast; the dropout cases below run at -O2.
    # The non-causal cases take an explicit scale (not 1/sqrt(d), not exact in f32).
    check_case(rng, dtype, heads, sq, sk, causal, 0.0, *tiles, opt_level=0,
               scale=None if causal else 0.3)


@pytest.mark.parametrize("dtype", ["f64", "f32"])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
@pytest.mark.parametrize("heads,tiles", [("gqa", (16, 16)), ("mqa", (32, 64)), ("mha", (64, 32))],
                         ids=["gqa-16x16", "mqa-32x64", "mha-64x32"])
def test_tiled_dropout_masks_match(rng, dtype, causal, heads, tiles):
    check_case(rng, dtype, heads, 77, 130, causal, 0.1, *tiles, opt_level=2)


def test_block_larger_than_sequence(rng):
    """One tile covers everything (block > length in both dimensions)."""
    check_case(rng, "f64", "gqa", 9, 13, True, 0.1, 64, 64)


def test_mask_difference_is_detected(rng):
    """The premise of the dropout checks: the same inputs with another rng_id
    in the tiled IR only (a different mask) miss the reference by far more
    than rounding."""
    hq, hkv = HEADS["gqa"]
    inputs = case_inputs(rng, "f64", "gqa", 77, 130, 8, 6, 0.1)
    tiled = attention_module("f64", 2, hq, hkv, 77, 130, 8, 6, True, 0.1, rng_id=8)
    reference = attention_module("f64", 2, hq, hkv, 77, 130, 8, 6, True, 0.1, rng_id=7)
    got, ref = tiled_and_reference(tiled, inputs, 16, 16, reference_text=reference)
    errors = {name: rel_err(x, r) for name, x, r in zip(RESULT_NAMES, got, ref)}
    # lse does not depend on the mask; everything else does.
    assert errors["lse"] <= F64_TOL, errors
    for name in ("out", "dq", "dk", "dv"):
        assert errors[name] > 1e-2, f"{name}: a different mask went unnoticed: {errors}"


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_half_precision_runs_in_f32(rng, dtype):
    """bf16 / f16 in and out, f32 inside: within rounding of the reference."""
    hq, hkv = HEADS["gqa"]
    inputs = [randn(rng, (1, hq, 21, 8), dtype), randn(rng, (1, hkv, 33, 8), dtype),
              randn(rng, (1, hkv, 33, 8), dtype), randn(rng, (1, hq, 21, 8), dtype)]
    text = attention_module(dtype, 1, hq, hkv, 21, 33, 8, 8, True, 0.0)
    got, ref = tiled_and_reference(text, inputs, 16, 16)
    for name, x, r in zip(RESULT_NAMES, got, ref):
        assert x.dtype == r.dtype, name
        # bf16 keeps 8 significant bits (one rounding: 2^-9 relative), f16
        # 11; allow the rounding of the out/lse the backward reads on top.
        assert rel_err(x, r) <= (2e-2 if dtype == "bf16" else 4e-3), f"{name}: {rel_err(x, r):.3e}"
