"""scaled_dot_product_attention -> weft.attention, with repeat_kv (expand
and reshape, or repeat_interleave, of k and v heads) raised to GQA: fewer kv
heads, q head i reading kv head i / n as repeat_kv's copies do."""
import math

import numpy as np
import torch

from weft.models.ir import F32

from .capture import UnsupportedOp
from .graph_match import RESHAPES, Match, is_op, through, traced
from .lowering import result_type

aten = torch.ops.aten


def unrepeat(node):
    """(kv, n) when node = repeat_kv(kv, n): kv [b, h, s, d] given a unit dim
    at 2, expanded to [b, h, n, s, d] and reshaped to [b, h*n, s, d]; or
    repeat_interleave(kv, n, dim=1). Else (node, 1)."""
    node = through(node)
    if is_op(node, (aten.repeat_interleave.self_int,)):
        dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim")
        if dim is not None and dim % 4 == 1 and len(traced(node).shape) == 4:
            return through(node.args[0]), int(node.args[1])
    if not is_op(node, RESHAPES[:3]):
        return node, 1
    expand = through(node.args[0])
    if not is_op(expand, (aten.expand.default,)):
        return node, 1
    unit = through(expand.args[0])
    while is_op(unit, (aten.slice.Tensor,)) and traced(unit).shape == traced(unit.args[0]).shape:
        unit = through(unit.args[0])
    if not is_op(unit, RESHAPES):
        return node, 1
    kv = through(unit.args[0])
    while is_op(kv, (aten.slice.Tensor,)) and traced(kv).shape == traced(kv.args[0]).shape:
        kv = through(kv.args[0])
    b, h, s, d = (tuple(traced(kv).shape) + (0, 0, 0, 0))[:4]
    n = traced(expand).shape[2] if len(traced(expand).shape) == 5 else 0
    if len(traced(kv).shape) == 4 and tuple(traced(unit).shape) == (b, h, 1, s, d) \
            and tuple(traced(expand).shape) == (b, h, n, s, d) \
            and tuple(traced(node).shape) == (b, h * n, s, d):
        return kv, n
    return node, 1


def is_causal_mask(mask):
    """Whether a mask evaluated at import time (transformers builds it from
    arange) is the causal one: [..., s, s], the same for every leading
    index, attending (True, or 0.0) exactly on and below the diagonal; a
    float mask's other entries -inf or at most finfo.min / 2."""
    if mask is None or mask.dim() < 2 or mask.shape[-1] != mask.shape[-2]:
        return False
    s = mask.shape[-1]
    lower = torch.ones(s, s, dtype=torch.bool).tril()
    if mask.dtype == torch.bool:
        attend = mask
    elif mask.is_floating_point():
        blocked = mask <= torch.finfo(mask.dtype).min / 2
        if not bool(((mask == 0) | blocked).all()):
            return False
        attend = mask == 0
    else:
        return False
    return bool((attend == lower).all())


def match_attention(anchor):
    def arg(i, name, default=None):
        return anchor.args[i] if len(anchor.args) > i else anchor.kwargs.get(name, default)
    q, k, v = anchor.args[:3]
    (k_base, nk), (v_base, nv) = unrepeat(k), unrepeat(v)
    grouped = nk == nv and nk > 1
    k, v = (k_base, v_base) if grouped else (k, v)

    def emit(lw):
        mask, causal = arg(3, "attn_mask"), bool(arg(5, "is_causal", False))
        if mask is not None:
            if not is_causal_mask(lw.constants.get(mask)):
                raise UnsupportedOp(anchor, "an attn_mask tensor that is not a constant causal "
                                            "mask (only causal masking is imported)")
            causal = True
        dropout = float(arg(4, "dropout_p", 0.0) or 0.0)
        if not 0.0 <= dropout < 1.0:
            raise UnsupportedOp(anchor, f"dropout_p = {dropout} (weft takes 0 <= p < 1)")
        shape, dtype = result_type(anchor)
        operands = [lw.float_value(t, dtype) for t in (q, k, v)]
        if any(len(o.shape) != 4 for o in operands):
            raise UnsupportedOp(anchor, "q, k, v not of rank 4 ([b, h, s, d])")
        if operands[0].shape[1] % operands[1].shape[1]:
            raise UnsupportedOp(anchor, "kv heads not dividing q heads")
        attrs = {"causal": causal}
        if causal and operands[0].shape[2] != operands[1].shape[2]:
            # SDPA's is_causal is top-left; weft.attention's causal is
            # bottom-right: the same mask only for equal lengths.
            raise UnsupportedOp(anchor, "is_causal with q length != k length "
                                "(SDPA's top-left mask)")
        scale, head_dim = arg(6, "scale"), operands[0].shape[3]
        default = 1.0 / math.sqrt(head_dim)
        if scale is not None and float(scale) != default:
            if float(np.float32(scale)) == float(scale):
                attrs["scale"] = F32(float(scale))
            else:
                # weft's scale attribute is f32; fold a scale it cannot hold
                # into q so f64 models keep f64 accuracy.
                operands[0] = lw.scale(operands[0], float(scale) / default)
        if dropout > 0.0:
            seed, rng_id = lw.random()
            operands.append(seed)
            attrs.update({"dropout_p": dropout, "weft.rng_id": rng_id})
        return lw.op("attention", operands, shape, dtype, attrs)
    inputs = [q, k, v] + ([arg(3, "attn_mask")] if arg(3, "attn_mask") is not None else [])
    return [(anchor, Match("attention(gqa)" if grouped else "attention", inputs, emit))]
