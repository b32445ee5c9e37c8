"""Every forward weft op against PyTorch (harness.py states the accuracy
rule). Gradient ops and adamw: test_ops_grad.py; attention: test_ops_attention.py."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from harness import F64_TOL, check, compare_op, randint, randn, rel_err, run_op, wide
from weft import npz, philox
from weft.models.ir import I64Array

DTYPES = ["f64", "f32", "bf16"]


# -- GEMMs --------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES + ["f16"])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(rng, dtype, bias):
    x, w = randn(rng, (2, 3, 24), dtype), randn(rng, (10, 24), dtype)
    inputs = [x, w] + ([randn(rng, (10,), dtype)] if bias else [])
    compare_op("linear", inputs, lambda *t: F.linear(*t))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("b_2d", [False, True])
def test_matmul(rng, dtype, ta, tb, b_2d):
    m, k, n = 5, 12, 7
    a = randn(rng, (2, 3) + ((k, m) if ta else (m, k)), dtype)
    b = randn(rng, (() if b_2d else (2, 3)) + ((n, k) if tb else (k, n)), dtype)

    def fn(a, b):
        return (a.transpose(-1, -2) if ta else a) @ (b.transpose(-1, -2) if tb else b)
    compare_op("matmul", [a, b], fn, {"transpose_a": ta, "transpose_b": tb})


# -- normalization, activations, softmax -------------------------------------

@pytest.mark.parametrize("dtype", DTYPES + ["f16"])
def test_layer_norm(rng, dtype):
    x = randn(rng, (2, 5, 32), dtype, scale=3.0) + 1.5
    g, b = randn(rng, (32,), dtype), randn(rng, (32,), dtype)
    compare_op("layer_norm", [x, g, b], lambda x, g, b: F.layer_norm(x, (32,), g, b, 1e-5),
               {"eps": 1e-5})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("eps", [1e-6, 0.25])
def test_rms_norm(rng, dtype, eps):
    x, g = randn(rng, (3, 4, 32), dtype), randn(rng, (32,), dtype)
    compare_op("rms_norm", [x, g], lambda x, g: F.rms_norm(x, (32,), g, eps), {"eps": eps})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [-1, 0, 1, 2])
def test_softmax(rng, dtype, dim):
    x = randn(rng, (3, 4, 6), dtype, scale=4.0)
    compare_op("softmax", [x], lambda x: torch.softmax(x, dim), {"dim": dim})


@pytest.mark.parametrize("dtype", DTYPES + ["f16"])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(rng, dtype, approximate):
    x = randn(rng, (4, 33), dtype, scale=3.0)
    compare_op("gelu", [x], lambda x: F.gelu(x, approximate=approximate),
               {"approximate": approximate})


def test_gelu_default_is_exact(rng):
    x = randn(rng, (64,), "f64", scale=3.0)
    compare_op("gelu", [x], lambda x: F.gelu(x))


@pytest.mark.parametrize("dtype", DTYPES)
def test_silu(rng, dtype):
    x = randn(rng, (4, 33), dtype, scale=4.0)
    compare_op("silu", [x], F.silu)


# -- elementwise --------------------------------------------------------------

BROADCASTS = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)),
              ((1,), (2, 3)), ((5, 1, 1), (1, 6))]


@pytest.mark.parametrize("dtype", DTYPES + ["f16"])
@pytest.mark.parametrize("opname,fn", [("add", torch.add), ("sub", torch.sub), ("mul", torch.mul)])
@pytest.mark.parametrize("shapes", BROADCASTS, ids=str)
def test_binary(rng, dtype, opname, fn, shapes):
    a, b = randn(rng, shapes[0], dtype), randn(rng, shapes[1], dtype)
    compare_op(opname, [a, b], fn)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("value", [0.3, -2.0, 1e-3])
def test_scale(rng, dtype, value):
    x = randn(rng, (3, 17), dtype)
    # PyTorch multiplies by the scalar in the tensor's precision; weft by the
    # f64 attribute, rounding once. Both are compared with x * value in f64.
    compare_op("scale", [x], lambda x: x * value, {"value": value})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 5, 5), (3, 4, 7), (6, 3)])
@pytest.mark.parametrize("fill", [None, 0.0, -1e4])
def test_causal_mask(rng, dtype, shape, fill):
    x = randn(rng, shape, dtype)
    sq, sk = shape[-2:]
    above = torch.ones(sq, sk, dtype=torch.bool).triu(1)
    value = -math.inf if fill is None else fill
    attrs = {} if fill is None else {"fill": fill}
    compare_op("causal_mask", [x], lambda x: x.masked_fill(above, value), attrs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [((4, 8), (4, 8), (4, 8)), ((4, 1), (4, 8), (8,)),
                                    ((8,), (3, 1), (3, 8))], ids=str)
def test_where(rng, dtype, shapes):
    cond = torch.from_numpy(rng.random(shapes[0]) < 0.5)
    a, b = randn(rng, shapes[1], dtype), randn(rng, shapes[2], dtype)
    compare_op("where", [cond, a, b], torch.where)


# -- convert: rounding to nearest, ties to even -------------------------------

SIGNIFICAND_BITS = {"f64": 52, "f32": 23, "f16": 10, "bf16": 7}


def round_nearest_even(x, dtype):
    """Exact RNE of float64 values to `dtype` by bit operations (normal range)."""
    drop = 52 - SIGNIFICAND_BITS[dtype]
    if drop == 0:
        return x.copy()
    bits = x.view(np.uint64)
    lsb = (bits >> np.uint64(drop)) & np.uint64(1)
    bits = (bits + np.uint64((1 << (drop - 1)) - 1) + lsb) & ~np.uint64((1 << drop) - 1)
    return bits.view(np.float64)


def ties(dtype):
    """Values exactly halfway between two neighbours of `dtype`."""
    ulp = 2.0 ** -SIGNIFICAND_BITS[dtype]
    return [1 + ulp / 2, 1 + 3 * ulp / 2, -(2 + 2 * ulp / 2), 4 * (1 + 5 * ulp / 2)]


@pytest.mark.parametrize("src,dst", [(s, d) for s in ("f64", "f32", "f16", "bf16")
                                     for d in ("f64", "f32", "f16", "bf16") if s != d])
def test_convert(rng, src, dst):
    magnitude = np.exp2(rng.uniform(-10, 10, size=200))
    values = np.concatenate([np.where(rng.random(200) < 0.5, -magnitude, magnitude),
                             ties(dst) if SIGNIFICAND_BITS[dst] < SIGNIFICAND_BITS[src] else []])
    # Values of the source type (exactly representable), then converted.
    x = torch.from_numpy(round_nearest_even(values, src)).to(npz.TORCH_DTYPES[src])
    expected = torch.from_numpy(round_nearest_even(wide(x).numpy(), dst))
    (out,) = run_op("convert", [x], [(tuple(x.shape), dst)])
    bad = (wide(out) != expected).nonzero().flatten()[:5].tolist()
    assert not bad, (f"convert {src}->{dst} is not round-to-nearest-even at {bad}: "
                     f"in {wide(x)[bad].tolist()} got {wide(out)[bad].tolist()} "
                     f"expected {expected[bad].tolist()}")


# -- reductions and shapes ----------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("opname,fn", [("reduce_sum", torch.sum), ("reduce_mean", torch.mean)])
@pytest.mark.parametrize("dims", [(0,), (-1,), (0, 2), (1, 2), (0, 1, 2)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_reduce(rng, dtype, opname, fn, dims, keepdim):
    x = randn(rng, (3, 4, 5), dtype) + 0.5
    compare_op(opname, [x], lambda x: fn(x, dim=dims, keepdim=keepdim),
               {"dims": I64Array(dims), "keepdim": keepdim})


@pytest.mark.parametrize("dtype", ["f64", "bf16", "i64"])
@pytest.mark.parametrize("shapes", [((2, 3, 4), (6, 4)), ((2, 3, 4), (24,)),
                                    ((6, 4), (2, 3, 2, 2)), ((5,), (1, 5, 1))], ids=str)
def test_reshape(rng, dtype, shapes):
    x = randint(rng, shapes[0], 1000) if dtype == "i64" else randn(rng, shapes[0], dtype)
    compare_op("reshape", [x], lambda x: x.reshape(shapes[1]))


@pytest.mark.parametrize("dtype", ["f64", "bf16", "i64"])
@pytest.mark.parametrize("perm", [(0, 2, 1, 3), (3, 2, 1, 0), (1, 0, 3, 2), (0, 1, 2, 3)], ids=str)
def test_transpose(rng, dtype, perm):
    shape = (2, 3, 4, 5)
    x = randint(rng, shape, 1000) if dtype == "i64" else randn(rng, shape, dtype)
    compare_op("transpose", [x], lambda x: x.permute(*perm), {"perm": I64Array(perm)})


@pytest.mark.parametrize("dtype", ["f64", "f32", "i64"])
@pytest.mark.parametrize("dim,sizes", [(1, (3, 5)), (-1, (1, 2, 3)), (0, (2, 2)), (1, (8,))], ids=str)
def test_split(rng, dtype, dim, sizes):
    shape = [4, 8, 6]
    shape[dim] = sum(sizes)
    x = randint(rng, tuple(shape), 1000) if dtype == "i64" else randn(rng, tuple(shape), dtype)
    compare_op("split", [x], lambda x: tuple(torch.split(x, list(sizes), dim)),
               {"dim": dim, "sizes": I64Array(sizes)})


@pytest.mark.parametrize("dtype", ["f64", "bf16", "i64"])
@pytest.mark.parametrize("dim,sizes", [(0, (1, 3)), (-1, (2, 1, 4)), (1, (5,))], ids=str)
def test_concat(rng, dtype, dim, sizes):
    pieces = []
    for n in sizes:
        shape = [2, 3, 4]
        shape[dim] = n
        pieces.append(randint(rng, tuple(shape), 1000) if dtype == "i64"
                      else randn(rng, tuple(shape), dtype))
    compare_op("concat", pieces, lambda *p: torch.cat(p, dim), {"dim": dim})


def test_concat_i1(rng):
    pieces = [torch.from_numpy(rng.random((3, n)) < 0.5) for n in (2, 5)]
    (out,) = run_op("concat", pieces, [((3, 7), "i1")], {"dim": 1})
    assert torch.equal(out, torch.cat(pieces, 1))


# -- embedding, loss, rope ----------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding(rng, dtype):
    table, ids = randn(rng, (11, 6), dtype), randint(rng, (3, 7), 11)
    ids[0, :3] = torch.tensor([0, 10, 0])  # first and last rows, repeated ids
    compare_op("embedding", [ids, table], F.embedding)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 5, 17), (9, 4), (3,)], ids=str)
def test_cross_entropy(rng, dtype, shape):
    logits = randn(rng, shape, dtype, scale=3.0)
    labels = randint(rng, shape[:-1], shape[-1])
    compare_op("cross_entropy", [logits, labels],
               lambda l, y: F.cross_entropy(l.reshape(-1, shape[-1]), y.reshape(-1)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_cross_entropy_ignore_index(rng, dtype, ignore_index):
    """Positions labelled ignore_index (outside the classes, as
    transformers' -100, or one of them) add nothing to the mean."""
    logits = randn(rng, (2, 5, 7), dtype, scale=3.0)
    labels = randint(rng, (2, 5), 7)
    labels[0, :3] = ignore_index
    labels[1, 4] = ignore_index
    compare_op("cross_entropy", [logits, labels],
               lambda l, y: F.cross_entropy(l.reshape(-1, 7), y.reshape(-1),
                                            ignore_index=ignore_index),
               attrs={"ignore_index": ignore_index})


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def rope_tables(rng, seq, dim, dtype):
    angles = torch.from_numpy(rng.uniform(-math.pi, math.pi, size=(seq, dim // 2)))
    angles = torch.cat([angles, angles], -1)
    return angles.cos().to(npz.TORCH_DTYPES[dtype]), angles.sin().to(npz.TORCH_DTYPES[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3, 5, 8), (7, 4)], ids=str)
def test_rope(rng, dtype, shape):
    x = randn(rng, shape, dtype)
    cos, sin = rope_tables(rng, shape[-2], shape[-1], dtype)
    compare_op("rope", [x, cos, sin], lambda x, c, s: x * c + rotate_half(x) * s)


# -- dropout: weft's Philox rule, checked against weft.philox (numpy) ---------

@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.9])
@pytest.mark.parametrize("seed,rng_id", [(0, 0), (1234, 7), (-3, 2**31 + 5), (2**40 + 17, 1)])
def test_dropout_philox(rng, p, seed, rng_id):
    x = randn(rng, (3, 7, 5), "f64") + 3.0  # 105 elements: lanes and a partial block
    attrs = {"p": p, "weft.rng_id": rng_id}
    seed_t = torch.tensor(seed, dtype=torch.int64)
    (out,) = run_op("dropout", [x, seed_t], [(tuple(x.shape), "f64")], attrs)
    expected = torch.from_numpy(philox.dropout(x.numpy(), p, seed, rng_id))
    kept_weft, kept_ref = out != 0, expected != 0
    assert torch.equal(kept_weft, kept_ref), (
        f"dropout mask differs from the Philox rule at flat indices "
        f"{(kept_weft != kept_ref).flatten().nonzero().flatten()[:10].tolist()}")
    check("dropout", out, expected)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_dropout_low_precision(rng, dtype):
    x = randn(rng, (8, 16), dtype)
    (out,) = run_op("dropout", [x, torch.tensor(99)], [(tuple(x.shape), dtype)],
                    {"p": 0.3, "weft.rng_id": 4})
    keep = torch.from_numpy(philox.keep_mask(tuple(x.shape), 0.3, 99, 4))
    ref = torch.where(keep, wide(x) / 0.7, 0.0)
    lowp = torch.where(keep, x / 0.7, torch.zeros((), dtype=x.dtype))
    check("dropout", out, ref, lowp)


def test_dropout_keep_rate(rng):
    x = torch.ones(64, 64, dtype=torch.float64)
    (out,) = run_op("dropout", [x, torch.tensor(5)], [((64, 64), "f64")],
                    {"p": 0.25, "weft.rng_id": 3})
    rate = (out != 0).double().mean().item()
    # 4096 Bernoulli(0.75) draws: sd 0.0068, so 5 sd is 0.034.
    assert abs(rate - 0.75) < 0.034, rate
    assert rel_err(out[out != 0], torch.full_like(out[out != 0], 1 / 0.75)) <= F64_TOL
