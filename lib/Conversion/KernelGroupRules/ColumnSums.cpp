// Where the GPU kernels of a norm-weight gradient (dgamma, dbeta summed over
// rows) keep their f32 row statistics and per-chunk partial sums between
// launches: in a weft.fused group's workspace, else in a full output of the op.
#include "weft/Conversion/KernelGroupRules.h"

#include <algorithm>

using namespace mlir;
using namespace weft;

std::optional<ColumnSumScratch> weft::getColumnSumScratch(Operation *op) {
  // The body and the values the kernels write: a group's yielded values, or
  // a single op's results. Safe on unverified IR (attribute verifiers ask the
  // memory interface first): anything unexpected has no scratch.
  SmallVector<Operation *> body;
  SmallVector<Value> outputs;
  if (auto fused = dyn_cast<FusedOp>(op)) {
    if (fused->getRegion(0).empty())
      return std::nullopt;
    Block &block = fused->getRegion(0).front();
    auto yield = dyn_cast_or_null<YieldOp>(
        block.empty() ? nullptr : block.getTerminator());
    if (!yield)
      return std::nullopt;
    for (Operation &member : block.without_terminator())
      body.push_back(&member);
    llvm::append_range(outputs, yield.getValues());
  } else {
    body.push_back(op);
    llvm::append_range(outputs, op->getResults());
  }
  ColumnSumScratch scratch;
  Operation *norm = nullptr;
  for (Operation *member : body)
    scratch.statCount += rowStatCount(member);
  for (Value value : outputs)
    if (isColumnSum(value)) {
      ++scratch.sums;
      norm = value.getDefiningOp();
    }
  if (!norm || norm->getNumOperands() < 2)
    return std::nullopt;
  auto x = dyn_cast<RankedTensorType>(norm->getOperand(1).getType());
  // Over 2^48 elements the op's verifier refuses it; asked first (the
  // workspace offset's attribute verifier), the sizes below must not wrap.
  if (!x || !x.hasStaticShape() || x.getRank() == 0 ||
      tensorElements(x) > (int64_t(1) << 48))
    return std::nullopt;
  scratch.cols = x.getShape().back();
  for (int64_t d : x.getShape().drop_back())
    scratch.rows *= d;
  if (scratch.cols <= 0 || scratch.rows <= 0)
    return std::nullopt;
  int64_t stats = scratch.statCount * scratch.rows;
  // About 128 rows per chunk, at most 64 chunks.
  int64_t wanted = std::clamp<int64_t>(scratch.rows / 128, 1, 64);
  // A weft.fused group keeps them in its workspace, so its rows kernel (dx)
  // can park the statistics it computes anyway before the column sums run;
  // a lone op borrows a full output, written last.
  for (auto [i, value] : llvm::enumerate(outputs)) {
    if (isa<FusedOp>(op))
      break;
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || type.getShape() != x.getShape() || tensorBytes(type) < stats * 4)
      continue;
    // As many chunks as the output holds next to the statistics.
    scratch.output = int64_t(i);
    int64_t available = tensorBytes(type) / 4 - stats;
    scratch.chunks = std::clamp<int64_t>(
        std::min(wanted, available / (scratch.sums * scratch.cols)), 1, 64);
    return scratch;
  }
  // A group, or no output can hold them (dx is not needed): a workspace of
  // exactly the statistics and the chunks' partials.
  scratch.chunks = wanted;
  scratch.workspaceBytes =
      4 * (stats + (wanted > 1 ? wanted * scratch.sums * scratch.cols : 0));
  return scratch;
}
