// Verifiers of the weft ops. Every message names the offending operand or
// attribute and the shapes or values involved.
#include "Verify.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace weft;
using namespace weft::verify;

#define GET_OP_CLASSES
#include "weft/Dialect/WeftOps.cpp.inc"

namespace weft::verify {

RankedTensorType tensorOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (auto [i, dim] : llvm::enumerate(shape)) {
    if (i)
      text += ", ";
    text += std::to_string(dim);
  }
  return text + "]";
}

/// The most elements a weft tensor may have: its size in bytes (at most 8 per
/// element) and the sums of sizes that verifiers and cost models form stay
/// far from int64 overflow.
constexpr int64_t kMaxElements = int64_t(1) << 48;

/// Weft works on static shapes only; tensors carry no encoding (no pass would
/// honour one, and folders would drop it) and have at most kMaxElements.
LogicalResult verifyTensorType(Operation *op, StringRef kind, size_t index,
                               Type type) {
  // Other types are the ODS constraints' to report.
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return success();
  if (!tensor.hasStaticShape())
    return op->emitOpError("expects static shapes, ")
           << kind << " #" << index << " is " << type;
  if (tensor.getEncoding())
    return op->emitOpError("expects tensors without an encoding, ")
           << kind << " #" << index << " is " << type;
  int64_t count = 1;
  for (int64_t dim : tensor.getShape())
    if (dim > kMaxElements || llvm::MulOverflow(count, dim, count) ||
        count > kMaxElements)
      return op->emitOpError("expects at most 2^48 elements, ")
             << kind << " #" << index << " is " << type;
  return success();
}


} // namespace weft::verify

/// The StaticShapes trait: every operand and result.
LogicalResult weft::verifyStaticShapes(Operation *op) {
  for (auto [i, type] : llvm::enumerate(op->getOperandTypes()))
    if (failed(verifyTensorType(op, "operand", i, type)))
      return failure();
  for (auto [i, type] : llvm::enumerate(op->getResultTypes()))
    if (failed(verifyTensorType(op, "result", i, type)))
      return failure();
  return success();
}

namespace weft::verify {


LogicalResult verifySameElementType(Operation *op,
                                    ArrayRef<NamedValue> values) {
  Type first = tensorOf(values.front().second).getElementType();
  for (const NamedValue &named : values.drop_front())
    if (tensorOf(named.second).getElementType() != first)
      return op->emitOpError("expects ")
             << values.front().first << " ("
             << values.front().second.getType() << ") and " << named.first
             << " (" << named.second.getType()
             << ") to have the same element type";
  return success();
}

LogicalResult verifyShape(Operation *op, StringRef name, Value value,
                          ArrayRef<int64_t> expected) {
  if (tensorOf(value).getShape() != expected)
    return op->emitOpError("expects ")
           << name << " to have shape " << shapeString(expected) << ", got "
           << value.getType();
  return success();
}

LogicalResult verifyRank(Operation *op, StringRef name, Value value,
                         int64_t rank) {
  if (tensorOf(value).getRank() != rank)
    return op->emitOpError("expects ")
           << name << " of rank " << rank << ", got " << value.getType();
  return success();
}

LogicalResult verifyMinRank(Operation *op, StringRef name, Value value,
                            int64_t rank) {
  if (tensorOf(value).getRank() < rank)
    return op->emitOpError("expects ")
           << name << " of rank at least " << rank << ", got "
           << value.getType();
  return success();
}

/// Normalises a possibly negative dimension index, or reports it.
FailureOr<int64_t> normalizeDim(Operation *op, StringRef name, int64_t dim,
                                int64_t rank) {
  int64_t normalized = dim < 0 ? dim + rank : dim;
  if (normalized < 0 || normalized >= rank)
    return op->emitOpError("expects ")
           << name << " " << dim << " to be in [" << -rank << ", " << rank
           << ") for rank " << rank;
  return normalized;
}

/// NumPy broadcasting of two shapes, or failure.
FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return failure();
    result[i] = da == 1 ? db : da;
  }
  return result;
}

LogicalResult verifyBroadcastResult(Operation *op,
                                    ArrayRef<NamedValue> operands,
                                    Value result) {
  SmallVector<int64_t> shape(tensorOf(operands.front().second).getShape());
  for (const NamedValue &named : operands.drop_front()) {
    auto merged = broadcastShapes(shape, tensorOf(named.second).getShape());
    if (failed(merged))
      return op->emitOpError("cannot broadcast ")
             << named.first << " (" << named.second.getType()
             << ") with shape " << shapeString(shape);
    shape = *merged;
  }
  return verifyShape(op, "result", result, shape);
}

LogicalResult verifyProbability(Operation *op, StringRef name, double p) {
  if (!(p >= 0.0 && p < 1.0))
    return op->emitOpError("expects ") << name << " in [0, 1), got " << p;
  return success();
}

LogicalResult verifyPositive(Operation *op, StringRef name, double value) {
  if (!(value > 0.0) || std::isinf(value))
    return op->emitOpError("expects ")
           << name << " to be positive and finite, got " << value;
  return success();
}

LogicalResult verifyRngId(Operation *op) {
  if (!op->hasAttr(WeftDialect::kRngIdAttr))
    return op->emitOpError("expects a '")
           << WeftDialect::kRngIdAttr << "' attribute on a random op";
  return success();
}

/// A rank-4 attention operand's shape as [b, h, s, d], whichever layout the
/// op names (seq_major stores [b, s, h, d]).
SmallVector<int64_t> headMajorShape(Value value, bool seqMajor) {
  SmallVector<int64_t> shape(tensorOf(value).getShape());
  if (seqMajor)
    std::swap(shape[1], shape[2]);
  return shape;
}

/// The [b, h, s, d] shape `shape` in the op's layout.
SmallVector<int64_t> inLayout(SmallVector<int64_t> shape, bool seqMajor) {
  if (seqMajor)
    std::swap(shape[1], shape[2]);
  return shape;
}

/// Shared by attention and attention_grad: q [b,hq,sq,d], k [b,hkv,sk,d],
/// v [b,hkv,sk,dv] (each [b,s,h,d] under seq_major); returns the output
/// shape [b,hq,sq,dv] in head-major order.
FailureOr<SmallVector<int64_t>>
verifyAttentionOperands(Operation *op, Value q, Value k, Value v, Value seed,
                        std::optional<llvm::APFloat> scaleAttr, double dropoutP,
                        bool seqMajor, bool causal) {
  std::optional<float> scale;
  if (scaleAttr)
    scale = scaleAttr->convertToFloat();
  for (NamedValue named : {NamedValue{"q", q}, {"k", k}, {"v", v}})
    if (failed(verifyRank(op, named.first, named.second, 4)))
      return failure();
  SmallVector<int64_t> qs = headMajorShape(q, seqMajor), ks = headMajorShape(k, seqMajor),
                       vs = headMajorShape(v, seqMajor);
  if (ks[0] != qs[0] || vs[0] != qs[0])
    return op->emitOpError("expects q, k and v to share the batch size, got ")
           << q.getType() << ", " << k.getType() << ", " << v.getType();
  if (ks[1] != vs[1] || ks[2] != vs[2])
    return op->emitOpError("expects k (")
           << k.getType() << ") and v (" << v.getType()
           << ") to have the same heads and sequence length";
  if (ks[3] != qs[3])
    return op->emitOpError("expects q (")
           << q.getType() << ") and k (" << k.getType()
           << ") to have the same head_dim";
  if (ks[1] == 0 || qs[1] % ks[1] != 0)
    return op->emitOpError("expects kv heads (")
           << ks[1] << ") to divide q heads (" << qs[1] << ")";
  // Causal is bottom-right aligned (query i sees keys j <= i + sk - sq): with
  // more queries than keys the first sq - sk rows would see no key at all.
  if (causal && qs[2] > ks[2])
    return op->emitOpError("expects causal q length (")
           << qs[2] << ") not to exceed the k length (" << ks[2] << "), got q "
           << q.getType() << " and k " << k.getType();
  // The default scale 1/sqrt(head_dim) would be infinite.
  if (!scaleAttr && qs[3] == 0)
    return op->emitOpError("expects a scale attribute when head_dim is 0, got q ")
           << q.getType();
  if (failed(verifySameElementType(op, {{"q", q}, {"k", k}, {"v", v}})))
    return failure();
  if (scale && (std::isnan(*scale) || std::isinf(*scale) || *scale == 0.0f))
    return op->emitOpError("expects a finite non-zero scale, got ") << *scale;
  if (failed(verifyProbability(op, "dropout_p", dropoutP)))
    return failure();
  if (dropoutP > 0.0) {
    if (!seed)
      return op->emitOpError("expects a seed operand when dropout_p (")
             << dropoutP << ") is positive";
    if (failed(verifyRngId(op)))
      return failure();
  }
  return SmallVector<int64_t>{qs[0], qs[1], qs[2], vs[3]};
}

double attentionScale(std::optional<llvm::APFloat> scale, Value q) {
  if (scale)
    return scale->convertToFloat();
  return 1.0 / std::sqrt(double(tensorOf(q).getShape()[3]));
}

} // namespace weft::verify

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::verify() {
  if (failed(verifyMinRank(*this, "x", getX(), 1)) ||
      failed(verifyRank(*this, "w", getW(), 2)))
    return failure();
  ArrayRef<int64_t> xs = getX().getType().getShape(),
                    ws = getW().getType().getShape();
  if (xs.back() != ws[1])
    return emitOpError("expects the last dim of x (")
           << getX().getType() << ") to equal w's in-features (" << getW().getType()
           << ")";
  SmallVector<NamedValue> typed = {{"x", getX()}, {"w", getW()}, {"result", getY()}};
  if (getBias()) {
    if (failed(verifyShape(*this, "bias", getBias(), {ws[0]})))
      return failure();
    typed.push_back({"bias", getBias()});
  }
  SmallVector<int64_t> shape(xs.drop_back());
  shape.push_back(ws[0]);
  if (failed(verifyShape(*this, "result", getY(), shape)))
    return failure();
  return verifySameElementType(*this, typed);
}

LogicalResult MatmulOp::verify() {
  if (failed(verifyMinRank(*this, "a", getA(), 2)) ||
      failed(verifyMinRank(*this, "b", getB(), 2)))
    return failure();
  ArrayRef<int64_t> as = getA().getType().getShape(),
                    bs = getB().getType().getShape();
  int64_t ar = as.size(), br = bs.size();
  int64_t m = getTransposeA() ? as[ar - 1] : as[ar - 2];
  int64_t ka = getTransposeA() ? as[ar - 2] : as[ar - 1];
  int64_t kb = getTransposeB() ? bs[br - 1] : bs[br - 2];
  int64_t n = getTransposeB() ? bs[br - 2] : bs[br - 1];
  if (ka != kb)
    return emitOpError("expects contraction sizes to match: a (")
           << getA().getType() << ") has k = " << ka << ", b ("
           << getB().getType() << ") has k = " << kb;
  ArrayRef<int64_t> batch = as.drop_back(2);
  if (br != 2 && bs.drop_back(2) != batch)
    return emitOpError("expects b (")
           << getB().getType() << ") to be 2-d or to have a's batch dims "
           << shapeString(batch);
  SmallVector<int64_t> shape(batch);
  shape.push_back(m);
  shape.push_back(n);
  if (failed(verifyShape(*this, "result", getC(), shape)))
    return failure();
  return verifySameElementType(*this, {{"a", getA()}, {"b", getB()}, {"result", getC()}});
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

bool weft::isSeqMajorAttention(Operation *op) {
  if (auto forward = dyn_cast<AttentionOp>(op))
    return forward.getSeqMajor();
  if (auto grad = dyn_cast<AttentionGradOp>(op))
    return grad.getSeqMajor();
  return false;
}

double AttentionOp::getScaleValue() { return attentionScale(getScale(), getQ()); }
double AttentionGradOp::getScaleValue() {
  return attentionScale(getScale(), getQ());
}

LogicalResult AttentionOp::verify() {
  auto shape = verifyAttentionOperands(*this, getQ(), getK(), getV(), getSeed(),
                                       getScale(), getDropoutP().convertToDouble(),
                                       getSeqMajor(), getCausal());
  if (failed(shape) ||
      failed(verifyAttentionRng(*this, getRng(), getDropoutHeads(), (*shape)[1])) ||
      failed(verifyShape(*this, "result", getOut(), inLayout(*shape, getSeqMajor()))) ||
      failed(verifySameElementType(*this, {{"q", getQ()}, {"result", getOut()}})))
    return failure();
  if (Value lse = getLse()) {
    SmallVector<int64_t> rows(ArrayRef<int64_t>(*shape).drop_back());
    if (failed(verifyShape(*this, "lse", lse, rows)))
      return failure();
    if (!tensorOf(lse).getElementType().isF32())
      return emitOpError("expects lse to be f32, got ") << lse.getType();
  }
  return success();
}

LogicalResult AttentionGradOp::verify() {
  auto shape = verifyAttentionOperands(*this, getQ(), getK(), getV(), getSeed(),
                                       getScale(), getDropoutP().convertToDouble(),
                                       getSeqMajor(), getCausal());
  if (failed(shape) ||
      failed(verifyAttentionRng(*this, getRng(), getDropoutHeads(), (*shape)[1])))
    return failure();
  SmallVector<int64_t> outShape = inLayout(*shape, getSeqMajor());
  if (failed(verifyShape(*this, "dout", getDout(), outShape)) ||
      failed(verifyShape(*this, "out", getOut(), outShape)))
    return failure();
  SmallVector<int64_t> rows(ArrayRef<int64_t>(*shape).drop_back());
  if (failed(verifyShape(*this, "lse", getLse(), rows)))
    return failure();
  if (!getLse().getType().getElementType().isF32())
    return emitOpError("expects lse to be f32, got ") << getLse().getType();
  if (failed(verifyShape(*this, "dq", getDq(), getQ().getType().getShape())) ||
      failed(verifyShape(*this, "dk", getDk(), getK().getType().getShape())) ||
      failed(verifyShape(*this, "dv", getDv(), getV().getType().getShape())))
    return failure();
  return verifySameElementType(*this, {{"q", getQ()}, {"dout", getDout()},
                                       {"out", getOut()}, {"dq", getDq()},
                                       {"dk", getDk()}, {"dv", getDv()}});
}

//===----------------------------------------------------------------------===//
// Normalization, activations, softmax
//===----------------------------------------------------------------------===//

/// x [..., n] with per-feature parameters [n].
static LogicalResult verifyNormParams(Operation *op, Value x,
                                      ArrayRef<NamedValue> params, double eps) {
  if (failed(verifyMinRank(op, "x", x, 1)))
    return failure();
  int64_t n = tensorOf(x).getShape().back();
  for (const NamedValue &named : params)
    if (failed(verifyShape(op, named.first, named.second, {n})))
      return failure();
  return verifyPositive(op, "eps", eps);
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyNormParams(*this, getX(), {{"gamma", getGamma()}, {"beta", getBeta()}},
                              getEps().convertToDouble())) ||
      failed(verifyShape(*this, "result", getY(), getX().getType().getShape())))
    return failure();
  return verifySameElementType(*this, {{"x", getX()}, {"gamma", getGamma()},
                                       {"beta", getBeta()}, {"result", getY()}});
}

LogicalResult LayerNormGradOp::verify() {
  if (failed(verifyNormParams(*this, getX(),
                              {{"gamma", getGamma()}, {"dgamma", getDgamma()},
                               {"dbeta", getDbeta()}},
                              getEps().convertToDouble())) ||
      failed(verifyShape(*this, "dy", getDy(), getX().getType().getShape())) ||
      failed(verifyShape(*this, "dx", getDx(), getX().getType().getShape())))
    return failure();
  return verifySameElementType(*this, {{"x", getX()}, {"dy", getDy()},
                                       {"gamma", getGamma()}, {"dx", getDx()},
                                       {"dgamma", getDgamma()}, {"dbeta", getDbeta()}});
}

LogicalResult RmsNormOp::verify() {
  if (failed(verifyNormParams(*this, getX(), {{"gamma", getGamma()}},
                              getEps().convertToDouble())) ||
      failed(verifyShape(*this, "result", getY(), getX().getType().getShape())))
    return failure();
  return verifySameElementType(*this, {{"x", getX()}, {"gamma", getGamma()}, {"result", getY()}});
}

LogicalResult RmsNormGradOp::verify() {
  if (failed(verifyNormParams(*this, getX(),
                              {{"gamma", getGamma()}, {"dgamma", getDgamma()}},
                              getEps().convertToDouble())) ||
      failed(verifyShape(*this, "dy", getDy(), getX().getType().getShape())) ||
      failed(verifyShape(*this, "dx", getDx(), getX().getType().getShape())))
    return failure();
  return verifySameElementType(*this, {{"x", getX()}, {"dy", getDy()},
                                       {"gamma", getGamma()}, {"dx", getDx()},
                                       {"dgamma", getDgamma()}});
}

/// Ops whose operands and result all have the type of `x`.
static LogicalResult verifySameTypes(Operation *op, ArrayRef<NamedValue> values) {
  Type first = values.front().second.getType();
  for (const NamedValue &named : values.drop_front())
    if (named.second.getType() != first)
      return op->emitOpError("expects ")
             << named.first << " (" << named.second.getType() << ") to have the type of "
             << values.front().first << " (" << first << ")";
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return success(succeeded(
      normalizeDim(*this, "dim", getDim(), getX().getType().getRank())));
}

LogicalResult SoftmaxGradOp::verify() {
  return success(succeeded(
      normalizeDim(*this, "dim", getDim(), getY().getType().getRank())));
}

static LogicalResult verifyApproximate(Operation *op, StringRef approximate) {
  if (approximate != "none" && approximate != "tanh")
    return op->emitOpError("expects approximate to be \"none\" or \"tanh\", got \"")
           << approximate << "\"";
  return success();
}

LogicalResult GeluOp::verify() {
  return verifyApproximate(*this, getApproximate());
}

LogicalResult GeluGradOp::verify() {
  return verifyApproximate(*this, getApproximate());
}


//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static LogicalResult verifyBinary(Operation *op, Value lhs, Value rhs,
                                  Value result) {
  if (failed(verifyBroadcastResult(op, {{"lhs", lhs}, {"rhs", rhs}}, result)))
    return failure();
  return verifySameElementType(op, {{"lhs", lhs}, {"rhs", rhs}, {"result", result}});
}

LogicalResult AddOp::verify() { return verifyBinary(*this, getLhs(), getRhs(), getResult()); }
LogicalResult SubOp::verify() { return verifyBinary(*this, getLhs(), getRhs(), getResult()); }
LogicalResult MulOp::verify() { return verifyBinary(*this, getLhs(), getRhs(), getResult()); }
LogicalResult DivOp::verify() { return verifyBinary(*this, getLhs(), getRhs(), getResult()); }

LogicalResult PowOp::verify() {
  if (!std::isfinite(getExponent().convertToDouble()))
    return emitOpError("expects a finite exponent, got ")
           << getExponent().convertToDouble();
  return success();
}

LogicalResult ScaleOp::verify() {
  if (!std::isfinite(getValue().convertToDouble()))
    return emitOpError("expects a finite value, got ") << getValue().convertToDouble();
  return success();
}

LogicalResult DropoutOp::verify() {
  if (failed(verifyProbability(*this, "p", getP().convertToDouble())) ||
      failed(verifyRngId(*this)) ||
      failed(verifySameTypes(*this, {{"x", getX()}, {"result", getY()}})))
    return failure();
  return verifyBlockOfGlobal(*this, getX().getType().getShape(),
                             getOffsets().size(), getGlobalShape());
}

double CausalMaskOp::getFillValue() {
  if (auto fill = getFill())
    return fill->convertToDouble();
  return -std::numeric_limits<double>::infinity();
}

LogicalResult CausalMaskOp::verify() {
  return verifyMinRank(*this, "x", getX(), 2);
}

LogicalResult WhereOp::verify() {
  if (failed(verifyBroadcastResult(
          *this, {{"cond", getCond()}, {"lhs", getLhs()}, {"rhs", getRhs()}},
          getResult())))
    return failure();
  return verifySameElementType(*this, {{"lhs", getLhs()}, {"rhs", getRhs()},
                                       {"result", getResult()}});
}

LogicalResult ConvertOp::verify() {
  return verifyShape(*this, "result", getY(), getX().getType().getShape());
}

//===----------------------------------------------------------------------===//
// Reductions and shapes
//===----------------------------------------------------------------------===//

LogicalResult weft::verify::verifyReduce(Operation *op, Value x, ArrayRef<int64_t> dims,
                                  bool keepdim, Value result) {
  ArrayRef<int64_t> shape = tensorOf(x).getShape();
  int64_t rank = shape.size();
  llvm::SmallSet<int64_t, 4> reduced;
  for (int64_t dim : dims) {
    auto normalized = normalizeDim(op, "reduced dim", dim, rank);
    if (failed(normalized))
      return failure();
    if (!reduced.insert(*normalized).second)
      return op->emitOpError("expects distinct dims, got ") << dim << " twice";
  }
  SmallVector<int64_t> expected;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced.contains(i))
      expected.push_back(shape[i]);
    else if (keepdim)
      expected.push_back(1);
  }
  if (failed(verifyShape(op, "result", result, expected)))
    return failure();
  return verifySameElementType(op, {{"x", x}, {"result", result}});
}

LogicalResult ReduceSumOp::verify() {
  return verifyReduce(*this, getX(), getDims(), getKeepdim(), getY());
}
LogicalResult ReduceMeanOp::verify() {
  return verifyReduce(*this, getX(), getDims(), getKeepdim(), getY());
}

LogicalResult ReshapeOp::verify() {
  if (getX().getType().getNumElements() != getY().getType().getNumElements())
    return emitOpError("expects the same element count: x (")
           << getX().getType() << ") has " << getX().getType().getNumElements()
           << ", result (" << getY().getType() << ") has "
           << getY().getType().getNumElements();
  return verifySameElementType(*this, {{"x", getX()}, {"result", getY()}});
}

LogicalResult TransposeOp::verify() {
  ArrayRef<int64_t> perm = getPerm();
  ArrayRef<int64_t> shape = getX().getType().getShape();
  if (perm.size() != shape.size())
    return emitOpError("expects perm of size ")
           << shape.size() << " (the rank of x), got " << shapeString(perm);
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> expected;
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(perm.size()) || seen[p])
      return emitOpError("expects perm to be a permutation of [0, ")
             << perm.size() << "), got " << shapeString(perm);
    seen[p] = true;
    expected.push_back(shape[p]);
  }
  if (failed(verifyShape(*this, "result", getY(), expected)))
    return failure();
  return verifySameElementType(*this, {{"x", getX()}, {"result", getY()}});
}

LogicalResult SplitOp::verify() {
  ArrayRef<int64_t> shape = getX().getType().getShape();
  auto dim = normalizeDim(*this, "dim", getDim(), shape.size());
  if (failed(dim))
    return failure();
  ArrayRef<int64_t> sizes = getSizes();
  if (sizes.size() != getPieces().size())
    return emitOpError("expects one result per size: ")
           << sizes.size() << " sizes " << shapeString(sizes) << ", "
           << getPieces().size() << " results";
  if (llvm::any_of(sizes, [](int64_t size) { return size < 0; }))
    return emitOpError("expects non-negative sizes, got ") << shapeString(sizes);
  int64_t total = 0;
  for (auto [i, size, piece] : llvm::enumerate(sizes, getPieces())) {
    SmallVector<int64_t> expected(shape);
    expected[*dim] = size;
    std::string name = "piece #" + std::to_string(i);
    if (failed(verifyShape(*this, name, piece, expected)) ||
        failed(verifySameElementType(*this, {{"x", getX()}, {name, piece}})))
      return failure();
    // Each size is a piece's dim (at most 2^48), so the sum cannot overflow
    // before it passes the input's dim.
    total += size;
    if (total > shape[*dim])
      break;
  }
  if (total != shape[*dim])
    return emitOpError("expects sizes ")
           << shapeString(sizes) << " to sum to dim " << *dim << " of x ("
           << getX().getType() << ")";
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getPieces().empty())
    return emitOpError("expects at least one operand");
  ArrayRef<int64_t> first = tensorOf(getPieces().front()).getShape();
  auto dim = normalizeDim(*this, "dim", getDim(), first.size());
  if (failed(dim))
    return failure();
  SmallVector<int64_t> expected(first);
  expected[*dim] = 0;
  for (Value piece : getPieces()) {
    ArrayRef<int64_t> shape = tensorOf(piece).getShape();
    bool compatible = shape.size() == first.size();
    for (size_t i = 0; compatible && i < shape.size(); ++i)
      compatible = int64_t(i) == *dim || shape[i] == first[i];
    if (!compatible)
      return emitOpError("expects operands to agree except in dim ")
             << *dim << ": " << getPieces().front().getType() << " and "
             << piece.getType();
    if (failed(verifySameElementType(*this, {{"first operand", getPieces().front()},
                                             {"operand", piece}})))
      return failure();
    // Pieces' dims are at most 2^48 each; stop before the sum could overflow.
    expected[*dim] += shape[*dim];
    if (expected[*dim] > kMaxElements)
      return emitOpError("expects the concatenated dim ")
             << *dim << " to have at most 2^48 elements, got more than "
             << kMaxElements;
  }
  if (failed(verifyShape(*this, "result", getY(), expected)))
    return failure();
  return verifySameElementType(*this, {{"first operand", getPieces().front()},
                                       {"result", getY()}});
}

//===----------------------------------------------------------------------===//
// Embedding, loss, position encoding, optimizer
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  if (failed(verifyRank(*this, "table", getTable(), 2)))
    return failure();
  SmallVector<int64_t> expected(getIds().getType().getShape());
  expected.push_back(getTable().getType().getShape()[1]);
  if (failed(verifyShape(*this, "result", getY(), expected)))
    return failure();
  // Every id would index out of range of an empty table.
  if (getTable().getType().getShape()[0] < 1)
    return emitOpError("expects at least one table row, got ") << getTable().getType();
  return verifySameElementType(*this, {{"table", getTable()}, {"result", getY()}});
}

LogicalResult EmbeddingGradOp::verify() {
  if (failed(verifyRank(*this, "result", getDtable(), 2)))
    return failure();
  SmallVector<int64_t> expected(getIds().getType().getShape());
  expected.push_back(getDtable().getType().getShape()[1]);
  if (failed(verifyShape(*this, "dy", getDy(), expected)))
    return failure();
  if (getDtable().getType().getShape()[0] < 1)
    return emitOpError("expects at least one table row, got ") << getDtable().getType();
  return verifySameElementType(*this, {{"dy", getDy()}, {"result", getDtable()}});
}

LogicalResult weft::verify::verifyLabels(Operation *op, Value logits, Value labels) {
  if (failed(verifyMinRank(op, "logits", logits, 1)))
    return failure();
  // No label is valid with zero classes, and the log-sum-exp is -inf.
  if (tensorOf(logits).getShape().back() < 1)
    return op->emitOpError("expects at least one class in logits, got ")
           << logits.getType();
  return verifyShape(op, "labels", labels, tensorOf(logits).getShape().drop_back());
}

LogicalResult weft::verify::verifyLossPrecision(Operation *op, StringRef name,
                                                Value loss, Value logits) {
  Type lossElement = tensorOf(loss).getElementType();
  Type logitsElement = tensorOf(logits).getElementType();
  if (lossElement == logitsElement ||
      (lossElement.isF32() && (logitsElement.isBF16() || logitsElement.isF16())))
    return success();
  return op->emitOpError("expects ")
         << name << " (" << loss.getType() << ") to have the logits' element type or f32 "
         << "with bf16/f16 logits, got logits " << logits.getType();
}

/// A chunk's labels are some of `all_labels`' positions: no more of them.
static LogicalResult verifyAllLabels(Operation *op, Value labels, Value allLabels) {
  if (!allLabels)
    return success();
  int64_t chunk = tensorOf(labels).getNumElements();
  int64_t all = tensorOf(allLabels).getNumElements();
  if (chunk > all)
    return op->emitOpError("expects all_labels (")
           << allLabels.getType() << ") to hold at least the " << chunk
           << " positions of labels (" << labels.getType() << ")";
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  if (failed(verifyLabels(*this, getLogits(), getLabels())) ||
      failed(verifyAllLabels(*this, getLabels(), getAllLabels())))
    return failure();
  return verifyLossPrecision(*this, "result", getLoss(), getLogits());
}

LogicalResult CrossEntropyGradOp::verify() {
  if (failed(verifyLabels(*this, getLogits(), getLabels())) ||
      failed(verifyAllLabels(*this, getLabels(), getAllLabels())))
    return failure();
  if (failed(verifyLossPrecision(*this, "dloss", getDloss(), getLogits())))
    return failure();
  return verifySameTypes(*this, {{"logits", getLogits()}, {"dlogits", getDlogits()}});
}

LogicalResult RopeOp::verify() {
  if (failed(verifyMinRank(*this, "x", getX(), 2)))
    return failure();
  ArrayRef<int64_t> shape = getX().getType().getShape();
  if (shape.back() % 2 != 0)
    return emitOpError("expects an even last dim in x, got ") << getX().getType();
  ArrayRef<int64_t> table = shape.take_back(2);
  if (failed(verifyShape(*this, "cos", getCos(), table)) ||
      failed(verifyShape(*this, "sin", getSin(), table)))
    return failure();
  if (failed(verifySameElementType(*this, {{"x", getX()}, {"cos", getCos()}, {"sin", getSin()}})))
    return failure();
  return verifySameTypes(*this, {{"x", getX()}, {"result", getY()}});
}

LogicalResult AdamWOp::verify() {
  ArrayRef<int64_t> shape = getParam().getType().getShape();
  if (failed(verifyShape(*this, "grad", getGrad(), shape)) ||
      failed(verifyShape(*this, "m", getM(), shape)) ||
      failed(verifyShape(*this, "v", getV(), shape)) ||
      failed(verifySameTypes(*this, {{"param", getParam()}, {"new_param", getNewParam()}})) ||
      failed(verifySameTypes(*this, {{"m", getM()}, {"new_m", getNewM()}})) ||
      failed(verifySameTypes(*this, {{"v", getV()}, {"new_v", getNewV()}})))
    return failure();
  if (Value low = getParamLow()) {
    // A split master: bf16 high half, i16 low half, f32 moments.
    if (!getNewParamLow())
      return emitOpError("with param_low expects a new_param_low result");
    if (!getParam().getType().getElementType().isBF16())
      return emitOpError("with param_low expects a bf16 param (the master's high half), got ")
             << getParam().getType();
    if (failed(verifyShape(*this, "param_low", low, shape)) ||
        failed(verifySameTypes(*this, {{"param_low", low}, {"new_param_low", getNewParamLow()}})))
      return failure();
    for (auto [name, value] : {std::pair<StringRef, Value>{"m", getM()}, {"v", getV()}})
      if (!cast<RankedTensorType>(value.getType()).getElementType().isF32())
        return emitOpError("with param_low expects an f32 ")
               << name << " (the master's precision), got " << value.getType();
  } else if (getNewParamLow()) {
    return emitOpError("has a new_param_low result but no param_low operand");
  }
  double lr = getLr().convertToDouble(), wd = getWeightDecay().convertToDouble();
  if (!(lr >= 0.0) || std::isinf(lr))
    return emitOpError("expects a finite lr >= 0, got ") << lr;
  if (!(wd >= 0.0) || std::isinf(wd))
    return emitOpError("expects a finite weight_decay >= 0, got ") << wd;
  if (failed(verifyProbability(*this, "beta1", getBeta1().convertToDouble())) ||
      failed(verifyProbability(*this, "beta2", getBeta2().convertToDouble())))
    return failure();
  return verifyPositive(*this, "eps", getEps().convertToDouble());
}
