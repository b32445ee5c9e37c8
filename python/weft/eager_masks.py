"""Weft's dropout masks in eager PyTorch: the Philox rule of weft.philox
(ARCHITECTURE.md, "Randomness") on torch tensors of any device, and a
context that makes eager models draw them, so eager PyTorch and a model
compiled by Weft see the same masks and their losses can be compared step
for step (bench/torch_train_bench.py's accuracy check of models with
dropout; python/tests/test_eager_masks.py checks both against each other).

    masks = EagerMasks()
    with masks:
        for step in ...:
            masks.begin(seed)          # weft's seed argument of that call
            loss = model(x, y)         # F.dropout and SDPA's dropout_p: weft's masks

Inside the context, each F.dropout (nn.Dropout) and each
F.scaled_dot_product_attention with dropout_p > 0 takes the next
weft.rng_id, counted from 0 at begin(): the order in which the importer
numbers a captured forward's random ops (graph order = call order)."""
import math

import torch
import torch.nn.functional as F

from .philox import PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1, threshold

MASK32 = 0xFFFFFFFF
MASK16 = 0xFFFF


def _mulhilo(multiplier, x):
    """(hi, lo) 32-bit words of multiplier * x for x int64 tensors in [0,
    2^32), in int64 arithmetic without overflow (x split in 16-bit halves)."""
    low = multiplier * (x & MASK16)           # < 2^48
    high = multiplier * (x >> 16)             # < 2^48
    total_low = low + ((high & MASK16) << 16)  # < 2^49
    return (high >> 16) + (total_low >> 32), total_low & MASK32


def draws(count, seed, rng_id, device=None):
    """The 32-bit draws (int64 tensor) of elements 0 .. count-1 under weft's
    rule: lane idx % 4 of Philox4x32-10 with key (uint32 seed, uint32
    rng_id) at counter (idx // 4 split in two words, 0, 0)."""
    blocks = torch.arange((count + 3) // 4, dtype=torch.int64, device=device)
    c0, c1 = blocks & MASK32, blocks >> 32
    c2, c3 = torch.zeros_like(c0), torch.zeros_like(c0)
    k0, k1 = int(seed) & MASK32, int(rng_id) & MASK32
    for r in range(10):
        if r:
            k0, k1 = (k0 + PHILOX_W0) & MASK32, (k1 + PHILOX_W1) & MASK32
        hi0, lo0 = _mulhilo(PHILOX_M0, c0)
        hi1, lo1 = _mulhilo(PHILOX_M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return torch.stack((c0, c1, c2, c3), dim=1).reshape(-1)[:count]


def keep_scale(shape, p, seed, rng_id, dtype, device=None):
    """The tensor `keep / (1 - p)` of weft's mask over `shape` (row-major
    global indices), in `dtype`."""
    count = math.prod(shape)
    keep = draws(count, seed, rng_id, device) >= threshold(p)
    return (keep.to(torch.float64) / (1.0 - p)).to(dtype).reshape(shape)


class EagerMasks:
    """A context in which eager dropout draws weft's masks (see the module
    docstring); begin(seed) before each forward."""

    def __init__(self):
        self.seed, self.rng_id = None, 0
        self._saved = None

    def begin(self, seed):
        self.seed, self.rng_id = int(seed), 0

    def _apply(self, p, x, dtype):
        """x * keep / (1 - p) computed in f32 (f64 for f64 x) and rounded
        once to `dtype`, as torch's dropout kernels round."""
        if self.seed is None:
            raise RuntimeError("EagerMasks: call begin(seed) before the forward")
        self.rng_id += 1
        wide = torch.promote_types(x.dtype, torch.float32)
        scale = keep_scale(tuple(x.shape), float(p), self.seed, self.rng_id - 1, wide, x.device)
        return (x.to(wide) * scale).to(dtype)

    def _dropout(self, input, p=0.5, training=True, inplace=False):
        if not training or p == 0:
            return self._saved[0](input, p, training, inplace)
        return self._apply(p, input, input.dtype)

    def _sdpa(self, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
              scale=None, enable_gqa=False):
        if dropout_p == 0:
            return self._saved[1](query, key, value, attn_mask=attn_mask, dropout_p=0.0,
                                  is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
        groups = query.shape[-3] // key.shape[-3]
        if groups > 1:
            key = key.repeat_interleave(groups, dim=-3)
            value = value.repeat_interleave(groups, dim=-3)
        scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
        scores = (query @ key.transpose(-2, -1)) * scale
        lq, lk = query.shape[-2], key.shape[-2]
        if is_causal:
            # weft.attention's causal is bottom-right (equal to SDPA's for lq == lk).
            allowed = torch.ones(lq, lk, dtype=torch.bool, device=query.device).tril(lk - lq)
            scores = scores.masked_fill(~allowed, float("-inf"))
        if attn_mask is not None:
            scores = scores.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool \
                else scores + attn_mask
        probs = torch.softmax(scores.to(torch.promote_types(scores.dtype, torch.float32)), dim=-1)
        return self._apply(dropout_p, probs, value.dtype) @ value

    def __enter__(self):
        self._saved = (F.dropout, F.scaled_dot_product_attention)
        F.dropout, F.scaled_dot_product_attention = self._dropout, self._sdpa
        return self

    def __exit__(self, *exc):
        F.dropout, F.scaled_dot_product_attention = self._saved
        self._saved = None
        return False
