// weft-hoist-collectives: all-gathers issued early enough that the compute
// they do not depend on hides them (Passes.td).
#include "weft/Analysis/LinkModel.h"
#include "weft/Analysis/Liveness.h"
#include "weft/Dialect/WeftDialect.h"
#include "weft/Partition/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

namespace weft {
#define GEN_PASS_DEF_HOISTCOLLECTIVESPASS
#include "weft/Partition/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The views (reshapes) `gather` reads its operand through, nearest first:
/// they move with it.
SmallVector<Operation *> viewChain(Operation *gather) {
  SmallVector<Operation *> chain;
  Value value = gather->getOperand(0);
  while (Operation *def = value.getDefiningOp()) {
    if (def->getNumOperands() != 1 || def->getNumResults() != 1 || !isBufferView(def))
      break;
    chain.push_back(def);
    value = def->getOperand(0);
  }
  return chain;
}

/// At most this many kernels move behind a gather: its gathered tensor
/// lives that much longer.
constexpr int kMaxKernelsPassed = 2;

/// The op `gather` (and its views) move before: up past ops they do not
/// depend on until those cover `needed` seconds, at most kMaxKernelsPassed
/// kernels and never from the backward into the forward (`backward`, the
/// first backward op, or null); null when it stays.
Operation *hoistPoint(Operation *gather, ArrayRef<Operation *> chain, double needed,
                      Operation *backward) {
  Value source = chain.empty() ? gather->getOperand(0) : chain.back()->getOperand(0);
  Operation *def = source.getDefiningOp();
  bool inBackward = backward && !gather->isBeforeInBlock(backward);
  Operation *point = nullptr;
  double covered = 0;
  int kernels = 0;
  for (Operation *op = gather->getPrevNode();
       op && op != def && covered < needed && kernels < kMaxKernelsPassed;
       op = op->getPrevNode()) {
    if (llvm::is_contained(chain, op))
      continue;
    if (inBackward && op->getNextNode() == backward)
      break; // the gather stays in the backward (the peak is at its start)
    double seconds = getComputeSeconds(op);
    covered += seconds;
    kernels += seconds > 0;
    point = op;
  }
  // Only worth it when some compute moved behind it.
  return covered > 0 ? point : nullptr;
}

struct HoistCollectivesPass
    : public weft::impl::HoistCollectivesPassBase<HoistCollectivesPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr(WeftDialect::kGridAttr) || func.getBody().empty())
      return;
    SymbolTableCollection symbols;
    SmallVector<Operation *> gathers;
    func.walk([&](shard::AllGatherOp op) { gathers.push_back(op); });
    // Latency-bound collectives go last on the communication stream: just
    // before their first reader (the return, or the optimizer).
    LinkModel link;
    SmallVector<Operation *> small;
    func.walk([&](Operation *op) {
      if (isCommunicating(op) && op->getNumResults() == 1 &&
          getCollectiveSeconds(op, symbols, link) < 2 * link.latencySeconds)
        small.push_back(op);
    });
    for (Operation *op : small) {
      Operation *first = nullptr;
      for (Operation *user : op->getResult(0).getUsers())
        if (user->getBlock() == op->getBlock() && (!first || user->isBeforeInBlock(first)))
          first = user;
      if (first && first != op->getNextNode())
        op->moveBefore(first);
    }
    Operation *backward = findBackwardStartOp(func);
    for (Operation *gather : gathers) {
      SmallVector<Operation *> chain = viewChain(gather);
      Operation *point =
          hoistPoint(gather, chain, getCollectiveSeconds(gather, symbols), backward);
      if (!point)
        continue;
      for (Operation *view : llvm::reverse(chain))
        view->moveBefore(point);
      gather->moveBefore(point);
    }
  }
};

} // namespace
