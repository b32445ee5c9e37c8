"""One handler per ATen op: (Lowering, node) -> weft Value (or a list of
them for split-like ops). Shapes and element types of results come from the
traced node, so each handler only decides which weft ops compute it."""
import torch

from weft.models.ir import I64Array
from weft.pointwise import POINTWISE

from .capture import UnsupportedOp
from .lowering import FLOAT_TYPES, is_number, is_tensor_node, result_type

aten = torch.ops.aten


def _arg(node, index, name, default=None):
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _dims(dims, rank):
    if dims is None:
        return list(range(rank))
    dims = [dims] if isinstance(dims, int) else list(dims)
    return sorted(d % rank for d in dims) if dims else list(range(rank))


# -- elementwise ----------------------------------------------------------------

def _binary(kind):
    def lower(lw, node):
        shape, dtype = result_type(node)
        if dtype not in FLOAT_TYPES:
            raise UnsupportedOp(node, f"{dtype} arithmetic; weft computes on floats")
        a, b = node.args[0], node.args[1]
        alpha = node.kwargs.get("alpha", 1)
        kind_now = kind
        if node.kwargs.get("rounding_mode"):
            raise UnsupportedOp(node, f"division with rounding_mode={node.kwargs['rounding_mode']!r}")
        if kind == "rsub":  # b - alpha * a
            a, b, kind_now = b, a, "sub"
        if is_tensor_node(a) and is_tensor_node(b):
            x, y = lw.float_value(a, dtype), lw.float_value(b, dtype)
            y = lw.scale(y, alpha) if kind_now in ("add", "sub") else y
            return lw.op(kind_now, [x, y], shape, dtype)
        if is_number(b) and is_tensor_node(a):
            x = lw.float_value(a, dtype)
            if kind_now == "mul":
                return lw.reshape(lw.scale(x, b), shape)
            if kind_now == "div":
                if b == 0:
                    raise UnsupportedOp(node, "division by the constant 0")
                return lw.reshape(lw.scale(x, 1.0 / b), shape)
            c = lw.constant(b * alpha if kind_now == "add" else -b * alpha, dtype)
            return lw.op("add", [x, c], shape, dtype)
        if is_number(a) and is_tensor_node(b) and kind_now == "sub":  # rsub: a - alpha * b
            c = lw.constant(a, dtype)
            return lw.op("sub", [c, lw.scale(lw.float_value(b, dtype), alpha)], shape, dtype)
        if is_number(a) and is_tensor_node(b) and kind_now == "div":  # a / b
            return lw.op("div", [lw.constant(a, dtype), lw.float_value(b, dtype)], shape, dtype)
        raise UnsupportedOp(node, f"operands {a!r}, {b!r}")
    return lower


def _unary(name):
    def lower(lw, node):
        shape, dtype = result_type(node)
        return lw.op(name, [lw.float_value(node.args[0], dtype)], shape, dtype)
    return lower


def _reciprocal(lw, node):
    """1 / x (what `c / x` traces to, times c)."""
    shape, dtype = result_type(node)
    return lw.op("div", [lw.constant(1.0, dtype), lw.float_value(node.args[0], dtype)],
                 shape, dtype)


def _gelu(lw, node):
    shape, dtype = result_type(node)
    approximate = _arg(node, 1, "approximate", "none")
    return lw.op("gelu", [lw.float_value(node.args[0], dtype)], shape, dtype,
                 {"approximate": approximate})


def _pow(lw, node):
    """x^c by a number: x^1 is x, x^2 is x*x (exact, and what RMSNorm's
    pattern reads), other exponents weft.pow."""
    shape, dtype = result_type(node)
    exponent = node.args[1]
    if not is_number(exponent):
        raise UnsupportedOp(node, f"pow by {exponent!r} (weft.pow takes a constant exponent)")
    x = lw.float_value(node.args[0], dtype)
    if float(exponent) == 1.0:
        return x
    if float(exponent) == 2.0:
        return lw.op("mul", [x, x], shape, dtype)
    lw.check_finite(exponent)
    return lw.op("pow", [x], shape, dtype, {"exponent": float(exponent)})


# -- reductions, softmax, norms ---------------------------------------------------

def _reduce(name, dims_index):
    def lower(lw, node):
        shape, dtype = result_type(node)
        x = lw.float_value(node.args[0], dtype)
        dims = _dims(_arg(node, dims_index, "dim") if dims_index else None, len(x.shape))
        keepdim = bool(_arg(node, dims_index + 1, "keepdim", False)) if dims_index else False
        return lw.op(name, [x], shape, dtype,
                     {"dims": _i64_array(dims), "keepdim": keepdim})
    return lower


def _i64_array(values):
    return I64Array(tuple(values))


def _softmax(lw, node):
    shape, dtype = result_type(node)
    x = lw.float_value(node.args[0], dtype)
    return lw.op("softmax", [x], shape, dtype, {"dim": int(node.args[1]) % len(shape)})


def _norm_params(lw, node, shape, dtype, normalized_shape, params):
    if len(normalized_shape) != 1 or normalized_shape[0] != shape[-1]:
        raise UnsupportedOp(node, f"normalized_shape {list(normalized_shape)}; "
                                  "weft normalizes over the last dimension only")
    values = []
    for arg, default in params:
        values.append(lw.float_value(arg, dtype) if arg is not None
                      else lw.constant(default, dtype, (shape[-1],)))
    return values


def _layer_norm(lw, node):
    shape, dtype = result_type(node)
    x = lw.float_value(node.args[0], dtype)
    gamma, beta = _norm_params(lw, node, shape, dtype, node.args[1],
                               [(_arg(node, 2, "weight"), 1.0), (_arg(node, 3, "bias"), 0.0)])
    eps = float(_arg(node, 4, "eps", 1e-5))
    return lw.op("layer_norm", [x, gamma, beta], shape, dtype, {"eps": eps})


def _rms_norm(lw, node):
    shape, dtype = result_type(node)
    x = lw.float_value(node.args[0], dtype)
    (gamma,) = _norm_params(lw, node, shape, dtype, node.args[1],
                            [(_arg(node, 2, "weight"), 1.0)])
    eps = _arg(node, 3, "eps")
    eps = float(torch.finfo(node.args[0].meta["val"].dtype).eps) if eps is None else float(eps)
    return lw.op("rms_norm", [x, gamma], shape, dtype, {"eps": eps})


def _cross_entropy(lw, node):
    """F.cross_entropy of logits [N, C] (or [C]) and class-index targets,
    mean reduction, no class weights or label smoothing."""
    _, dtype = result_type(node)
    weight, reduction = _arg(node, 2, "weight"), _arg(node, 3, "reduction", 1)
    ignore_index, smoothing = _arg(node, 4, "ignore_index", -100), _arg(node, 5, "label_smoothing", 0.0)
    if weight is not None or reduction != 1 or smoothing:
        raise UnsupportedOp(node, "cross_entropy with class weights, label smoothing or a "
                                  "reduction other than mean")
    return cross_entropy(lw, node.args[0], node.args[1], dtype, int(ignore_index))


def cross_entropy(lw, logits_node, target_node, dtype, ignore_index):
    """weft.cross_entropy {ignore_index} of logits [..., C] and i64 labels."""
    logits, labels = lw.float_value(logits_node, dtype), lw.value(target_node)
    if labels.dtype != "i64" or tuple(labels.shape) != tuple(logits.shape[:-1]):
        raise UnsupportedOp(lw.node, f"cross_entropy of {logits.type} against {labels.type} "
                                     "(weft takes i64 class indices, one per row)")
    return lw.op("cross_entropy", [logits, labels], (), dtype, {"ignore_index": ignore_index})


# -- GEMMs, embedding ---------------------------------------------------------------

def _linear(lw, node):
    shape, dtype = result_type(node)
    bias = _arg(node, 2, "bias")
    operands = [lw.float_value(node.args[0], dtype), lw.float_value(node.args[1], dtype)]
    if bias is not None:
        operands.append(lw.float_value(bias, dtype))
    return lw.op("linear", operands, shape, dtype)


def _addmm(lw, node):
    """beta * input + alpha * (mat1 @ mat2): GPT-2's Conv1D (weight [in, out]).
    With a [out] bias and unit factors, a weft.linear of the weight's
    transpose: the bias rides in the GEMM's epilogue, the bias gradient in
    the weight-gradient GEMM's, a tanh GELU after it in the epilogue too
    (weft-fuse-gemm-epilogue), where a matmul and an add are two launches
    and a reduction more in the backward."""
    shape, dtype = result_type(node)
    beta, alpha = _arg(node, 3, "beta", 1), _arg(node, 4, "alpha", 1)
    a, b = lw.float_value(node.args[1], dtype), lw.float_value(node.args[2], dtype)
    bias = lw.float_value(node.args[0], dtype)
    if (alpha == 1 and beta == 1 and len(a.shape) == 2 and len(b.shape) == 2
            and tuple(bias.shape) == (b.shape[1],)):
        weight = lw.op("transpose", [b], (b.shape[1], b.shape[0]), dtype,
                       {"perm": _i64_array([1, 0])})
        return lw.op("linear", [a, weight, bias], shape, dtype)
    product = lw.scale(lw.op("matmul", [a, b], shape, dtype), alpha)
    return lw.op("add", [product, lw.scale(bias, beta)], shape, dtype)


def _matmul(lw, node):
    shape, dtype = result_type(node)
    a, b = lw.float_value(node.args[0], dtype), lw.float_value(node.args[1], dtype)
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise UnsupportedOp(node, f"matmul of {a.type} and {b.type}: weft.matmul takes "
                                  "operands of rank >= 2")
    if len(b.shape) != 2 and a.shape[:-2] != b.shape[:-2]:
        raise UnsupportedOp(node, f"matmul of {a.type} and {b.type}: batch dimensions "
                                  "must be equal or b 2-d (no broadcasting)")
    return lw.op("matmul", [a, b], shape, dtype)


_ARANGES = (aten.arange.default, aten.arange.start, aten.arange.start_step)


def _arange_rows(node):
    """(start, length) when `node` is torch.arange with step 1, else None."""
    if not isinstance(node, torch.fx.Node) or node.target not in _ARANGES:
        return None
    args = [a for a in node.args]
    start, end = (0, args[0]) if node.target is aten.arange.default else (args[0], args[1])
    step = args[2] if len(args) > 2 else node.kwargs.get("step", 1)
    if step != 1 or not all(isinstance(v, int) for v in (start, end)) or end <= start:
        return None
    return start, end - start


def _embedding(lw, node):
    shape, dtype = result_type(node)
    # wpe(torch.arange(T)), nanoGPT's position embedding: rows start..start+T
    # of the table, a slice rather than a gather by an i64 constant (which a
    # GPU package cannot hold).
    rows = _arange_rows(node.args[1])
    table_value = lw.value(node.args[0])
    if rows and rows[0] + rows[1] <= table_value.shape[0]:
        start, length = rows
        n = table_value.shape[0]
        if length == n:
            return lw.reshape(table_value, shape)
        piece = _split_pieces(lw, table_value, 0, [start, length, n - start - length])[1]
        return lw.reshape(piece, shape)
    table, ids = table_value, lw.value(node.args[1])
    if ids.dtype != "i64":
        raise UnsupportedOp(node, f"embedding ids of type {ids.dtype}; weft takes i64 ids")
    return lw.op("embedding", [ids, table], shape, dtype)


# -- shapes and types -----------------------------------------------------------------

def _reshape(lw, node):
    shape, _ = result_type(node)
    return lw.reshape(lw.value(node.args[0]), shape)


def _identity(lw, node):
    return lw.value(node.args[0])


def _dropout(lw, node):
    """Training-mode dropout as weft.dropout: weft's Philox mask (the seed a
    trailing argument drawn anew each call, one weft.rng_id per site), not
    torch's; scaled by 1/(1-p) as torch's."""
    p, train = float(node.args[1]), bool(_arg(node, 2, "train", True))
    x = lw.value(node.args[0])
    if not train or p == 0:
        return x
    if not 0.0 < p < 1.0:
        raise UnsupportedOp(node, f"dropout with p = {p} (weft's dropout takes 0 <= p < 1)")
    seed, rng_id = lw.random()
    return lw.op("dropout", [lw.float_value(node.args[0]), seed], x.shape, x.dtype,
                 {"p": p, "weft.rng_id": rng_id})


def _convert(lw, node):
    _, dtype = result_type(node)
    return lw.convert(lw.value(node.args[0]), dtype)


def _expand(lw, node):
    """expand that broadcasts: x + 0 of the result's shape (weft.add
    broadcasts; exact, and its gradient sums over the broadcast dims).
    repeat_kv's expand before SDPA is raised to GQA instead (attention.py)."""
    shape, dtype = result_type(node)
    x = lw.value(node.args[0])
    if x.shape == shape:
        return x
    if dtype not in FLOAT_TYPES:
        raise UnsupportedOp(node, f"expand of a {dtype} tensor that broadcasts "
                                  "(weft broadcasts floats)")
    return lw.op("add", [x, lw.constant(0.0, dtype, shape)], shape, dtype)


def _transpose(lw, node):
    shape, _ = result_type(node)
    x = lw.value(node.args[0])
    rank = len(x.shape)
    perm = list(range(rank))
    if node.target == aten.permute.default:
        perm = [d % rank for d in node.args[1]]
    elif rank >= 2:
        d0, d1 = (0, 1) if node.target == aten.t.default else (node.args[1] % rank,
                                                                  node.args[2] % rank)
        perm[d0], perm[d1] = perm[d1], perm[d0]
    if perm == list(range(rank)):
        return x
    return lw.op("transpose", [x], shape, x.dtype, {"perm": _i64_array(perm)})


def _split_pieces(lw, x, dim, sizes):
    """weft.split of x along dim into `sizes` (zero sizes kept out of the IR);
    returns one Value or None per size."""
    kept = [s for s in sizes if s > 0]
    if len(kept) == 1:
        return [x if s > 0 else None for s in sizes]
    shapes = []
    for s in kept:
        piece = list(x.shape)
        piece[dim] = s
        shapes.append((tuple(piece), x.dtype))
    values = iter(lw.f.op("split", [x], shapes, {"dim": dim, "sizes": _i64_array(kept)},
                          hint=lw.node.name))
    return [next(values) if s > 0 else None for s in sizes]


def _split(lw, node):
    x = lw.value(node.args[0])
    dim = int(_arg(node, 2, "dim", 0)) % len(x.shape)
    if node.target == aten.unbind.int:
        dim = int(_arg(node, 1, "dim", 0)) % len(x.shape)
    sizes = [int(piece.shape[dim]) if node.target != aten.unbind.int else 1
             for piece in node.meta["val"]]
    pieces = _split_pieces(lw, x, dim, sizes)
    if node.target == aten.unbind.int:
        return [lw.reshape(p, tuple(v.shape)) for p, v in zip(pieces, node.meta["val"])]
    return pieces


def _slice(lw, node):
    shape, _ = result_type(node)
    x = lw.value(node.args[0])
    dim = int(_arg(node, 1, "dim", 0)) % len(x.shape)
    start, step = _arg(node, 2, "start") or 0, _arg(node, 4, "step", 1) or 1
    n = x.shape[dim]
    start = max(0, min(n, start + n if start < 0 else start))
    if step != 1:
        raise UnsupportedOp(node, f"slice with step {step}")
    length = shape[dim]
    if length == 0:
        raise UnsupportedOp(node, "an empty slice")
    return _split_pieces(lw, x, dim, [start, length, n - start - length])[1]


def _select(lw, node):
    shape, _ = result_type(node)
    x = lw.value(node.args[0])
    dim = int(node.args[1]) % len(x.shape)
    index = int(node.args[2]) % x.shape[dim]
    piece = _split_pieces(lw, x, dim, [index, 1, x.shape[dim] - index - 1])[1]
    return lw.reshape(piece, shape)


def _pad(lw, node):
    """Constant padding (F.pad(x, (left, right, ...), value=v)): concat with
    splat blocks, last dim first; transformers pads the labels with -100
    before shifting them."""
    shape, dtype = result_type(node)
    x = lw.value(node.args[0])
    pads = list(node.args[1])
    mode = _arg(node, 2, "mode", "constant") if node.target == aten.pad.default else "constant"
    fill = _arg(node, 3 if node.target == aten.pad.default else 2, "value", 0.0) or 0.0
    if mode != "constant" or any(p < 0 for p in pads):
        raise UnsupportedOp(node, f"pad in mode {mode!r} with widths {pads} "
                                  "(constant padding by nonnegative widths is imported)")
    for i in range(len(pads) // 2):
        dim = len(x.shape) - 1 - i
        blocks = []
        for width in (pads[2 * i], pads[2 * i + 1]):
            block = list(x.shape)
            block[dim] = width
            blocks.append(lw.constant(fill, dtype, tuple(block)) if width else None)
        pieces = [p for p in (blocks[0], x, blocks[1]) if p is not None]
        if len(pieces) > 1:
            out = list(x.shape)
            out[dim] += pads[2 * i] + pads[2 * i + 1]
            x = lw.op("concat", pieces, tuple(out), dtype, {"dim": dim})
    return x


def _cat(lw, node):
    shape, dtype = result_type(node)
    pieces = [lw.value(t) for t in node.args[0]]
    pieces = [lw.convert(p, dtype) for p in pieces if 0 not in p.shape]
    dim = int(_arg(node, 1, "dim", 0)) % len(shape)
    if len(pieces) == 1:
        return pieces[0]
    return lw.op("concat", pieces, shape, dtype, {"dim": dim})


HANDLERS = {
    aten.add.Tensor: _binary("add"), aten.add.Scalar: _binary("add"),
    aten.sub.Tensor: _binary("sub"), aten.sub.Scalar: _binary("sub"),
    aten.rsub.Scalar: _binary("rsub"), aten.rsub.Tensor: _binary("rsub"),
    aten.mul.Tensor: _binary("mul"), aten.mul.Scalar: _binary("mul"),
    aten.div.Tensor: _binary("div"), aten.div.Scalar: _binary("div"),
    aten.gelu.default: _gelu,
    aten.pow.Tensor_Scalar: _pow, aten.reciprocal.default: _reciprocal,
    aten.mean.dim: _reduce("reduce_mean", 1), aten.mean.default: _reduce("reduce_mean", 0),
    aten.sum.dim_IntList: _reduce("reduce_sum", 1), aten.sum.default: _reduce("reduce_sum", 0),
    aten.amax.default: _reduce("reduce_max", 1),
    aten.softmax.int: _softmax, aten._softmax.default: _softmax,
    aten.layer_norm.default: _layer_norm, aten.rms_norm.default: _rms_norm,
    aten.linear.default: _linear, aten.matmul.default: _matmul,
    aten.mm.default: _matmul, aten.bmm.default: _matmul,
    aten.embedding.default: _embedding,
    aten.cross_entropy_loss.default: _cross_entropy,
    aten.view.default: _reshape, aten.reshape.default: _reshape,
    aten._unsafe_view.default: _reshape, aten.unsqueeze.default: _reshape,
    aten.squeeze.dim: _reshape, aten.squeeze.dims: _reshape, aten.squeeze.default: _reshape,
    aten.flatten.using_ints: _reshape, aten.unflatten.int: _reshape,
    aten.contiguous.default: _identity, aten.clone.default: _identity,
    aten.alias.default: _identity, aten.detach.default: _identity, aten.detach_.default: _identity,
    aten.lift_fresh_copy.default: _identity, aten.dropout.default: _dropout,
    aten._to_copy.default: _convert, aten.to.dtype: _convert,
    aten.to.dtype_layout: _convert, aten.to.device: _convert, aten.type_as.default: _convert,
    aten.expand.default: _expand,
    aten.transpose.int: _transpose, aten.permute.default: _transpose, aten.t.default: _transpose,
    aten.split.Tensor: _split, aten.split_with_sizes.default: _split,
    aten.chunk.default: _split, aten.unbind.int: _split,
    aten.slice.Tensor: _slice, aten.select.int: _select, aten.cat.default: _cat,
    aten.pad.default: _pad, aten.constant_pad_nd.default: _pad,
    aten.addmm.default: _addmm,
}

# Unary pointwise ops without attributes whose PyTorch function is the ATen op
# of the same name (neg, exp, rsqrt, tanh, silu, ...): a pointwise op added to
# weft.pointwise.POINTWISE is imported with no change here.
for _name, _op in POINTWISE.items():
    if _op.arity == 1 and _op.variants == ({},) and hasattr(aten, _name):
        HANDLERS.setdefault(getattr(aten, _name).default, _unary(_name))
