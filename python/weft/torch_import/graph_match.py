"""Helpers the pattern matchers share: walking an ATen graph through
value-preserving ops, constant factors and powers, and the Match a matcher
returns."""
from dataclasses import dataclass
from typing import Callable

import torch

from .lowering import is_number, is_tensor_node


aten = torch.ops.aten
MUL = (aten.mul.Tensor, aten.mul.Scalar)
ADD = (aten.add.Tensor, aten.add.Scalar)
# Ops that change neither value, shape nor type (a same-type `to`).
PASS_THROUGH = (aten.contiguous.default, aten.clone.default, aten.alias.default,
                aten.detach.default, aten._to_copy.default, aten.to.dtype,
                aten.to.dtype_layout, aten.type_as.default)
# Conversions between float types (autocast's casts, .float(), .to(dtype)).
CONVERTS = (aten._to_copy.default, aten.to.dtype, aten.to.dtype_layout)
RESHAPES = (aten.view.default, aten.reshape.default, aten._unsafe_view.default,
            aten.unsqueeze.default)
# Relative tolerance on the constants of a written-out formula (a model may
# write sqrt(2/pi) as 0.7978845608): the raised op differs from the written
# formula by at most this, relatively, in tanh's argument.
CONSTANT_RTOL = 1e-9


@dataclass
class Match:
    kind: str                      # what lowering reports as raised
    inputs: list                   # FX nodes the raised op reads
    emit: Callable                 # Lowering -> Value


def is_op(node, targets):
    return isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target in targets


def traced(node):
    return node.meta.get("val")


def through(node):
    """The node a chain of value-preserving ops starts from."""
    while is_op(node, PASS_THROUGH) and is_tensor_node(node.args[0]):
        a, b = traced(node), traced(node.args[0])
        if a.dtype != b.dtype or a.shape != b.shape:
            break
        node = node.args[0]
    return node


def close_to(x, y):
    return abs(x - y) <= CONSTANT_RTOL * abs(y)


def plain_binary(node, targets):
    """(a, b) of a binary op in `targets` without an alpha, else None."""
    if not is_op(node, targets) or node.kwargs.get("alpha", 1) != 1:
        return None
    return node.args[0], node.args[1]


def strip_scalars(node):
    """(c, core) with node = c * core through multiplications by constants,
    divisions by constants and negations."""
    coefficient, node = 1.0, through(node)
    while True:
        pair = plain_binary(node, MUL)
        if pair and is_number(pair[1]):
            coefficient, node = coefficient * pair[1], through(pair[0])
        elif pair and is_number(pair[0]):
            coefficient, node = coefficient * pair[0], through(pair[1])
        elif is_op(node, (aten.div.Tensor,)) and is_number(node.args[1]) and node.args[1] != 0 \
                and not node.kwargs.get("rounding_mode"):
            coefficient, node = coefficient / node.args[1], through(node.args[0])
        elif is_op(node, (aten.neg.default,)):
            coefficient, node = -coefficient, through(node.args[0])
        else:
            return coefficient, node


def monomial(node):
    """(c, base, k) with node = c * base^k through constant factors, pow by
    integers and products of powers of one base; else (1, node, 1)."""
    c, node = strip_scalars(node)
    if is_op(node, (aten.pow.Tensor_Scalar,)) and is_number(node.args[1]) \
            and float(node.args[1]).is_integer() and node.args[1] >= 1:
        e = int(node.args[1])
        c_base, base, k = monomial(node.args[0])
        return c * c_base ** e, base, k * e
    pair = plain_binary(node, MUL)
    if pair and is_tensor_node(pair[0]) and is_tensor_node(pair[1]):
        (ca, a, i), (cb, b, j) = monomial(pair[0]), monomial(pair[1])
        if a is b:
            return c * ca * cb, a, i + j
    return c, node, 1


def tensor_users(node, targets):
    """Users in `targets` of node or of a value-preserving op of it."""
    found = []
    for user in node.users:
        if is_op(user, targets):
            found.append(user)
        elif is_op(user, PASS_THROUGH) and through(user) is node:
            found.extend(tensor_users(user, targets))
    return found


def other_operand(mul, node):
    """The other operand of a tensor product `mul` with `node`, else None."""
    pair = plain_binary(mul, MUL)
    if not pair or not all(is_tensor_node(p) for p in pair):
        return None
    if through(pair[0]) is node:
        return pair[1]
    if through(pair[1]) is node:
        return pair[0]
    return None


def same_type(*nodes):
    return len({traced(n).dtype for n in nodes}) == 1
