// The Overlap and PingPong consumers of the Hopper attention forward (see
// ForwardWarpgroup.cpp for the kernel, its producer and the Serial consumer):
// the softmax of key block j under O += P V of block j - 1, and with PingPong
// the two consumer warpgroups taking turns to issue their wgmmas.
#include "ForwardWarpgroup.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace weft::gpu {

namespace {

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
      acc = w.wgmma(acc, a, mnMajorDescriptor(w, tileV, ring.kvSlabBytes, step), ring.d,
                    /*transposeB=*/true, /*accumulate=*/true);
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

} // namespace

void emitPipelinedConsumer(WarpEmitter &e, const ForwardRing &ring, ForwardRows &r,
                           mlir::gpu::GPUFuncOp func, Value warpgroup, Value keyBlocks) {
  ConsumerWarpgroup wg(e, ring, r, warpgroup);
  Value consumer = wg.consumer;
  PipelinedConsumer pipeline(ring, r, wg.qTile, wg.firstRow(e, r), consumer);
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

} // namespace weft::gpu
