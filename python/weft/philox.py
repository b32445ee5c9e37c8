"""Philox4x32-10 (Salmon et al., SC'11; Random123) in numpy, and weft's
dropout rule built on it.

Weft's rule (ARCHITECTURE.md, "Randomness"; the dropout op's description):
element `idx` (row-major index over the whole logical tensor) draws lane
`idx % 4` of Philox4x32-10 with key `(uint32(seed), uint32(rng_id))` and
counter `(uint32(idx // 4), uint32((idx // 4) >> 32), 0, 0)`; it is kept
iff the draw is >= floor(p * 2^32), and kept elements are scaled by 1/(1-p).
"""
import math

import numpy as np

PHILOX_M0 = 0xD2511F53
PHILOX_M1 = 0xCD9E8D57
PHILOX_W0 = 0x9E3779B9  # golden ratio
PHILOX_W1 = 0xBB67AE85  # sqrt(3) - 1
MASK32 = 0xFFFFFFFF


def _mulhilo(multiplier, x):
    product = np.uint64(multiplier) * x.astype(np.uint64)
    return (product >> np.uint64(32)).astype(np.uint32), (product & np.uint64(MASK32)).astype(np.uint32)


def philox4x32(counter, key, rounds=10):
    """Philox4x32 over arrays: counter is 4 uint32 arrays (or scalars) of one
    shape, key 2 uint32 scalars; returns the 4 output words as uint32 arrays."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64).astype(np.uint32) for c in counter)
    k0, k1 = int(key[0]) & MASK32, int(key[1]) & MASK32
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + PHILOX_W0) & MASK32, (k1 + PHILOX_W1) & MASK32
        hi0, lo0 = _mulhilo(PHILOX_M0, c0)
        hi1, lo1 = _mulhilo(PHILOX_M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ np.uint32(k0), lo1, hi0 ^ c3 ^ np.uint32(k1), lo0
    return c0, c1, c2, c3


def draws(seed, rng_id, count, start=0):
    """The 32-bit draws of elements start .. start+count-1 under weft's rule."""
    idx = np.arange(start, start + count, dtype=np.uint64)
    block = idx >> np.uint64(2)
    lo = block & np.uint64(MASK32)
    hi = block >> np.uint64(32)
    zero = np.zeros_like(lo)
    words = philox4x32((lo, hi, zero, zero), (int(seed) & MASK32, int(rng_id) & MASK32))
    lanes = np.stack(words)  # [4, count]
    return lanes[(idx & np.uint64(3)).astype(np.int64), np.arange(count)]


def threshold(p):
    """The integer keep threshold floor(p * 2^32) (p * 2^32 is exact in f64)."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout p must be in [0, 1), got {p}")
    return math.floor(p * 4294967296.0)


def keep_mask(shape, p, seed, rng_id):
    """Boolean keep mask of a tensor of `shape` (row-major global indices)."""
    count = int(np.prod(shape, dtype=np.int64))
    return (draws(seed, rng_id, count) >= np.uint32(threshold(p))).reshape(shape)


def dropout(x, p, seed, rng_id):
    """weft.dropout on a float64 numpy array: x * keep / (1 - p)."""
    x = np.asarray(x, dtype=np.float64)
    return np.where(keep_mask(x.shape, p, seed, rng_id), x / (1.0 - p), 0.0)
