// weft-remat's solver: recompute closures over a layer's DAG, exhaustive
// enumeration of kept-unit subsets pruned to a Pareto frontier, and the
// exact merge of frontiers across classes of isomorphic layers.
#include "weft/Analysis/RematSolver.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cassert>

using namespace weft;
using llvm::ArrayRef;
using llvm::SmallVector;

llvm::BitVector weft::getRecomputedOps(const LayerRematModel &model,
                                       uint64_t keptUnits) {
  unsigned numValues = model.producers.size();
  llvm::BitVector kept(numValues), cloned(model.ops.size());
  SmallVector<unsigned> worklist;
  for (auto [u, unit] : llvm::enumerate(model.units)) {
    bool keep = (keptUnits >> u) & 1;
    for (unsigned v : unit.values) {
      assert(v < numValues && "unit names an unknown value");
      if (keep)
        kept.set(v);
      else
        worklist.push_back(v);
    }
  }
  // A value kept by one unit is available even when another unit lists it.
  while (!worklist.empty()) {
    unsigned v = worklist.pop_back_val();
    int producer = model.producers[v];
    if (producer < 0 || kept.test(v) || cloned.test(producer))
      continue;
    cloned.set(producer);
    for (unsigned operand : model.ops[producer].operands)
      worklist.push_back(operand);
  }
  return cloned;
}

RematChoice weft::evaluateChoice(const LayerRematModel &model,
                                 uint64_t keptUnits) {
  RematChoice choice;
  choice.keptUnits = keptUnits;
  for (auto [u, unit] : llvm::enumerate(model.units))
    if ((keptUnits >> u) & 1)
      choice.savedBytes += unit.bytes;
  llvm::BitVector cloned = getRecomputedOps(model, keptUnits);
  // Summed in op order, so equal closures give bit-identical seconds.
  for (unsigned op : cloned.set_bits())
    choice.seconds += model.ops[op].seconds;
  return choice;
}

namespace {

/// Sorts by (bytes, seconds) and keeps the points that beat every
/// smaller-or-equal-bytes point in seconds.
template <typename Point>
SmallVector<Point> paretoPrune(SmallVector<Point> points) {
  llvm::stable_sort(points, [](const Point &a, const Point &b) {
    if (a.savedBytes != b.savedBytes)
      return a.savedBytes < b.savedBytes;
    return a.seconds < b.seconds;
  });
  SmallVector<Point> frontier;
  for (Point &point : points)
    if (frontier.empty() || point.seconds < frontier.back().seconds)
      frontier.push_back(std::move(point));
  return frontier;
}

} // namespace

SmallVector<RematChoice> weft::getParetoFrontier(ArrayRef<RematChoice> choices) {
  return paretoPrune(SmallVector<RematChoice>(choices.begin(), choices.end()));
}

SmallVector<RematChoice>
weft::enumerateLayerChoices(const LayerRematModel &model) {
  unsigned numUnits = model.units.size();
  assert(numUnits <= kMaxRematUnits && "too many units to enumerate");
  SmallVector<RematChoice> all;
  all.reserve(size_t(1) << numUnits);
  for (uint64_t mask = 0; mask < (uint64_t(1) << numUnits); ++mask)
    all.push_back(evaluateChoice(model, mask));
  return paretoPrune(std::move(all));
}

SmallVector<CombinedChoice>
weft::combineClasses(ArrayRef<RematClass> classes) {
  SmallVector<CombinedChoice> frontier(1);
  for (const RematClass &layerClass : classes) {
    SmallVector<CombinedChoice> merged;
    merged.reserve(frontier.size() * layerClass.choices.size());
    for (const CombinedChoice &partial : frontier)
      for (auto [index, choice] : llvm::enumerate(layerClass.choices)) {
        CombinedChoice next = partial;
        next.savedBytes += layerClass.multiplicity * choice.savedBytes;
        next.seconds += double(layerClass.multiplicity) * choice.seconds;
        next.choiceOfClass.push_back(index);
        merged.push_back(std::move(next));
      }
    // Exact: if a partial combination is dominated, completing both with the
    // same choices keeps it dominated, so pruning here loses no optimum.
    frontier = paretoPrune(std::move(merged));
  }
  return frontier;
}

std::optional<unsigned>
weft::findCheapestWithin(ArrayRef<CombinedChoice> frontier, int64_t capacity) {
  // Seconds fall as bytes grow along the frontier: the last point that fits.
  std::optional<unsigned> best;
  for (auto [index, choice] : llvm::enumerate(frontier))
    if (choice.savedBytes <= capacity &&
        (!best || choice.seconds < frontier[*best].seconds))
      best = index;
  return best;
}
