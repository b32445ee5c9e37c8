"""The cases of fused_check.py as weft IR: one function per group kind and
dtype, each holding exactly one op or weft.fused group (what a training step
hands ElementwiseToNVVM). `python3 fused_cases.py [--small]` prints the
module; scripts/build-fused-kernels compiles it with
`weft-compile --emit=elementwise-kernels`."""
import sys

DTYPES = ("bf16", "f16", "f32")


def t(shape, dtype):
    return "tensor<" + "x".join(str(d) for d in shape) + ("x" if shape else "") + dtype + ">"


def func(name, args, results, body):
    params = ", ".join(f"%{n}: {ty}" for n, ty in args)
    rtypes = ", ".join(ty for _, ty in results)
    rnames = ", ".join(f"%{n}" for n, _ in results)
    return (f"func.func @{name}({params}) -> ({rtypes}) {{\n{body}"
            f"  return {rnames} : {rtypes}\n}}\n")


def op(results, name, operands, attrs, in_types, out_types):
    res = ", ".join(f"%{r}" for r in results)
    ops = ", ".join(f"%{o}" for o in operands)
    attr = f" {{{attrs}}}" if attrs else ""
    return (f"  {res} = weft.{name} {ops}{attr} : ({', '.join(in_types)}) -> "
            f"({', '.join(out_types)})\n")


def fused(results, kind, inputs, in_types, out_types, body_lines, yields):
    """A weft.fused group: inputs are bound to body args %a0.. in order."""
    res = ", ".join(f"%{r}" for r in results)
    args = ", ".join(f"%a{i}: {ty}" for i, ty in enumerate(in_types))
    text = (f"  {res} = weft.fused {', '.join('%' + i for i in inputs)} {{kind = \"{kind}\"}} : "
            f"({', '.join(in_types)}) -> ({', '.join(out_types)}) {{\n  ^bb0({args}):\n")
    for line in body_lines:
        text += "  " + line
    text += f"    weft.yield {', '.join('%' + y for y in yields)} : {', '.join(out_types)}\n  }}\n"
    return text


def cases(small):
    """The module: every case at full size, or tiny shapes with `small`."""
    # Domains: pointwise [8, 1024, 2048], rows [8, 1024, 1024], loss [1024, 8192].
    pw = [2, 64, 256] if small else [8, 1024, 2048]
    rw = [2, 64, 256] if small else [8, 1024, 1024]
    ce = [64, 1000] if small else [1024, 8192]
    out = [dtype_cases(d, pw, rw, ce) for d in DTYPES]
    out.append(split_adamw_cases(rw))
    out.append(rope_cases(small))
    out.append(dropout_tail_cases())
    out.append(step_op_cases(small, pw, rw))
    return "".join(out)


def dtype_cases(d, pw, rw, ce):
    """The group kinds and ops of one dtype over the pointwise (pw), rows (rw)
    and loss (ce) domains."""
    out = []
    x, h, r = t(pw, d), t(pw[-1:], d), t(rw, d)
    g = t(rw[-1:], d)
    # bias + GELU (tanh), the MLP's first epilogue.
    out.append(func(f"add_gelu_{d}", [("x", x), ("b", h)], [("y", x)], fused(
        ["y"], "add+gelu", ["x", "b"], [x, h], [x],
        [op(["s"], "add", ["a0", "a1"], "", [x, h], [x]),
         op(["g"], "gelu", ["s"], 'approximate = "tanh"', [x], [x])], ["g"])))
    # GELU (erf) and its gradient, SiLU and its gradient, unfused.
    out.append(func(f"gelu_{d}", [("x", x)], [("y", x)],
                    op(["y"], "gelu", ["x"], "", [x], [x])))
    out.append(func(f"gelu_grad_tanh_{d}", [("dy", x), ("x", x)], [("dx", x)],
                    op(["dx"], "gelu_grad", ["dy", "x"], 'approximate = "tanh"', [x, x], [x])))
    out.append(func(f"silu_grad_{d}", [("dy", x), ("x", x)], [("dx", x)],
                    op(["dx"], "silu_grad", ["dy", "x"], "", [x, x], [x])))
    # The generic pointwise ops (their formulas), one group: rsqrt reads
    # exp(tanh(x)) > 0.
    out.append(func(f"tanh_exp_rsqrt_neg_{d}", [("x", x)], [("y", x)], fused(
        ["y"], "tanh+exp+rsqrt+neg", ["x"], [x], [x],
        [op(["t"], "tanh", ["a0"], "", [x], [x]),
         op(["e"], "exp", ["t"], "", [x], [x]),
         op(["r"], "rsqrt", ["e"], "", [x], [x]),
         op(["n"], "neg", ["r"], "", [x], [x])], ["n"])))
    # dropout (p = 0) + residual + LayerNorm: both the sum and the norm out.
    out.append(func(f"dropout_add_layer_norm_{d}",
                    [("x", r), ("res", r), ("g", g), ("b", g), ("seed", "tensor<i64>")],
                    [("s", r), ("y", r)], fused(
        ["s", "y"], "dropout+add+layer_norm", ["x", "seed", "res", "g", "b"],
        [r, "tensor<i64>", r, g, g], [r, r],
        [op(["dr"], "dropout", ["a0", "a1"], "p = 0.0 : f64, weft.rng_id = 7 : i64", [r, "tensor<i64>"], [r]),
         op(["s"], "add", ["dr", "a2"], "", [r, r], [r]),
         op(["y"], "layer_norm", ["s", "a3", "a4"], "eps = 1.0e-05 : f64", [r, g, g], [r])],
        ["s", "y"])))
    # The same with dropout p = 0.1 (the Philox mask), and its backward
    # group as weft-autodiff + weft-fuse-elementwise make it: the
    # LayerNorm gradient plus the residual stream's gradient (dsum,
    # dres), and dx = dropout(dsum) under the forward's seed and rng_id.
    seed = "tensor<i64>"
    drop = "p = 0.1 : f64, weft.rng_id = 7 : i64"
    out.append(func(f"dropout_p01_add_layer_norm_{d}",
                    [("x", r), ("seed", seed), ("res", r), ("g", g), ("b", g)],
                    [("s", r), ("y", r)], fused(
        ["s", "y"], "dropout+add+layer_norm", ["x", "seed", "res", "g", "b"],
        [r, seed, r, g, g], [r, r],
        [op(["dr"], "dropout", ["a0", "a1"], drop, [r, seed], [r]),
         op(["s"], "add", ["dr", "a2"], "", [r, r], [r]),
         op(["y"], "layer_norm", ["s", "a3", "a4"], "eps = 1.0e-05 : f64", [r, g, g], [r])],
        ["s", "y"])))
    out.append(func(f"layer_norm_grad_add_dropout_p01_{d}",
                    [("dy", r), ("x", r), ("g", g), ("dres", r), ("seed", seed)],
                    [("dg", g), ("db", g), ("dsum", r), ("dx", r)], fused(
        ["dg", "db", "dsum", "dx"], "layer_norm_grad+add+dropout",
        ["dy", "x", "g", "dres", "seed"], [r, r, g, r, seed], [g, g, r, r],
        [op(["dn", "dg", "db"], "layer_norm_grad", ["a0", "a1", "a2"],
            "eps = 1.0e-05 : f64", [r, r, g], [r, g, g]),
         op(["dsum"], "add", ["a3", "dn"], "", [r, r], [r]),
         op(["dx"], "dropout", ["dsum", "a4"], drop, [r, seed], [r])],
        ["dg", "db", "dsum", "dx"])))
    out.append(func(f"rms_norm_{d}", [("x", r), ("g", g)], [("y", r)],
                    op(["y"], "rms_norm", ["x", "g"], "eps = 1.0e-06 : f64", [r, g], [r])))
    out.append(func(f"softmax_{d}", [("x", r)], [("y", r)],
                    op(["y"], "softmax", ["x"], "dim = -1 : i64", [r], [r])))
    out.append(func(f"softmax_grad_{d}", [("dy", r), ("y", r)], [("dx", r)],
                    op(["dx"], "softmax_grad", ["dy", "y"], "dim = -1 : i64", [r, r], [r])))
    out.append(func(f"layer_norm_grad_{d}", [("dy", r), ("x", r), ("g", g)],
                    [("dx", r), ("dg", g), ("db", g)],
                    op(["dx", "dg", "db"], "layer_norm_grad", ["dy", "x", "g"],
                       "eps = 1.0e-05 : f64", [r, r, g], [r, g, g])))
    # LayerNorm backward + the residual gradient add.
    out.append(func(f"layer_norm_grad_add_{d}", [("dy", r), ("x", r), ("g", g), ("dres", r)],
                    [("dsum", r), ("dg", g), ("db", g)], fused(
        ["dsum", "dg", "db"], "layer_norm_grad+add", ["dy", "x", "g", "dres"], [r, r, g, r],
        [r, g, g],
        [op(["dx", "dg", "db"], "layer_norm_grad", ["a0", "a1", "a2"],
            "eps = 1.0e-05 : f64", [r, r, g], [r, g, g]),
         op(["dsum"], "add", ["dx", "a3"], "", [r, r], [r])], ["dsum", "dg", "db"])))
    out.append(func(f"rms_norm_grad_{d}", [("dy", r), ("x", r), ("g", g)],
                    [("dx", r), ("dg", g)],
                    op(["dx", "dg"], "rms_norm_grad", ["dy", "x", "g"],
                       "eps = 1.0e-06 : f64", [r, r, g], [r, g])))
    lg, lb, sc = t(ce, d), t(ce[:-1], "i64"), t([], d)
    out.append(func(f"cross_entropy_{d}", [("logits", lg), ("labels", lb)], [("loss", sc)],
                    op(["loss"], "cross_entropy", ["logits", "labels"], "", [lg, lb], [sc])))
    out.append(func(f"cross_entropy_grad_{d}",
                    [("dloss", sc), ("logits", lg), ("labels", lb)], [("dlogits", lg)],
                    op(["dlogits"], "cross_entropy_grad", ["dloss", "logits", "labels"], "",
                       [sc, lg, lb], [lg])))
    # With ignore_index (PyTorch's default, what the importer writes): the
    # mean over the kept rows; label 7 stands for the ignored class here, so
    # the random labels hit it.
    out.append(func(f"cross_entropy_ignore_{d}", [("logits", lg), ("labels", lb)], [("loss", sc)],
                    op(["loss"], "cross_entropy", ["logits", "labels"], "ignore_index = 7 : i64",
                       [lg, lb], [sc])))
    out.append(func(f"cross_entropy_grad_ignore_{d}",
                    [("dloss", sc), ("logits", lg), ("labels", lb)], [("dlogits", lg)],
                    op(["dlogits"], "cross_entropy_grad", ["dloss", "logits", "labels"],
                       "ignore_index = 7 : i64", [sc, lg, lb], [lg])))
    if d != "f32":
        # Low-precision logits with an f32 loss (weft-fold-loss-convert's
        # form under autocast): f32 math, the gradient in the logits' type.
        f = t([], "f32")
        out.append(func(f"cross_entropy_f32_loss_{d}", [("logits", lg), ("labels", lb)],
                        [("loss", f)],
                        op(["loss"], "cross_entropy", ["logits", "labels"],
                           "ignore_index = 7 : i64", [lg, lb], [f])))
        out.append(func(f"cross_entropy_grad_f32_dloss_{d}",
                        [("dloss", f), ("logits", lg), ("labels", lb)], [("dlogits", lg)],
                        op(["dlogits"], "cross_entropy_grad", ["dloss", "logits", "labels"],
                           "ignore_index = 7 : i64", [f, lg, lb], [lg])))
        # AdamW on f32 master weights and moments, the low-precision copy.
        p, lp, st = t(rw[1:], "f32"), t(rw[1:], d), "tensor<i64>"
        out.append(func(f"adamw_convert_{d}",
                        [("p", p), ("grad", p), ("m", p), ("v", p), ("step", st)],
                        [("np", p), ("nm", p), ("nv", p), ("lp", lp)], fused(
            ["np", "nm", "nv", "lp"], "adamw+convert", ["p", "grad", "m", "v", "step"],
            [p, p, p, p, st], [p, p, p, lp],
            [op(["np", "nm", "nv"], "adamw", ["a0", "a1", "a2", "a3", "a4"],
                "lr = 1.0e-03 : f64, beta1 = 0.9 : f64, beta2 = 0.95 : f64, "
                "eps = 1.0e-08 : f64, weight_decay = 0.1 : f64", [p, p, p, p, st], [p, p, p]),
             op(["lp"], "convert", ["np"], "", [p], [lp])], ["np", "nm", "nv", "lp"])))
        out.append(func(f"convert_{d}", [("x", t(pw, "f32"))], [("y", x)],
                        op(["y"], "convert", ["x"], "", [t(pw, "f32")], [x])))
    return "".join(out)


def split_adamw_cases(rw):
    """AdamW on split f32 masters (--weight-copies=split): the bf16 high half
    (the weight the GEMMs read), f32 moments and the i16 low half. Alone
    with the bf16 gradient autodiff gives it; as weft-fuse-elementwise
    wraps it in a training step (a group of kind "adamw") over a domain
    with a scalar tail (37 x 129); fused with its gradient's producer (two
    f32 contributions added)."""
    out = []
    hyper = ("lr = 1.0e-03 : f64, beta1 = 0.9 : f64, beta2 = 0.95 : f64, "
             "eps = 1.0e-08 : f64, weight_decay = 0.1 : f64")
    names = ["p", "grad", "m", "v", "step", "low"]
    results = ["np", "nm", "nv", "nlow"]
    for name, shape, gd in (("adamw_split_bf16", rw[1:], "bf16"),
                            ("adamw_split_tail_bf16", [37, 129], "bf16"),
                            ("add_adamw_split_bf16", rw[1:], "f32")):
        hi, f, lo, st = t(shape, "bf16"), t(shape, "f32"), t(shape, "i16"), "tensor<i64>"
        gt = t(shape, gd)
        ins, outs = [hi, gt, f, f, st, lo], [hi, f, f, lo]
        if name == "adamw_split_bf16":
            out.append(func(name, list(zip(names, ins)), list(zip(results, outs)),
                            op(results, "adamw", names, hyper, ins, outs)))
        elif name == "adamw_split_tail_bf16":
            out.append(func(name, list(zip(names, ins)), list(zip(results, outs)), fused(
                results, "adamw", names, ins, outs,
                [op(results, "adamw", [f"a{i}" for i in range(6)], hyper, ins, outs)],
                results)))
        else:
            args = ["p", "g0", "g1", "m", "v", "step", "low"]
            types = [hi, gt, gt, f, f, st, lo]
            out.append(func(name, list(zip(args, types)), list(zip(results, outs)), fused(
                results, "add+adamw", args, types, outs,
                [op(["g"], "add", ["a1", "a2"], "", [gt, gt], [gt]),
                 op(results, "adamw", ["a0", "g", "a3", "a4", "a5", "a6"], hyper, ins, outs)],
                results)))
    return "".join(out)


def rope_cases(small):
    """RoPE over [b, h, s, d] with its [s, d] tables, forward and inverse (its
    gradient), each element reading its rotate_half partner half a row away:
    whole-vector partners (16-byte vectors in one half of a row); fused after
    RMSNorm (a rows kernel) and after a multiply by a [d] vector (the
    partner recomputes it); over [1, 3, 7, 12], scalar (bf16: 84-element
    tables) and f32 vectors of 4 whose partners (6 away) are per lane."""
    out = []
    rp = [2, 4, 64, 32] if small else [8, 16, 1024, 128]
    odd = [1, 3, 7, 12]

    def rope(name, shape, d, inverse):
        x, tab = t(shape, d), t(shape[-2:], d)
        attrs = "inverse" if inverse else ""
        return func(name, [("x", x), ("cos", tab), ("sin", tab)], [("y", x)],
                    op(["y"], "rope", ["x", "cos", "sin"], attrs, [x, tab, tab], [x]))

    for d in DTYPES:
        out.append(rope(f"rope_{d}", rp, d, False))
        out.append(rope(f"rope_inverse_{d}", rp, d, True))
    out.append(rope("rope_odd_bf16", odd, "bf16", False))
    out.append(rope("rope_inverse_odd_f32", odd, "f32", True))
    d = "bf16"
    x, tab, g = t(rp, d), t(rp[-2:], d), t(rp[-1:], d)
    out.append(func("rms_norm_rope_bf16", [("x", x), ("g", g), ("cos", tab), ("sin", tab)],
                    [("y", x)], fused(
        ["y"], "rms_norm+rope", ["x", "g", "cos", "sin"], [x, g, tab, tab], [x],
        [op(["n"], "rms_norm", ["a0", "a1"], "eps = 1.0e-06 : f64", [x, g], [x]),
         op(["y"], "rope", ["n", "a2", "a3"], "", [x, tab, tab], [x])], ["y"])))
    d = "f32"
    x, tab, m = t(rp, d), t(rp[-2:], d), t(rp[-1:], d)
    out.append(func("mul_rope_inverse_f32", [("x", x), ("m", m), ("cos", tab), ("sin", tab)],
                    [("p", x), ("y", x)], fused(
        ["p", "y"], "mul+rope", ["x", "m", "cos", "sin"], [x, m, tab, tab], [x, x],
        [op(["p"], "mul", ["a0", "a1"], "", [x, m], [x]),
         op(["y"], "rope", ["p", "a2", "a3"], "inverse", [x, tab, tab], [x])], ["p", "y"])))
    return "".join(out)


def dropout_tail_cases():
    """Dropout alone (p = 0.1) over 37 x 129: bf16 vectors of 8 (two Philox
    blocks each) and f32 vectors of 4 (one), then a scalar tail of 5 / 1
    elements that draw one element each."""
    out = []
    for d in ("bf16", "f32"):
        x, seed = t([37, 129], d), "tensor<i64>"
        out.append(func(f"dropout_p01_tail_{d}", [("x", x), ("seed", seed)], [("y", x)],
                        op(["y"], "dropout", ["x", "seed"], "p = 0.1 : f64, weft.rng_id = 11 : i64",
                           [x, seed], [x])))
    return "".join(out)


def step_op_cases(small, pw, rw):
    """Data movement and the other unfused ops of a GPT step (bf16)."""
    out = []
    d = "bf16"
    b, s, heads, hd = (2, 64, 4, 32) if small else (8, 1024, 16, 64)
    hid = heads * hd
    qkv = t([b, s, heads, 3, hd], d)
    piece = t([b, s, heads, 1, hd], d)
    out.append(func("split_bf16", [("x", qkv)], [("q", piece), ("k", piece), ("v", piece)],
                    op(["q", "k", "v"], "split", ["x"], "dim = 3 : i64, sizes = array<i64: 1, 1, 1>",
                       [qkv], [piece, piece, piece])))
    out.append(func("concat_bf16", [("q", piece), ("k", piece), ("v", piece)], [("x", qkv)],
                    op(["x"], "concat", ["q", "k", "v"], "dim = 3 : i64", [piece] * 3, [qkv])))
    bshd, bhsd = t([b, s, heads, hd], d), t([b, heads, s, hd], d)
    out.append(func("transpose_bf16", [("x", bshd)], [("y", bhsd)],
                    op(["y"], "transpose", ["x"], "perm = array<i64: 0, 2, 1, 3>", [bshd], [bhsd])))
    # Matrix transposes (the last two dims swapped), tiled through shared
    # memory: a GPT-2 Conv1D weight [in, out] as [out, in], and a batch of
    # matrices whose sides are not multiples of the 32 x 32 tile.
    w, wt = t([768, 2304], d), t([2304, 768], d)
    out.append(func("transpose_weight_bf16", [("x", w)], [("y", wt)],
                    op(["y"], "transpose", ["x"], "perm = array<i64: 1, 0>", [w], [wt])))
    odd, oddt = t([3, 77, 45], "f32"), t([3, 45, 77], "f32")
    out.append(func("transpose_batched_f32", [("x", odd)], [("y", oddt)],
                    op(["y"], "transpose", ["x"], "perm = array<i64: 0, 2, 1>", [odd], [oddt])))
    vocab = 500 if small else 8192
    ids, table, act = t([b, s], "i64"), t([vocab, hid], d), t([b, s, hid], d)
    out.append(func("embedding_bf16", [("ids", ids), ("table", table)], [("y", act)],
                    op(["y"], "embedding", ["ids", "table"], "", [ids, table], [act])))
    out.append(func("embedding_grad_bf16", [("dy", act), ("ids", ids)], [("dt", table)],
                    op(["dt"], "embedding_grad", ["dy", "ids"], "", [act, ids], [table])))
    out.append(func("reduce_sum_bf16", [("x", act)], [("y", t([hid], d))],
                    op(["y"], "reduce_sum", ["x"], "dims = array<i64: 0, 1>", [act], [t([hid], d)])))
    # Reductions of the last dim alone (RowReduceKernels: a CTA per row).
    rows = t([b, s], d)
    out.append(func("reduce_sum_rows_bf16", [("x", act)], [("y", rows)],
                    op(["y"], "reduce_sum", ["x"], "dims = array<i64: 2>", [act], [rows])))
    out.append(func("reduce_mean_rows_bf16", [("x", act)], [("y", rows)],
                    op(["y"], "reduce_mean", ["x"], "dims = array<i64: 2>", [act], [rows])))
    # A few long rows summed (slabs of an all-to-all reduce-scatter): the
    # pointwise slab kernel, not the column sums.
    slabs, slab = t([2, 1 << 17], d), t([1 << 17], d)
    out.append(func("reduce_slabs_bf16", [("x", slabs)], [("y", slab)],
                    op(["y"], "reduce_sum", ["x"], "dims = array<i64: 0>", [slabs], [slab])))
    logits, maxes = t([b * s, vocab], "f32"), t([b * s], "f32")
    out.append(func("reduce_max_rows_f32", [("x", logits)], [("y", maxes)],
                    op(["y"], "reduce_max", ["x"], "dims = array<i64: 1>", [logits], [maxes])))
    out.append(func("add_broadcast_bf16", [("x", act), ("p", t([s, hid], d))], [("y", act)],
                    op(["y"], "add", ["x", "p"], "", [act, t([s, hid], d)], [act])))
    # reduce_mean's gradient: an all-ones [1, 1, 1] value broadcast onto the
    # domain (loaded once per thread), as the remat anchor's mean_square loss.
    x32, one = t(pw, "f32"), t([1] * len(pw), "f32")
    out.append(func("add_scalar_f32", [("s", one), ("x", x32)], [("y", x32)],
                    op(["y"], "add", ["s", "x"], "", [one, x32], [x32])))
    # Broadcasts with size-1 dims in between, fused: x * m[b, 1, h] (a vector
    # per lane run) + r[b, s, 1] (one value per row) + c[1, 1, 1].
    xa, mid, row1, c1 = t([b, s, hid], d), t([b, 1, hid], d), t([b, s, 1], d), t([1, 1, 1], d)
    out.append(func("mul_add_strided_bf16", [("x", xa), ("m", mid), ("r", row1), ("c", c1)],
                    [("y", xa)], fused(
        ["y"], "mul+add+add", ["x", "m", "r", "c"], [xa, mid, row1, c1], [xa],
        [op(["p"], "mul", ["a0", "a1"], "", [xa, mid], [xa]),
         op(["q"], "add", ["p", "a2"], "", [xa, row1], [xa]),
         op(["y"], "add", ["q", "a3"], "", [xa, c1], [xa])], ["y"])))
    # The first layer's LayerNorm backward when x needs no gradient: only
    # dgamma / dbeta leave the group, the statistics and partial sums wait in
    # the op's workspace (no rows kernel).
    rr, gg = t(rw, d), t(rw[-1:], d)
    out.append(func("layer_norm_grad_weights_bf16", [("dy", rr), ("x", rr), ("g", gg)],
                    [("dg", gg), ("db", gg)], fused(
        ["dg", "db"], "layer_norm_grad", ["dy", "x", "g"], [rr, rr, gg], [gg, gg],
        [op(["dx", "dg", "db"], "layer_norm_grad", ["a0", "a1", "a2"],
            "eps = 1.0e-05 : f64", [rr, rr, gg], [rr, gg, gg])], ["dg", "db"])))
    out.append(func("fill_f32", [], [("c", t([b, s, hid], "f32"))],
                    f"  %c = arith.constant dense<0.25> : {t([b, s, hid], 'f32')}\n"))
    return "".join(out)


if __name__ == "__main__":
    sys.stdout.write(cases("--small" in sys.argv[1:]))
