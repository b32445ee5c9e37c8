// weft-fill-collective-waits: compute that nothing waits for (a weight
// gradient's GEMM) moved behind the collectives the step would otherwise
// wait for (Passes.td).
#include "weft/Analysis/ArenaPlanner.h"
#include "weft/Analysis/LinkModel.h"
#include "weft/Analysis/Liveness.h"
#include "weft/Dialect/WeftDialect.h"
#include "weft/Partition/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace weft {
#define GEN_PASS_DEF_FILLCOLLECTIVEWAITSPASS
#include "weft/Partition/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// At most this many ops move behind one collective: each one's operands
/// live that much longer.
constexpr int kMaxFillers = 2;
/// How far back a collective looks for them: this many ops worth moving
/// (min-share).
constexpr int kMaxLookBack = 8;
/// A collective this much of whose link time the compute before its reader
/// covers gets nothing moved behind it.
constexpr double kHiddenShare = 0.5;
/// Moves may raise the planned peak by this share of it in all (a weight
/// gradient's operands live into the next block's peak): 2.5 %.
constexpr double kPeakSlack = 0.025;

/// The first op after `collective` in its block that reads one of its
/// results (null: none in the block).
Operation *firstReader(Operation *collective) {
  Operation *first = nullptr;
  for (Value result : collective->getResults())
    for (Operation *user : result.getUsers()) {
      Operation *inBlock = collective->getBlock()->findAncestorOpInBlock(*user);
      if (inBlock && (!first || inBlock->isBeforeInBlock(first)))
        first = inBlock;
    }
  return first;
}

/// Whether every reader of `op`'s results comes after `point`.
bool readAfter(Operation *op, Operation *point) {
  for (Value result : op->getResults())
    for (Operation *user : result.getUsers()) {
      Operation *inBlock = op->getBlock()->findAncestorOpInBlock(*user);
      if (!inBlock || !point->isBeforeInBlock(inBlock))
        return false;
    }
  return true;
}

struct FillCollectiveWaitsPass
    : public weft::impl::FillCollectiveWaitsPassBase<FillCollectiveWaitsPass> {
  using FillCollectiveWaitsPassBase::FillCollectiveWaitsPassBase;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr(WeftDialect::kGridAttr) || func.getBody().empty())
      return;
    Block &body = func.getBody().front();
    // The backward's first op (findBackwardStart) and the ops before it never
    // move: the forward's values would live into the backward (saved
    // activations), and the backward would start elsewhere.
    Operation *backward = findBackwardStartOp(func);
    SymbolTableCollection symbols;
    LinkModel link;
    link.busBytesPerSecond = busBytesPerSecond;
    if (!(busBytesPerSecond > 0) || !(minShare >= 0)) {
      mlir::emitError(func.getLoc(), "weft-fill-collective-waits: bus-bytes-per-second must be "
                                     "positive and min-share at least 0, got ")
          << busBytesPerSecond << " and " << minShare;
      return signalPassFailure();
    }
    // A move that raises the planned arena's peak is undone: the step keeps
    // the memory remat and the budget chose for it.
    int64_t alignment = ArenaOptions().alignment;
    FailureOr<PlannedPeak> base = planPeak(func, alignment);
    if (failed(base))
      return signalPassFailure();
    int64_t limit = base->peak + int64_t(kPeakSlack * double(base->peak));
    if (budget >= 0)
      limit = std::min(limit, std::max(base->peak, int64_t(budget)));
    SmallVector<Operation *> collectives;
    for (Operation &op : body)
      if (isCommunicating(&op) &&
          getCollectiveSeconds(&op, symbols, link) >= 2 * link.latencySeconds)
        collectives.push_back(&op);

    // Compute that already hides an earlier collective stays where it is.
    llvm::SmallPtrSet<Operation *, 32> hiding;
    for (Operation *collective : collectives) {
      Operation *reader = firstReader(collective);
      if (!reader)
        continue;
      double needed = getCollectiveSeconds(collective, symbols, link);
      double covered = 0;
      for (Operation *op = collective->getNextNode(); op != reader && covered < needed;
           op = op->getNextNode()) {
        double seconds = isBufferView(op) ? 0 : getComputeSeconds(op);
        if (seconds > 0)
          hiding.insert(op);
        covered += seconds;
      }
      // Mostly hidden already: what moves here would leave a collective
      // further on with nothing beside it.
      if (covered >= kHiddenShare * needed)
        continue;
      bool inBackward = backward && backward->isBeforeInBlock(collective);
      int fillers = 0, looked = 0;
      Operation *insertAfter = collective;
      for (Operation *op = collective->getPrevNode();
           op && covered < needed && fillers < kMaxFillers && looked < kMaxLookBack;) {
        if (inBackward && op == backward)
          break;
        Operation *prev = op->getPrevNode();
        double seconds = isBufferView(op) ? 0 : getComputeSeconds(op);
        if (seconds >= minShare * needed) {
          ++looked;
          if (!hiding.contains(op) && !isCommunicating(op) && isMemoryEffectFree(op) &&
              readAfter(op, insertAfter)) {
            op->moveAfter(insertAfter);
            FailureOr<PlannedPeak> moved =
                keepPeak ? planPeak(func, alignment) : FailureOr<PlannedPeak>(*base);
            if (failed(moved))
              return signalPassFailure();
            if (moved->peak > limit) {
              if (prev)
                op->moveAfter(prev);
              else
                op->moveBefore(&body.front());
            } else {
              insertAfter = op;
              hiding.insert(op);
              covered += seconds;
              ++fillers;
            }
          }
        }
        op = prev;
      }
    }
  }
};

} // namespace
