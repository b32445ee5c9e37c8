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
#include "ForwardParts.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace weft::gpu {

namespace {

/// 16-bit elements per 128-byte swizzle row: tiles are stored as head_dim /
/// 64 slabs of [rows][64], one TMA box each.
constexpr int64_t kSlabCols = 64;

/// The descriptor of a K-major operand (rows x head_dim, stored as slabs)
/// for k-step `step` (16 elements of head_dim): 32 bytes on inside a slab,
/// the next slab every four steps. 8-row groups are 1024 bytes apart.
Value kMajorDescriptor(WarpEmitter &w, Value tile, int64_t slabBytes, int64_t step) {
  int64_t offset = (step % 4) * 32 + (step / 4) * slabBytes;
  return w.matrixDescriptor(w.add(tile, w.i32c(offset)), /*leadingBytes=*/16,
                            /*strideBytes=*/1024, /*swizzle128=*/true);
}

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
  Value barrier(WarpEmitter &w, int64_t first, Value slot) const {
    return w.add(w.i32c(layout.barriers + first * 8), w.mul(slot, w.i32c(8)));
  }
  /// Key block kb's ring slot and the phase parity its barriers are in.
  std::pair<Value, Value> slotAndParity(WarpEmitter &w, Value kb) const {
    return {arith::RemUIOp::create(w.b, kb, w.i32c(stages)),
            w.andi(w.divu(kb, w.i32c(stages)), w.i32c(1))};
  }
  /// The K tile of `slot` and the V tile right after it.
  std::pair<Value, Value> kvTiles(WarpEmitter &w, Value slot) const {
    Value tileK = w.add(w.i32c(layout.kv), w.mul(slot, w.i32c(2 * kvTileBytes)));
    return {tileK, w.add(tileK, w.i32c(kvTileBytes))};
  }

  /// Thread 0 initialises every barrier of the ring; then the CTA syncs.
  void initBarriers(WarpEmitter &e, Value tid) const {
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
};

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
  for (size_t step = 0; step < p.size(); ++step) {
    Value descriptor = w.matrixDescriptor(
        w.add(tileV, w.i32c(2048 * static_cast<int64_t>(step))), ring.kvSlabBytes, 1024,
        /*swizzle128=*/true);
    out = w.wgmma(out, p[step], descriptor, ring.d, /*transposeB=*/true,
                  /*accumulate=*/true);
  }
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
  if (ring.consumers > 1)
    e.setMaxRegisters(240, /*increase=*/true);
  r.ids.warp = e.sub(r.ids.warp, e.i32c(4));
  Value consumer = e.sub(warpgroup, e.i32c(1));
  r.initSoftmaxConstants(e);
  Value qTile = e.add(e.i32c(ring.layout.q), e.mul(consumer, e.i32c(64 * 128)));
  e.mbarrierWait(e.i32c(ring.layout.barriers), e.i32c(0));
  // This warpgroup's first query row: a block needs the mask when it ends
  // past k_len or (causal) past the key that row may see.
  Value wgRow0 = e.add(r.block.q0, e.mul(consumer, e.i32c(64)));

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

/// The Overlap and PingPong consumers (one warpgroup of 64 query rows).
/// Per key block j >= 1, in program order: issue S_j = Q K_j^T, issue
/// O += P_{j-1} V_{j-1}, wait for S_j only (wgmma.wait_group 1), run block
/// j's softmax while that P V runs, release K_j, wait for the P V, release
/// V_{j-1}, rescale O and round P_j. Block 0's S and softmax come before the
/// loop, the last block's P V after it. The loop state is m[2], l[2], O and
/// P (the A fragments of the block whose P V is still to issue).
class PipelinedConsumer {
public:
  PipelinedConsumer(const ForwardRing &ring, ForwardRows &r, Value qTile, Value wgRow0,
                    Value consumer)
      : ring(ring), r(r), qTile(qTile), wgRow0(wgRow0), consumer(consumer),
        pingPong(ring.config.schedule == AttentionKernelConfig::ForwardSchedule::PingPong),
        keyTiles(ring.blockK / 8), dTiles(ring.d / 8) {}

  /// Runs the whole key loop; returns m[2], l[2], O.
  SmallVector<Value> emit(WarpEmitter &e, Value keyBlocks);

private:
  const ForwardRing &ring;
  ForwardRows &r;
  Value qTile, wgRow0, consumer;
  bool pingPong;
  int64_t keyTiles, dTiles;

  int64_t mlEnd() const { return 4; }
  int64_t oEnd() const { return 4 + dTiles * 4; }

  /// Issues S = Q K^T (64 x block_k, zero-initialised) on the K tile.
  SmallVector<Value> issueScores(WarpEmitter &w, Value tileK) const {
    SmallVector<Value> acc(keyTiles * 4, r.zeroF);
    for (int64_t step = 0; step < ring.d / 16; ++step)
      acc = w.wgmmaShared(acc, kMajorDescriptor(w, qTile, ring.qSlabBytes, step),
                          kMajorDescriptor(w, tileK, ring.kvSlabBytes, step), ring.blockK,
                          /*accumulate=*/step != 0);
    return acc;
  }
  /// Issues O += P V: V read MN-major (8-key groups 1024 bytes apart, slabs
  /// kvSlabBytes apart; a k-step is 16 keys, 2048 bytes).
  SmallVector<Value> issueValues(WarpEmitter &w, ArrayRef<Value> out, ArrayRef<Value> p,
                                 Value tileV) const {
    SmallVector<Value> acc(out.begin(), out.end());
    for (int64_t step = 0; step < keyTiles / 2; ++step) {
      Quad a = {p[4 * step], p[4 * step + 1], p[4 * step + 2], p[4 * step + 3]};
      Value descriptor = w.matrixDescriptor(w.add(tileV, w.i32c(2048 * step)),
                                            ring.kvSlabBytes, 1024, /*swizzle128=*/true);
      acc = w.wgmma(acc, a, descriptor, ring.d, /*transposeB=*/true, /*accumulate=*/true);
    }
    return acc;
  }
  /// PingPong: wait for this warpgroup's turn to issue wgmmas (named barrier
  /// 1 + consumer, completed by the other warpgroup's arrival) and hand the
  /// turn over once they are issued.
  void takeTurn(WarpEmitter &w) const {
    if (pingPong)
      w.namedBarrierSync(w.add(consumer, w.i32c(1)), 256);
  }
  void passTurn(WarpEmitter &w) const {
    if (pingPong)
      w.namedBarrierArrive(w.sub(w.i32c(2), consumer), 256);
  }
  /// One arrival per warp on barrier `first + slot` once the warp's
  /// wgmmas that read the tile completed; with `after`, only once `after`
  /// (f32) is known, see step().
  void release(WarpEmitter &w, int64_t first, Value slot, Value after = {}) const {
    Value arrive = arith::CmpIOp::create(w.b, arith::CmpIPredicate::eq, r.ids.lane, w.i32c(0));
    if (after)
      arrive = w.andi(arrive, arith::CmpFOp::create(w.b, arith::CmpFPredicate::UGE, after,
                                                     r.zeroF));
    w.ifThen(arrive, [&] { w.mbarrierArrive(ring.barrier(w, first, slot)); });
  }
  /// Block kb's scores become P (in `s`); `next` gets m and l. `mask`
  /// applies the k_len / causal mask, or `maskNeeded` decides at run time.
  std::array<Value, 2> softmax(WarpEmitter &w, SmallVectorImpl<Value> &s, Value kb,
                               ValueRange mAndL, SmallVectorImpl<Value> &next,
                               Value maskNeeded, bool mask) const {
    SmallVector<Quad> scores = toQuads(s);
    next.assign(4, Value());
    std::array<Value, 2> alpha =
        onlineSoftmaxStep(w, r, scores, w.mul(kb, w.i32c(ring.blockK)), mAndL, next,
                          maskNeeded, mask);
    s = flattenQuads(scores);
    return alpha;
  }
  SmallVector<Value> roundToA(WarpEmitter &w, ArrayRef<Value> p) const {
    return flattenQuads(w.toA(toQuads(p)));
  }

  /// Block 0: S, wait, softmax (masked when it must be), P.
  SmallVector<Value> prologue(WarpEmitter &e, ArrayRef<Value> init) const;
  /// One iteration over block kb >= 1 (see the class comment).
  SmallVector<Value> step(WarpEmitter &w, Value kb, ValueRange state, bool mask) const;
  /// The last block's P V; returns m, l, O.
  SmallVector<Value> epilogue(WarpEmitter &e, Value keyBlocks, ValueRange state) const;
};

SmallVector<Value> PipelinedConsumer::prologue(WarpEmitter &e, ArrayRef<Value> init) const {
  ImplicitLocOpBuilder &b = e.b;
  Value slot = e.i32c(0);
  Value tileK = ring.kvTiles(e, slot).first;
  e.mbarrierWait(ring.barrier(e, ring.fullK, slot), e.i32c(0));
  takeTurn(e);
  e.wgmmaFence();
  SmallVector<Value> s = issueScores(e, tileK);
  e.wgmmaCommit();
  passTurn(e);
  e.wgmmaWait(0);
  s = e.fenceOperands(s);
  release(e, ring.empty, slot);
  // Block 0 needs the mask when it ends past k_len or (causal) past the
  // first row's key; nothing is in flight, so a branch costs no overlap.
  Value blockEnd = e.i32c(ring.blockK);
  Value maskNeeded = arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, blockEnd, r.s.kLen);
  if (ring.config.causal)
    maskNeeded = arith::OrIOp::create(
        b, maskNeeded,
        arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, blockEnd,
                              e.add(wgRow0, e.i32c(1))));
  SmallVector<Value> next;
  softmax(e, s, e.i32c(0), init.take_front(4), next, maskNeeded, /*mask=*/true);
  SmallVector<Value> state(next.begin(), next.end());
  state.append(init.begin() + mlEnd(), init.begin() + oEnd());
  llvm::append_range(state, roundToA(e, s));
  return state;
}

SmallVector<Value> PipelinedConsumer::step(WarpEmitter &w, Value kb, ValueRange state,
                                           bool mask) const {
  auto [slot, parity] = ring.slotAndParity(w, kb);
  auto [prevSlot, prevParity] = ring.slotAndParity(w, w.sub(kb, w.i32c(1)));
  Value tileK = ring.kvTiles(w, slot).first;
  Value tilePrevV = ring.kvTiles(w, prevSlot).second;
  SmallVector<Value> out(state.begin() + mlEnd(), state.begin() + oEnd());
  SmallVector<Value> p(state.begin() + oEnd(), state.end());

  w.mbarrierWait(ring.barrier(w, ring.fullK, slot), parity);
  takeTurn(w);
  w.wgmmaFence();
  SmallVector<Value> s = issueScores(w, tileK);
  w.wgmmaCommit();
  w.mbarrierWait(ring.barrier(w, ring.fullV, prevSlot), prevParity);
  // A fence of our own after the V wait's spin loop: the one ptxas would
  // otherwise inject there (C7519) sits on a path it deems divergent and it
  // serialises the wgmmas for it (C7520).
  w.wgmmaFence();
  out = issueValues(w, out, p, tilePrevV);
  w.wgmmaCommit();
  passTurn(w);
  // S_kb is done; P_{kb-1} V_{kb-1} may still run under the softmax.
  w.wgmmaWait(1);
  s = w.fenceOperands(s);
  SmallVector<Value> next;
  std::array<Value, 2> alpha =
      softmax(w, s, kb, state.take_front(mlEnd()), next, Value(), mask);
  // The fences keep LLVM from moving the softmax after the wait, and the use
  // of O and the rounding of P (whose registers the running wgmma still
  // reads) before it. ptxas, which sees no fence, would still hoist
  // WARPGROUP.DEPBAR 0 above the exp2s (it fills a shuffle's latency with
  // it) and the overlap would be lost; it keeps the release of K before the
  // wait, so that release waits for the row sums, which need every exp2:
  // l >= 0 (or NaN) always holds, ptxas cannot know it.
  s = w.fenceOperands(s);
  release(w, ring.empty, slot, w.fadd(next[2], next[3]));
  w.wgmmaWait(0);
  out = w.fenceOperands(out);
  s = w.fenceOperands(s);
  release(w, ring.emptyV, prevSlot);
  for (int64_t i = 0; i < dTiles * 4; ++i)
    next.push_back(w.fmul(out[i], alpha[(i % 4) / 2]));
  llvm::append_range(next, roundToA(w, s));
  return next;
}

SmallVector<Value> PipelinedConsumer::epilogue(WarpEmitter &e, Value keyBlocks,
                                               ValueRange state) const {
  auto [slot, parity] = ring.slotAndParity(e, e.sub(keyBlocks, e.i32c(1)));
  SmallVector<Value> out(state.begin() + mlEnd(), state.begin() + oEnd());
  SmallVector<Value> p(state.begin() + oEnd(), state.end());
  e.mbarrierWait(ring.barrier(e, ring.fullV, slot), parity);
  takeTurn(e);
  e.wgmmaFence();
  out = issueValues(e, out, p, ring.kvTiles(e, slot).second);
  e.wgmmaCommit();
  passTurn(e);
  e.wgmmaWait(0);
  out = e.fenceOperands(out);
  SmallVector<Value> result(state.begin(), state.begin() + mlEnd());
  llvm::append_range(result, out);
  return result;
}

SmallVector<Value> PipelinedConsumer::emit(WarpEmitter &e, Value keyBlocks) {
  ImplicitLocOpBuilder &b = e.b;
  SmallVector<Value> init = r.initialLoopState(dTiles);
  SmallVector<Type> types;
  for (Value value : init)
    types.push_back(value.getType());
  // No key block (k_len = 0): nothing to wait for; O = 0.
  auto any = scf::IfOp::create(b, types,
                               arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, keyBlocks,
                                                     e.i32c(0)),
                               /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(any.elseBlock());
    scf::YieldOp::create(b, init);
    b.setInsertionPointToStart(any.thenBlock());
    SmallVector<Value> state = prologue(e, init);
    // Blocks [1, split) lie inside k_len and below this warpgroup's first
    // row's key: no mask, and no branch between the wait_groups.
    Value limit = ring.config.causal ? e.minsi(r.s.kLen, e.add(wgRow0, e.i32c(1))) : r.s.kLen;
    Value firstMasked = e.divu(limit, e.i32c(ring.blockK));
    Value split = arith::MaxSIOp::create(b, e.i32c(1), e.minsi(firstMasked, keyBlocks));
    for (auto [lower, upper, mask] : {std::tuple{e.i32c(1), split, false},
                                      std::tuple{split, keyBlocks, true}}) {
      auto loop = scf::ForOp::create(
          b, lower, upper, e.i32c(1), state,
          [&, mask = mask](OpBuilder &nested, Location loc, Value kb, ValueRange loopState) {
            ImplicitLocOpBuilder lb(loc, nested);
            WarpEmitter w(lb, ring.config.bf16);
            scf::YieldOp::create(lb, step(w, kb, loopState, mask));
          });
      state.assign(loop.getResults().begin(), loop.getResults().end());
    }
    scf::YieldOp::create(b, epilogue(e, keyBlocks, state));
  }
  return SmallVector<Value>(any.getResults().begin(), any.getResults().end());
}

/// A consumer warpgroup of the Overlap / PingPong schedules (see
/// emitConsumer for the Serial one).
void emitPipelinedConsumer(WarpEmitter &e, const ForwardRing &ring, ForwardRows &r,
                           mlir::gpu::GPUFuncOp func, Value warpgroup, Value keyBlocks) {
  if (ring.consumers > 1)
    e.setMaxRegisters(240, /*increase=*/true);
  r.ids.warp = e.sub(r.ids.warp, e.i32c(4));
  Value consumer = e.sub(warpgroup, e.i32c(1));
  r.initSoftmaxConstants(e);
  Value qTile = e.add(e.i32c(ring.layout.q), e.mul(consumer, e.i32c(64 * 128)));
  Value wgRow0 = e.add(r.block.q0, e.mul(consumer, e.i32c(64)));
  PipelinedConsumer pipeline(ring, r, qTile, wgRow0, consumer);
  bool pingPong = ring.config.schedule == AttentionKernelConfig::ForwardSchedule::PingPong;
  auto isConsumer = [&](int64_t c) {
    return arith::CmpIOp::create(e.b, arith::CmpIPredicate::eq, consumer, e.i32c(c));
  };
  // PingPong: consumer 0 takes the first turn (consumer 1 arrives for it);
  // each takes keyBlocks + 1 turns, so consumer 1's last arrival is
  // consumed by one more wait of consumer 0 at the end.
  if (pingPong)
    e.ifThen(isConsumer(1), [&] { e.namedBarrierArrive(e.i32c(1), 256); });
  e.mbarrierWait(e.i32c(ring.layout.barriers), e.i32c(0));
  SmallVector<Value> state = pipeline.emit(e, keyBlocks);
  if (pingPong)
    e.ifThen(isConsumer(0), [&] { e.namedBarrierSync(e.i32c(1), 256); });
  storeForwardOutput(e, r, state, func.getArgument(3), func.getArgument(4));
}

} // namespace

void emitWarpgroupForwardBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config) {
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToEnd(&func.getBody().front());
  WarpEmitter e(b, config.bf16);
  KernelScalars s = KernelScalars::of(func, 5);
  const ForwardRing ring(config);

  ForwardRows r{&config, s, LaneIds(e), QueryBlock(e, s, ring.blockQ), {}, {}, {}, {}};
  if (config.dropoutP > 0.0)
    r.seedPointer = func.getArguments().back();
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
