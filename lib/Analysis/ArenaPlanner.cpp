// The arena planner: greedy placement over several orders (XLA's
// GlobalDecreasingSizeBestFitHeap spatial and temporal orders, TFLite's
// greedy-by-size), best fit and first fit, then a local search over
// placement orders; tiny sets are solved exactly.
#include "weft/Analysis/ArenaPlanner.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <limits>
#include <numeric>
#include <tuple>

using namespace weft;
using llvm::ArrayRef;
using llvm::SmallVector;
using llvm::SmallVectorImpl;

int64_t weft::alignTo(int64_t bytes, int64_t alignment) {
  assert(alignment >= 1 && bytes >= 0 && "alignTo expects sane operands");
  return (bytes + alignment - 1) / alignment * alignment;
}

MaxLive weft::computeMaxLive(ArrayRef<BufferInterval> buffers,
                             int64_t alignment) {
  // Sweep over steps with a difference array of size (last step + 2).
  int64_t lastStep = -1;
  for (const BufferInterval &b : buffers)
    lastStep = std::max(lastStep, b.end);
  if (lastStep < 0)
    return {};
  SmallVector<int64_t> delta(lastStep + 2, 0);
  for (const BufferInterval &b : buffers) {
    int64_t bytes = alignTo(b.size, alignment);
    delta[b.start] += bytes;
    delta[b.end + 1] -= bytes;
  }
  MaxLive best;
  int64_t live = 0;
  for (int64_t step = 0; step <= lastStep; ++step) {
    live += delta[step];
    if (live > best.bytes)
      best = {live, step};
  }
  return best;
}

double ArenaPlan::fragmentation() const {
  if (peakBytes <= 0)
    return 0.0;
  return double(peakBytes - lowerBound.bytes) / double(peakBytes);
}

namespace {

enum class Fit { First, Best };

/// Placed buffers sorted by offset; each placement scans the ones that
/// overlap the new buffer in time, so one placement is O(n).
class ArenaState {
public:
  ArenaState(ArrayRef<BufferInterval> buffers, int64_t alignment)
      : buffers(buffers), alignment(alignment) {}

  int64_t place(unsigned index, Fit fit) {
    const BufferInterval &b = buffers[index];
    int64_t size = alignTo(b.size, alignment);
    int64_t cursor = 0, bestOffset = -1;
    int64_t bestGap = std::numeric_limits<int64_t>::max();
    for (const Placed &p : placed) {
      if (p.start > b.end || b.start > p.end)
        continue;
      if (p.offset > cursor) {
        int64_t gap = p.offset - cursor;
        if (gap >= size) {
          if (fit == Fit::First) {
            bestOffset = cursor;
            break;
          }
          if (gap < bestGap) {
            bestGap = gap;
            bestOffset = cursor;
          }
        }
      }
      cursor = std::max(cursor, p.offset + p.size);
    }
    int64_t offset = bestOffset >= 0 ? bestOffset : cursor;
    Placed entry{offset, size, b.start, b.end, index};
    auto it = std::upper_bound(
        placed.begin(), placed.end(), entry,
        [](const Placed &a, const Placed &b) { return a.offset < b.offset; });
    placed.insert(it, entry);
    peak = std::max(peak, offset + size);
    return offset;
  }

  /// Places `order[0, count)` at the given offsets (a prefix of an earlier
  /// replay: first fit would put them there again).
  void preload(ArrayRef<unsigned> order, unsigned count,
               ArrayRef<int64_t> offsets) {
    placed.clear();
    for (unsigned pos = 0; pos < count; ++pos) {
      unsigned index = order[pos];
      int64_t size = alignTo(buffers[index].size, alignment);
      placed.push_back({offsets[index], size, buffers[index].start,
                        buffers[index].end, index});
      peak = std::max(peak, offsets[index] + size);
    }
    llvm::stable_sort(placed, [](const Placed &a, const Placed &b) {
      return a.offset < b.offset;
    });
  }

  void removeLast(unsigned index) {
    auto it = llvm::find_if(placed,
                            [&](const Placed &p) { return p.index == index; });
    assert(it != placed.end() && "removing a buffer that was not placed");
    placed.erase(it);
  }

  int64_t peak = 0;

private:
  /// The lifetime is copied in, so the scan touches one array only.
  struct Placed {
    int64_t offset;
    int64_t size;
    int64_t start;
    int64_t end;
    unsigned index;
  };
  ArrayRef<BufferInterval> buffers;
  int64_t alignment;
  SmallVector<Placed> placed;
};

int64_t placeAll(ArrayRef<BufferInterval> buffers, ArrayRef<unsigned> order,
                 int64_t alignment, Fit fit, SmallVectorImpl<int64_t> &offsets) {
  offsets.assign(buffers.size(), 0);
  ArenaState state(buffers, alignment);
  for (unsigned index : order)
    offsets[index] = state.place(index, fit);
  return state.peak;
}

/// Replays `order` with first fit, reusing the placement of its first
/// `prefix` buffers from `previous` (an earlier replay of an order with the
/// same prefix).
int64_t replaySuffix(ArrayRef<BufferInterval> buffers, ArrayRef<unsigned> order,
                     unsigned prefix, ArrayRef<int64_t> previous,
                     int64_t alignment, SmallVectorImpl<int64_t> &offsets) {
  offsets.assign(previous.begin(), previous.end());
  ArenaState state(buffers, alignment);
  state.preload(order, prefix, previous);
  for (unsigned pos = prefix; pos < order.size(); ++pos)
    offsets[order[pos]] = state.place(order[pos], Fit::First);
  return state.peak;
}

/// Branch and bound over placement orders with first fit: some order
/// reproduces an optimal placement (sort an optimal placement by offset and
/// place in that order: every buffer lands at or below its optimal offset).
class ExactSearch {
public:
  ExactSearch(ArrayRef<BufferInterval> buffers, int64_t alignment,
              int64_t lowerBound, int64_t upperBound)
      : buffers(buffers), alignment(alignment), lowerBound(lowerBound),
        best(upperBound), offsets(buffers.size(), 0),
        placedFlags(buffers.size(), false) {}

  /// Returns true and fills `result` when it beats the initial upper bound.
  bool run(SmallVectorImpl<int64_t> &result) {
    ArenaState state(buffers, alignment);
    recurse(state, 0);
    if (!found)
      return false;
    result.assign(bestOffsets.begin(), bestOffsets.end());
    return true;
  }

private:
  void recurse(ArenaState &state, unsigned depth) {
    if (best <= lowerBound)
      return;
    if (depth == buffers.size()) {
      if (state.peak < best) {
        best = state.peak;
        bestOffsets = offsets;
        found = true;
      }
      return;
    }
    for (unsigned i = 0; i < buffers.size(); ++i) {
      if (placedFlags[i])
        continue;
      int64_t savedPeak = state.peak;
      offsets[i] = state.place(i, Fit::First);
      if (state.peak < best) {
        placedFlags[i] = true;
        recurse(state, depth + 1);
        placedFlags[i] = false;
      }
      state.removeLast(i);
      state.peak = savedPeak;
    }
  }

  ArrayRef<BufferInterval> buffers;
  int64_t alignment, lowerBound, best;
  bool found = false;
  SmallVector<int64_t> offsets, bestOffsets;
  SmallVector<bool> placedFlags;
};

/// A small deterministic generator (xorshift64*), so plans do not depend on
/// the standard library's distributions.
class Xorshift {
public:
  explicit Xorshift(uint64_t seed) : state(seed ? seed : 0x9E3779B97F4A7C15ULL) {}
  uint64_t next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1DULL;
  }
  unsigned below(unsigned n) { return n ? unsigned(next() % n) : 0; }

private:
  uint64_t state;
};

/// Indices sorted by the offsets of a placement (ties by index): replaying
/// them with first fit never raises any offset.
SmallVector<unsigned> orderByOffset(ArrayRef<int64_t> offsets) {
  SmallVector<unsigned> order(offsets.size());
  std::iota(order.begin(), order.end(), 0u);
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    return offsets[a] < offsets[b];
  });
  return order;
}

/// The greedy plans: each of four orders (size, lifetime, area, start),
/// placed with best fit and with first fit; `plan` takes the lowest peak.
void planGreedy(ArrayRef<BufferInterval> buffers, int64_t alignment,
                ArenaPlan &plan) {
  auto length = [&](unsigned i) { return buffers[i].end - buffers[i].start + 1; };
  auto size = [&](unsigned i) { return alignTo(buffers[i].size, alignment); };
  struct Order {
    const char *name;
    std::function<bool(unsigned, unsigned)> before;
  };
  // Ties fall back to the index (stable_sort), so plans are deterministic.
  Order orders[] = {
      {"size", [&](unsigned a, unsigned b) {
         return std::make_tuple(-size(a), -length(a), buffers[a].start) <
                std::make_tuple(-size(b), -length(b), buffers[b].start);
       }},
      {"lifetime", [&](unsigned a, unsigned b) {
         return std::make_pair(-length(a), -size(a)) <
                std::make_pair(-length(b), -size(b));
       }},
      {"area", [&](unsigned a, unsigned b) {
         // size * length as double: exact enough to order, no overflow.
         double areaA = double(size(a)) * double(length(a));
         double areaB = double(size(b)) * double(length(b));
         if (areaA != areaB)
           return areaA > areaB;
         return size(a) > size(b);
       }},
      {"start", [&](unsigned a, unsigned b) {
         return std::make_pair(buffers[a].start, -size(a)) <
                std::make_pair(buffers[b].start, -size(b));
       }},
  };

  plan.peakBytes = std::numeric_limits<int64_t>::max();
  SmallVector<int64_t> offsets;
  for (const Order &order : orders) {
    SmallVector<unsigned> indices(buffers.size());
    std::iota(indices.begin(), indices.end(), 0u);
    llvm::stable_sort(indices, order.before);
    for (Fit fit : {Fit::Best, Fit::First}) {
      int64_t peak = placeAll(buffers, indices, alignment, fit, offsets);
      if (peak < plan.peakBytes) {
        plan.peakBytes = peak;
        plan.offsets = offsets;
        plan.strategy = std::string(order.name) +
                        (fit == Fit::Best ? "/best-fit" : "/first-fit");
      }
    }
  }
}

/// Local search over placement orders, replayed with first fit, from
/// `plan`'s placement. Moves: one buffer to a random position, two
/// neighbours swapped, or a buffer that reaches the peak moved earlier. A
/// move is kept when it is not worse in (peak, energy): the energy, sum of
/// (offset + size) * size * lifetime, pulls large long-lived buffers down
/// and lets the walk cross plateaus of equal peak. A replay keeps the
/// placement of the unchanged prefix of the order and costs
/// O((n - prefix) * n): options.searchWork bounds the sum.
void searchOrders(ArrayRef<BufferInterval> buffers, const ArenaOptions &options,
                  ArenaPlan &plan) {
  int64_t alignment = options.alignment;
  auto length = [&](unsigned i) { return buffers[i].end - buffers[i].start + 1; };
  auto size = [&](unsigned i) { return alignTo(buffers[i].size, alignment); };
  // Work counts buffer pairs examined: a replay from position p costs about
  // (n - p) * n. At least a few replays run whatever the budget.
  double n = double(buffers.size()), work = 0.0;
  double budget = std::max(options.searchWork, 4.0 * n * n);
  auto energy = [&](ArrayRef<int64_t> placed) {
    double sum = 0;
    for (unsigned i = 0; i < buffers.size(); ++i)
      sum += double(placed[i] + size(i)) * double(size(i)) * double(length(i));
    return sum;
  };
  SmallVector<unsigned> current = orderByOffset(plan.offsets);
  SmallVector<int64_t> currentOffsets, offsets;
  int64_t currentPeak =
      placeAll(buffers, current, alignment, Fit::First, currentOffsets);
  double currentEnergy = energy(currentOffsets);
  bool improved = false;
  if (currentPeak < plan.peakBytes) {
    plan.peakBytes = currentPeak;
    plan.offsets = currentOffsets;
    improved = true;
  }
  Xorshift rng(0x57454654504C414EULL ^ buffers.size());
  SmallVector<unsigned> tops, candidate;
  unsigned count = buffers.size();
  for (uint64_t iter = 0; iter < options.searchIterations && work < budget;
       ++iter) {
    if (plan.peakBytes <= plan.lowerBound.bytes)
      break;
    candidate = current;
    unsigned from, to;
    switch (rng.below(3)) {
    case 0: // anywhere to anywhere
      from = rng.below(count);
      to = rng.below(count);
      break;
    case 1: // swap with the next
      from = rng.below(count - 1);
      to = from + 1;
      break;
    default: // a peak buffer, earlier
      tops.clear();
      for (unsigned pos = 0; pos < count; ++pos)
        if (currentOffsets[current[pos]] + size(current[pos]) == currentPeak)
          tops.push_back(pos);
      from = tops[rng.below(tops.size())];
      to = rng.below(from + 1);
      break;
    }
    unsigned moved = candidate[from];
    candidate.erase(candidate.begin() + from);
    candidate.insert(candidate.begin() + to, moved);
    unsigned prefix = std::min(from, to);
    work += (n - prefix) * n + prefix;
    int64_t peak = replaySuffix(buffers, candidate, prefix, currentOffsets,
                                alignment, offsets);
    if (peak > currentPeak)
      continue;
    double candidateEnergy = energy(offsets);
    if (peak == currentPeak && candidateEnergy > currentEnergy)
      continue;
    std::swap(current, candidate);
    std::swap(currentOffsets, offsets);
    currentPeak = peak;
    currentEnergy = candidateEnergy;
    if (currentPeak < plan.peakBytes) {
      plan.peakBytes = currentPeak;
      plan.offsets = currentOffsets;
      improved = true;
    }
  }
  if (improved)
    plan.strategy += "+search";
}

} // namespace

int64_t weft::placeInOrder(ArrayRef<BufferInterval> buffers,
                           ArrayRef<unsigned> order, int64_t alignment,
                           SmallVectorImpl<int64_t> &offsets) {
  return placeAll(buffers, order, alignment, Fit::First, offsets);
}

ArenaPlan weft::planArena(ArrayRef<BufferInterval> buffers,
                          const ArenaOptions &options) {
  assert(options.alignment >= 1 && "alignment must be positive");
  int64_t alignment = options.alignment;
  ArenaPlan plan;
  plan.lowerBound = computeMaxLive(buffers, alignment);
  plan.offsets.assign(buffers.size(), 0);
  if (buffers.empty()) {
    plan.strategy = "empty";
    return plan;
  }
  planGreedy(buffers, alignment, plan);
  if (plan.peakBytes <= plan.lowerBound.bytes)
    return plan;

  if (buffers.size() <= options.exactLimit) {
    SmallVector<int64_t> offsets;
    ExactSearch search(buffers, alignment, plan.lowerBound.bytes, plan.peakBytes);
    if (search.run(offsets)) {
      plan.offsets = offsets;
      plan.peakBytes =
          placeAll(buffers, orderByOffset(offsets), alignment, Fit::First, offsets);
      plan.offsets = offsets;
      plan.strategy = "exact";
    }
    // Either the search improved the plan to the optimum or the greedy one
    // already was optimal.
    return plan;
  }
  if (options.searchIterations > 0)
    searchOrders(buffers, options, plan);
  return plan;
}

std::optional<std::string>
weft::findPlacementConflict(ArrayRef<BufferInterval> buffers,
                            ArrayRef<int64_t> offsets, int64_t alignment,
                            int64_t peakBytes) {
  std::string message;
  llvm::raw_string_ostream os(message);
  if (offsets.size() != buffers.size()) {
    os << "expected " << buffers.size() << " offsets, got " << offsets.size();
    return message;
  }
  for (unsigned i = 0; i < buffers.size(); ++i) {
    if (offsets[i] < 0 || offsets[i] % alignment != 0) {
      os << "buffer " << i << " has offset " << offsets[i]
         << ", not a non-negative multiple of " << alignment;
      return message;
    }
    if (offsets[i] + alignTo(buffers[i].size, alignment) > peakBytes) {
      os << "buffer " << i << " at [" << offsets[i] << ", "
         << offsets[i] + buffers[i].size << ") ends past the arena of "
         << peakBytes << " bytes";
      return message;
    }
  }
  // Sweep by start step; a buffer conflicts only with earlier-starting ones
  // still live.
  SmallVector<unsigned> order(buffers.size());
  std::iota(order.begin(), order.end(), 0u);
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    return buffers[a].start < buffers[b].start;
  });
  SmallVector<unsigned> active;
  for (unsigned i : order) {
    llvm::erase_if(active, [&](unsigned j) { return buffers[j].end < buffers[i].start; });
    for (unsigned j : active) {
      if (buffers[i].size == 0 || buffers[j].size == 0)
        continue;
      if (offsets[i] < offsets[j] + buffers[j].size &&
          offsets[j] < offsets[i] + buffers[i].size) {
        os << "buffers " << j << " (steps " << buffers[j].start << ".."
           << buffers[j].end << ", bytes [" << offsets[j] << ", "
           << offsets[j] + buffers[j].size << ")) and " << i << " (steps "
           << buffers[i].start << ".." << buffers[i].end << ", bytes ["
           << offsets[i] << ", " << offsets[i] + buffers[i].size
           << ")) overlap";
        return message;
      }
    }
    active.push_back(i);
  }
  return std::nullopt;
}
