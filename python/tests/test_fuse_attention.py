"""weft-fuse-attention, differentially: generated GPT and LLaMA blocks written
with the unfused attention chain run in the reference interpreter before and
after the pass on the same inputs must give the same loss (float64: 1e-12
relative). The dropout on the probabilities and attention's dropout draw the
same Philox masks (same seed, weft.rng_id and [b, hq, sq, sk] element index),
so dropout 0.1 compares equally tightly. The fused IR has one weft.attention
per layer and no weft.softmax; it also matches the generator's own fused
model and PyTorch."""
import os
import re
import subprocess
import tempfile

import pytest
import torch

from harness import REPO, randn, rel_err, run_ir
from weft.models.arguments import argument_values
from weft.models.config import PRESETS
from weft.models.emitter import emit_module
from weft.models.torch_model import reference_loss

F64_SAME = 1e-12      # before vs after the pass, float64 IR
F64_TORCH = 1e-10     # against PyTorch in float64 (ARCHITECTURE.md)


def weft_opt_path():
    build = os.environ.get("WEFT_BUILD_DIR", os.path.join(REPO, "build"))
    path = os.path.join(build, "bin", "weft-opt")
    if not os.access(path, os.X_OK):
        pytest.skip(f"weft-opt is not built ({path} missing)")
    return path


def fuse(text):
    """The module after weft-opt --weft-fuse-attention."""
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False,
                                     dir=os.environ.get("WEFT_TEST_TMP")) as f:
        f.write(text)
        path = f.name
    proc = subprocess.run([weft_opt_path(), path, "--weft-fuse-attention"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"weft-opt failed on {path}:\n{proc.stderr[-4000:]}"
    return proc.stdout


def count_ops(text, name):
    return len(re.findall(rf"\bweft\.{name}\b", text))


CASES = {
    # GPT-2 block: MHA, causal, head_dim 16 (scale 0.25, exact in f32).
    "gpt": PRESETS["gpt_block"],
    # LLaMA block: GQA 4 q / 2 kv heads, RoPE.
    "llama_gqa": PRESETS["llama_block"],
    # MQA: one kv head for 4 q heads.
    "llama_mqa": PRESETS["llama_block"].replace(kv_heads=1),
    # Two layers, head_dim 32: 32**-0.5 is not an f32 value, so the fused op
    # uses its default scale 1/sqrt(32).
    "gpt_2layers_d32": PRESETS["gpt_block"].replace(layers=2, hidden=128, ffn_hidden=128),
    # GQA with 3 q heads per kv head, head_dim 8.
    "llama_g3": PRESETS["llama_block"].replace(hidden=48, heads=6, kv_heads=2, ffn_hidden=96),
}


def unfused(name, dropout, dtype="f64"):
    return CASES[name].replace(attention="unfused", dropout=dropout, dtype=dtype)


@pytest.mark.parametrize("dropout", [0.0, 0.1])
@pytest.mark.parametrize("name", sorted(CASES))
def test_fused_loss_equals_unfused(name, dropout):
    config = unfused(name, dropout)
    before = emit_module(config)
    assert count_ops(before, "softmax") == config.layers
    after = fuse(before)
    assert count_ops(after, "attention") == config.layers, after
    assert count_ops(after, "softmax") == 0, after
    assert count_ops(after, "causal_mask") == 0, after
    assert count_ops(after, "concat") == 0, after  # the kv repetition is gone
    if dropout > 0.0:
        # Attention-probability dropout moved onto the op with its rng_id.
        for layer in range(config.layers):
            rng_id = config.rng_id("attn_probs", layer)
            assert re.search(rf"weft\.attention [^\n]*dropout_p = [^\n]*weft\.rng_id = {rng_id} : i64",
                             after), after

    inputs = argument_values(config)
    (loss_before,) = run_ir(before, inputs, entry="forward")
    (loss_after,) = run_ir(after, inputs, entry="forward")
    err = rel_err(loss_after, loss_before)
    assert err <= F64_SAME, f"{name}, dropout {dropout}: fused loss {loss_after.item()!r} " \
                            f"vs unfused {loss_before.item()!r}: relative error {err:.3e}"

    # The generator's fused form and PyTorch agree with the fused IR too.
    (loss_generated,) = run_ir(emit_module(config.replace(attention="fused")), inputs,
                               entry="forward")
    assert rel_err(loss_after, loss_generated) <= F64_SAME
    expected = reference_loss(config, inputs, torch.float64)
    assert rel_err(loss_after, expected) <= F64_TORCH


@pytest.mark.parametrize("name", ["gpt", "llama_gqa"])
def test_fused_loss_f32_within_rounding(name):
    """In f32 IR the unfused chain rounds its scores and probabilities to f32,
    the fused op does not: equal to within f32 rounding."""
    config = unfused(name, 0.1, dtype="f32")
    before = emit_module(config)
    after = fuse(before)
    assert count_ops(after, "attention") == config.layers
    assert count_ops(after, "softmax") == 0
    inputs = argument_values(config)
    (loss_before,) = run_ir(before, inputs, entry="forward")
    (loss_after,) = run_ir(after, inputs, entry="forward")
    err = rel_err(loss_after, loss_before)
    assert err <= 1e-5, f"{name} f32: relative error {err:.3e}"
    assert err > 0.0 or torch.equal(loss_after, loss_before)


def test_unfusable_chain_left_alone():
    """A chain the pass must not fuse (a causal mask filling with -1e9, not
    -inf) stays, with its result unchanged."""
    config = unfused("gpt", 0.0)
    generated = emit_module(config)
    text = generated.replace("weft.causal_mask %l0.scores.scaled {",
                             "weft.causal_mask %l0.scores.scaled {fill = -1.0e9 : f64, ")
    assert text != generated
    after = fuse(text)
    assert count_ops(after, "attention") == 0, after
    assert count_ops(after, "softmax") == 1
    inputs = argument_values(config)
    (loss_before,) = run_ir(text, inputs, entry="forward")
    (loss_after,) = run_ir(after, inputs, entry="forward")
    assert torch.equal(loss_before, loss_after)


def chain_module(b, hq, hkv, s, d, dtype, causal, dropout, explicit_kt, scale):
    """@main(q, k, v, seed) -> o: the unfused chain on [b, hq, s, d] q and
    [b, hkv, s, d] k, v, repeated to hq heads as the model generator does."""
    t = lambda *shape: f"tensor<{'x'.join(map(str, shape))}x{dtype}>"
    g = hq // hkv
    lines = [f"func.func @main(%q: {t(b, hq, s, d)}, %k: {t(b, hkv, s, d)}, "
             f"%v: {t(b, hkv, s, d)}, %seed: tensor<i64>) -> {t(b, hq, s, d)} {{"]
    for name in "kv":
        if g == 1:
            lines.append(f"  %{name}r = weft.reshape %{name} : ({t(b, hkv, s, d)}) -> {t(b, hq, s, d)}")
            continue
        lines.append(f"  %{name}1 = weft.reshape %{name} : ({t(b, hkv, s, d)}) -> {t(b, hkv, 1, s, d)}")
        pieces = ", ".join([f"%{name}1"] * g)
        piece_types = ", ".join([t(b, hkv, 1, s, d)] * g)
        lines.append(f"  %{name}2 = weft.concat {pieces} {{dim = 2 : i64}} : ({piece_types}) -> {t(b, hkv, g, s, d)}")
        lines.append(f"  %{name}r = weft.reshape %{name}2 : ({t(b, hkv, g, s, d)}) -> {t(b, hq, s, d)}")
    if explicit_kt:
        lines.append(f"  %kt = weft.transpose %kr {{perm = array<i64: 0, 1, 3, 2>}} : ({t(b, hq, s, d)}) -> {t(b, hq, d, s)}")
        lines.append(f"  %s = weft.matmul %q, %kt : ({t(b, hq, s, d)}, {t(b, hq, d, s)}) -> {t(b, hq, s, s)}")
    else:
        lines.append(f"  %s = weft.matmul %q, %kr {{transpose_b}} : ({t(b, hq, s, d)}, {t(b, hq, s, d)}) -> {t(b, hq, s, s)}")
    x = "%s"
    if scale is not None:
        lines.append(f"  %x = weft.scale %s {{value = {scale!r} : f64}} : ({t(b, hq, s, s)}) -> {t(b, hq, s, s)}")
        x = "%x"
    if causal:
        lines.append(f"  %m = weft.causal_mask {x} : ({t(b, hq, s, s)}) -> {t(b, hq, s, s)}")
        x = "%m"
    lines.append(f"  %p = weft.softmax {x} {{dim = -1 : i64}} : ({t(b, hq, s, s)}) -> {t(b, hq, s, s)}")
    x = "%p"
    if dropout:
        lines.append(f"  %pd = weft.dropout %p, %seed {{p = {dropout!r} : f64, weft.rng_id = 5 : i64}} : "
                     f"({t(b, hq, s, s)}, tensor<i64>) -> {t(b, hq, s, s)}")
        x = "%pd"
    lines.append(f"  %o = weft.matmul {x}, %vr : ({t(b, hq, s, s)}, {t(b, hq, s, d)}) -> {t(b, hq, s, d)}")
    lines.append(f"  return %o : {t(b, hq, s, d)}")
    lines.append("}")
    return "\n".join(lines) + "\n"


CHAINS = {
    # name: (b, hq, hkv, s, d, causal, dropout, explicit K^T, scale)
    "mha_causal_dropout": (2, 4, 4, 12, 16, True, 0.2, False, 0.25),
    "mha_default_scale": (1, 2, 2, 9, 8, False, 0.0, True, 8 ** -0.5),
    "gqa3_dropout": (2, 6, 2, 8, 8, True, 0.3, False, 8 ** -0.5),
    "gqa_transposed_k": (1, 4, 2, 10, 4, True, 0.1, True, 0.5),
    "mqa": (2, 4, 1, 7, 8, True, 0.1, False, None),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_fused_chain_outputs_equal(name, rng):
    """The whole attention output, not just a loss: before and after the pass
    on the same inputs, element for element (dropout masks included)."""
    b, hq, hkv, s, d, causal, dropout, explicit_kt, scale = CHAINS[name]
    before = chain_module(b, hq, hkv, s, d, "f64", causal, dropout, explicit_kt, scale)
    after = fuse(before)
    assert count_ops(after, "attention") == 1, after
    for op in ("softmax", "matmul", "concat", "dropout"):
        assert count_ops(after, op) == 0, after
    assert re.search(rf"weft\.attention %\w+, %\w+, %\w+[ ,][^\n]*"
                     rf"tensor<{b}x{hkv}x{s}x{d}xf64>, tensor<{b}x{hkv}x{s}x{d}xf64>", after), after
    inputs = [randn(rng, (b, hq, s, d)), randn(rng, (b, hkv, s, d)), randn(rng, (b, hkv, s, d)),
              torch.tensor(int(rng.integers(0, 2**31)), dtype=torch.int64)]
    (out_before,) = run_ir(before, inputs)
    (out_after,) = run_ir(after, inputs)
    err = rel_err(out_after, out_before)
    assert err <= F64_SAME, f"{name}: relative error {err:.3e}"
    if dropout:
        # Control: the comparison sees the mask. Another rng_id draws
        # another mask and the outputs differ far beyond the tolerance.
        other = after.replace("weft.rng_id = 5 : i64", "weft.rng_id = 6 : i64")
        assert other != after
        (out_other,) = run_ir(other, inputs)
        assert rel_err(out_other, out_before) > 1e-3


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_fused_chain_low_precision_within_rounding(dtype, rng):
    """The unfused chain stores scores and probabilities in `dtype`, the fused
    op rounds once: they differ by at most a few units of that rounding."""
    b, hq, hkv, s, d = 2, 4, 2, 8, 8
    before = chain_module(b, hq, hkv, s, d, dtype, True, 0.1, False, 0.1)
    after = fuse(before)
    assert count_ops(after, "attention") == 1 and count_ops(after, "softmax") == 0
    inputs = [randn(rng, (b, hq, s, d), dtype), randn(rng, (b, hkv, s, d), dtype),
              randn(rng, (b, hkv, s, d), dtype), torch.tensor(99, dtype=torch.int64)]
    (out_before,) = run_ir(before, inputs)
    (out_after,) = run_ir(after, inputs)
    eps = {"f32": 2.0 ** -24, "bf16": 2.0 ** -8}[dtype]
    err = rel_err(out_after, out_before)
    assert err <= 8 * eps, f"{dtype}: relative error {err:.3e} > 8 x {eps:.1e}"
