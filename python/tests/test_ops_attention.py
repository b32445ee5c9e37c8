"""weft.attention and weft.attention_grad against PyTorch's SDPA and its
autograd: causal (bottom-right aligned when sq < sk, PyTorch's
causal_lower_right) and not, MHA / GQA / MQA, sq != sk, explicit scale, the lse
result, and dropout with weft's Philox mask (PyTorch's masks differ by design,
so the dropout reference is the explicit softmax chain with weft.philox's mask)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from harness import F64_SLACK, check, rel_err, randn, run_op, wide
from test_ops_grad import vjp
from weft import philox
from weft.models.ir import F32

HEADS = {"mha": (4, 4), "gqa": (4, 2), "mqa": (4, 1)}
# An f32-exact scale (the attribute is f32), different from 1/sqrt(d).
SCALE = 0.3125


def scaled_scores(q, k, causal, scale):
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    s = (q @ k.transpose(-1, -2)) * (scale if scale is not None else q.shape[-1] ** -0.5)
    if causal:
        s = s.masked_fill(~visible(q, k), float("-inf"))
    return s


def visible(q, k):
    """Bottom-right causal: query i sees keys j <= i + sk - sq."""
    sq, sk = q.shape[-2], k.shape[-2]
    return ~torch.ones((sq, sk), dtype=torch.bool).triu(1 + sk - sq)


def sdpa_causal(q, k, causal):
    """SDPA's mask arguments for weft's causal: is_causal (top-left) is the
    same mask only for sq == sk."""
    if not causal or q.shape[-2] == k.shape[-2]:
        return {"is_causal": causal}
    return {"attn_mask": visible(q, k)}


def reference_attention(q, k, v, causal, scale, dropout=None):
    """(out, lse) in the tensors' precision. Without dropout it is PyTorch's
    SDPA; with dropout = (p, seed, rng_id) the explicit chain with the mask."""
    group = q.shape[1] // k.shape[1]
    s = scaled_scores(q, k, causal, scale)
    lse = torch.logsumexp(s, dim=-1)
    if dropout is None:
        out = F.scaled_dot_product_attention(q, k, v, scale=scale, enable_gqa=group > 1,
                                             **sdpa_causal(q, k, causal))
        return out, lse
    p, seed, rng_id = dropout
    probs = torch.softmax(s, dim=-1)
    keep = torch.from_numpy(philox.keep_mask(tuple(probs.shape), p, seed, rng_id))
    probs = torch.where(keep, probs / (1 - p), torch.zeros((), dtype=probs.dtype))
    return probs @ v.repeat_interleave(group, dim=1), lse


def torch_lse_low_precision(q, k, causal, scale):
    """PyTorch's own log-sum-exp (f32) from its CPU flash-attention kernel."""
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    _, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        q, k, k, 0.0, causal, scale=scale)
    return lse


def attention_inputs(rng, dtype, heads, sq, sk, d=8, dv=None):
    hq, hkv = HEADS[heads]
    return (randn(rng, (2, hq, sq, d), dtype), randn(rng, (2, hkv, sk, d), dtype),
            randn(rng, (2, hkv, sk, dv or d), dtype))


def attention_attrs(causal, scale, dropout):
    attrs = {"causal": causal}
    if scale is not None:
        attrs["scale"] = F32(scale)
    if dropout:
        attrs.update({"dropout_p": dropout[0], "weft.rng_id": dropout[2]})
    return attrs


@pytest.mark.parametrize("dtype", ["f64", "f32", "bf16"])
@pytest.mark.parametrize("heads", sorted(HEADS))
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("sq,sk", [(8, 8), (5, 9)], ids=str)
@pytest.mark.parametrize("scale", [None, SCALE])
def test_attention(rng, dtype, heads, causal, sq, sk, scale):
    q, k, v = attention_inputs(rng, dtype, heads, sq, sk, dv=8 if sq == sk else 6)
    (out,) = run_op("attention", [q, k, v], [(q.shape[:3] + v.shape[3:], dtype)],
                    attention_attrs(causal, scale, None))
    ref, _ = reference_attention(*(wide(t) for t in (q, k, v)), causal, scale)
    lowp = None if dtype == "f64" else reference_attention(q, k, v, causal, scale)[0]
    check("attention", out, ref, lowp)


@pytest.mark.parametrize("dtype", ["f64", "f32", "bf16"])
@pytest.mark.parametrize("heads", sorted(HEADS))
@pytest.mark.parametrize("causal", [True, False])
def test_attention_lse(rng, dtype, heads, causal):
    q, k, v = attention_inputs(rng, dtype, heads, 6, 6)
    out, lse = run_op("attention", [q, k, v], [(q.shape, dtype), (q.shape[:3], "f32")],
                      attention_attrs(causal, None, None))
    ref_out, ref_lse = reference_attention(*(wide(t) for t in (q, k, v)), causal, None)
    if dtype == "f64":
        check("attention out", out, ref_out)
        # lse is f32 whatever the inputs: rounded once from an exact value, its
        # relative error is at most 2^-24.
        err = rel_err(lse, ref_lse)
        assert err <= 2.0 ** -24 + F64_SLACK, f"lse relative error {err:.3e} > 2^-24"
    else:
        check("attention out", out, ref_out, reference_attention(q, k, v, causal, None)[0])
        check("attention lse", lse, ref_lse, torch_lse_low_precision(q, k, causal, None))


@pytest.mark.parametrize("dtype", ["f64", "bf16"])
@pytest.mark.parametrize("heads", ["mha", "gqa"])
@pytest.mark.parametrize("p", [0.2, 0.6])
def test_attention_dropout(rng, dtype, heads, p):
    q, k, v = attention_inputs(rng, dtype, heads, 7, 7)
    dropout = (p, 2**33 + 11, 5)
    out, lse = run_op("attention", [q, k, v, torch.tensor(dropout[1])],
                      [(q.shape, dtype), (q.shape[:3], "f32")],
                      attention_attrs(True, None, dropout))
    ref_out, ref_lse = reference_attention(*(wide(t) for t in (q, k, v)), True, None, dropout)
    lowp = None if dtype == "f64" else reference_attention(q, k, v, True, None, dropout)[0]
    check("attention(dropout) out", out, ref_out, lowp)
    assert rel_err(lse, ref_lse) <= 2.0 ** -24 + (F64_SLACK if dtype == "f64" else 2.0 ** -8), \
        "lse must not depend on dropout"


# -- attention_grad -----------------------------------------------------------

def make_lse_exact(q, k, causal, scale):
    """Adjusts the last feature of q and k (k's to 1, q's per row) so that
    every row's log-sum-exp is a float32 number, without changing softmax.
    The lse operand is f32 even for f64 attention; with it exact, an
    attention_grad that uses the lse operand and one that recomputes it from
    q and k must both match autograd to float64 accuracy."""
    q, k = q.clone(), k.clone()
    k[..., -1] = 1.0
    q[..., -1] = 0.0
    lse0 = torch.logsumexp(scaled_scores(q, k, causal, scale), dim=-1)
    target = (lse0 + 0.5).to(torch.float32).to(torch.float64)
    q[..., -1] = (target - lse0) / (scale if scale is not None else q.shape[-1] ** -0.5)
    return q, k, target


def attention_vjp(q, k, v, dout, causal, scale, dropout):
    group = q.shape[1] // k.shape[1]
    if dropout is None:
        fn = lambda q, k, v: F.scaled_dot_product_attention(
            q, k, v, scale=scale, enable_gqa=group > 1, **sdpa_causal(q, k, causal))
    else:
        fn = lambda q, k, v: reference_attention(q, k, v, causal, scale, dropout)[0]
    return vjp(fn, [q, k, v], dout)


@pytest.mark.parametrize("heads", sorted(HEADS))
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("sq,sk", [(8, 8), (5, 9)], ids=str)
@pytest.mark.parametrize("scale", [None, SCALE])
@pytest.mark.parametrize("p", [0.0, 0.3])
def test_attention_grad_f64(rng, heads, causal, sq, sk, scale, p):
    q, k, v = attention_inputs(rng, "f64", heads, sq, sk, dv=8 if sq == sk else 6)
    q, k, lse = make_lse_exact(q, k, causal, scale)
    dropout = (p, 77, 9) if p else None
    out, ref_lse = reference_attention(q, k, v, causal, scale, dropout)
    assert rel_err(lse, ref_lse) <= 4 * F64_SLACK  # the construction worked
    dout = randn(rng, tuple(out.shape), "f64")
    operands = [dout, q, k, v, out, lse.to(torch.float32)]
    if dropout:
        operands.append(torch.tensor(dropout[1]))
    grads = run_op("attention_grad", operands, [(t.shape, "f64") for t in (q, k, v)],
                   attention_attrs(causal, scale, dropout))
    ref = attention_vjp(q, k, v, dout, causal, scale, dropout)
    for name, g, r in zip(("dq", "dk", "dv"), grads, ref):
        check(f"attention_grad {name}", g, r)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("heads", sorted(HEADS))
@pytest.mark.parametrize("causal", [True, False])
def test_attention_grad_low_precision(rng, dtype, heads, causal):
    q, k, v = attention_inputs(rng, dtype, heads, 8, 8)
    dout = randn(rng, tuple(q.shape), dtype)
    # out and lse as weft.attention would produce them: rounded once.
    out64, lse64 = reference_attention(*(wide(t) for t in (q, k, v)), causal, None)
    operands = [dout, q, k, v, out64.to(q.dtype), lse64.to(torch.float32)]
    grads = run_op("attention_grad", operands, [(t.shape, dtype) for t in (q, k, v)],
                   attention_attrs(causal, None, None))
    ref = attention_vjp(*(wide(t) for t in (q, k, v, dout)), causal, None, None)
    lowp = attention_vjp(q, k, v, dout, causal, None, None)
    for name, g, r, l in zip(("dq", "dk", "dv"), grads, ref, lowp):
        check(f"attention_grad {name}", g, r, l)


def test_make_lse_exact_keeps_softmax(rng):
    q, k, v = attention_inputs(rng, "f64", "gqa", 6, 6)
    q2, k2, _ = make_lse_exact(q, k, True, None)
    p1 = torch.softmax(scaled_scores(q2, k2, True, None), -1)
    k3 = k2.clone()
    k3[..., -1] = 0.0
    p2 = torch.softmax(scaled_scores(q2, k3, True, None), -1)
    assert np.allclose(p1.numpy(), p2.numpy(), rtol=1e-13, atol=0)
