// The Hopper backward kernels' producer/consumer skeleton: barrier set-up,
// the TMA producer warpgroup (resident tiles once, the ring per iteration,
// optional row statistics by its second warp) and the consumers' entry.
#include "TmaPipeline.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

namespace weft::gpu {

Value kMajorDescriptor(WarpEmitter &w, Value tile, int64_t slabBytes, int64_t step) {
  int64_t offset = (step % 4) * 32 + (step / 4) * slabBytes;
  return w.matrixDescriptor(w.add(tile, w.i32c(offset)), /*leadingBytes=*/16,
                            /*strideBytes=*/1024, /*swizzle128=*/true);
}

Value mnMajorDescriptor(WarpEmitter &w, Value tile, int64_t slabBytes, int64_t step) {
  return w.matrixDescriptor(w.add(tile, w.i32c(2048 * step)), /*leadingBytes=*/slabBytes,
                            /*strideBytes=*/1024, /*swizzle128=*/true);
}

TmaPipelineLayout dkdvPipelineLayout(const AttentionKernelConfig &config) {
  int64_t stream = dkdvInnerRows(config);
  // The atomic-dQ kernel's two dS tiles and f32 staging rows.
  int64_t scratch = config.atomicDq ? atomicDqScratchBytes(config) : 0;
  return {config.headDim, config.blockK, stream, config.stages, stream * 8, scratch};
}

TmaPipelineLayout dqPipelineLayout(const AttentionKernelConfig &config) {
  return {config.headDim, config.blockQ, dqInnerRows(config), config.stages, 0};
}

Value TmaRing::slot(WarpEmitter &w, Value iteration) const {
  return arith::RemUIOp::create(w.b, iteration, w.i32c(layout.stages));
}
Value TmaRing::parity(WarpEmitter &w, Value iteration) const {
  return w.andi(w.divu(iteration, w.i32c(layout.stages)), w.i32c(1));
}
Value TmaRing::residentBarrier(WarpEmitter &w) const { return w.i32c(layout.barriers()); }
Value TmaRing::fullBarrier(WarpEmitter &w, Value slot) const {
  return w.add(w.i32c(layout.barriers() + 8), w.mul(slot, w.i32c(8)));
}
Value TmaRing::emptyBarrier(WarpEmitter &w, Value slot) const {
  return w.add(w.i32c(layout.barriers() + 8 * (1 + layout.stages)), w.mul(slot, w.i32c(8)));
}
Value TmaRing::streamTile(WarpEmitter &w, Value slot, int64_t i) const {
  return w.add(w.i32c(layout.ring() + i * layout.tileBytes(layout.streamRows)),
               w.mul(slot, w.i32c(layout.slotBytes())));
}
Value TmaRing::stats(WarpEmitter &w, Value slot) const {
  return w.add(w.i32c(layout.stats()), w.mul(slot, w.i32c(layout.statsBytesPerSlot)));
}

namespace {

// setmaxnreg moves registers inside the CTA: the consumers may only take
// what the producer gave back. At 384 threads a thread starts with 168:
// 128 x (168 - 24) = 256 x (240 - 168) (FA3's split), or 32 / 232. The
// producer's 4-D tensor-map coordinates (head and batch apart) need a
// register more than 24 gave in the head_dim 64 dK/dV kernel (it spilled);
// at head_dim 64 the consumers hold half the accumulators and can spare 8,
// at 128 they cannot (the packed dK/dV consumers spill at 232). At 256 the
// dK/dV consumers hold half the columns (as at 128) but the producer's four
// slabs a tile spilled 12 bytes at 24: 32 / 232 spills neither.
std::pair<int64_t, int64_t> registerSplit(const TmaPipelineLayout &layout) {
  return layout.headDim <= 64 || layout.headDim > 128 ? std::pair<int64_t, int64_t>{32, 232}
                              : std::pair<int64_t, int64_t>{24, 240};
}

Value equals(WarpEmitter &w, Value x, int64_t y) {
  return arith::CmpIOp::create(w.b, arith::CmpIPredicate::eq, x, w.i32c(y));
}

/// TMA of one [rows][head_dim] tile (every slab) at (row, head, batch).
void loadTile(WarpEmitter &w, const TmaPipelineLayout &layout, Value tile, Value map,
              int64_t rows, Value row, Value head, Value batch, Value barrier) {
  for (int64_t slab = 0; slab < layout.headDim / kSlabCols; ++slab)
    w.tmaLoad4d(w.add(tile, w.i32c(slab * rows * 128)), map, w.i32c(slab * kSlabCols), row,
                head, batch, barrier);
}

/// The loop over the ring's iterations that waits until a slot is free
/// again (iteration >= stages) before `body` refills it.
void forEachFreeSlot(WarpEmitter &e, const TmaRing &ring, Value iterations,
                     llvm::function_ref<void(WarpEmitter &, Value, Value)> body) {
  scf::ForOp::create(e.b, e.i32c(0), iterations, e.i32c(1), ValueRange{},
                     [&](OpBuilder &nested, Location loc, Value it, ValueRange) {
                       ImplicitLocOpBuilder lb(loc, nested);
                       WarpEmitter w(lb, e.bf16);
                       Value slot = ring.slot(w, it);
                       w.ifThen(w.le(w.i32c(ring.layout.stages), it), [&] {
                         w.mbarrierWait(ring.emptyBarrier(w, slot),
                                        w.sub(w.i32c(1), ring.parity(w, it)));
                       });
                       body(w, it, slot);
                       scf::YieldOp::create(lb);
                     });
}

} // namespace

scf::IfOp emitPipelineRoles(WarpEmitter &e, const LaneIds &ids, const TmaRing &ring,
                            int64_t consumers, const PipelineSources &sources) {
  ImplicitLocOpBuilder &b = e.b;
  const TmaPipelineLayout &layout = ring.layout;
  const int64_t fullCount = 1 + (sources.loadStats ? 32 : 0);
  e.ifThen(equals(e, ids.tid, 0), [&] {
    e.mbarrierInit(ring.residentBarrier(e), 1);
    for (int64_t slot = 0; slot < layout.stages; ++slot) {
      e.mbarrierInit(ring.fullBarrier(e, e.i32c(slot)), fullCount);
      e.mbarrierInit(ring.emptyBarrier(e, e.i32c(slot)), consumers * 128);
    }
    e.fenceBarrierInit();
  });
  e.barrier();

  Value warpgroup = e.divu(ids.warp, e.i32c(4));
  auto roles = scf::IfOp::create(b, equals(e, warpgroup, 0), /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(roles.thenBlock()->getTerminator());
    if (consumers > 1)
      e.setMaxRegisters(registerSplit(layout).first, /*increase=*/false);
    e.ifThen(equals(e, ids.tid, 0), [&] {
      Value resident = ring.residentBarrier(e);
      e.mbarrierArriveExpectTx(resident, 2 * layout.tileBytes(layout.residentRows));
      for (int64_t i = 0; i < 2; ++i)
        loadTile(e, layout, e.i32c(layout.resident(i)), sources.residentMaps[i],
                 layout.residentRows, sources.residentRow, sources.residentHeads[i],
                 sources.batch, resident);
      forEachFreeSlot(e, ring, sources.iterations, [&](WarpEmitter &w, Value it, Value slot) {
        StreamCoords coords = sources.streamCoords(w, it);
        Value full = ring.fullBarrier(w, slot);
        w.mbarrierArriveExpectTx(full, layout.slotBytes());
        for (int64_t i = 0; i < 2; ++i)
          loadTile(w, layout, ring.streamTile(w, slot, i), sources.streamMaps[i],
                   layout.streamRows, coords.row, coords.heads[i], coords.batch, full);
      });
    });
    if (sources.loadStats)
      e.ifThen(equals(e, ids.warp, 1), [&] {
        forEachFreeSlot(e, ring, sources.iterations, [&](WarpEmitter &w, Value it, Value slot) {
          sources.loadStats(w, it, ring.stats(w, slot), ids.lane);
          w.mbarrierArrive(ring.fullBarrier(w, slot));
        });
      });
  }

  b.setInsertionPoint(roles.elseBlock()->getTerminator());
  if (consumers > 1)
    e.setMaxRegisters(registerSplit(layout).second, /*increase=*/true);
  e.mbarrierWait(ring.residentBarrier(e), e.i32c(0));
  return roles;
}

scf::ForOp emitConsumerLoop(
    WarpEmitter &e, const TmaRing &ring, Value iterations, ValueRange init,
    llvm::function_ref<SmallVector<Value>(WarpEmitter &, Value, std::array<Value, 2>, ValueRange)>
        body) {
  return scf::ForOp::create(
      e.b, e.i32c(0), iterations, e.i32c(1), init,
      [&](OpBuilder &nested, Location loc, Value it, ValueRange state) {
        ImplicitLocOpBuilder lb(loc, nested);
        WarpEmitter w(lb, e.bf16);
        Value slot = ring.slot(w, it);
        w.mbarrierWait(ring.fullBarrier(w, slot), ring.parity(w, it));
        SmallVector<Value> next =
            body(w, it, {ring.streamTile(w, slot, 0), ring.streamTile(w, slot, 1)}, state);
        releaseSlot(w, ring, slot);
        scf::YieldOp::create(lb, next);
      });
}

void releaseSlot(WarpEmitter &w, const TmaRing &ring, Value slot) {
  w.mbarrierArrive(ring.emptyBarrier(w, slot));
}

} // namespace weft::gpu
