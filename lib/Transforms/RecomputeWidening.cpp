// weft-recompute-widening: the backward's fused readers of a forward value
// widened from a narrower one (bf16 -> f32 under autocast) widen it again
// themselves, so the step saves the narrow value, not the wide copy.
#include "weft/Analysis/Liveness.h"
#include "weft/Transforms/Passes.h"

#include "llvm/Support/DebugLog.h"

#define DEBUG_TYPE "weft-recompute-widening"

namespace weft {
#define GEN_PASS_DEF_RECOMPUTEWIDENINGPASS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

int64_t tensorBytes(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  return type.getNumElements() * type.getElementTypeBitWidth();
}

/// A unary pointwise op whose result takes more bytes than its operand: a
/// fused reader recomputes it from the operand for free.
bool isWidening(Operation *op) {
  return isUnaryPointwise(op) && tensorBytes(op->getResult(0)) > tensorBytes(op->getOperand(0));
}

} // namespace

int64_t weft::recomputeWidening(func::FuncOp func) {
  if (func.isExternal() || !llvm::hasSingleElement(func.getBody()))
    return 0;
  Block &block = func.getBody().front();
  int64_t backwardStart = findBackwardStart(func);
  llvm::DenseMap<Operation *, int64_t> position;
  for (Operation &op : block)
    position[&op] = position.size();

  SmallVector<std::pair<Operation *, SmallVector<Operation *>>> widenings;
  for (Operation &op : block) {
    if (position.lookup(&op) >= backwardStart)
      break;
    if (!isWidening(&op))
      continue;
    // Only kernels that can take the widening in: a GEMM or attention
    // reading the wide value would need a kernel of its own for it.
    SmallVector<Operation *> readers;
    for (Operation *user : op.getResult(0).getUsers())
      if (user->getBlock() == &block && position.lookup(user) >= backwardStart &&
          getFusionDomain(user) && !llvm::is_contained(readers, user))
        readers.push_back(user);
    if (!readers.empty())
      widenings.push_back({&op, std::move(readers)});
  }
  for (auto &[op, readers] : widenings) {
    Operation *first = *llvm::min_element(readers, [&](Operation *a, Operation *b) {
      return position.lookup(a) < position.lookup(b);
    });
    OpBuilder builder(first);
    Value again = builder.clone(*op)->getResult(0);
    Value wide = op->getResult(0);
    for (Operation *reader : readers)
      reader->replaceUsesOfWith(wide, again);
  }
  LDBG() << "widened " << widenings.size() << " values again in the backward of @"
         << func.getSymName();
  return widenings.size();
}

namespace {
struct RecomputeWideningPass
    : public weft::impl::RecomputeWideningPassBase<RecomputeWideningPass> {
  void runOnOperation() override { recomputeWidening(getOperation()); }
};
} // namespace
