// weft-remat's view of a training step (private to lib/Transforms): its
// forward layers, which activations a group of forward ops saves for the
// backward, their recompute cost, and the rewrite that recomputes them.
#ifndef WEFT_LIB_TRANSFORMS_REMATSTEP_H
#define WEFT_LIB_TRANSFORMS_REMATSTEP_H

#include "weft/Analysis/Liveness.h"
#include "weft/Analysis/RematSolver.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <string>

namespace weft::remat {

/// The ceilings recompute time is measured with: an H100 SXM's dense bf16
/// peak and its HBM3 bandwidth; collectives use weft::LinkModel (NCCL's bus
/// bandwidth measured on the lent H100s, plus a latency).
constexpr double kPeakFlopsPerSecond = 989e12;
constexpr double kPeakBytesPerSecond = 3.35e12;

/// Seconds to recompute `op` once: its CostOpInterface roofline; 0 for a
/// reshape (a view, as the liveness analysis treats it); a shard collective
/// its time under weft::LinkModel (`symbols` finds its grid).
double getRecomputeSeconds(mlir::Operation *op,
                           mlir::SymbolTableCollection &symbols);

/// The forward ops of one `weft.layer`, in schedule order.
struct ForwardLayer {
  int64_t index = 0;
  llvm::SmallVector<mlir::Operation *> ops;
};

/// A training step: the schedule/liveness analysis (whose rule says where the
/// backward starts) and the forward's layers.
class StepStructure {
public:
  static mlir::FailureOr<StepStructure> analyze(mlir::func::FuncOp func);

  mlir::func::FuncOp getFunction() const { return liveness.getFunction(); }
  const ScheduleLiveness &getLiveness() const { return liveness; }
  bool hasBackward() const {
    return liveness.getBackwardStart() < liveness.getNumSteps();
  }
  /// Ops of the body before the backward start (and their nested ops).
  bool isForward(mlir::Operation *op) const;
  /// Ops at or after the backward start, the terminator excluded. Ops the
  /// analysis has not seen (clones made since) are neither.
  bool isBackward(mlir::Operation *op) const;
  /// Layers by increasing `weft.layer`.
  llvm::ArrayRef<ForwardLayer> getLayers() const { return layers; }

private:
  explicit StepStructure(ScheduleLiveness liveness)
      : liveness(std::move(liveness)) {}

  ScheduleLiveness liveness;
  llvm::SmallVector<ForwardLayer> layers;
};

/// What the backward reads of the values a group of forward ops (a scope)
/// produces. Candidates may be recomputed; pinned values stay saved: forward
/// ops outside the scope read them (a layer's output is the next one's input),
/// the step returns them, they share a buffer with a pinned value, or some op
/// they derive from inside the scope cannot be cloned.
struct ScopeActivations {
  llvm::SetVector<mlir::Operation *> ops;
  llvm::SmallVector<mlir::Value> candidates; // schedule order
  llvm::DenseSet<mlir::Value> pinned;
};
ScopeActivations classifyScope(const StepStructure &step,
                               llvm::ArrayRef<mlir::Operation *> scopeOps);

/// Forward ops recomputed as a group, and those of their values whose
/// backward uses will read clones.
struct RecomputeScope {
  llvm::SmallVector<mlir::Operation *> ops;
  llvm::SmallVector<mlir::Value> recompute;
};

/// The forward values computed from `weft.param` arguments alone (no view:
/// a view frees nothing) that the backward reads and the step does not
/// return: the bf16 copies of f32 master weights. Recomputing this scope
/// converts each copy again right before its first backward reader, so it
/// lives across its layer's backward instead of the whole step.
RecomputeScope weightCopyScope(const StepStructure &step);

struct RecomputeStats {
  int64_t clonedOps = 0;
  int64_t segments = 0;
  int64_t flops = 0;
  double seconds = 0.0;
};

/// The rewrite. Per scope, each value to recompute needs the clones of its
/// producers back to values that stay available (produced outside the scope,
/// or produced inside and saved but not recomputed); values whose closures
/// share an op form one segment. A segment's clones go right before the
/// first backward op reading any of its values, carry `weft.recompute`, keep
/// every other attribute (`weft.rng_id`: dropout masks are regenerated bit
/// for bit), and replace the originals in every backward use. Forward ops
/// left without users are erased.
RecomputeStats applyRecompute(const StepStructure &step,
                              llvm::ArrayRef<RecomputeScope> scopes,
                              mlir::SymbolTableCollection &symbols);

/// A scope as the solver sees it: its ops' DAG and the candidates grouped by
/// buffer into units (adjacent units merged, smallest combined bytes first,
/// while there are more than kMaxRematUnits). `unitValues[u]` are the
/// candidates of unit u.
struct ScopeModel {
  LayerRematModel model;
  llvm::SmallVector<llvm::SmallVector<mlir::Value, 2>> unitValues;
};
ScopeModel buildScopeModel(const StepStructure &step,
                           const ScopeActivations &activations,
                           int64_t alignment,
                           mlir::SymbolTableCollection &symbols);

/// A string equal for two layers exactly when they have the same op
/// sequence, types, attributes (but `weft.layer` and `weft.rng_id`),
/// internal data flow and activation classification: isomorphic layers.
std::string getLayerSignature(const ForwardLayer &layer,
                              const ScopeActivations &activations);

} // namespace weft::remat

#endif // WEFT_LIB_TRANSFORMS_REMATSTEP_H
