"""What bench/attention_bench.py and scripts/autotune-attention share: the
acceptance shapes and FLOP convention of /work/shared/anchors, Weft's units
(weft.gpu.kernel_units) turned into timed launches, the sanity check and
the run's provenance. torch is imported only by the functions that run."""
import datetime
import math
import platform
import shlex
import sys
from dataclasses import dataclass

from weft.gpu import kernel_units as ku

# As the anchors: tokens = batch x seq, heads x head_dim = 2048.
TOKENS = 16384
HIDDEN = 2048
SEQS = (1024, 2048, 4096, 8192, 16384)
HEAD_DIMS = (128, 64)
# triton.testing.do_bench as attention_anchors.py calls it.
DO_BENCH = {"warmup": 25, "rep": 100, "return_mode": "median"}
# |out - SDPA flash out| above this is a broken kernel, not rounding.
OUT_ABS_TOL = 2e-2
# Gradients grow with the sequence (dV sums P over the queries): relative to
# the reference's largest magnitude, still far below what a wrong tile gives.
GRAD_REL_TOL = 2e-2


@dataclass(frozen=True)
class Shape:
    head_dim: int
    seq: int
    batch: int
    heads: int
    causal: bool

    @property
    def name(self):
        return f"d{self.head_dim}-s{self.seq}-b{self.batch}-h{self.heads}-" \
               f"{'causal' if self.causal else 'full'}"


def acceptance_shapes(head_dims=HEAD_DIMS, seqs=SEQS):
    """16k tokens, heads x d = 2048, causal and not, for each d and s."""
    shapes = []
    for d in head_dims:
        for s in seqs:
            if TOKENS % s or HIDDEN % d:
                raise ValueError(f"seq {s} must divide {TOKENS} tokens and head_dim {d} "
                                 f"must divide {HIDDEN}")
            for causal in (False, True):
                shapes.append(Shape(d, s, TOKENS // s, HIDDEN // d, causal))
    return shapes


def flops(shape, mode):
    """4*b*h*s*s*d forward, half when causal; fwd+bwd 3.5x, bwd alone 2.5x."""
    f = 4 * shape.batch * shape.heads * shape.seq * shape.seq * shape.head_dim
    if shape.causal:
        f //= 2
    return {"fwd": f, "fwdbwd": f * 3.5, "bwd": f * 2.5}[mode]


def tflops(shape, mode, ms):
    return flops(shape, mode) / ms / 1e9 if ms else None


def config_label(fwd_tiles, bwd_tiles, fwd_mma="warp", fwd_stages=2, bwd_mma="warp",
                 bwd_stages=2, fwd_schedule="serial"):
    """'q64k64' when both directions share tiles and kernels, else 'fwd
    q128k64 / bwd q64k128'; warpgroup-MMA kernels add ' wgmma' ('q128k64
    wgmma', 'fwd q128k64 wgmma / bwd q64k128 wgmma s3'), a forward schedule
    other than serial ' ov' / ' pp' ('fwd q128k128 wgmma s3 ov / ...')."""
    f = f"q{fwd_tiles[0]}k{fwd_tiles[1]}" + ku.mma_suffix(fwd_mma, " ", fwd_stages,
                                                         fwd_schedule)
    b = f"q{bwd_tiles[0]}k{bwd_tiles[1]}" + ku.mma_suffix(bwd_mma, " ", bwd_stages)
    return f if f == b else f"fwd {f} / bwd {b}"


def provenance(argv=None):
    """Date, host, device, versions and the command, for every report."""
    info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node(), "python": platform.python_version(),
            "command": " ".join(shlex.quote(a) for a in (argv or sys.argv))}
    try:
        import torch
        info["torch"] = torch.__version__
        info["torch_cuda"] = torch.version.cuda
        if torch.cuda.is_available():
            info["device"] = torch.cuda.get_device_name()
            major, minor = torch.cuda.get_device_capability()
            info["capability"] = f"sm_{major}{minor}"
    except ImportError as e:
        info["torch"] = f"unavailable: {e}"
    try:
        import triton
        info["triton"] = triton.__version__
    except ImportError as e:
        info["triton"] = f"unavailable: {e}"
    return info


# ---- on the device -------------------------------------------------------

def start_runtime():
    """torch's primary context, then Weft's binding on it; raises with the
    reason (no GPU, no libweft_runtime.so)."""
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device")
    torch.zeros(1, device="cuda")
    import weft.runtime as rt
    rt.init()
    rt.context_ensure(torch.cuda.current_device())
    return rt


def make_inputs(shape, dtype, requires_grad):
    """q, k, v, dout ~ N(0, 1), seeded by the shape: every backend of a run
    (and a second pass over the shape) sees the same tensors."""
    import torch
    torch_dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[dtype]
    gen = torch.Generator(device="cuda").manual_seed(hash_seed(shape.name + dtype))
    size = (shape.batch, shape.heads, shape.seq, shape.head_dim)
    q, k, v, dout = (torch.randn(size, device="cuda", dtype=torch_dtype, generator=gen)
                     for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_(requires_grad)
    return q, k, v, dout


def hash_seed(text):
    """A seed that does not change with PYTHONHASHSEED."""
    value = 0
    for ch in text.encode():
        value = (value * 131 + ch) % (2**31 - 1)
    return value


class UnitCache:
    """Each unit's module loaded once (kernel_units.LoadedUnit)."""

    def __init__(self, rt):
        self.rt, self.loaded = rt, {}

    def get(self, unit):
        key = (unit.directory, unit.name)
        if key not in self.loaded:
            self.loaded[key] = ku.LoadedUnit(self.rt, unit)
        return self.loaded[key]


# The seed of units with dropout (their kernels' last argument, one int64).
DROPOUT_SEED = 0x5EED


class WeftAttention:
    """One forward unit and one backward unit (or None: forward only) at one
    shape, with buffers and every launch's arguments prepared once, so a
    timed call only launches: forward (1 kernel), backward (preprocess,
    dkdv, dq on the forward's own out and lse), or both in order."""

    def __init__(self, rt, cache, fwd_unit, bwd_unit, shape, q, k, v, dout):
        import torch
        self.rt = rt
        self.shape = shape
        self.out = torch.empty_like(q, requires_grad=False)
        self.lse = torch.empty(shape.batch, shape.heads, shape.seq, device="cuda",
                               dtype=torch.float32)
        self.dq, self.dk, self.dv = (torch.empty_like(t, requires_grad=False) for t in (q, k, v))
        shapes = {"batch": shape.batch, "q_heads": shape.heads, "kv_heads": shape.heads,
                  "q_len": shape.seq, "k_len": shape.seq}
        values = dict(shapes, scale=1.0 / math.sqrt(shape.head_dim), q=q.detach(),
                      k=k.detach(), v=v.detach(), dout=dout, out=self.out, lse=self.lse,
                      dq=self.dq, dk=self.dk, dv=self.dv,
                      seed=torch.tensor([DROPOUT_SEED], dtype=torch.int64, device="cuda"))
        # The units' workspaces (the backward's delta, the keep masks).
        workspaces = [(unit, name) for unit in (fwd_unit, bwd_unit) if unit is not None
                      for name, _ in unit.workspaces]
        for unit, name in workspaces:
            floats = ku.workspace_floats(unit, shape.batch, shape.heads, shape.seq, shape.seq)
            values[name] = torch.empty(floats, device="cuda", dtype=torch.float32)
        self.workspaces = [values[name] for _, name in workspaces]
        self.stream = torch.cuda.current_stream().cuda_stream
        self.fwd_launches = self._prepare(cache.get(fwd_unit), values, shapes)
        self.bwd_launches = ([] if bwd_unit is None else
                             self._prepare(cache.get(bwd_unit), values, shapes))

    @staticmethod
    def _prepare(loaded, values, shapes):
        return [(fn, ku.grid_for(kernel, shapes), (kernel.threads, 1, 1),
                 kernel.dynamic_smem_bytes,
                 ku.build_args(kernel, values, loaded.unit.dtype, loaded.unit.head_dim))
                for kernel, fn in zip(loaded.unit.kernels, loaded.functions)]

    def _run(self, launches):
        for fn, grid, block, smem, args in launches:
            self.rt.launch(fn, grid, block, smem, self.stream, args)

    def forward(self):
        self._run(self.fwd_launches)

    def backward(self):
        self._run(self.bwd_launches)

    def forward_backward(self):
        self._run(self.fwd_launches)
        self._run(self.bwd_launches)


def sdpa_reference(q, k, v, dout, causal):
    """SDPA's flash backend: out and (dq, dk, dv), the sanity check's bar."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    qr, kr, vr = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        out = F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal)
        dq, dk, dv = torch.autograd.grad(out, (qr, kr, vr), dout)
    return {"out": out.detach(), "dq": dq, "dk": dk, "dv": dv}


def sanity_errors(weft, ref, backward):
    """{name: (max abs error, bound)} of Weft's outputs against SDPA flash and
    the reasons they fail: out within OUT_ABS_TOL, gradients within
    GRAD_REL_TOL of the reference's largest magnitude, nothing non-finite."""
    got = {"out": weft.out}
    if backward:
        got.update(dq=weft.dq, dk=weft.dk, dv=weft.dv)
    errors, reasons = {}, []
    for name, tensor in got.items():
        r = ref[name].float()
        diff = (tensor.float() - r).abs()
        err = float(diff.max()) if diff.isfinite().all() else float("inf")
        bound = OUT_ABS_TOL if name == "out" else GRAD_REL_TOL * max(1.0, float(r.abs().max()))
        errors[name] = (err, bound)
        if not err <= bound:
            reasons.append(f"{name}: max abs error {err:.3g} against SDPA flash exceeds {bound:.3g}")
    return errors, reasons


def do_bench_ms(fn):
    from triton.testing import do_bench
    return float(do_bench(fn, **DO_BENCH))
