"""Raises written-out patterns back to weft's fused ops: RMSNorm, tanh GELU,
rotary embeddings (rotate_half form) and repeat_kv before SDPA (GQA). Each
matcher starts at an anchor node (rsqrt, tanh, cat, SDPA) and returns a Match
rooted at the pattern's last node; lowering.live_nodes then drops the pieces
nothing else uses. A pattern that does not match exactly is left alone and
its ops are imported one by one."""
import math
import operator
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from weft.models.ir import F32

from .capture import UnsupportedOp
from .lowering import is_number, is_tensor_node, result_type

aten = torch.ops.aten
MUL = (aten.mul.Tensor, aten.mul.Scalar)
ADD = (aten.add.Tensor, aten.add.Scalar)
# Ops that change neither value, shape nor type (a same-type `to`).
PASS_THROUGH = (aten.contiguous.default, aten.clone.default, aten.alias.default,
                aten.detach.default, aten._to_copy.default, aten.to.dtype,
                aten.to.dtype_layout, aten.type_as.default)
RESHAPES = (aten.view.default, aten.reshape.default, aten._unsafe_view.default,
            aten.unsqueeze.default)
GELU_C = math.sqrt(2.0 / math.pi)
# Relative tolerance on the constants of a written-out formula (a model may
# write sqrt(2/pi) as 0.7978845608): the raised op differs from the written
# formula by at most this, relatively, in tanh's argument.
CONSTANT_RTOL = 1e-9


@dataclass
class Match:
    kind: str                      # what lowering reports as raised
    inputs: list                   # FX nodes the raised op reads
    emit: Callable                 # Lowering -> Value


def _is(node, targets):
    return isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target in targets


def _val(node):
    return node.meta.get("val")


def through(node):
    """The node a chain of value-preserving ops starts from."""
    while _is(node, PASS_THROUGH) and is_tensor_node(node.args[0]):
        a, b = _val(node), _val(node.args[0])
        if a.dtype != b.dtype or a.shape != b.shape:
            break
        node = node.args[0]
    return node


def _close(x, y):
    return abs(x - y) <= CONSTANT_RTOL * abs(y)


def _plain_binary(node, targets):
    """(a, b) of a binary op in `targets` without an alpha, else None."""
    if not _is(node, targets) or node.kwargs.get("alpha", 1) != 1:
        return None
    return node.args[0], node.args[1]


def strip_scalars(node):
    """(c, core) with node = c * core through multiplications by constants,
    divisions by constants and negations."""
    coefficient, node = 1.0, through(node)
    while True:
        pair = _plain_binary(node, MUL)
        if pair and is_number(pair[1]):
            coefficient, node = coefficient * pair[1], through(pair[0])
        elif pair and is_number(pair[0]):
            coefficient, node = coefficient * pair[0], through(pair[1])
        elif _is(node, (aten.div.Tensor,)) and is_number(node.args[1]) and node.args[1] != 0 \
                and not node.kwargs.get("rounding_mode"):
            coefficient, node = coefficient / node.args[1], through(node.args[0])
        elif _is(node, (aten.neg.default,)):
            coefficient, node = -coefficient, through(node.args[0])
        else:
            return coefficient, node


def monomial(node):
    """(c, base, k) with node = c * base^k through constant factors, pow by
    integers and products of powers of one base; else (1, node, 1)."""
    c, node = strip_scalars(node)
    if _is(node, (aten.pow.Tensor_Scalar,)) and is_number(node.args[1]) \
            and float(node.args[1]).is_integer() and node.args[1] >= 1:
        e = int(node.args[1])
        c_base, base, k = monomial(node.args[0])
        return c * c_base ** e, base, k * e
    pair = _plain_binary(node, MUL)
    if pair and is_tensor_node(pair[0]) and is_tensor_node(pair[1]):
        (ca, a, i), (cb, b, j) = monomial(pair[0]), monomial(pair[1])
        if a is b:
            return c * ca * cb, a, i + j
    return c, node, 1


def _tensor_users(node, targets):
    """Users in `targets` of node or of a value-preserving op of it."""
    found = []
    for user in node.users:
        if _is(user, targets):
            found.append(user)
        elif _is(user, PASS_THROUGH) and through(user) is node:
            found.extend(_tensor_users(user, targets))
    return found


def _other_operand(mul, node):
    """The other operand of a tensor product `mul` with `node`, else None."""
    pair = _plain_binary(mul, MUL)
    if not pair or not all(is_tensor_node(p) for p in pair):
        return None
    if through(pair[0]) is node:
        return pair[1]
    if through(pair[1]) is node:
        return pair[0]
    return None


def _same_type(*nodes):
    return len({_val(n).dtype for n in nodes}) == 1


# -- RMSNorm: x * rsqrt(mean(x^2, -1, keepdim) + eps) [* weight] ------------------------

def match_rms_norm(anchor):
    added = through(anchor.args[0])
    pair = _plain_binary(added, ADD)
    if not pair:
        return []
    mean, eps = (pair[0], pair[1]) if is_number(pair[1]) else (pair[1], pair[0])
    mean = through(mean)
    if not is_number(eps) or eps <= 0 or not _is(mean, (aten.mean.dim,)):
        return []
    c_square, x, power = monomial(mean.args[0])
    shape = tuple(_val(x).shape)
    dims = [d % len(shape) for d in mean.args[1]] if shape else []
    keepdim = len(mean.args) > 2 and mean.args[2] or mean.kwargs.get("keepdim", False)
    if power != 2 or c_square != 1.0 or dims != [len(shape) - 1] or not keepdim or not _same_type(x, anchor):
        return []
    matches = []
    for normed in _tensor_users(anchor, MUL):
        if _other_operand(normed, anchor) is None or through(_other_operand(normed, anchor)) is not x:
            continue
        if tuple(_val(normed).shape) != shape or not _same_type(x, normed):
            continue
        matches.append((normed, _rms_match(x, None, float(eps))))
        for scaled in _tensor_users(normed, MUL):
            weight = _other_operand(scaled, normed)
            if weight is not None and tuple(_val(weight).shape) == shape[-1:] \
                    and tuple(_val(scaled).shape) == shape and _same_type(x, weight, scaled):
                matches.append((scaled, _rms_match(x, weight, float(eps))))
    return matches


def _rms_match(x, weight, eps):
    def emit(lw):
        value = lw.value(x)
        gamma = lw.value(weight) if weight is not None \
            else lw.constant(1.0, value.dtype, value.shape[-1:])
        return lw.op("rms_norm", [value, gamma], value.shape, value.dtype, {"eps": eps})
    return Match("rms_norm", [x] + ([weight] if weight is not None else []), emit)


# -- tanh GELU: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) -------------------

def _scaled_chain(node, depth=3):
    """(n, c): node and the constant multiples of it above it, n = c * node."""
    chain = [(node, 1.0)]
    for n, c in list(chain):
        for user in n.users:
            pair = _plain_binary(user, MUL)
            if depth and pair and (is_number(pair[0]) or is_number(pair[1])):
                factor = pair[1] if is_number(pair[1]) else pair[0]
                chain.extend((m, c * factor * d) for m, d in _scaled_chain(user, depth - 1))
    return chain


def match_gelu_tanh(anchor):
    c_inner, inner = strip_scalars(anchor.args[0])
    pair = _plain_binary(inner, ADD)
    if not pair or not _close(c_inner, GELU_C) or not all(is_tensor_node(p) for p in pair):
        return []
    for x, cubic in (pair, pair[::-1]):
        x = through(x)
        c_cubic, base, k = monomial(cubic)
        if k == 3 and base is x and _close(c_cubic, 0.044715):
            break
    else:
        return []
    matches = []
    for one_plus in _tensor_users(anchor, ADD):
        pair = _plain_binary(one_plus, ADD)
        if not pair or 1.0 not in [p for p in pair if is_number(p)]:
            continue
        for scaled, c1 in _scaled_chain(one_plus):
            for product in _tensor_users(scaled, MUL):
                other = _other_operand(product, scaled)
                if other is None or other is scaled:
                    continue
                c2, core = strip_scalars(other)
                if core is not x:
                    continue
                for root, c3 in _scaled_chain(product):
                    if _close(c1 * c2 * c3, 0.5) and _same_type(x, root) \
                            and _val(root).shape == _val(x).shape:
                        matches.append((root, _gelu_match(x)))
    return matches


def _gelu_match(x):
    def emit(lw):
        value = lw.value(x)
        return lw.op("gelu", [value], value.shape, value.dtype, {"approximate": "tanh"})
    return Match("gelu(tanh)", [x], emit)


# -- rotary embeddings: x * cos + rotate_half(x) * sin, rotate_half = cat(-x2, x1) -----

def _half_of(node):
    """(x, 0 or 1) when node is the first or second half of x's last dim."""
    node = through(node)
    if _is(node, (aten.slice.Tensor,)) and is_tensor_node(node.args[0]):
        x = through(node.args[0])
        shape = tuple(_val(x).shape)
        d = shape[-1] if shape else 0
        dim = node.args[1] if len(node.args) > 1 else 0
        start = node.args[2] if len(node.args) > 2 else 0
        step = node.args[4] if len(node.args) > 4 else 1
        if d % 2 or dim % len(shape) != len(shape) - 1 or step != 1:
            return None
        start = start or 0
        length = _val(node).shape[-1]
        if length == d // 2 and start in (0, d // 2):
            return x, start // (d // 2)
        return None
    if node.op == "call_function" and node.target is operator.getitem:
        split = node.args[0]
        if _is(split, (aten.split.Tensor, aten.chunk.default, aten.split_with_sizes.default)):
            x = through(split.args[0])
            shape = tuple(_val(x).shape)
            dim = split.args[2] if len(split.args) > 2 else split.kwargs.get("dim", 0)
            pieces = _val(split)
            if shape and dim % len(shape) == len(shape) - 1 and len(pieces) == 2 \
                    and pieces[0].shape[-1] == pieces[1].shape[-1]:
                return x, node.args[1]
    return None


def _table(node, x):
    """Whether cos/sin `node` is x's [s, d] table, possibly with leading 1s."""
    table, shape = tuple(_val(node).shape), tuple(_val(x).shape)
    while table and table[0] == 1 and len(table) > 2:
        table = table[1:]
    return table == shape[-2:] and len(_val(node).shape) <= len(shape) and _same_type(node, x)


def _table_source(node, x):
    """The earliest reshape ancestor of a cos/sin table that is still one."""
    while _is(node, RESHAPES) and is_tensor_node(node.args[0]) and _table(node.args[0], x):
        node = node.args[0]
    return node


def match_rope(anchor):
    pieces = anchor.args[0]
    dim = anchor.args[1] if len(anchor.args) > 1 else anchor.kwargs.get("dim", 0)
    if len(pieces) != 2 or not all(is_tensor_node(p) for p in pieces):
        return []
    shape = tuple(_val(anchor).shape)
    c, core = strip_scalars(pieces[0])
    first, second = _half_of(core), _half_of(pieces[1])
    if c != -1.0 or dim % len(shape) != len(shape) - 1 or not first or not second \
            or first[0] is not second[0] or (first[1], second[1]) != (1, 0):
        return []
    x = first[0]
    matches = []
    for rotated in _tensor_users(anchor, MUL):
        sin = _other_operand(rotated, anchor)
        if sin is None or not _table(sin, x):
            continue
        for total in _tensor_users(rotated, ADD):
            pair = _plain_binary(total, ADD)
            direct = pair and (pair[1] if through(pair[0]) is rotated else pair[0])
            if not direct or not _is(through(direct), MUL):
                continue
            cos = _other_operand(through(direct), x)
            if cos is not None and _table(cos, x) and _val(total).shape == _val(x).shape \
                    and _same_type(total, x):
                matches.append((total, _rope_match(x, _table_source(cos, x),
                                                   _table_source(sin, x))))
    return matches


def _rope_match(x, cos, sin):
    def emit(lw):
        value = lw.value(x)
        table = value.shape[-2:]
        return lw.op("rope", [value, lw.reshape(lw.value(cos), table),
                              lw.reshape(lw.value(sin), table)], value.shape, value.dtype)
    return Match("rope", [x, cos, sin], emit)


# -- scaled_dot_product_attention, with repeat_kv raised to GQA ---------------------------

def unrepeat(node):
    """(kv, n) when node = repeat_kv(kv, n): kv [b, h, s, d] given a unit dim
    at 2, expanded to [b, h, n, s, d] and reshaped to [b, h*n, s, d]; or
    repeat_interleave(kv, n, dim=1). Else (node, 1)."""
    node = through(node)
    if _is(node, (aten.repeat_interleave.self_int,)):
        dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim")
        if dim is not None and dim % 4 == 1 and len(_val(node).shape) == 4:
            return through(node.args[0]), int(node.args[1])
    if not _is(node, RESHAPES[:3]):
        return node, 1
    expand = through(node.args[0])
    if not _is(expand, (aten.expand.default,)):
        return node, 1
    unit = through(expand.args[0])
    while _is(unit, (aten.slice.Tensor,)) and _val(unit).shape == _val(unit.args[0]).shape:
        unit = through(unit.args[0])
    if not _is(unit, RESHAPES):
        return node, 1
    kv = through(unit.args[0])
    while _is(kv, (aten.slice.Tensor,)) and _val(kv).shape == _val(kv.args[0]).shape:
        kv = through(kv.args[0])
    b, h, s, d = (tuple(_val(kv).shape) + (0, 0, 0, 0))[:4]
    n = _val(expand).shape[2] if len(_val(expand).shape) == 5 else 0
    if len(_val(kv).shape) == 4 and tuple(_val(unit).shape) == (b, h, 1, s, d) \
            and tuple(_val(expand).shape) == (b, h, n, s, d) \
            and tuple(_val(node).shape) == (b, h * n, s, d):
        return kv, n
    return node, 1


def match_attention(anchor):
    def arg(i, name, default=None):
        return anchor.args[i] if len(anchor.args) > i else anchor.kwargs.get(name, default)
    q, k, v = anchor.args[:3]
    (k_base, nk), (v_base, nv) = unrepeat(k), unrepeat(v)
    grouped = nk == nv and nk > 1
    k, v = (k_base, v_base) if grouped else (k, v)

    def emit(lw):
        if arg(3, "attn_mask") is not None:
            raise UnsupportedOp(anchor, "an attn_mask tensor (only is_causal is imported)")
        if arg(4, "dropout_p", 0.0):
            raise UnsupportedOp(anchor, "dropout_p > 0 (call module.eval())")
        shape, dtype = result_type(anchor)
        operands = [lw.float_value(t, dtype) for t in (q, k, v)]
        if any(len(o.shape) != 4 for o in operands):
            raise UnsupportedOp(anchor, "q, k, v not of rank 4 ([b, h, s, d])")
        if operands[0].shape[1] % operands[1].shape[1]:
            raise UnsupportedOp(anchor, "kv heads not dividing q heads")
        attrs = {"causal": bool(arg(5, "is_causal", False))}
        scale, head_dim = arg(6, "scale"), operands[0].shape[3]
        default = 1.0 / math.sqrt(head_dim)
        if scale is not None and float(scale) != default:
            if float(np.float32(scale)) == float(scale):
                attrs["scale"] = F32(float(scale))
            else:
                # weft's scale attribute is f32; fold a scale it cannot hold
                # into q so f64 models keep f64 accuracy.
                operands[0] = lw.scale(operands[0], float(scale) / default)
        return lw.op("attention", operands, shape, dtype, attrs)
    return [(anchor, Match("attention(gqa)" if grouped else "attention", [q, k, v], emit))]


MATCHERS = {
    aten.rsqrt.default: match_rms_norm,
    aten.tanh.default: match_gelu_tanh,
    aten.cat.default: match_rope,
    aten.scaled_dot_product_attention.default: match_attention,
}


def find_matches(graph):
    """{root node: Match}; where two patterns share a root the later anchor's wins."""
    matches = {}
    for node in graph.nodes:
        matcher = MATCHERS.get(node.target) if node.op == "call_function" else None
        if matcher:
            matches.update(matcher(node))
    return matches
