"""Raises written-out patterns back to weft's fused ops: RMSNorm, tanh GELU,
rotary embeddings (rotate_half form), repeat_kv before SDPA (GQA) and
nll_loss of log_softmax (cross-entropy). Each matcher starts at an anchor
node (rsqrt, tanh, cat, SDPA, nll_loss) and returns a Match
rooted at the pattern's last node; lowering.live_nodes then drops the pieces
nothing else uses. A pattern that does not match exactly is left alone and
its ops are imported one by one."""
import math
import operator

import torch

from .attention import match_attention
from .graph_match import (ADD, CONVERTS, MUL, RESHAPES, Match, close_to, is_op, monomial,
                          other_operand, plain_binary, same_type, strip_scalars,
                          tensor_users, through, traced)
from .lowering import is_number, is_tensor_node, result_type
from .ops import cross_entropy

aten = torch.ops.aten
GELU_C = math.sqrt(2.0 / math.pi)


# -- RMSNorm: x * rsqrt(mean(x^2, -1, keepdim) + eps) [* weight] ------------------------

def match_rms_norm(anchor):
    added = through(anchor.args[0])
    pair = plain_binary(added, ADD)
    if not pair:
        return []
    mean, eps = (pair[0], pair[1]) if is_number(pair[1]) else (pair[1], pair[0])
    mean = through(mean)
    if not is_number(eps) or eps <= 0 or not is_op(mean, (aten.mean.dim,)):
        return []
    c_square, x, power = monomial(mean.args[0])
    shape = tuple(traced(x).shape)
    dims = [d % len(shape) for d in mean.args[1]] if shape else []
    keepdim = len(mean.args) > 2 and mean.args[2] or mean.kwargs.get("keepdim", False)
    if power != 2 or c_square != 1.0 or dims != [len(shape) - 1] or not keepdim \
            or not same_type(x, anchor):
        return []
    matches = []
    for normed in tensor_users(anchor, MUL):
        if other_operand(normed, anchor) is None or through(other_operand(normed, anchor)) is not x:
            continue
        if tuple(traced(normed).shape) != shape or not same_type(x, normed):
            continue
        matches.append((normed, _rms_match(x, None, float(eps))))
        for scaled in tensor_users(normed, MUL):
            weight = other_operand(scaled, normed)
            if weight is not None and tuple(traced(weight).shape) == shape[-1:] \
                    and tuple(traced(scaled).shape) == shape and same_type(x, weight, scaled):
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
    for user in node.users:
        pair = plain_binary(user, MUL)
        if depth and pair and (is_number(pair[0]) or is_number(pair[1])):
            factor = pair[1] if is_number(pair[1]) else pair[0]
            chain.extend((m, factor * d) for m, d in _scaled_chain(user, depth - 1))
    return chain


def widened_from(node):
    """The narrower float tensor `node` converts exactly to a wider float
    type (autocast's cast of pow's operand to f32), else None."""
    if not is_op(node, CONVERTS) or not is_tensor_node(node.args[0]):
        return None
    source, wide = traced(node.args[0]), traced(node)
    if source.shape != wide.shape or not source.dtype.is_floating_point or \
            torch.finfo(wide.dtype).bits <= torch.finfo(source.dtype).bits:
        return None
    return node.args[0]


def match_gelu_tanh(anchor):
    """The tanh GELU as written out (HF's gelu_new, nanoGPT's NewGELU). Under
    CUDA autocast pow's operand is cast to f32 while x + 0.044715 x^3 and
    0.5 * x read the bf16 x (type promotion widens them): every x counts
    through an exact widening, and the raised gelu computes in the result's
    type on x widened to it, as eager's arithmetic does."""
    def source(node):
        return widened_from(node) or node
    c_inner, inner = strip_scalars(anchor.args[0])
    pair = plain_binary(inner, ADD)
    if not pair or not close_to(c_inner, GELU_C) or not all(is_tensor_node(p) for p in pair):
        return []
    for x, cubic in (pair, pair[::-1]):
        x = through(x)
        c_cubic, base, k = monomial(cubic)
        if k == 3 and source(base) is source(x) and close_to(c_cubic, 0.044715):
            break
    else:
        return []
    x = source(x)
    matches = []
    for one_plus in tensor_users(anchor, ADD):
        pair = plain_binary(one_plus, ADD)
        if not pair or 1.0 not in [p for p in pair if is_number(p)]:
            continue
        for scaled, c1 in _scaled_chain(one_plus):
            for product in tensor_users(scaled, MUL):
                other = other_operand(product, scaled)
                if other is None or other is scaled:
                    continue
                c2, core = strip_scalars(other)
                if source(core) is not x:
                    continue
                for root, c3 in _scaled_chain(product):
                    if close_to(c1 * c2 * c3, 0.5) and _not_narrower(root, x) \
                            and traced(root).shape == traced(x).shape:
                        matches.append((root, _gelu_match(x, root)))
    return matches


def _not_narrower(root, x):
    a, b = traced(root).dtype, traced(x).dtype
    return a == b or (a.is_floating_point and b.is_floating_point
                      and torch.finfo(a).bits > torch.finfo(b).bits)


def _gelu_match(x, root):
    def emit(lw):
        _, dtype = result_type(root)
        value = lw.convert(lw.value(x), dtype)
        return lw.op("gelu", [value], value.shape, value.dtype, {"approximate": "tanh"})
    return Match("gelu(tanh)", [x], emit)


# -- rotary embeddings: x * cos + rotate_half(x) * sin, rotate_half = cat(-x2, x1) -----

def _half_of(node):
    """(x, 0 or 1) when node is the first or second half of x's last dim."""
    node = through(node)
    if is_op(node, (aten.slice.Tensor,)) and is_tensor_node(node.args[0]):
        x = through(node.args[0])
        shape = tuple(traced(x).shape)
        d = shape[-1] if shape else 0
        dim = node.args[1] if len(node.args) > 1 else 0
        start = node.args[2] if len(node.args) > 2 else 0
        step = node.args[4] if len(node.args) > 4 else 1
        if d % 2 or dim % len(shape) != len(shape) - 1 or step != 1:
            return None
        start = start or 0
        length = traced(node).shape[-1]
        if length == d // 2 and start in (0, d // 2):
            return x, start // (d // 2)
        return None
    if node.op == "call_function" and node.target is operator.getitem:
        split = node.args[0]
        if is_op(split, (aten.split.Tensor, aten.chunk.default, aten.split_with_sizes.default)):
            x = through(split.args[0])
            shape = tuple(traced(x).shape)
            dim = split.args[2] if len(split.args) > 2 else split.kwargs.get("dim", 0)
            pieces = traced(split)
            if shape and dim % len(shape) == len(shape) - 1 and len(pieces) == 2 \
                    and pieces[0].shape[-1] == pieces[1].shape[-1]:
                return x, node.args[1]
    return None


NARROW = (torch.bfloat16, torch.float16)


def _promoted(x, node):
    """Whether `node` has x's dtype, or f32 where x is bf16/f16 (autocast's
    bf16 q times an f32 table: the product is computed in f32)."""
    have, want = traced(node).dtype, traced(x).dtype
    return have == want or (have == torch.float32 and want in NARROW)


def _table(node, x):
    """Whether cos/sin `node` is x's [s, d] table, possibly with leading 1s,
    of x's dtype or the f32 it is promoted to."""
    table, shape = tuple(traced(node).shape), tuple(traced(x).shape)
    while table and table[0] == 1 and len(table) > 2:
        table = table[1:]
    return table == shape[-2:] and len(traced(node).shape) <= len(shape) and _promoted(x, node)


def _table_source(node, x):
    """The earliest reshape ancestor of a cos/sin table that is still one."""
    while is_op(node, RESHAPES) and is_tensor_node(node.args[0]) and _table(node.args[0], x):
        node = node.args[0]
    return node


def match_rope(anchor):
    pieces = anchor.args[0]
    dim = anchor.args[1] if len(anchor.args) > 1 else anchor.kwargs.get("dim", 0)
    if len(pieces) != 2 or not all(is_tensor_node(p) for p in pieces):
        return []
    shape = tuple(traced(anchor).shape)
    c, core = strip_scalars(pieces[0])
    first, second = _half_of(core), _half_of(pieces[1])
    if c != -1.0 or dim % len(shape) != len(shape) - 1 or not first or not second \
            or first[0] is not second[0] or (first[1], second[1]) != (1, 0):
        return []
    x = first[0]
    matches = []
    for rotated in tensor_users(anchor, MUL):
        sin = other_operand(rotated, anchor)
        if sin is None or not _table(sin, x):
            continue
        for total in tensor_users(rotated, ADD):
            pair = plain_binary(total, ADD)
            direct = pair and (pair[1] if through(pair[0]) is rotated else pair[0])
            if not direct or not is_op(through(direct), MUL):
                continue
            cos = other_operand(through(direct), x)
            if cos is not None and _table(cos, x) and traced(total).shape == traced(x).shape \
                    and same_type(total, cos, sin) and _promoted(x, total):
                matches.append((total, _rope_match(x, _table_source(cos, x),
                                                   _table_source(sin, x))))
    return matches


def _rope_match(x, cos, sin):
    def emit(lw):
        # A bf16 x with f32 tables rotates in f32: x converts exactly, and
        # rotate_half's negation and halves are exact in bf16 too.
        table_value = lw.value(cos)
        value = lw.convert(lw.value(x), table_value.dtype)
        table = value.shape[-2:]
        return lw.op("rope", [value, lw.reshape(table_value, table),
                              lw.reshape(lw.value(sin), table)], value.shape, value.dtype)
    return Match("rope", [x, cos, sin], emit)


# -- cross-entropy: nll_loss(log_softmax(x, -1), target) -----------------------------------

LOG_SOFTMAX = (aten.log_softmax.int, aten._log_softmax.default)


def match_cross_entropy(anchor):
    """nll_loss (nll_loss_nd, nll_loss, or nll_loss_forward's first result)
    with mean reduction and no class weights, of log_softmax over the last
    dim -> weft.cross_entropy {ignore_index}."""
    def arg(i, name, default):
        return anchor.args[i] if len(anchor.args) > i else anchor.kwargs.get(name, default)
    log_probs = through(anchor.args[0])
    if not is_op(log_probs, LOG_SOFTMAX) or arg(2, "weight", None) is not None \
            or arg(3, "reduction", 1) != 1:
        return []
    x, target = log_probs.args[0], anchor.args[1]
    rank = len(traced(x).shape)
    if log_probs.args[1] % rank != rank - 1 or not same_type(x, log_probs):
        return []
    ignore_index = int(arg(4, "ignore_index", -100))
    root = anchor
    if is_op(anchor, (aten.nll_loss_forward.default,)):
        firsts = [u for u in anchor.users if u.target is operator.getitem and u.args[1] == 0]
        if len(firsts) != 1:
            return []
        root = firsts[0]

    def emit(lw):
        return cross_entropy(lw, x, target, result_type(root)[1], ignore_index)
    return [(root, Match("cross_entropy", [x, target], emit))]


MATCHERS = {
    aten.rsqrt.default: match_rms_norm,
    aten.tanh.default: match_gelu_tanh,
    aten.cat.default: match_rope,
    aten.scaled_dot_product_attention.default: match_attention,
    aten.nll_loss_nd.default: match_cross_entropy,
    aten.nll_loss.default: match_cross_entropy,
    aten.nll_loss_forward.default: match_cross_entropy,
}


def find_matches(graph):
    """{root node: Match}; where two patterns share a root the later anchor's wins."""
    matches = {}
    for node in graph.nodes:
        matcher = MATCHERS.get(node.target) if node.op == "call_function" else None
        if matcher:
            matches.update(matcher(node))
    return matches
