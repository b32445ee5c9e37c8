"""Weft's pointwise ops (those with a formula in
dialects/Weft/lib/ScalarFormulas.cpp) and the PyTorch functions whose
semantics they follow: the table the importer maps PyTorch calls with, and
the one python/tests/test_formulas.py checks every formula against in
float64 (value and gradient). Adding a pointwise op adds one entry here
(docs/adding-an-op.md)."""
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F


def _gelu_grad(dy, x, approximate="none"):
    """dy * gelu'(x): the backward PyTorch's autograd runs for F.gelu."""
    return torch.ops.aten.gelu_backward(dy, x, approximate=approximate)


def _gelu(x, approximate="none"):
    return F.gelu(x, approximate=approximate)


@dataclass(frozen=True)
class Pointwise:
    """`torch_fn(*operands, **attrs)` is the op's result. `masks`: operand
    indices that are i1 masks. `low`/`high`: the interval the tests draw
    float operands from (an op defined on part of the line narrows it).
    `variants`: attribute dictionaries the tests run (one empty one: none).
    `differentiable`: whether weft-autodiff has a rule (gradient ops have
    none: they are the rules' results)."""
    torch_fn: object
    arity: int
    masks: tuple = ()
    low: float = -3.0
    high: float = 3.0
    variants: tuple = field(default_factory=lambda: ({},))
    differentiable: bool = True


GELU_VARIANTS = ({"approximate": "none"}, {"approximate": "tanh"})

POINTWISE = {
    "add": Pointwise(torch.add, 2),
    "sub": Pointwise(torch.sub, 2),
    "mul": Pointwise(torch.mul, 2),
    "scale": Pointwise(lambda x, value: x * value, 1, variants=({"value": -0.375},)),
    "where": Pointwise(torch.where, 3, masks=(0,)),
    "gelu": Pointwise(_gelu, 1, variants=GELU_VARIANTS),
    "gelu_grad": Pointwise(_gelu_grad, 2, variants=GELU_VARIANTS, differentiable=False),
    "silu": Pointwise(F.silu, 1),
    "silu_grad": Pointwise(torch.ops.aten.silu_backward, 2, differentiable=False),
    "tanh": Pointwise(torch.tanh, 1),
    "exp": Pointwise(torch.exp, 1),
    "rsqrt": Pointwise(torch.rsqrt, 1, low=0.1, high=4.0),
    "neg": Pointwise(torch.neg, 1),
    "div": Pointwise(torch.div, 2, low=0.5, high=3.0),
    "log": Pointwise(torch.log, 1, low=0.1, high=4.0),
    "sqrt": Pointwise(torch.sqrt, 1, low=0.1, high=4.0),
    "cos": Pointwise(torch.cos, 1),
    "sin": Pointwise(torch.sin, 1),
    "sigmoid": Pointwise(torch.sigmoid, 1),
    "pow": Pointwise(torch.pow, 1, low=0.1, high=3.0,
                     variants=({"exponent": 3.0}, {"exponent": 0.5}, {"exponent": -1.5})),
}
