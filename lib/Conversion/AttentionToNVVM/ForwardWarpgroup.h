// What the Hopper attention forward's files share: the ring the producer and
// consumers agree on, the set-up every consumer warpgroup does first, and the
// pipelined (Overlap / PingPong) consumer that ForwardPipelined.cpp emits.
#ifndef WEFT_LIB_CONVERSION_ATTENTIONTONVVM_FORWARDWARPGROUP_H
#define WEFT_LIB_CONVERSION_ATTENTIONTONVVM_FORWARDWARPGROUP_H

#include "ForwardParts.h"
#include "TmaPipeline.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace weft::gpu {

/// What the producer and the consumers of one CTA agree on: the tile
/// geometry, the shared-memory layout and the ring's barriers.
struct ForwardRing {
  const AttentionKernelConfig &config;
  TmaForwardLayout layout;
  int64_t d, blockQ, blockK, stages, consumers;
  int64_t qSlabBytes, kvSlabBytes, kvTileBytes;
  // Barriers: 0 = Q landed, 1 + slot = K landed, 1 + stages + slot = V
  // landed, 1 + 2 * stages + slot = slot released by every consumer warp.
  // The pipelined schedules release K and V apart (K when its S is done, V
  // a block later when its P V is): `empty` then guards the slot's K and
  // 1 + 3 * stages + slot (`emptyV`) its V.
  int64_t fullK, fullV, empty, emptyV;
  bool splitRelease;

  explicit ForwardRing(const AttentionKernelConfig &config)
      : config(config), layout(tmaForwardLayout(config)), d(config.headDim),
        blockQ(config.blockQ), blockK(config.blockK), stages(config.stages),
        consumers(config.blockQ / 64), qSlabBytes(config.blockQ * 128),
        kvSlabBytes(config.blockK * 128),
        kvTileBytes(config.blockK * config.headDim * 2), fullK(1),
        fullV(1 + config.stages), empty(1 + 2 * config.stages),
        emptyV(1 + 3 * config.stages),
        splitRelease(config.schedule != AttentionKernelConfig::ForwardSchedule::Serial) {}

  /// The address of barrier `first + slot`.
  mlir::Value barrier(WarpEmitter &w, int64_t first, mlir::Value slot) const {
    return w.add(w.i32c(layout.barriers + first * 8), w.mul(slot, w.i32c(8)));
  }
  /// Key block kb's ring slot and the phase parity its barriers are in.
  std::pair<mlir::Value, mlir::Value> slotAndParity(WarpEmitter &w, mlir::Value kb) const {
    return {mlir::arith::RemUIOp::create(w.b, kb, w.i32c(stages)),
            w.andi(w.divu(kb, w.i32c(stages)), w.i32c(1))};
  }
  /// The K tile of `slot` and the V tile right after it.
  std::pair<mlir::Value, mlir::Value> kvTiles(WarpEmitter &w, mlir::Value slot) const {
    mlir::Value tileK = w.add(w.i32c(layout.kv), w.mul(slot, w.i32c(2 * kvTileBytes)));
    return {tileK, w.add(tileK, w.i32c(kvTileBytes))};
  }

  /// Thread 0 initialises every barrier of the ring; then the CTA syncs.
  void initBarriers(WarpEmitter &e, mlir::Value tid) const;
};

/// What every consumer warpgroup (c = warpgroup >= 1, of every schedule)
/// does before its key loop: takes the producer's registers, renumbers its
/// warps from 0, fills the softmax constants and finds its 64 rows of Q.
struct ConsumerWarpgroup {
  /// c - 1: the index among the consumers.
  mlir::Value consumer;
  /// The shared-memory address of this warpgroup's Q rows 64 (c - 1) .. + 63.
  mlir::Value qTile;

  ConsumerWarpgroup(WarpEmitter &e, const ForwardRing &ring, ForwardRows &r,
                    mlir::Value warpgroup);
  /// This warpgroup's first query row: a block needs the mask when it ends
  /// past k_len or (causal) past the key that row may see. Apart from the
  /// constructor, as the schedules place it on either side of the wait for Q.
  mlir::Value firstRow(WarpEmitter &e, const ForwardRows &r) const;
};

/// A consumer warpgroup of the Overlap / PingPong schedules
/// (ForwardPipelined.cpp; ForwardWarpgroup.cpp's emitConsumer is the
/// Serial one).
void emitPipelinedConsumer(WarpEmitter &e, const ForwardRing &ring, ForwardRows &r,
                           mlir::gpu::GPUFuncOp func, mlir::Value warpgroup,
                           mlir::Value keyBlocks);

} // namespace weft::gpu

#endif // WEFT_LIB_CONVERSION_ATTENTIONTONVVM_FORWARDWARPGROUP_H
