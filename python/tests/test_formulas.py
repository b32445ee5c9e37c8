"""The formula table (dialects/Weft/lib/ScalarFormulas.cpp) against PyTorch:
the reference interpreter evaluates each formula in float64 and the GPU
kernels lower the same formula, so the interpreter's independence comes from
here. Every op the compiler lists as having a formula
(weft-opt --weft-test-print-formulas) has an entry in weft.pointwise, and
each entry's value (weft-run) and gradient (weft-autodiff, for the ops with a
rule) match PyTorch in float64 to 1e-10; in f32 and bf16 the 2x rule of
harness.py."""
import subprocess

import pytest
import torch

from harness import compare_op, tool_path
from test_autodiff import check_gradients, single_op
from weft import npz
from weft.pointwise import POINTWISE

SHAPE = (4, 9)


def compiler_formula_ops():
    """The weft ops (without the `weft.` prefix) that implement
    ScalarFormulaOpInterface, as weft-opt reports them."""
    binary = tool_path("weft-opt")
    proc = subprocess.run([binary, "-", "--weft-test-print-formulas"], input="module {}\n",
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return sorted(line.split()[1].removeprefix("weft.") for line in proc.stdout.splitlines()
                  if line.startswith("formula-op "))


def operands(rng, entry, dtype):
    """Fresh random operands: masks at `entry.masks`, floats drawn uniformly
    from [low, high] in float64 and rounded once to `dtype`."""
    out = []
    for i in range(entry.arity):
        if i in entry.masks:
            out.append(torch.from_numpy(rng.random(SHAPE) < 0.5))
        else:
            values = rng.uniform(entry.low, entry.high, SHAPE)
            out.append(torch.from_numpy(values).to(npz.TORCH_DTYPES[dtype]))
    return out


CASES = [(name, variant) for name, entry in POINTWISE.items()
         for variant in range(len(entry.variants))]


def case_id(case):
    name, variant = case
    attrs = POINTWISE[name].variants[variant]
    return name + "".join(f"-{v}" for v in attrs.values())


def test_every_formula_has_a_pytorch_entry():
    assert compiler_formula_ops() == sorted(POINTWISE), \
        "an op with a formula needs its PyTorch function in python/weft/pointwise.py, and back"


@pytest.mark.parametrize("case", CASES, ids=case_id)
@pytest.mark.parametrize("dtype", ["f64", "f32", "bf16"])
def test_value(rng, case, dtype):
    name, variant = case
    entry = POINTWISE[name]
    attrs = entry.variants[variant]
    compare_op(name, operands(rng, entry, dtype), lambda *t: entry.torch_fn(*t, **attrs),
               attrs=attrs)


@pytest.mark.parametrize("case", [c for c in CASES if POINTWISE[c[0]].differentiable],
                         ids=case_id)
def test_gradient(rng, case):
    name, variant = case
    entry = POINTWISE[name]
    attrs = entry.variants[variant]
    inputs = operands(rng, entry, "f64")
    floats = [i for i in range(entry.arity) if i not in entry.masks]
    check_gradients(rng, name, inputs, floats, single_op(name, (SHAPE, "f64"), attrs),
                    lambda *t: entry.torch_fn(*t, **attrs))
