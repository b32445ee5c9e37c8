// The Hopper attention forward (FlashAttention-3's structure): warpgroup 0
// is the producer, one thread of it streams Q once and K, V of every key
// block by TMA into 128-byte-swizzled shared memory, a ring of `stages`
// slots guarded by mbarriers (full: bytes landed; empty: consumers done);
// warpgroups 1.. are consumers of 64 query rows each, S = Q K^T with both
// operands in shared memory and O += P V with P in registers, as wgmma, the
// online softmax in exp2 between them. Registers move from the producer to
// the consumers with setmaxnreg. The Serial schedule waits for each wgmma
// before the softmax that follows it; Overlap pipelines a warpgroup's own
// key blocks (the softmax of block j + 1 under O += P V of block j) and
// PingPong also takes turns between the two consumer warpgroups (see
// AttentionKernelConfig::ForwardSchedule).
#include "ForwardWarpgroup.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace weft::gpu {

void ForwardRing::initBarriers(WarpEmitter &e, Value tid) const {
  e.ifThen(arith::CmpIOp::create(e.b, arith::CmpIPredicate::eq, tid, e.i32c(0)), [&] {
    e.mbarrierInit(e.i32c(layout.barriers), 1);
    for (int64_t slot = 0; slot < stages; ++slot) {
      e.mbarrierInit(e.i32c(layout.barriers + (fullK + slot) * 8), 1);
      e.mbarrierInit(e.i32c(layout.barriers + (fullV + slot) * 8), 1);
      e.mbarrierInit(e.i32c(layout.barriers + (empty + slot) * 8), consumers * 4);
      if (splitRelease)
        e.mbarrierInit(e.i32c(layout.barriers + (emptyV + slot) * 8), consumers * 4);
    }
    e.fenceBarrierInit();
  });
  e.barrier();
}

ConsumerWarpgroup::ConsumerWarpgroup(WarpEmitter &e, const ForwardRing &ring, ForwardRows &r,
                                     Value warpgroup) {
  if (ring.consumers > 1)
    e.setMaxRegisters(240, /*increase=*/true);
  r.ids.warp = e.sub(r.ids.warp, e.i32c(4));
  consumer = e.sub(warpgroup, e.i32c(1));
  r.initSoftmaxConstants(e);
  qTile = e.add(e.i32c(ring.layout.q), e.mul(consumer, e.i32c(64 * 128)));
}

Value ConsumerWarpgroup::firstRow(WarpEmitter &e, const ForwardRows &r) const {
  return e.add(r.block.q0, e.mul(consumer, e.i32c(64)));
}

namespace {

/// The producer warpgroup: gives registers back, then one thread issues
/// every copy: Q once, and K, V of each key block into its ring slot once
/// the consumers released the block `stages` before it.
void emitProducer(WarpEmitter &e, const ForwardRing &ring, ForwardRows &r,
                  mlir::gpu::GPUFuncOp func, Value keyBlocks) {
  const AttentionKernelConfig &config = ring.config;
  ImplicitLocOpBuilder &b = e.b;
  Value qMap = func.getArgument(0), kMap = func.getArgument(1), vMap = func.getArgument(2);
  if (ring.consumers > 1)
    e.setMaxRegisters(24, /*increase=*/false);
  e.ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, r.ids.tid, e.i32c(0)), [&] {
    // Tensor-map coordinates (column, row, head, batch) in every layout.
    Value batch = r.block.batch;
    Value qHead = TensorRows(e, config, r.s, AttentionOperand::Q).mapHead(e, r.block.head);
    Value kHead = TensorRows(e, config, r.s, AttentionOperand::K).mapHead(e, r.block.kvHead);
    Value vHead = TensorRows(e, config, r.s, AttentionOperand::V).mapHead(e, r.block.kvHead);
    Value qBarrier = e.i32c(ring.layout.barriers);
    e.mbarrierArriveExpectTx(qBarrier, ring.blockQ * ring.d * 2);
    for (int64_t slab = 0; slab < ring.d / kSlabCols; ++slab)
      e.tmaLoad4d(e.i32c(ring.layout.q + slab * ring.qSlabBytes), qMap,
                  e.i32c(slab * kSlabCols), r.block.q0, qHead, batch, qBarrier);
    scf::ForOp::create(
        b, e.i32c(0), keyBlocks, e.i32c(1), ValueRange{},
        [&](OpBuilder &nested, Location loc, Value kb, ValueRange) {
          ImplicitLocOpBuilder lb(loc, nested);
          WarpEmitter w(lb, config.bf16);
          auto [slot, parity] = ring.slotAndParity(w, kb);
          // Slot reuse: wait until the consumers released block kb - stages
          // (its K and, released apart, its V).
          Value reuse = w.le(w.i32c(ring.stages), kb);
          auto waitReleased = [&](int64_t first) {
            w.ifThen(reuse, [&] {
              w.mbarrierWait(ring.barrier(w, first, slot), w.sub(w.i32c(1), parity));
            });
          };
          waitReleased(ring.empty);
          Value k0 = w.mul(kb, w.i32c(ring.blockK));
          auto [tileK, tileV] = ring.kvTiles(w, slot);
          for (auto [tile, map, head, first] :
               {std::tuple{tileK, kMap, kHead, ring.fullK},
                std::tuple{tileV, vMap, vHead, ring.fullV}}) {
            if (first == ring.fullV && ring.splitRelease)
              waitReleased(ring.emptyV);
            Value full = ring.barrier(w, first, slot);
            w.mbarrierArriveExpectTx(full, ring.kvTileBytes);
            for (int64_t slab = 0; slab < ring.d / kSlabCols; ++slab)
              w.tmaLoad4d(w.add(tile, w.i32c(slab * ring.kvSlabBytes)), map,
                          w.i32c(slab * kSlabCols), k0, head, batch, full);
          }
          scf::YieldOp::create(lb);
        });
  });
}

/// One consumer iteration over key block kb: S = Q K^T by wgmma from shared
/// memory, the online softmax, O += P V with P in registers, then the slot
/// released. Returns the next loop state.
SmallVector<Value> consumeKeyBlock(WarpEmitter &w, const ForwardRing &ring,
                                   ForwardRows &r, Value qTile, Value wgRow0,
                                   Value kb, ValueRange state) {
  const AttentionKernelConfig &config = ring.config;
  ImplicitLocOpBuilder &lb = w.b;
  const int64_t keyTiles = ring.blockK / 8, dTiles = ring.d / 8, kSteps = ring.d / 16;
  auto [slot, parity] = ring.slotAndParity(w, kb);
  Value k0 = w.mul(kb, w.i32c(ring.blockK));
  auto [tileK, tileV] = ring.kvTiles(w, slot);

  // S = Q K^T: 64 x block_k for this warpgroup.
  w.mbarrierWait(ring.barrier(w, ring.fullK, slot), parity);
  SmallVector<Value> acc(keyTiles * 4, r.zeroF);
  w.wgmmaFence();
  for (int64_t step = 0; step < kSteps; ++step)
    acc = w.wgmmaShared(acc, kMajorDescriptor(w, qTile, ring.qSlabBytes, step),
                        kMajorDescriptor(w, tileK, ring.kvSlabBytes, step), ring.blockK,
                        /*accumulate=*/step != 0);
  w.wgmmaCommit();
  w.wgmmaWait(0);
  SmallVector<Quad> scores(keyTiles);
  for (int64_t i = 0; i < keyTiles * 4; ++i)
    scores[i / 4][i % 4] = acc[i];

  Value kBlockEnd = w.add(k0, w.i32c(ring.blockK));
  Value maskNeeded = arith::CmpIOp::create(lb, arith::CmpIPredicate::sgt, kBlockEnd, r.s.kLen);
  if (config.causal)
    maskNeeded = arith::OrIOp::create(
        lb, maskNeeded,
        arith::CmpIOp::create(lb, arith::CmpIPredicate::sgt, kBlockEnd,
                              w.add(wgRow0, w.i32c(1))));
  SmallVector<Value> next(state.begin(), state.end());
  std::array<Value, 2> alpha = onlineSoftmaxStep(w, r, scores, k0, state, next, maskNeeded);
  SmallVector<Value> out;
  for (int64_t i = 0; i < dTiles * 4; ++i)
    out.push_back(w.fmul(state[4 + i], alpha[(i % 4) / 2]));

  // O += P V: V (block_k x head_dim, slabs of 64 columns) read
  // MN-major: 8-key groups 1024 bytes apart (stride), slabs
  // kvSlabBytes apart (leading); a k-step is 16 keys, 2048 bytes.
  SmallVector<Quad> p = w.toA(scores);
  w.mbarrierWait(ring.barrier(w, ring.fullV, slot), parity);
  w.wgmmaFence();
  for (size_t step = 0; step < p.size(); ++step)
    out = w.wgmma(out, p[step],
                  mnMajorDescriptor(w, tileV, ring.kvSlabBytes, static_cast<int64_t>(step)),
                  ring.d, /*transposeB=*/true, /*accumulate=*/true);
  w.wgmmaCommit();
  w.wgmmaWait(0);
  // Every lane of this warp is past its reads of the slot.
  w.ifThen(arith::CmpIOp::create(lb, arith::CmpIPredicate::eq, r.ids.lane, w.i32c(0)),
           [&] { w.mbarrierArrive(ring.barrier(w, ring.empty, slot)); });
  for (int64_t i = 0; i < dTiles * 4; ++i)
    next[4 + i] = out[i];
  return next;
}

/// A consumer warpgroup c >= 1: takes registers, waits for Q, runs the key
/// loop over its 64 query rows 64 (c - 1) .. + 63 and stores O and the
/// log-sum-exp.
void emitConsumer(WarpEmitter &e, const ForwardRing &ring, ForwardRows &r,
                  mlir::gpu::GPUFuncOp func, Value warpgroup, Value keyBlocks) {
  ImplicitLocOpBuilder &b = e.b;
  ConsumerWarpgroup wg(e, ring, r, warpgroup);
  Value qTile = wg.qTile;
  e.mbarrierWait(e.i32c(ring.layout.barriers), e.i32c(0));
  Value wgRow0 = wg.firstRow(e, r);

  SmallVector<Value> init = r.initialLoopState(ring.d / 8);
  auto loop = scf::ForOp::create(
      b, e.i32c(0), keyBlocks, e.i32c(1), init,
      [&](OpBuilder &nested, Location loc, Value kb, ValueRange state) {
        ImplicitLocOpBuilder lb(loc, nested);
        WarpEmitter w(lb, ring.config.bf16);
        scf::YieldOp::create(lb, consumeKeyBlock(w, ring, r, qTile, wgRow0, kb, state));
      });
  storeForwardOutput(e, r, loop.getResults(), func.getArgument(3), func.getArgument(4));
}

} // namespace

void emitWarpgroupForwardBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config) {
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToEnd(&func.getBody().front());
  WarpEmitter e(b, config.bf16);
  KernelScalars s = KernelScalars::of(func, 5);
  const ForwardRing ring(config);

  ForwardRows r{&config, s, LaneIds(e), QueryBlock(e, s, ring.blockQ), {}, {}, {}, {}};
  if (config.dropoutP > 0.0) {
    // ..., seed, mask: the keep mask the keep-mask kernel drew.
    unsigned count = func.getNumArguments();
    r.seedPointer = func.getArgument(count - 2);
    r.maskPointer = func.getArgument(count - 1);
  }
  Value warpgroup = e.divu(r.ids.warp, e.i32c(4));
  Value kEnd = config.causal ? e.minsi(s.kLen, e.add(r.block.q0, e.i32c(ring.blockQ))) : s.kLen;
  Value keyBlocks = e.ceilDiv(kEnd, ring.blockK);
  ring.initBarriers(e, r.ids.tid);

  Value isProducer = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, warpgroup, e.i32c(0));
  auto roles = scf::IfOp::create(b, isProducer, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(roles.thenBlock()->getTerminator());
    emitProducer(e, ring, r, func, keyBlocks);
  }
  b.setInsertionPoint(roles.elseBlock()->getTerminator());
  if (config.schedule == AttentionKernelConfig::ForwardSchedule::Serial)
    emitConsumer(e, ring, r, func, warpgroup, keyBlocks);
  else
    emitPipelinedConsumer(e, ring, r, func, warpgroup, keyBlocks);
  b.setInsertionPointAfter(roles);
  mlir::gpu::ReturnOp::create(b);
}

} // namespace weft::gpu
