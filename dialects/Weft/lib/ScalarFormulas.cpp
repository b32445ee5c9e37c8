// The formula table: every pointwise op's value at one element, written once
// (ScalarFormulaOpInterface). The reference interpreter evaluates these in
// float64 and the GPU element evaluator lowers them to f32 code, in the order
// they are written here; python/tests/test_formulas.py checks each entry
// against PyTorch in float64, value and gradient.
#include "weft/Dialect/WeftDialect.h"

using namespace weft;

namespace {
// PyTorch's GELU constants: sqrt(2/pi) is M_SQRT2 * M_2_SQRTPI * 0.5.
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kGeluBeta = 1.41421356237309504880 * 1.12837916709551257390 * 0.5;
constexpr double kGeluKappa = 0.044715;
} // namespace

//===----------------------------------------------------------------------===//
// Arithmetic (operands broadcast onto the result, NumPy's rule)
//===----------------------------------------------------------------------===//

Scalar AddOp::buildFormula(ScalarFormula &f) {
  return f.add(f.operand(0), f.operand(1));
}

Scalar SubOp::buildFormula(ScalarFormula &f) {
  return f.sub(f.operand(0), f.operand(1));
}

Scalar MulOp::buildFormula(ScalarFormula &f) {
  return f.mul(f.operand(0), f.operand(1));
}

Scalar DivOp::buildFormula(ScalarFormula &f) {
  return f.div(f.operand(0), f.operand(1));
}

Scalar ScaleOp::buildFormula(ScalarFormula &f) {
  Scalar x = f.operand(0);
  return f.mul(x, f.constant(getValue().convertToDouble()));
}

Scalar WhereOp::buildFormula(ScalarFormula &f) {
  Scalar cond = f.operand(0), lhs = f.operand(1), rhs = f.operand(2);
  return f.select(cond, lhs, rhs);
}

//===----------------------------------------------------------------------===//
// Activations and their gradients (dx = dy * f'(x))
//===----------------------------------------------------------------------===//

Scalar GeluOp::buildFormula(ScalarFormula &f) {
  Scalar x = f.operand(0);
  Scalar half = f.mul(f.constant(0.5), x);
  if (getApproximate() == "tanh") {
    Scalar cube = f.mul(f.mul(x, x), x);
    Scalar inner =
        f.mul(f.constant(kGeluBeta), f.add(x, f.mul(f.constant(kGeluKappa), cube)));
    return f.mul(half, f.add(f.constant(1.0), f.tanh(inner)));
  }
  return f.mul(half, f.add(f.constant(1.0), f.erf(f.mul(x, f.constant(kSqrtHalf)))));
}

// As torch's GeluBackward.
Scalar GeluGradOp::buildFormula(ScalarFormula &f) {
  Scalar dy = f.operand(0), x = f.operand(1);
  Scalar one = f.constant(1.0);
  Scalar derivative;
  if (getApproximate() == "tanh") {
    Scalar squared = f.mul(x, x);
    Scalar inner = f.mul(f.constant(kGeluBeta),
                         f.add(x, f.mul(f.constant(kGeluKappa), f.mul(squared, x))));
    Scalar t = f.tanh(inner);
    Scalar left = f.mul(f.constant(0.5), x), right = f.add(one, t);
    Scalar dLeft = f.mul(f.constant(0.5), right);
    Scalar dRight =
        f.mul(f.mul(f.mul(left, f.sub(one, f.mul(t, t))), f.constant(kGeluBeta)),
              f.add(one, f.mul(f.constant(3.0 * kGeluKappa), squared)));
    derivative = f.add(dLeft, dRight);
  } else {
    Scalar cdf =
        f.mul(f.constant(0.5), f.add(one, f.erf(f.mul(x, f.constant(kSqrtHalf)))));
    Scalar pdf = f.mul(f.constant(kInvSqrt2Pi),
                       f.exp(f.mul(f.constant(-0.5), f.mul(x, x))));
    derivative = f.add(cdf, f.mul(x, pdf));
  }
  return f.mul(dy, derivative);
}

Scalar SiluOp::buildFormula(ScalarFormula &f) {
  Scalar x = f.operand(0);
  return f.mul(x, f.sigmoid(x));
}

Scalar SiluGradOp::buildFormula(ScalarFormula &f) {
  Scalar dy = f.operand(0), x = f.operand(1);
  Scalar sig = f.sigmoid(x), one = f.constant(1.0);
  return f.mul(f.mul(dy, sig), f.add(one, f.mul(x, f.sub(one, sig))));
}

//===----------------------------------------------------------------------===//
// Paired formulas (PairedFormulaOpInterface): an element and its rotate_half
// partner p in the same row. unittests/ReferenceTest.cpp checks them against
// the reference interpreter's kernels, which PyTorch checks.
//===----------------------------------------------------------------------===//

// rotate_half(x)[k] is -x[p] in the first half of the row and x[p] in the
// second. Forward: y = x cos + rotate_half(x) sin. Inverse (the transpose,
// rope's gradient): y = x cos - rotate_half(x sin), whose rotated term is
// +x[p] sin[p] in the first half and -x[p] sin[p] in the second.
Scalar RopeOp::buildPairedFormula(ScalarFormula &f) {
  Scalar x = f.operand(0), cos = f.operand(1);
  Scalar partnerX = f.operand(getPartnerSlot(0));
  Scalar sin = f.operand(getInverse() ? getPartnerSlot(2) : 2);
  Scalar firstHalf = f.operand(getFirstHalfSlot());
  Scalar rotated = f.mul(partnerX, sin);
  Scalar negated = f.neg(rotated);
  Scalar term = getInverse() ? f.select(firstHalf, rotated, negated)
                             : f.select(firstHalf, negated, rotated);
  return f.add(f.mul(x, cos), term);
}

//===----------------------------------------------------------------------===//
// FLOPs of the ops whose cost is their formula's
//===----------------------------------------------------------------------===//

int64_t weft::defaultFlops(mlir::Operation *op) {
  auto pointwise = mlir::dyn_cast<ScalarFormulaOpInterface>(op);
  if (!pointwise || op->getNumResults() != 1)
    return 0;
  ScalarFormula formula;
  formula.setResult(pointwise.buildFormula(formula));
  int64_t elements = tensorElements(op->getResult(0).getType());
  int64_t perElement = formula.getFlopsPerElement();
  if (perElement > 0 && elements > std::numeric_limits<int64_t>::max() / perElement)
    return std::numeric_limits<int64_t>::max();
  return perElement * elements;
}

//===----------------------------------------------------------------------===//
// Generic pointwise ops (Weft_UnaryPointwiseOp)
//===----------------------------------------------------------------------===//

Scalar TanhOp::buildFormula(ScalarFormula &f) { return f.tanh(f.operand(0)); }

Scalar ExpOp::buildFormula(ScalarFormula &f) { return f.exp(f.operand(0)); }

Scalar RsqrtOp::buildFormula(ScalarFormula &f) { return f.rsqrt(f.operand(0)); }

Scalar NegOp::buildFormula(ScalarFormula &f) { return f.neg(f.operand(0)); }

Scalar LogOp::buildFormula(ScalarFormula &f) { return f.log(f.operand(0)); }

Scalar SqrtOp::buildFormula(ScalarFormula &f) { return f.sqrt(f.operand(0)); }

Scalar CosOp::buildFormula(ScalarFormula &f) { return f.cos(f.operand(0)); }

Scalar SinOp::buildFormula(ScalarFormula &f) { return f.sin(f.operand(0)); }

Scalar SigmoidOp::buildFormula(ScalarFormula &f) { return f.sigmoid(f.operand(0)); }

Scalar PowOp::buildFormula(ScalarFormula &f) {
  Scalar x = f.operand(0);
  return f.pow(x, f.constant(getExponent().convertToDouble()));
}
