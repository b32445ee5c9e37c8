// Which splits and concats around seq-major attention are views of one packed
// tensor (see AttentionPacking.h): pure matching on the IR, shared by
// liveness (one buffer) and the plan builder (no kernel, packed kernels).
#include "weft/Dialect/AttentionPacking.h"

using namespace mlir;
using namespace weft;

namespace {

/// Operand positions of q, k and v in attention and attention_grad.
unsigned qkvOperand(Operation *op, unsigned piece) {
  return isa<AttentionGradOp>(op) ? piece + 1 : piece;
}

/// The form of a split or concat along `dim` of `whole` into three pieces:
/// Blocked along the last dim of [b, s, C]; Grouped along dim 3 of
/// [b, s, hk, g + 2, d] with pieces of (g, 1, 1).
std::optional<QkvPacking> formOf(RankedTensorType whole, int64_t dim,
                                 ArrayRef<int64_t> pieceSizes) {
  if (pieceSizes.size() != 3)
    return std::nullopt;
  if (whole.getRank() == 3 && dim == 2)
    return QkvPacking::Blocked;
  if (whole.getRank() == 5 && dim == 3 && pieceSizes[1] == 1 && pieceSizes[2] == 1)
    return QkvPacking::Grouped;
  return std::nullopt;
}

/// The split and piece `value` (a [b, s, h, d] reshape of a split result)
/// comes from.
std::pair<SplitOp, unsigned> pieceOf(Value value) {
  auto reshape = value.getDefiningOp<ReshapeOp>();
  if (!reshape)
    return {};
  auto result = dyn_cast<OpResult>(reshape.getX());
  auto split = result ? dyn_cast<SplitOp>(result.getOwner()) : SplitOp();
  if (!split)
    return {};
  return {split, result.getResultNumber()};
}

} // namespace

std::optional<QkvPacking> weft::packedQkvSplit(SplitOp split) {
  auto source = cast<RankedTensorType>(split.getX().getType());
  int64_t dim = split.getDim();
  std::optional<QkvPacking> form =
      formOf(source, dim < 0 ? dim + source.getRank() : dim, split.getSizes());
  if (!form)
    return std::nullopt;
  bool read = false;
  for (auto [piece, result] : llvm::enumerate(split.getResults())) {
    for (Operation *user : result.getUsers()) {
      auto reshape = dyn_cast<ReshapeOp>(user);
      if (!reshape)
        return std::nullopt;
      // [b, s, h, d]; grouped heads keep d (the last dim) as it is.
      ArrayRef<int64_t> shape = reshape.getY().getType().getShape();
      if (shape.size() != 4 || shape[0] != source.getDimSize(0) ||
          shape[1] != source.getDimSize(1) ||
          (*form == QkvPacking::Grouped && shape[3] != source.getDimSize(4)))
        return std::nullopt;
      for (OpOperand &use : reshape.getY().getUses()) {
        Operation *op = use.getOwner();
        if (!isSeqMajorAttention(op) || use.getOperandNumber() != qkvOperand(op, piece))
          return std::nullopt;
        // q, k and v of this op are the three pieces of this split, in order.
        for (unsigned other = 0; other < 3; ++other)
          if (pieceOf(op->getOperand(qkvOperand(op, other))) !=
              std::make_pair(split, other))
            return std::nullopt;
        read = true;
      }
    }
  }
  return read ? form : std::nullopt;
}

std::optional<QkvPacking> weft::packedQkvOf(Operation *attention) {
  if (!isSeqMajorAttention(attention))
    return std::nullopt;
  auto [split, piece] = pieceOf(attention->getOperand(qkvOperand(attention, 0)));
  if (!split || piece != 0)
    return std::nullopt;
  return packedQkvSplit(split);
}

/// The concat and its form, before checking it against the operands.
static std::pair<ConcatOp, std::optional<QkvPacking>> gradsConcat(AttentionGradOp grad) {
  if (!grad.getSeqMajor())
    return {};
  ConcatOp concat;
  SmallVector<int64_t> pieceSizes;
  for (auto [piece, result] : llvm::enumerate(grad.getResults())) {
    if (!result.hasOneUse())
      return {};
    auto reshape = dyn_cast<ReshapeOp>(*result.getUsers().begin());
    if (!reshape || !reshape.getY().hasOneUse())
      return {};
    OpOperand &use = *reshape.getY().getUses().begin();
    auto user = dyn_cast<ConcatOp>(use.getOwner());
    if (!user || use.getOperandNumber() != piece || (concat && user != concat))
      return {};
    concat = user;
    ArrayRef<int64_t> shape = reshape.getY().getType().getShape();
    int64_t dim = user.getDim();
    if (dim < 0)
      dim += shape.size();
    if (dim < 0 || dim >= int64_t(shape.size()))
      return {};
    pieceSizes.push_back(shape[dim]);
  }
  if (concat.getPieces().size() != 3)
    return {};
  auto whole = cast<RankedTensorType>(concat.getY().getType());
  int64_t dim = concat.getDim();
  std::optional<QkvPacking> form =
      formOf(whole, dim < 0 ? dim + whole.getRank() : dim, pieceSizes);
  // [b, s] lead, as the seq-major gradients'; grouped ones end in d.
  ArrayRef<int64_t> dq = grad.getDq().getType().getShape();
  if (!form || whole.getDimSize(0) != dq[0] || whole.getDimSize(1) != dq[1] ||
      (*form == QkvPacking::Grouped && whole.getDimSize(4) != dq[3]))
    return {};
  return {concat, form};
}

/// The concat and its form when its packing agrees with the operands'.
static std::pair<ConcatOp, std::optional<QkvPacking>> packedGrads(AttentionGradOp grad) {
  auto [concat, form] = gradsConcat(grad);
  if (!concat)
    return {};
  std::optional<QkvPacking> operands = packedQkvOf(grad);
  if (operands && operands != form)
    return {};
  return {concat, form};
}

ConcatOp weft::packedGradsTarget(AttentionGradOp grad) { return packedGrads(grad).first; }

std::optional<QkvPacking> weft::packedGradsOf(AttentionGradOp grad) {
  return packedGrads(grad).second;
}

bool weft::isPackedGradConcat(ConcatOp concat) {
  if (concat.getPieces().size() != 3)
    return false;
  auto reshape = concat.getPieces()[0].getDefiningOp<ReshapeOp>();
  auto grad = reshape ? reshape.getX().getDefiningOp<AttentionGradOp>() : AttentionGradOp();
  return grad && packedGradsTarget(grad) == concat;
}
