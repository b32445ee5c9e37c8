"""The sweep points of the GPU attention check, the float64 reference (chunked
so s=8192 fits), PyTorch SDPA in the low precision, and the pass rule. Device
agnostic: the host-side pytest runs all of it on the CPU."""
import math
import zlib
from dataclasses import dataclass

import torch
import torch.nn.functional as F

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
# Bytes of one f64 score matrix chunk of the reference; autograd keeps a few of
# these alive (scores, probabilities, their gradients), so peak is ~5x this.
REFERENCE_CHUNK_BYTES = 1 << 30
RATIO_BOUND = 2.0
LSE_ABS_TOL = 2e-3
GRADED = ("out", "dq", "dk", "dv")


@dataclass(frozen=True)
class SweepPoint:
    batch: int
    q_heads: int
    kv_heads: int
    seq: int
    head_dim: int
    causal: bool
    dtype: str

    @property
    def name(self):
        return (f"{self.dtype}-d{self.head_dim}-{'causal' if self.causal else 'full'}"
                f"-b{self.batch}-h{self.q_heads}-kv{self.kv_heads}-s{self.seq}")

    @property
    def scale(self):
        return 1.0 / math.sqrt(self.head_dim)

    @property
    def shapes(self):
        return {"batch": self.batch, "q_heads": self.q_heads, "kv_heads": self.kv_heads,
                "q_len": self.seq, "k_len": self.seq}

    @property
    def seed(self):
        return zlib.crc32(self.name.encode())


def sweep(batches, kv_heads, seqs, head_dims=(64, 128, 256), causals=(False, True),
          dtypes=("bf16", "f16"), q_heads=16):
    """Points ordered by sequence length first, so a run cut short by its time
    limit has covered every configuration at the short lengths."""
    return [SweepPoint(b, q_heads, hkv, s, d, c, dt)
            for s in seqs for b in batches for hkv in kv_heads
            for dt in dtypes for d in head_dims for c in causals]


def full_sweep():
    return sweep((1, 2), (16, 4, 1), (128, 1000, 4096, 8192))


def quick_sweep():
    return sweep((1,), (16, 4), (128, 1000))


def make_inputs(point, device):
    """q, k, v, dout ~ N(0, 1) in the point's dtype, seeded by the point."""
    torch.manual_seed(point.seed)
    dtype = DTYPES[point.dtype]
    b, hq, hkv, s, d = point.batch, point.q_heads, point.kv_heads, point.seq, point.head_dim
    q = torch.randn(b, hq, s, d, dtype=dtype, device=device)
    k = torch.randn(b, hkv, s, d, dtype=dtype, device=device)
    v = torch.randn(b, hkv, s, d, dtype=dtype, device=device)
    dout = torch.randn(b, hq, s, d, dtype=dtype, device=device)
    return q, k, v, dout


def check_gqa(q_heads, kv_heads):
    if kv_heads < 1 or q_heads % kv_heads:
        raise ValueError(f"kv heads ({kv_heads}) must divide q heads ({q_heads})")
    return q_heads // kv_heads


def expand_kv(x, q_heads):
    """[b, hkv, s, d] -> [b, hq, s, d]: q head h reads kv head h // (hq / hkv)."""
    return x.repeat_interleave(check_gqa(q_heads, x.shape[1]), dim=1)


def reduce_kv(dx, kv_heads):
    """Gradient of expand_kv: [b, hq, s, d] -> [b, hkv, s, d], summed over each group."""
    b, hq, s, d = dx.shape
    return dx.reshape(b, kv_heads, check_gqa(hq, kv_heads), s, d).sum(dim=2)


def causal_mask(sq, sk, device):
    """True where query i may not see key j (top-left aligned, as SDPA's is_causal)."""
    return torch.ones(sq, sk, dtype=torch.bool, device=device).triu(1)


def reference_f64(q, k, v, dout, causal, scale, chunk_bytes=REFERENCE_CHUNK_BYTES):
    """out, lse (natural log of sum exp(scale q k^T), masked), dq, dk, dv in
    float64 by autograd, over chunks of (batch x q head) rows so no chunk's
    score matrix exceeds `chunk_bytes`."""
    b, hq, sq, d = q.shape
    hkv, sk = k.shape[1], k.shape[2]
    check_gqa(hq, hkv)
    rows = b * hq
    q64 = q.to(torch.float64).reshape(rows, sq, d)
    k64 = expand_kv(k.to(torch.float64), hq).reshape(rows, sk, d)
    v64 = expand_kv(v.to(torch.float64), hq).reshape(rows, sk, d)
    do64 = dout.to(torch.float64).reshape(rows, sq, d)
    out = torch.empty_like(q64)
    lse = torch.empty(rows, sq, dtype=torch.float64, device=q.device)
    dq, dk_rep, dv_rep = torch.empty_like(q64), torch.empty_like(k64), torch.empty_like(v64)
    mask = causal_mask(sq, sk, q.device) if causal else None
    per_chunk = max(1, chunk_bytes // (sq * sk * 8))
    for lo in range(0, rows, per_chunk):
        hi = min(rows, lo + per_chunk)
        qc = q64[lo:hi].clone().requires_grad_()
        kc = k64[lo:hi].clone().requires_grad_()
        vc = v64[lo:hi].clone().requires_grad_()
        with torch.enable_grad():
            scores = torch.matmul(qc, kc.transpose(1, 2)) * scale
            if mask is not None:
                scores = scores.masked_fill(mask, float("-inf"))
            probs = torch.softmax(scores, dim=-1)
            oc = torch.matmul(probs, vc)
            lse[lo:hi] = torch.logsumexp(scores.detach(), dim=-1)
            del scores, probs
            oc.backward(do64[lo:hi])
        out[lo:hi] = oc.detach()
        dq[lo:hi], dk_rep[lo:hi], dv_rep[lo:hi] = qc.grad, kc.grad, vc.grad
        del qc, kc, vc, oc
    return {"out": out.reshape(b, hq, sq, d), "lse": lse.reshape(b, hq, sq),
            "dq": dq.reshape(b, hq, sq, d),
            "dk": reduce_kv(dk_rep.reshape(b, hq, sk, d), hkv),
            "dv": reduce_kv(dv_rep.reshape(b, hq, sk, d), hkv)}


def _sdpa_accepts(**kwargs):
    """Whether this PyTorch's SDPA takes these keyword arguments."""
    x = torch.zeros(1, 2, 4, 8)
    kv = torch.zeros(1, 1 if kwargs.get("enable_gqa") else 2, 4, 8)
    try:
        F.scaled_dot_product_attention(x, kv, kv, **kwargs)
        return True
    except TypeError:
        return False


SDPA_HAS_SCALE = _sdpa_accepts(scale=0.5)
SDPA_HAS_GQA = _sdpa_accepts(enable_gqa=True)


def sdpa_in_dtype(q, k, v, dout, causal, scale, gqa="auto"):
    """SDPA's out, dq, dk, dv in the inputs' dtype, one batch element at a time
    (independent problems; halves the peak of a math-backend fallback).
    gqa: "native" passes enable_gqa, "repeat" repeats k/v and sums dk/dv over
    each group, "auto" is native where this PyTorch has it. Returns (grads, mode)."""
    hq, hkv = q.shape[1], k.shape[1]
    check_gqa(hq, hkv)
    if gqa == "auto":
        gqa = "native" if SDPA_HAS_GQA else "repeat"
    if hq == hkv:
        gqa = "none"
    elif gqa == "native" and not SDPA_HAS_GQA:
        raise ValueError(f"this PyTorch ({torch.__version__}) has no enable_gqa in SDPA")
    kwargs = {"is_causal": causal}
    if SDPA_HAS_SCALE:
        kwargs["scale"] = scale
    elif abs(scale - 1.0 / math.sqrt(q.shape[-1])) > 1e-12:
        raise ValueError(f"this PyTorch's SDPA has no scale argument and scale {scale} "
                         f"is not 1/sqrt({q.shape[-1]})")
    if gqa == "native":
        kwargs["enable_gqa"] = True
    parts = {name: [] for name in GRADED}
    for i in range(q.shape[0]):
        qi = q[i:i + 1].detach().clone().requires_grad_()
        ki = k[i:i + 1].detach().clone().requires_grad_()
        vi = v[i:i + 1].detach().clone().requires_grad_()
        with torch.enable_grad():
            kin, vin = (expand_kv(ki, hq), expand_kv(vi, hq)) if gqa == "repeat" else (ki, vi)
            oi = F.scaled_dot_product_attention(qi, kin, vin, **kwargs)
            oi.backward(dout[i:i + 1])
        for name, t in zip(GRADED, (oi.detach(), qi.grad, ki.grad, vi.grad)):
            parts[name].append(t)
        del qi, ki, vi, oi, kin, vin
    return {name: torch.cat(ts) for name, ts in parts.items()}, gqa


def error_of(value, ref):
    """(max abs error, max abs error / max abs ref); inf when `value` has a
    NaN or inf, so a poisoned element can never pass."""
    if value.shape != ref.shape:
        raise ValueError(f"shape {tuple(value.shape)} != reference shape {tuple(ref.shape)}")
    if value.numel() == 0:
        return 0.0, 0.0
    v = value.to(torch.float64)
    if not bool(torch.isfinite(v).all()):
        return math.inf, math.inf
    err = float((v - ref).abs().max())
    scale = float(ref.abs().max())
    return err, (err / scale if scale > 0 else (0.0 if err == 0 else math.inf))


def nonfinite_count(t):
    return int((~torch.isfinite(t)).sum()) if t.is_floating_point() else 0


def judge(weft_errors, sdpa_errors, lse_error, nonfinite, lse_tol=LSE_ABS_TOL,
          ratio_bound=RATIO_BOUND):
    """Pass rule: weft err <= ratio_bound * sdpa err for out/dq/dk/dv, lse
    within lse_tol absolute, and no NaN/inf in any of Weft's outputs.
    Returns (passed, reasons, ratios)."""
    reasons, ratios = [], {}
    for name in GRADED:
        w, s = weft_errors[name], sdpa_errors[name]
        ratios[name] = w / s if s > 0 else (0.0 if w == 0 else math.inf)
        if not w <= ratio_bound * s:
            reasons.append(f"{name}: weft err {w:.3e} > {ratio_bound:g} x sdpa err {s:.3e}")
    if not lse_error <= lse_tol:
        reasons.append(f"lse: err {lse_error:.3e} > {lse_tol:.1e}")
    for name, count in nonfinite.items():
        if count:
            reasons.append(f"{name}: {count} NaN/inf elements (unwritten or overflowed)")
    return not reasons, reasons, ratios
