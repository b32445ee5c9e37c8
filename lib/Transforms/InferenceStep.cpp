// weft-inference-step: the forward function itself as @<entry>_step, so the
// training pipeline's passes after weft-autodiff package an inference step
// (the forward's outputs, no loss and no gradients).
#include "weft/Dialect/WeftDialect.h"
#include "weft/Transforms/GradientOpInterface.h"
#include "weft/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"

namespace weft {
#define GEN_PASS_DEF_INFERENCESTEPPASS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// A single-block forward whose results are static tensors it computes,
/// each returned once, without explicit collectives.
LogicalResult verifyForward(func::FuncOp entry) {
  if (entry.isExternal())
    return entry.emitOpError("is a declaration; weft-inference-step needs the forward's body");
  if (!entry.getBody().hasOneBlock())
    return entry.emitOpError("has ")
           << entry.getBody().getBlocks().size()
           << " blocks; weft-inference-step packages a single-block forward";
  if (entry.getNumResults() == 0)
    return entry.emitOpError("returns nothing; an inference step needs at least one output");
  Operation *terminator = entry.front().getTerminator();
  llvm::DenseMap<Value, unsigned> firstResult;
  for (auto [i, value] : llvm::enumerate(terminator->getOperands())) {
    auto tensor = dyn_cast<RankedTensorType>(value.getType());
    if (!tensor || !tensor.hasStaticShape())
      return entry.emitOpError("result ")
             << i << " is " << value.getType()
             << "; an inference step returns tensors of static shape";
    if (auto arg = dyn_cast<BlockArgument>(value))
      return entry.emitOpError("result ")
             << i << " is argument " << arg.getArgNumber()
             << " unchanged; an inference step returns values it computes (the "
                "caller already holds its arguments)";
    auto [it, inserted] = firstResult.try_emplace(value, unsigned(i));
    if (!inserted)
      return entry.emitOpError("result ")
             << i << " is the value of result " << it->second
             << " again; an inference step returns each value once";
  }
  WalkResult walk = entry.walk([](Operation *op) {
    if (!isa<shard::ShardDialect>(op->getDialect()))
      return WalkResult::advance();
    op->emitOpError("is an explicit collective; weft-inference-step packages "
                    "the global (unsharded) forward");
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

/// Ops no output depends on (a loss the caller computes itself) would still
/// be planned and run: the step keeps only what its results need.
void eraseDeadOps(Block &body) {
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  // Users first, so a chain of dead ops goes in one sweep.
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
}

/// The GPU attention kernel always writes the row log-sum-exp, and the plan
/// gives it a buffer: each attention gets its lse result, as weft-autodiff's
/// rule builds it (GradientOpInterface::saveForBackward), unused here.
void addAttentionLse(func::FuncOp step) {
  SmallVector<AttentionOp> missing;
  step.walk([&](AttentionOp attention) {
    if (!attention.getLse())
      missing.push_back(attention);
  });
  IRRewriter rewriter(step.getContext());
  for (AttentionOp attention : missing) {
    rewriter.setInsertionPoint(attention);
    cast<GradientOpInterface>(attention.getOperation()).saveForBackward(rewriter);
  }
}

struct InferenceStepPass : public weft::impl::InferenceStepPassBase<InferenceStepPass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerGradientOpModels(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto entryFn = module.lookupSymbol<func::FuncOp>(entry);
    if (!entryFn) {
      module.emitError("weft-inference-step: no function @")
          << entry << " to package (set the entry option)";
      return signalPassFailure();
    }
    std::string stepName = entry + "_step";
    if (Operation *existing = module.lookupSymbol(stepName)) {
      existing->emitOpError("is named @")
          << stepName << ", the name weft-inference-step gives the step of @" << entry;
      return signalPassFailure();
    }
    if (gemmWorkspace < 0) {
      module.emitError("weft-inference-step: option gemm-workspace = ")
          << int64_t(gemmWorkspace) << " must be >= 0 bytes";
      return signalPassFailure();
    }
    if (failed(verifyForward(entryFn)))
      return signalPassFailure();
    OpBuilder builder(entryFn);
    builder.setInsertionPointAfter(entryFn);
    auto step = cast<func::FuncOp>(builder.clone(*entryFn));
    step.setSymName(stepName);
    step.setPublic();
    eraseDeadOps(step.front());
    addAttentionLse(step);
    if (gemmWorkspace > 0)
      step->setAttr(WeftDialect::kGemmWorkspaceAttr, builder.getI64IntegerAttr(gemmWorkspace));
  }
};

} // namespace
