// The recompute solver of weft-remat, without MLIR types: a layer's forward
// as a small DAG, its Pareto set of (saved bytes, recompute seconds) over
// which saved activations stay, and the exact combination of those sets
// across classes of isomorphic layers (a multiple-choice knapsack solved by
// merging Pareto frontiers).
#ifndef WEFT_ANALYSIS_REMATSOLVER_H
#define WEFT_ANALYSIS_REMATSOLVER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>

namespace weft {

/// One forward op of a layer: its recompute time and the values it reads
/// (indices into LayerRematModel::producers; values from outside the layer
/// are left out, they are always available).
struct RematOp {
  double seconds = 0.0;
  llvm::SmallVector<unsigned, 4> operands;
};

/// A group of saved activations that stays or is recomputed as a whole (the
/// tensors of one buffer: a value and its views).
struct SavedUnit {
  int64_t bytes = 0;
  llvm::SmallVector<unsigned, 2> values;
};

/// A layer's forward. A value is produced by producers[v] (an index into
/// ops), or is always available (-1): a layer input, a boundary value the
/// next layer reads, or an activation that cannot be recomputed.
struct LayerRematModel {
  llvm::SmallVector<RematOp> ops;
  llvm::SmallVector<int> producers;
  llvm::SmallVector<SavedUnit> units;
};

/// Keeping the units whose bit is set in `keptUnits` (bit u for unit u):
/// the bytes they hold and the time to recompute the others from them.
struct RematChoice {
  int64_t savedBytes = 0;
  double seconds = 0.0;
  uint64_t keptUnits = 0;
};

/// Subsets are enumerated exhaustively up to this many units (2^16 choices).
constexpr unsigned kMaxRematUnits = 16;

/// The ops cloned to rebuild every unit not in `keptUnits`: the producers of
/// their values, transitively back to available or kept values.
llvm::BitVector getRecomputedOps(const LayerRematModel &model,
                                 uint64_t keptUnits);

/// Saved bytes and recompute seconds of one choice.
RematChoice evaluateChoice(const LayerRematModel &model, uint64_t keptUnits);

/// The Pareto frontier of `choices`: sorted by increasing saved bytes with
/// strictly decreasing seconds; of equal points the first is kept.
llvm::SmallVector<RematChoice> getParetoFrontier(llvm::ArrayRef<RematChoice> choices);

/// Every subset of the model's units (at most kMaxRematUnits of them),
/// pruned to the Pareto frontier.
llvm::SmallVector<RematChoice> enumerateLayerChoices(const LayerRematModel &model);

/// Layers sharing one decision: `multiplicity` layers, each taking the same
/// choice out of `choices`.
struct RematClass {
  int64_t multiplicity = 1;
  llvm::SmallVector<RematChoice> choices;
};

/// One choice per class: the bytes and seconds of the whole step.
struct CombinedChoice {
  int64_t savedBytes = 0;
  double seconds = 0.0;
  llvm::SmallVector<unsigned, 4> choiceOfClass; // indices into choices
};

/// The Pareto frontier over all combinations of one choice per class (exact:
/// a dominated partial combination never completes to a frontier point).
/// Sorted like getParetoFrontier. Empty classes make the result empty.
llvm::SmallVector<CombinedChoice>
combineClasses(llvm::ArrayRef<RematClass> classes);

/// The fastest combination holding at most `capacity` saved bytes; nullopt
/// when even the smallest holds more.
std::optional<unsigned> findCheapestWithin(llvm::ArrayRef<CombinedChoice> frontier,
                                           int64_t capacity);

} // namespace weft

#endif // WEFT_ANALYSIS_REMATSOLVER_H
