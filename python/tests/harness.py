"""Runs weft IR through weft-run and compares its results with PyTorch.

Accuracy rules (ARCHITECTURE.md, "Testing"):
- float64: the interpreter computes in float64, so a result must match
  PyTorch's float64 result to a relative error max|a-b| / max|b| <= 1e-10.
- f32/f16/bf16: both weft's result and PyTorch's result in that precision,
  computed from the same rounded inputs, are compared with the float64
  reference from those inputs; weft passes when its error is at most twice
  PyTorch's (FlashAttention's rule) plus F64_SLACK, the float64 reference's own
  error: a few units in the last place of float64 (this also lets exactly
  representable results, where both errors are 0, pass only when exact).
"""
import os
import subprocess
import tempfile

import numpy as np
import pytest
import torch

from weft import npz
from weft.models.ir import FunctionBuilder, module_text

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
F64_TOL = 1e-10
F64_SLACK = 8 * np.finfo(np.float64).eps
DTYPE_NAMES = {v: k for k, v in npz.TORCH_DTYPES.items()}


def tool_path(name):
    build = os.environ.get("WEFT_BUILD_DIR", os.path.join(REPO, "build"))
    return os.path.join(build, "bin", name)


def weft_run_path():
    return tool_path("weft-run")


def tool(name):
    """Path of a built Weft tool; skips the test if it is not built."""
    path = tool_path(name)
    if not os.access(path, os.X_OK):
        pytest.skip(f"{name} is not built ({path} missing); build it with "
                    f"`ninja -C $WEFT_BUILD_DIR {name}` or set WEFT_BUILD_DIR")
    return path


def require_weft_run():
    return tool("weft-run")


def run_ir(text, inputs, entry="main", timeout=300, extra_args=()):
    """Runs function `entry` of module `text` on `inputs` (torch tensors, in
    argument order). Each call uses a fresh directory, so no result file of an
    earlier case can be mistaken for this one's. Returns the results in order."""
    binary = require_weft_run()
    case_dir = tempfile.mkdtemp(prefix="weft-case-", dir=os.environ.get("WEFT_TEST_TMP"))
    ir_path = os.path.join(case_dir, "case.mlir")
    in_path = os.path.join(case_dir, "inputs.npz")
    out_path = os.path.join(case_dir, "outputs.npz")
    with open(ir_path, "w") as f:
        f.write(text)
    npz.save(in_path, {f"arg{i}": t for i, t in enumerate(inputs)})
    assert not os.path.exists(out_path)
    cmd = [binary, ir_path, "--entry", entry, "--inputs", in_path, "--outputs", out_path, *extra_args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        pytest.fail(f"weft-run failed (rc {proc.returncode}) on {ir_path}:\n"
                    f"{proc.stderr[-4000:]}\n--- IR ---\n{text}")
    if not os.path.exists(out_path):
        pytest.fail(f"weft-run wrote no {out_path}; stderr:\n{proc.stderr[-2000:]}")
    return npz.ordered(npz.load(out_path), "res")


def dtype_name(tensor):
    return DTYPE_NAMES[tensor.dtype]


def op_function(opname, inputs, results, attrs=None):
    """IR text of @main(inputs...) -> results of one weft op; `results` are
    (shape, dtype-name) pairs."""
    f = FunctionBuilder("main")
    args = [f.arg(f"x{i}", tuple(t.shape), dtype_name(t)) for i, t in enumerate(inputs)]
    outs = f.op(opname, args, list(results), attrs)
    f.ret(*outs)
    return module_text([f])


def run_op(opname, inputs, results, attrs=None):
    """Runs one op; checks that weft-run returned exactly the declared results
    (count, shapes and element types)."""
    results = [(tuple(s), d) for s, d in results]
    outs = run_ir(op_function(opname, inputs, results, attrs), inputs)
    assert len(outs) == len(results), f"{opname}: {len(outs)} results, expected {len(results)}"
    for i, (out, (shape, dtype)) in enumerate(zip(outs, results)):
        assert tuple(out.shape) == shape, f"{opname} res{i}: shape {tuple(out.shape)} != {shape}"
        assert dtype_name(out) == dtype, f"{opname} res{i}: dtype {dtype_name(out)} != {dtype}"
    return outs


# -- inputs -------------------------------------------------------------------

def randn(rng, shape, dtype="f64", scale=1.0):
    """Normal values drawn in float64 and rounded once to `dtype`."""
    return torch.from_numpy(np.asarray(scale * rng.standard_normal(shape))).to(npz.TORCH_DTYPES[dtype])


def randint(rng, shape, high):
    return torch.from_numpy(rng.integers(0, high, size=shape, dtype=np.int64))


def wide(t):
    """float64 copy of a floating tensor (integers and masks pass through)."""
    return t.to(torch.float64) if t.is_floating_point() else t


# -- comparison ---------------------------------------------------------------

def rel_err(x, ref):
    """max|x - ref| / max|ref| over finite entries; non-finite entries (the
    -inf of a causal mask) must agree exactly, else the error is infinite."""
    x, ref = wide(x).detach(), wide(ref).detach()
    if x.shape != ref.shape:
        return float("inf")
    finite = torch.isfinite(ref)
    if not torch.equal(finite, torch.isfinite(x)) or not torch.equal(x[~finite], ref[~finite]):
        return float("inf")
    if not finite.any():
        return 0.0
    diff = (x[finite] - ref[finite]).abs().max().item()
    scale = ref[finite].abs().max().item()
    return diff / scale if scale > 0 else diff


def check(name, out, ref64, torch_lowp=None):
    """Asserts `out` (weft's result) is accurate enough; see the module doc."""
    dtype = dtype_name(out)
    err = rel_err(out, ref64)
    if dtype == "f64" or torch_lowp is None:
        assert err <= F64_TOL, f"{name}: relative error {err:.3e} > {F64_TOL:g} (dtype {dtype})"
        return err
    err_torch = rel_err(torch_lowp, ref64)
    bound = 2 * err_torch + F64_SLACK
    assert err <= bound, (f"{name}: {dtype} relative error {err:.3e} > 2 x PyTorch's "
                          f"{err_torch:.3e} (+{F64_SLACK:.1e})")
    return err


def compare_op(opname, inputs, fn, attrs=None, result_dtypes=None, names=None):
    """Runs `opname` on `inputs` and compares each result with `fn` (a PyTorch
    function of the same inputs returning a tensor or a tuple): in float64 on
    the widened inputs, and in the inputs' own precision. Result types are
    those of `fn` in the inputs' precision unless `result_dtypes` is given."""
    lowp = fn(*inputs)
    lowp = list(lowp) if isinstance(lowp, (tuple, list)) else [lowp]
    ref = fn(*[wide(t) for t in inputs])
    ref = list(ref) if isinstance(ref, (tuple, list)) else [ref]
    dtypes = result_dtypes or [dtype_name(t) for t in lowp]
    outs = run_op(opname, inputs, [(tuple(t.shape), d) for t, d in zip(lowp, dtypes)], attrs)
    precise = all(dtype_name(t) == "f64" for t in inputs if t.is_floating_point())
    for i, (out, r, l) in enumerate(zip(outs, ref, lowp)):
        label = f"{opname}{'' if names is None else '.' + names[i]} res{i}"
        check(label, out, r, None if precise else l)
    return outs
