// The FlashAttention-2 forward kernel: a CTA owns block_q query rows of one
// (batch, q head), 16 per warp; it walks the key blocks the rows see (causal
// block skipping), S = Q K^T and O += P V with mma.sync m16n8k16, an online
// softmax in registers (exp2 of log2-scaled scores), and writes O and the
// row log-sum-exp. The warpgroup-MMA variant is ForwardWarpgroup.cpp.
#include "ForwardParts.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace weft::gpu {

void ForwardRows::initSoftmaxConstants(WarpEmitter &e) {
  scaleLog2 = e.fmul(s.scale, e.f32c(llvm::numbers::log2e));
  Value myRow = e.add(e.add(block.q0, e.mul(ids.warp, e.i32c(16))), ids.g);
  rows = {myRow, e.add(myRow, e.i32c(8))};
  minusInf = e.f32c(-std::numeric_limits<double>::infinity());
  zeroF = e.f32c(0.0);
}

std::array<Value, 2> onlineSoftmaxStep(WarpEmitter &w, const ForwardRows &r,
                                       MutableArrayRef<Quad> scores, Value k0,
                                       ValueRange mAndL, MutableArrayRef<Value> next) {
  const int64_t keyTiles = static_cast<int64_t>(scores.size());
  Value minusInf = r.minusInf, zeroF = r.zeroF;
  Value colBase = w.add(k0, w.mul(r.ids.t, w.i32c(2)));
  for (int64_t nt = 0; nt < keyTiles; ++nt)
    for (int j = 0; j < 4; ++j) {
      Value col = w.add(colBase, w.i32c(nt * 8 + j % 2));
      Value valid = w.lt(col, r.s.kLen);
      if (r.config->causal)
        valid = w.andi(valid, w.le(col, r.rows[j / 2]));
      scores[nt][j] = w.select(valid, w.fmul(scores[nt][j], r.scaleLog2), minusInf);
    }

  std::array<Value, 2> alpha;
  for (int h = 0; h < 2; ++h) {
    Value rowMax = minusInf;
    for (int64_t nt = 0; nt < keyTiles; ++nt)
      rowMax = w.fmax(rowMax, w.fmax(scores[nt][2 * h], scores[nt][2 * h + 1]));
    rowMax = w.quadMax(rowMax);
    Value mNew = w.fmax(mAndL[h], rowMax);
    // A row that has seen no key yet keeps m = -inf; exp2 uses 0 then.
    Value mUse = w.select(w.feq(mNew, minusInf), zeroF, mNew);
    alpha[h] = w.exp2(w.fsub(mAndL[h], mUse));
    Value rowSum = zeroF;
    for (int64_t nt = 0; nt < keyTiles; ++nt)
      for (int j = 2 * h; j < 2 * h + 2; ++j) {
        scores[nt][j] = w.exp2(w.fsub(scores[nt][j], mUse));
        rowSum = w.fadd(rowSum, scores[nt][j]);
      }
    next[h] = mNew;
    next[2 + h] = w.fadd(w.fmul(mAndL[2 + h], alpha[h]), rowSum);
  }
  return alpha;
}

void storeForwardOutput(WarpEmitter &e, const ForwardRows &r, ValueRange state,
                        Value out, Value lse) {
  ImplicitLocOpBuilder &b = e.b;
  const int64_t d = r.config->headDim, dTiles = d / 8;
  Value minusInf = r.minusInf, zeroF = r.zeroF, t = r.ids.t;
  Value outBytes = e.mul(e.toI64(r.block.qRow0), r.block.rowBytes);
  Value outTile = e.globalAt(out, outBytes);
  Value lseTile = e.globalAt(lse, e.mul(e.toI64(r.block.qRow0), e.i64c(4)));
  for (int h = 0; h < 2; ++h) {
    Value rowSum = e.quadSum(state[2 + h]);
    Value positive = e.fgt(rowSum, zeroF);
    Value inverse = e.select(positive, arith::DivFOp::create(b, e.f32c(1.0), rowSum), zeroF);
    Value mUse = e.select(e.feq(state[h], minusInf), zeroF, state[h]);
    Value rowLse = e.fmul(e.fadd(mUse, e.log2(rowSum)), e.f32c(llvm::numbers::ln2));
    Value localRow = e.add(e.add(e.mul(r.ids.warp, e.i32c(16)), r.ids.g), e.i32c(8 * h));
    SmallVector<Value> packed;
    for (int64_t dt = 0; dt < dTiles; ++dt)
      packed.push_back(e.pack(e.fmul(state[4 + dt * 4 + 2 * h], inverse),
                              e.fmul(state[5 + dt * 4 + 2 * h], inverse)));
    e.ifThen(e.lt(localRow, r.block.qValid), [&] {
      Value rowStart = e.mul(e.add(e.mul(localRow, e.i32c(d)), e.mul(t, e.i32c(2))), e.i32c(2));
      for (int64_t dt = 0; dt < dTiles; ++dt)
        e.store(packed[dt], e.globalAt(outTile, e.toI64(e.add(rowStart, e.i32c(dt * 16)))), 4);
      e.ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, t, e.i32c(0)), [&] {
        e.store(rowLse, e.globalAt(lseTile, e.toI64(e.mul(localRow, e.i32c(4)))), 4);
      });
    });
  }
}

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

  ForwardRows r{&config, s, LaneIds(e), QueryBlock(e, s, blockQ, d), {}, {}, {}, {}};
  Value tid = r.ids.tid, warp = r.ids.warp, lane = r.ids.lane;
  // Q, K, V as padded tiles for ldmatrix: Q, then K, then V.
  const int64_t smemK = blockQ * pitch, smemV = smemK + blockK * pitch;
  e.copyTile(e.globalAt(q, r.block.qBytes), r.block.qValid, blockQ, d, e.i32c(0), pitch,
             tid, threads);
  e.barrier();
  Value warpRows = e.mul(warp, e.i32c(16 * pitch));
  SmallVector<Quad> qFrag = e.loadA(e.add(warpRows, e.laneOffsetA(lane, pitch)), kSteps);
  Value kLane = e.laneOffsetB(lane, pitch), vLane = e.laneOffsetBTransposed(lane, pitch);

  Value kEnd = config.causal ? e.minsi(s.kLen, e.add(r.block.q0, e.i32c(blockQ))) : s.kLen;
  Value keyBlocks = e.ceilDiv(kEnd, blockK);
  r.initSoftmaxConstants(e);

  // Loop state: m[2], l[2] (per-thread partial sums), acc[dTiles][4].
  SmallVector<Value> init = {r.minusInf, r.minusInf, r.zeroF, r.zeroF};
  init.append(dTiles * 4, r.zeroF);
  auto loop = scf::ForOp::create(
      b, e.i32c(0), keyBlocks, e.i32c(1), init,
      [&](OpBuilder &nested, Location loc, Value kb, ValueRange state) {
        ImplicitLocOpBuilder lb(loc, nested);
        WarpEmitter w(lb, config.bf16);
        Value k0 = w.mul(kb, w.i32c(blockK));
        Value kValid = w.minsi(w.i32c(blockK), w.sub(s.kLen, k0));
        Value kvBytes = w.mul(w.toI64(w.add(r.block.kvRow0, k0)), r.block.rowBytes);
        w.barrier(); // every warp is done with the previous K and V tiles
        w.copyTile(w.globalAt(k, kvBytes), kValid, blockK, d, w.i32c(smemK), pitch, tid, threads);
        w.copyTile(w.globalAt(v, kvBytes), kValid, blockK, d, w.i32c(smemV), pitch, tid, threads);
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
