// Offsets for buffers with known lifetimes in one arena (the dynamic storage
// allocation problem): greedy best-fit and first-fit placement over several
// orders, as XLA's heap simulator and TFLite's arena planner do, then a
// bounded local search, and an exact search for tiny sets. No MLIR types.
#ifndef WEFT_ANALYSIS_ARENAPLANNER_H
#define WEFT_ANALYSIS_ARENAPLANNER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>

namespace weft {

/// One buffer to place: live during steps [start, end] (both inclusive).
struct BufferInterval {
  int64_t start = 0;
  int64_t end = 0;
  int64_t size = 0; // bytes
};

/// Two buffers conflict when they are live at a common step.
inline bool livesOverlap(const BufferInterval &a, const BufferInterval &b) {
  return a.start <= b.end && b.start <= a.end;
}

/// `bytes` rounded up to a multiple of `alignment` (alignment >= 1).
int64_t alignTo(int64_t bytes, int64_t alignment);

/// The largest sum of aligned sizes live at one step, and the first step
/// reaching it: no arena can be smaller.
struct MaxLive {
  int64_t bytes = 0;
  int64_t step = 0;
};
MaxLive computeMaxLive(llvm::ArrayRef<BufferInterval> buffers,
                       int64_t alignment);

struct ArenaOptions {
  /// Every offset is a multiple of this; every buffer occupies its size
  /// rounded up to it.
  int64_t alignment = 256;
  /// Sets of at most this many buffers are solved exactly (branch and bound
  /// over placement orders); 0 disables the exact search.
  unsigned exactLimit = 8;
  /// Upper bound on local-search replays after the greedy passes; 0
  /// disables the search.
  uint64_t searchIterations = 1000000;
  /// Work budget of the search in buffer pairs examined (a replay of the
  /// last k of n buffers examines about k * n); at least 4 * n^2. The default
  /// takes about a third of a second on one core.
  double searchWork = 1.0e8;
};

struct ArenaPlan {
  llvm::SmallVector<int64_t> offsets; // one per buffer, in input order
  /// Arena size: max over buffers of offset + aligned size.
  int64_t peakBytes = 0;
  /// Max-live of the aligned sizes (computeMaxLive).
  MaxLive lowerBound;
  /// The heuristic that produced the offsets, e.g. "size/best-fit".
  std::string strategy;

  /// (peak - lower bound) / peak, 0 for an empty arena.
  double fragmentation() const;
};

/// Places every buffer. Never fails; the result always passes
/// findPlacementConflict.
ArenaPlan planArena(llvm::ArrayRef<BufferInterval> buffers,
                    const ArenaOptions &options);

/// Places the buffers one by one in `order` (indices into `buffers`), each at
/// the lowest aligned offset free of the already placed buffers it overlaps
/// in time (first fit). Returns the peak; fills `offsets`.
int64_t placeInOrder(llvm::ArrayRef<BufferInterval> buffers,
                     llvm::ArrayRef<unsigned> order, int64_t alignment,
                     llvm::SmallVectorImpl<int64_t> &offsets);

/// Checks a placement: offsets aligned and non-negative, every buffer inside
/// [0, peakBytes), no two buffers overlapping both in time and in bytes.
/// Returns a message naming the first violation, or nullopt.
std::optional<std::string>
findPlacementConflict(llvm::ArrayRef<BufferInterval> buffers,
                      llvm::ArrayRef<int64_t> offsets, int64_t alignment,
                      int64_t peakBytes);

} // namespace weft

#endif // WEFT_ANALYSIS_ARENAPLANNER_H
