// Reference kernels for elementwise ops: activations and their gradients,
// broadcasting arithmetic, scale, dropout, causal_mask, where, convert.
#include "Kernels.h"

#include "weft/Reference/Numerics.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace weft::reference::detail {

namespace {

// PyTorch's constants for GELU: sqrt(2/pi) is M_SQRT2 * M_2_SQRTPI * 0.5.
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kGeluBeta = 1.41421356237309504880 * 1.12837916709551257390 * 0.5;
constexpr double kGeluKappa = 0.044715;

double geluExact(double x) { return 0.5 * x * (1.0 + std::erf(x * kSqrtHalf)); }

double geluTanh(double x) {
  double inner = kGeluBeta * (x + kGeluKappa * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(inner));
}

double geluExactDerivative(double x) {
  double cdf = 0.5 * (1.0 + std::erf(x * kSqrtHalf));
  double pdf = kInvSqrt2Pi * std::exp(-0.5 * x * x);
  return cdf + x * pdf;
}

// As torch's GeluBackward for approximate="tanh".
double geluTanhDerivative(double x) {
  double squared = x * x;
  double inner = kGeluBeta * (x + kGeluKappa * squared * x);
  double tanhInner = std::tanh(inner);
  double left = 0.5 * x, right = 1.0 + tanhInner;
  double leftDerivative = 0.5 * right;
  double rightDerivative = left * (1.0 - tanhInner * tanhInner) * kGeluBeta *
                           (1.0 + 3.0 * kGeluKappa * squared);
  return leftDerivative + rightDerivative;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

template <typename Fn>
void mapUnary(const Tensor &x, Tensor &y, Fn fn) {
  for (size_t i = 0; i < x.data.size(); ++i)
    y.data[i] = fn(x.data[i]);
}

} // namespace

LogicalResult runGelu(GeluOp op, Operands in, Results out) {
  if (op.getApproximate() == "tanh")
    mapUnary(*in[0], out[0], geluTanh);
  else
    mapUnary(*in[0], out[0], geluExact);
  return success();
}

LogicalResult runGeluGrad(GeluGradOp op, Operands in, Results out) {
  const Tensor &dy = *in[0], &x = *in[1];
  bool tanh = op.getApproximate() == "tanh";
  for (size_t i = 0; i < x.data.size(); ++i)
    out[0].data[i] = dy.data[i] * (tanh ? geluTanhDerivative(x.data[i])
                                        : geluExactDerivative(x.data[i]));
  return success();
}

LogicalResult runSilu(SiluOp, Operands in, Results out) {
  mapUnary(*in[0], out[0], [](double x) { return x * sigmoid(x); });
  return success();
}

LogicalResult runSiluGrad(SiluGradOp, Operands in, Results out) {
  const Tensor &dy = *in[0], &x = *in[1];
  for (size_t i = 0; i < x.data.size(); ++i) {
    double s = sigmoid(x.data[i]);
    out[0].data[i] = dy.data[i] * s * (1.0 + x.data[i] * (1.0 - s));
  }
  return success();
}

LogicalResult runBinary(Operation *op, Operands in, Results out) {
  const Tensor &lhs = *in[0], &rhs = *in[1];
  Tensor &result = out[0];
  auto apply = [&](auto combine) {
    forEachBroadcast(result.shape, lhs.shape, rhs.shape,
                     [&](int64_t at, int64_t l, int64_t r) {
                       result.data[at] = combine(lhs.data[l], rhs.data[r]);
                     });
  };
  if (isa<AddOp>(op))
    apply([](double a, double b) { return a + b; });
  else if (isa<SubOp>(op))
    apply([](double a, double b) { return a - b; });
  else if (isa<MulOp>(op))
    apply([](double a, double b) { return a * b; });
  else
    return op->emitOpError("is not a binary arithmetic op");
  return success();
}

LogicalResult runScale(ScaleOp op, Operands in, Results out) {
  double factor = op.getValue().convertToDouble();
  mapUnary(*in[0], out[0], [&](double x) { return x * factor; });
  return success();
}

// The index is the row-major index into this op's own operand: the global
// index of ARCHITECTURE.md's rule for unsharded IR. A dropout that partitioning
// has sharded would need its shard's global offset, which the op does not
// carry yet, so per-rank masks of sharded dropout are not the global ones.
LogicalResult runDropout(DropoutOp op, Operands in, Results out) {
  const Tensor &x = *in[0];
  double p = op.getP().convertToDouble();
  auto seed = static_cast<int64_t>(in[1]->data[0]);
  int64_t rngId = rngIdOf(op);
  for (size_t i = 0; i < x.data.size(); ++i)
    out[0].data[i] =
        dropoutKeeps(seed, rngId, i, p) ? x.data[i] / (1.0 - p) : 0.0;
  return success();
}

LogicalResult runCausalMask(CausalMaskOp op, Operands in, Results out) {
  const Tensor &x = *in[0];
  double fill = op.getFillValue();
  size_t rank = x.shape.size();
  int64_t rows = x.shape[rank - 2], cols = x.shape[rank - 1];
  int64_t matrices = product(x.shape, 0, rank - 2);
  for (int64_t m = 0; m < matrices; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        int64_t at = (m * rows + i) * cols + j;
        out[0].data[at] = j > i ? fill : x.data[at];
      }
  return success();
}

LogicalResult runWhere(WhereOp, Operands in, Results out) {
  const Tensor &cond = *in[0], &lhs = *in[1], &rhs = *in[2];
  Tensor &result = out[0];
  std::vector<int64_t> condAt = broadcastOffsets(cond.shape, result.shape);
  std::vector<int64_t> lhsAt = broadcastOffsets(lhs.shape, result.shape);
  std::vector<int64_t> rhsAt = broadcastOffsets(rhs.shape, result.shape);
  for (size_t i = 0; i < result.data.size(); ++i)
    result.data[i] = cond.data[condAt[i]] != 0.0 ? lhs.data[lhsAt[i]]
                                                 : rhs.data[rhsAt[i]];
  return success();
}

LogicalResult runConvert(ConvertOp, Operands in, Results out) {
  // The driver rounds the copy once, from the exact input, to the result type.
  out[0].data = in[0]->data;
  return success();
}

} // namespace weft::reference::detail
