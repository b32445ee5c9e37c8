// The producer/consumer skeleton of the Hopper backward kernels: two
// resident tiles loaded once by TMA, a ring of slots of two streamed tiles
// (and optional per-row statistics) refilled by a producer warpgroup, and
// consumer warpgroups of 64 rows each that wait on a slot's full barrier and
// release it through its empty barrier. Tiles are head_dim / 64 slabs of
// [rows][64] 16-bit elements, 128-byte swizzled, as the forward's.
#ifndef WEFT_LIB_CONVERSION_ATTENTIONTONVVM_TMAPIPELINE_H
#define WEFT_LIB_CONVERSION_ATTENTIONTONVVM_TMAPIPELINE_H

#include "KernelBodies.h"
#include "WarpEmitter.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace weft::gpu {

/// 16-bit elements per 128-byte swizzle row: the columns of one slab and of
/// one TMA box.
inline constexpr int64_t kSlabCols = 64;

/// The descriptor of a K-major operand (rows x head_dim, stored as slabs of
/// `slabBytes`) for k-step `step` (16 elements of head_dim): 32 bytes on
/// inside a slab, the next slab every four steps; 8-row groups 1024 bytes
/// apart.
mlir::Value kMajorDescriptor(WarpEmitter &w, mlir::Value tile, int64_t slabBytes,
                             int64_t step);
/// The descriptor of an MN-major B operand whose k dimension is the tile's
/// rows (16 rows, 2048 bytes, per step) and whose n dimension is head_dim
/// (slabs `slabBytes` apart, the leading offset; 8-row groups 1024 apart).
mlir::Value mnMajorDescriptor(WarpEmitter &w, mlir::Value tile, int64_t slabBytes,
                              int64_t step);

/// Byte offsets of a pipeline kernel's dynamic shared memory: the two
/// resident tiles, the ring (per slot: streamed tile 0, tile 1), the
/// consumers' scratch (the atomic-dQ dK/dV kernel's dS tiles), per-slot
/// statistics, then 1 + 2 * stages mbarriers (0: resident tiles landed;
/// 1 + slot: the slot is full; 1 + stages + slot: every consumer thread
/// released it). Tiles and scratch are multiples of 1024 bytes, so every
/// slab keeps the swizzle's 1024-byte alignment.
struct TmaPipelineLayout {
  int64_t headDim, residentRows, streamRows, stages, statsBytesPerSlot;
  int64_t scratchBytes = 0;

  int64_t tileBytes(int64_t rows) const { return rows * headDim * 2; }
  int64_t resident(int64_t i) const { return i * tileBytes(residentRows); }
  int64_t ring() const { return 2 * tileBytes(residentRows); }
  int64_t slotBytes() const { return 2 * tileBytes(streamRows); }
  int64_t scratch() const { return ring() + stages * slotBytes(); }
  int64_t stats() const { return scratch() + scratchBytes; }
  int64_t barriers() const { return stats() + stages * statsBytesPerSlot; }
  int64_t total() const { return barriers() + (1 + 2 * stages) * 8; }
};

/// The layouts of the two Hopper backward kernels: dK/dV keeps block_k keys
/// of K and V and streams Q and dO (with lse and delta per query row); dQ
/// keeps block_q rows of Q and dO and streams K and V.
TmaPipelineLayout dkdvPipelineLayout(const AttentionKernelConfig &config);
TmaPipelineLayout dqPipelineLayout(const AttentionKernelConfig &config);

/// Slot, phase parity and barrier addresses of one ring iteration.
struct TmaRing {
  TmaPipelineLayout layout;

  mlir::Value slot(WarpEmitter &w, mlir::Value iteration) const;
  mlir::Value parity(WarpEmitter &w, mlir::Value iteration) const;
  mlir::Value residentBarrier(WarpEmitter &w) const;
  mlir::Value fullBarrier(WarpEmitter &w, mlir::Value slot) const;
  mlir::Value emptyBarrier(WarpEmitter &w, mlir::Value slot) const;
  /// Streamed tile `i` (0 or 1) of a slot, and the slot's statistics.
  mlir::Value streamTile(WarpEmitter &w, mlir::Value slot, int64_t i) const;
  mlir::Value stats(WarpEmitter &w, mlir::Value slot) const;
};

/// What the producer loads: two resident tiles at `residentRow` of heads
/// `residentHeads` (each map's head coordinate) of batch `batch`, and per
/// iteration the two streamed tiles at what `streamCoords` gives (the row,
/// each streamed map's head coordinate and the batch). `loadStats`, when set, runs on
/// the 32 lanes of the producer's second warp for every iteration once the
/// slot is free; it writes the slot's statistics with plain stores, and each
/// lane then arrives on the full barrier.
struct StreamCoords {
  mlir::Value row;
  std::array<mlir::Value, 2> heads;
  mlir::Value batch;
};
struct PipelineSources {
  std::array<mlir::Value, 2> residentMaps, streamMaps, residentHeads;
  mlir::Value residentRow, batch, iterations;
  std::function<StreamCoords(WarpEmitter &, mlir::Value)> streamCoords;
  std::function<void(WarpEmitter &, mlir::Value iteration, mlir::Value stats, mlir::Value lane)>
      loadStats;
};

/// Initialises the barriers, emits the producer warpgroup (warpgroup 0) and
/// opens the consumers' branch: on return `e` inserts there, after the
/// consumers raised their registers and waited for the resident tiles. The
/// returned op is the role split; the caller continues after it.
mlir::scf::IfOp emitPipelineRoles(WarpEmitter &e, const LaneIds &ids, const TmaRing &ring,
                                  int64_t consumers, const PipelineSources &sources);

/// The consumers' loop over the ring's iterations: waits until the slot is
/// full, runs `body` (iteration, slot, its two streamed tiles, the loop
/// state; it returns the next state after its wgmmas completed), then
/// releases the slot (releaseSlot).
mlir::scf::ForOp emitConsumerLoop(
    WarpEmitter &e, const TmaRing &ring, mlir::Value iterations, mlir::ValueRange init,
    llvm::function_ref<llvm::SmallVector<mlir::Value>(WarpEmitter &, mlir::Value iteration,
                                                      std::array<mlir::Value, 2> tiles,
                                                      mlir::ValueRange state)>
        body);

/// Every consumer thread releases the slot once its own reads of it (the
/// statistics by ld.shared, the tiles by its completed wgmmas) are done: an
/// arrival per thread orders each thread's reads before the producer's
/// rewrite, which one arrival per warp would not (compute-sanitizer's
/// racecheck reports those as WAR hazards).
void releaseSlot(WarpEmitter &w, const TmaRing &ring, mlir::Value slot);

} // namespace weft::gpu

#endif // WEFT_LIB_CONVERSION_ATTENTIONTONVVM_TMAPIPELINE_H
