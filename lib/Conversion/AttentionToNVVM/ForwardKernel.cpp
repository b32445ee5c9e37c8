// The FlashAttention-2 forward kernel: a CTA owns block_q query rows of one
// (batch, q head), 16 per warp; it walks the key blocks the rows see (causal
// block skipping), S = Q K^T and O += P V with mma.sync m16n8k16, an online
// softmax in registers (exp2 of log2-scaled scores), and writes O and the
// row log-sum-exp. The warpgroup-MMA variant is ForwardWarpgroup.cpp.
#include "ForwardParts.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace weft::gpu {

void emitForwardBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config) {
  if (config.warpgroupMma)
    return emitWarpgroupForwardBody(func, config);
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToEnd(&func.getBody().front());
  WarpEmitter e(b, config.bf16);
  Value q = func.getArgument(0), k = func.getArgument(1), v = func.getArgument(2);
  KernelScalars s = KernelScalars::of(func, 5);
  const int64_t d = config.headDim, blockQ = config.blockQ, blockK = config.blockK;
  const int64_t pitch = tilePitch(d), threads = blockQ / 16 * 32;
  const int64_t kSteps = d / 16, keyTiles = blockK / 8, dTiles = d / 8;

  ForwardRows r{&config, s, LaneIds(e), QueryBlock(e, s, blockQ), {}, {}, {}, {}};
  if (config.dropoutP > 0.0)
    r.seedPointer = func.getArguments().back();
  Value tid = r.ids.tid, warp = r.ids.warp, lane = r.ids.lane;
  TensorRows qRows(e, config, s, AttentionOperand::Q), kRows(e, config, s, AttentionOperand::K),
      vRows(e, config, s, AttentionOperand::V);
  // Q, K, V as padded tiles for ldmatrix: Q, then K, then V.
  const int64_t smemK = blockQ * pitch, smemV = smemK + blockK * pitch;
  e.copyTile(e.globalAt(q, qRows.at(e, r.block.batch, r.block.head, r.block.q0)), qRows.pitch,
             r.block.qValid, blockQ, d, e.i32c(0), pitch, tid, threads);
  e.barrier();
  Value warpRows = e.mul(warp, e.i32c(16 * pitch));
  SmallVector<Quad> qFrag = e.loadA(e.add(warpRows, e.laneOffsetA(lane, pitch)), kSteps);
  Value kLane = e.laneOffsetB(lane, pitch), vLane = e.laneOffsetBTransposed(lane, pitch);

  Value kEnd = config.causal ? e.minsi(s.kLen, e.add(r.block.q0, e.i32c(blockQ))) : s.kLen;
  Value keyBlocks = e.ceilDiv(kEnd, blockK);
  r.initSoftmaxConstants(e);

  // Loop state: m[2], l[2] (per-thread partial sums), acc[dTiles][4].
  SmallVector<Value> init = r.initialLoopState(dTiles);
  auto loop = scf::ForOp::create(
      b, e.i32c(0), keyBlocks, e.i32c(1), init,
      [&](OpBuilder &nested, Location loc, Value kb, ValueRange state) {
        ImplicitLocOpBuilder lb(loc, nested);
        WarpEmitter w(lb, config.bf16);
        Value k0 = w.mul(kb, w.i32c(blockK));
        Value kValid = w.minsi(w.i32c(blockK), w.sub(s.kLen, k0));
        Value kBytes = kRows.at(w, r.block.batch, r.block.kvHead, k0);
        Value vBytes = vRows.at(w, r.block.batch, r.block.kvHead, k0);
        w.barrier(); // every warp is done with the previous K and V tiles
        w.copyTile(w.globalAt(k, kBytes), kRows.pitch, kValid, blockK, d, w.i32c(smemK), pitch,
                   tid, threads);
        w.copyTile(w.globalAt(v, vBytes), vRows.pitch, kValid, blockK, d, w.i32c(smemV), pitch,
                   tid, threads);
        w.barrier();

        // S = Q K^T, 16 x blockK per warp, then the softmax step: P, m, l.
        SmallVector<Quad> scores = w.mmaABt(qFrag, w.i32c(smemK), kLane, keyTiles, pitch);
        SmallVector<Value> next(state.begin(), state.end());
        std::array<Value, 2> alpha = onlineSoftmaxStep(w, r, scores, k0, state, next);
        for (int64_t dt = 0; dt < dTiles; ++dt)
          for (int j = 0; j < 4; ++j)
            next[4 + dt * 4 + j] = w.fmul(state[4 + dt * 4 + j], alpha[j / 2]);

        // O += P V.
        SmallVector<Quad> acc(dTiles);
        for (int64_t dt = 0; dt < dTiles; ++dt)
          for (int j = 0; j < 4; ++j)
            acc[dt][j] = next[4 + dt * 4 + j];
        w.mmaAB(w.toA(scores), w.i32c(smemV), vLane, acc, pitch);
        for (int64_t dt = 0; dt < dTiles; ++dt)
          for (int j = 0; j < 4; ++j)
            next[4 + dt * 4 + j] = acc[dt][j];
        scf::YieldOp::create(lb, next);
      });

  storeForwardOutput(e, r, loop.getResults(), func.getArgument(3), func.getArgument(4));
  mlir::gpu::ReturnOp::create(b);
}

} // namespace weft::gpu
