// The attention forward with Hopper warpgroup MMAs (FlashAttention-3's
// intra-warpgroup overlap): iteration j issues S_j = Q K_j^T and
// O += P_{j-1} V_{j-1} back to back as two wgmma groups, waits only for S_j
// and computes its softmax while the P V wgmma runs; K and V stream through
// two-stage shared-memory rings by cp.async, one key block ahead.
#include "ForwardParts.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace weft::gpu {

namespace {

/// Issues S = Q K^T for the warpgroup's 64 rows (no fence, commit or wait):
/// Q as register fragments, K (core-matrix layout, K-major) by descriptor:
/// cores along d are 128 bytes apart, 8-key groups d * 16 bytes; k-step j
/// starts 2 cores (256 bytes) on. The first k-step overwrites (scale-d 0).
SmallVector<Value> issueScores(WarpEmitter &w, ArrayRef<Quad> qFrag, Value smemK,
                               int64_t keyTiles, int64_t d) {
  SmallVector<Value> acc(keyTiles * 4, w.f32c(0.0));
  for (size_t step = 0; step < qFrag.size(); ++step) {
    Value descriptor = w.matrixDescriptor(
        w.add(smemK, w.i32c(256 * static_cast<int64_t>(step))), 128, d * 16);
    acc = w.wgmma(acc, qFrag[step], descriptor, keyTiles * 8, /*transposeB=*/false,
                  /*accumulate=*/step != 0);
  }
  return acc;
}

/// Issues O += P V (no fence, commit or wait): P as register fragments, V
/// (core-matrix layout, read MN-major) by descriptor: 8-key groups d * 16
/// bytes apart (leading, along k), cores along d 128 bytes apart (stride,
/// along n); k-step j starts 2 groups on.
SmallVector<Value> issueAccumulate(WarpEmitter &w, ArrayRef<Quad> pFrag, Value smemV,
                                   ArrayRef<Value> out, int64_t d) {
  SmallVector<Value> acc(out.begin(), out.end());
  for (size_t step = 0; step < pFrag.size(); ++step) {
    Value descriptor = w.matrixDescriptor(
        w.add(smemV, w.i32c(32 * d * static_cast<int64_t>(step))), d * 16, 128);
    acc = w.wgmma(acc, pFrag[step], descriptor, d, /*transposeB=*/true,
                  /*accumulate=*/true);
  }
  return acc;
}

SmallVector<Quad> toQuads(ArrayRef<Value> values) {
  SmallVector<Quad> quads(values.size() / 4);
  for (size_t i = 0; i < values.size(); ++i)
    quads[i / 4][i % 4] = values[i];
  return quads;
}

SmallVector<Value> flatten(ArrayRef<Quad> quads) {
  SmallVector<Value> values;
  for (const Quad &quad : quads)
    values.append(quad.begin(), quad.end());
  return values;
}

} // namespace

// Schedule (n = key blocks; K ring stage j % 2 at j * tile, V ring stage
// j % 2 at (2 + j % 2) * tile):
//   prologue: cp.async K_0; Q via registers; publish; Q fragments; barrier;
//             cp.async V_0, K_1; S_0 (wgmma, wait 0); softmax_0 -> P_0;
//             publish (cp.async wait 0, fence.proxy.async, barrier)
//   j = 1 .. n-1: cp.async K_{j+1}, V_j; fence; S_j = Q K_j^T (commit);
//             O += P_{j-1} V_{j-1} (commit); wait 1 (S_j done); softmax_j
//             (mask, m, exp2, l); wait 0 (P V done); O *= alpha_j; P_j
//             rounded into A fragments; publish
//   epilogue: fence; O += P_{n-1} V_{n-1} (commit, wait 0); store.
// O after iteration j is O_{j-1} * alpha_j of the plain loop (which is
// O_j = O_{j-1} * alpha_j + P_j V_j), rounded the same: P_{j-1} V_{j-1} is
// added to O_{j-2} * alpha_{j-1} as before, then scaled by alpha_j.
//
// Shared-memory hazards. A stage is written only by cp.async issued at the
// top of an iteration, after the previous iteration's barrier:
//  - K_{j+1} goes to K stage (j - 1) % 2, last read by S_{j-1}, which every
//    thread waited for (wait 1 of iteration j - 1, or the prologue's wait 0)
//    before that barrier;
//  - V_j goes to V stage (j - 2) % 2, last read by P_{j-2} V_{j-2}, waited
//    for (wait 0 of iteration j - 1) before that barrier.
// A wgmma reads a stage only after the barrier that follows every thread's
// cp.async wait 0 and fence.proxy.async (the wgmma reads through the async
// proxy what cp.async wrote through the generic one): K_j and V_{j-1} were
// issued in iteration j - 1 (or the prologue) and published at its end.
// Registers: the wgmma.fence before S_j orders the writes of P_{j-1} and of
// the rescaled O before the wgmmas read them; O and the loop's P registers
// (read by P_{j-1} V_{j-1}) are written again only after wait 0. Rounding
// P_j before that wait would let LLVM write it straight into the loop's P
// registers, and ptxas would serialise every wgmma (C7513).
void emitWarpgroupForwardBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config) {
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToEnd(&func.getBody().front());
  WarpEmitter e(b, config.bf16);
  Value q = func.getArgument(0), k = func.getArgument(1), v = func.getArgument(2);
  KernelScalars s = KernelScalars::of(func, 5);
  const int64_t d = config.headDim, blockQ = config.blockQ, blockK = config.blockK;
  const int64_t pitch = tilePitch(d), threads = blockQ / 16 * 32;
  const int64_t kSteps = d / 16, keyTiles = blockK / 8, dTiles = d / 8;

  ForwardRows r{&config, s, LaneIds(e), QueryBlock(e, s, blockQ, d), {}, {}, {}, {}};
  Value tid = r.ids.tid;
  const int64_t tileBytes = blockK * d * 2, smemQ = tileBytes;

  // Registers bound the CTAs per SM (65536 / (threads x registers)): ask
  // ptxas for 2 at d = 128 (<= 255 registers: with S_j, P_{j-1}, P_j, O and
  // Q live at once, the 168 of 3 CTAs spill) and 4 at d = 64 (<= 128), or
  // fewer where the shared memory (228 KB per SM, 1 KB reserved per CTA)
  // does not hold that many; two warpgroups (block_q = 128) halve it.
  int64_t smemFit = 228 * 1024 / (wgmmaForwardSmemBytes(config) + 1024);
  int64_t warpgroups = blockQ / 64;
  int64_t ctasPerSm = std::max<int64_t>(
      1, std::min<int64_t>((d > 64 ? 2 : 4) / warpgroups, smemFit));
  func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                b.getI32IntegerAttr(static_cast<int32_t>(ctasPerSm)));

  Value kEnd = config.causal ? e.minsi(s.kLen, e.add(r.block.q0, e.i32c(blockQ))) : s.kLen;
  Value keyBlocks = e.ceilDiv(kEnd, blockK);
  // Starts the cp.async of key block `kb`'s rows of `source` into `stage`.
  auto prefetch = [&](WarpEmitter &w, Value source, Value kb, Value stage) {
    Value k0 = w.mul(kb, w.i32c(blockK));
    Value kValid = w.minsi(w.i32c(blockK), w.sub(s.kLen, k0));
    Value kvBytes = w.mul(w.toI64(w.add(r.block.kvRow0, k0)), r.block.rowBytes);
    w.copyTileCoresAsync(w.globalAt(source, kvBytes), kValid, blockK, d, stage, tid, threads);
  };
  auto kStage = [&](WarpEmitter &w, Value kb) {
    return w.mul(w.andi(kb, w.i32c(1)), w.i32c(tileBytes));
  };
  auto vStage = [&](WarpEmitter &w, Value kb) {
    return w.add(w.i32c(2 * tileBytes), kStage(w, kb));
  };
  // Every thread's cp.async landed, made visible to the async proxy, and
  // every thread past that point: the stages are published to the wgmmas.
  auto publish = [](WarpEmitter &w) {
    w.cpAsyncWait(0);
    w.fenceSharedToAsyncProxy();
    w.barrier();
  };

  // Prologue. K_0 flies while Q is loaded through registers.
  Value zero = e.i32c(0), one = e.i32c(1);
  e.ifThen(e.lt(zero, keyBlocks), [&] { prefetch(e, k, zero, e.i32c(0)); });
  e.cpAsyncCommit();
  e.copyTile(e.globalAt(q, r.block.qBytes), r.block.qValid, blockQ, d, e.i32c(smemQ), pitch,
             tid, threads);
  publish(e);
  Value warpRows = e.add(e.mul(r.ids.warp, e.i32c(16 * pitch)), e.i32c(smemQ));
  SmallVector<Quad> qFrag =
      e.loadA(e.add(warpRows, e.laneOffsetA(r.ids.lane, pitch)), kSteps);
  // Every warp holds its Q fragments before V_0 and K_1 overwrite Q's tile.
  e.barrier();
  e.ifThen(e.lt(zero, keyBlocks), [&] { prefetch(e, v, zero, vStage(e, zero)); });
  e.ifThen(e.lt(one, keyBlocks), [&] { prefetch(e, k, one, kStage(e, one)); });
  e.cpAsyncCommit();
  r.initSoftmaxConstants(e);

  // S_0 and its softmax. With no key block (k_len = 0) K stage 0 holds
  // whatever was there, but every score is masked to -inf: P_0 = 0, m stays
  // -inf, l = 0. O starts at 0 = 0 * alpha_0.
  e.wgmmaFence();
  SmallVector<Value> s0 = issueScores(e, qFrag, e.i32c(0), keyTiles, d);
  e.wgmmaCommit();
  e.wgmmaWait(0);
  SmallVector<Quad> scores0 = toQuads(s0);
  SmallVector<Value> mAndL = {r.minusInf, r.minusInf, r.zeroF, r.zeroF};
  SmallVector<Value> init(mAndL);
  onlineSoftmaxStep(e, r, scores0, zero, mAndL, init);
  init.append(dTiles * 4, r.zeroF);
  init.append(flatten(e.toA(scores0)));
  publish(e);

  // Loop state: m[2], l[2] (per-thread partial sums), O[dTiles][4], then
  // P_{j-1} as A fragments (blockK / 16 quads of packed pairs).
  auto loop = scf::ForOp::create(
      b, one, keyBlocks, one, init,
      [&](OpBuilder &nested, Location loc, Value kb, ValueRange state) {
        ImplicitLocOpBuilder lb(loc, nested);
        WarpEmitter w(lb, config.bf16);
        Value nextKb = w.add(kb, w.i32c(1)), prevKb = w.sub(kb, w.i32c(1));
        w.ifThen(w.lt(nextKb, keyBlocks), [&] { prefetch(w, k, nextKb, kStage(w, nextKb)); });
        prefetch(w, v, kb, vStage(w, kb));
        w.cpAsyncCommit();

        // S_j first: wgmma groups complete in order, so wait 1 is S_j alone.
        SmallVector<Value> oldO(state.begin() + 4, state.begin() + 4 + dTiles * 4);
        SmallVector<Value> pPrev(state.begin() + 4 + dTiles * 4, state.end());
        w.wgmmaFence();
        SmallVector<Value> sj = issueScores(w, qFrag, kStage(w, kb), keyTiles, d);
        w.wgmmaCommit();
        SmallVector<Value> o = issueAccumulate(w, toQuads(pPrev), vStage(w, prevKb), oldO, d);
        w.wgmmaCommit();
        w.wgmmaWait(1);

        SmallVector<Quad> scores = toQuads(sj);
        SmallVector<Value> next(state.begin(), state.begin() + 4);
        std::array<Value, 2> alpha =
            onlineSoftmaxStep(w, r, scores, w.mul(kb, w.i32c(blockK)), state, next);
        w.wgmmaWait(0);
        for (int64_t i = 0; i < dTiles * 4; ++i)
          next.push_back(w.fmul(o[i], alpha[(i % 4) / 2]));
        // P_j is rounded into A fragments only now: P_{j-1} V_{j-1} read the
        // loop's P registers until the wait.
        next.append(flatten(w.toA(scores)));
        publish(w);
        scf::YieldOp::create(lb, next);
      });

  // Epilogue: the last block's P V (none without key blocks: V stage 0 was
  // never filled then), then the store.
  ValueRange last = loop.getResults();
  SmallVector<Value> lastO(last.begin() + 4, last.begin() + 4 + dTiles * 4);
  SmallVector<Value> lastP(last.begin() + 4 + dTiles * 4, last.end());
  auto finalPv = scf::IfOp::create(
      b, e.lt(zero, keyBlocks),
      [&](OpBuilder &nested, Location loc) {
        ImplicitLocOpBuilder ib(loc, nested);
        WarpEmitter w(ib, config.bf16);
        w.wgmmaFence();
        SmallVector<Value> o = issueAccumulate(
            w, toQuads(lastP), vStage(w, w.sub(keyBlocks, w.i32c(1))), lastO, d);
        w.wgmmaCommit();
        w.wgmmaWait(0);
        scf::YieldOp::create(ib, o);
      },
      [&](OpBuilder &nested, Location loc) { scf::YieldOp::create(nested, loc, lastO); });
  SmallVector<Value> finalState(last.begin(), last.begin() + 4);
  finalState.append(finalPv.getResults().begin(), finalPv.getResults().end());
  storeForwardOutput(e, r, finalState, func.getArgument(3), func.getArgument(4));
  mlir::gpu::ReturnOp::create(b);
}

} // namespace weft::gpu
