// The FlashAttention-2 forward kernel: a CTA owns block_q query rows of one
// (batch, q head), 16 per warp; it walks the key blocks the rows see (causal
// block skipping), S = Q K^T and O += P V with mma.sync m16n8k16, an online
// softmax in registers (exp2 of log2-scaled scores), and writes O and the
// row log-sum-exp. The warpgroup-MMA variant double-buffers K and V and
// prefetches the next key block by cp.async while the current one computes.
#include "KernelBodies.h"
#include "WarpEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace weft::gpu {

namespace {

/// S = Q K^T for the warpgroup's 64 rows: Q as register fragments, K
/// (core-matrix layout, K-major) by descriptor: cores along d are 128 bytes
/// apart, 8-key groups d * 16 bytes; k-step j starts 2 cores (256 bytes) on.
SmallVector<Quad> scoresByWarpgroup(WarpEmitter &w, ArrayRef<Quad> qFrag,
                                    Value smemK, int64_t keyTiles, int64_t d) {
  Value zero = w.f32c(0.0);
  SmallVector<Value> acc(keyTiles * 4, zero);
  w.wgmmaFence();
  for (size_t step = 0; step < qFrag.size(); ++step) {
    Value descriptor = w.matrixDescriptor(
        w.add(smemK, w.i32c(256 * static_cast<int64_t>(step))), 128, d * 16);
    acc = w.wgmma(acc, qFrag[step], descriptor, keyTiles * 8, /*transposeB=*/false,
                  /*accumulate=*/step != 0);
  }
  w.wgmmaCommit();
  w.wgmmaWait(0);
  SmallVector<Quad> tiles(keyTiles);
  for (int64_t i = 0; i < keyTiles * 4; ++i)
    tiles[i / 4][i % 4] = acc[i];
  return tiles;
}

/// O += P V: P as register fragments, V (core-matrix layout, read MN-major)
/// by descriptor: 8-key groups d * 16 bytes apart (leading, along k), cores
/// along d 128 bytes apart (stride, along n); k-step j starts 2 groups on.
void accumulateByWarpgroup(WarpEmitter &w, ArrayRef<Quad> pFrag, Value smemV,
                           MutableArrayRef<Quad> out, int64_t d) {
  SmallVector<Value> acc;
  for (const Quad &quad : out)
    acc.append(quad.begin(), quad.end());
  w.wgmmaFence();
  for (size_t step = 0; step < pFrag.size(); ++step) {
    Value descriptor = w.matrixDescriptor(
        w.add(smemV, w.i32c(32 * d * static_cast<int64_t>(step))), d * 16, 128);
    acc = w.wgmma(acc, pFrag[step], descriptor, d, /*transposeB=*/true,
                  /*accumulate=*/true);
  }
  w.wgmmaCommit();
  w.wgmmaWait(0);
  for (size_t i = 0; i < acc.size(); ++i)
    out[i / 4][i % 4] = acc[i];
}

} // namespace

void emitForwardBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config) {
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToEnd(&func.getBody().front());
  WarpEmitter e(b, config.bf16);
  Value q = func.getArgument(0), k = func.getArgument(1), v = func.getArgument(2);
  Value out = func.getArgument(3), lse = func.getArgument(4);
  KernelScalars s = KernelScalars::of(func, 5);
  const int64_t d = config.headDim, blockQ = config.blockQ, blockK = config.blockK;
  const int64_t pitch = tilePitch(d), threads = blockQ / 16 * 32;
  const int64_t kSteps = d / 16, keyTiles = blockK / 8, dTiles = d / 8;
  const double inf = std::numeric_limits<double>::infinity();

  LaneIds ids(e);
  Value tid = ids.tid, warp = ids.warp, lane = ids.lane, g = ids.g, t = ids.t;
  QueryBlock block(e, s, blockQ, d);
  Value q0 = block.q0, qValid = block.qValid, qRow0 = block.qRow0;
  Value kvRow0 = block.kvRow0, rowBytes = block.rowBytes, qBytes = block.qBytes;
  // mma.sync: Q, K, V as padded tiles for ldmatrix. Warpgroup MMA: K and V
  // as core matrices for wgmma descriptors in two stages (K, V of block j
  // at (j % 2) * 2 * kvTileBytes) so block j + 1 streams in by cp.async
  // while block j is computed; Q is only read once into registers, so its
  // padded tile borrows stage 1 (wgmmaForwardSmemBytes).
  const bool hopper = config.warpgroupMma;
  const int64_t kvTileBytes = hopper ? blockK * d * 2 : blockK * pitch;
  const int64_t smemK = hopper ? 0 : blockQ * pitch, smemV = smemK + kvTileBytes;
  const int64_t smemQ = hopper ? 2 * kvTileBytes : 0;
  auto countKeyBlocks = [&] {
    Value kEnd = config.causal ? e.minsi(s.kLen, e.add(q0, e.i32c(blockQ))) : s.kLen;
    return e.ceilDiv(kEnd, blockK);
  };
  // Starts the cp.async of K and V of key block `kb` into stage `stage`.
  auto prefetchKeyBlock = [&](WarpEmitter &w, Value kb, Value stage) {
    Value k0 = w.mul(kb, w.i32c(blockK));
    Value kValid = w.minsi(w.i32c(blockK), w.sub(s.kLen, k0));
    Value kvBytes = w.mul(w.toI64(w.add(kvRow0, k0)), rowBytes);
    Value stageK = w.add(w.i32c(smemK), w.mul(stage, w.i32c(2 * kvTileBytes)));
    w.copyTileCoresAsync(w.globalAt(k, kvBytes), kValid, blockK, d, stageK, tid, threads);
    w.copyTileCoresAsync(w.globalAt(v, kvBytes), kValid, blockK, d,
                         w.add(stageK, w.i32c(kvTileBytes)), tid, threads);
  };

  Value keyBlocks;
  if (hopper) {
    // Registers bound the CTAs per SM (65536 / (threads x registers)):
    // ask ptxas for 3 at d = 128 (<= 168 registers) and 4 at d = 64 (<= 128),
    // or fewer where the shared memory (228 KB per SM, 1 KB reserved per
    // CTA) does not hold that many.
    int64_t smemFit = 228 * 1024 / (wgmmaForwardSmemBytes(config) + 1024);
    // With two warpgroups (block_q = 128) a CTA has twice the threads.
    int64_t warpgroups = blockQ / 64;
    int64_t ctasPerSm = std::max<int64_t>(
        1, std::min<int64_t>((d > 64 ? 3 : 4) / warpgroups, smemFit));
    func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                  b.getI32IntegerAttr(static_cast<int32_t>(ctasPerSm)));
    // Block 0's K and V fly while Q is loaded through registers; one wait,
    // the async-proxy fence (wgmma reads what cp.async wrote through the
    // generic proxy) and the barrier publish all three.
    keyBlocks = countKeyBlocks();
    e.ifThen(e.lt(e.i32c(0), keyBlocks), [&] { prefetchKeyBlock(e, e.i32c(0), e.i32c(0)); });
    e.cpAsyncCommit();
    e.copyTile(e.globalAt(q, qBytes), qValid, blockQ, d, e.i32c(smemQ), pitch, tid, threads);
    e.cpAsyncWait(0);
    e.fenceSharedToAsyncProxy();
    e.barrier();
  } else {
    e.copyTile(e.globalAt(q, qBytes), qValid, blockQ, d, e.i32c(0), pitch, tid, threads);
    e.barrier();
  }
  Value warpRows = e.mul(warp, e.i32c(16 * pitch));
  if (hopper)
    warpRows = e.add(warpRows, e.i32c(smemQ));
  SmallVector<Quad> qFrag = e.loadA(e.add(warpRows, e.laneOffsetA(lane, pitch)), kSteps);
  // Every warp holds its Q fragments before the first prefetch into stage 1.
  if (hopper)
    e.barrier();
  Value kLane = e.laneOffsetB(lane, pitch), vLane = e.laneOffsetBTransposed(lane, pitch);

  if (!hopper)
    keyBlocks = countKeyBlocks();
  Value scaleLog2 = e.fmul(s.scale, e.f32c(llvm::numbers::log2e));
  // Query index of this lane's two accumulator rows.
  Value myRow = e.add(e.add(q0, e.mul(warp, e.i32c(16))), g);
  std::array<Value, 2> rows = {myRow, e.add(myRow, e.i32c(8))};
  Value minusInf = e.f32c(-inf), zeroF = e.f32c(0.0);

  // Loop state: m[2], l[2] (per-thread partial sums), acc[dTiles][4].
  SmallVector<Value> init = {minusInf, minusInf, zeroF, zeroF};
  init.append(dTiles * 4, zeroF);
  auto loop = scf::ForOp::create(
      b, e.i32c(0), keyBlocks, e.i32c(1), init,
      [&](OpBuilder &nested, Location loc, Value kb, ValueRange state) {
        ImplicitLocOpBuilder lb(loc, nested);
        WarpEmitter w(lb, config.bf16);
        Value k0 = w.mul(kb, w.i32c(blockK));
        Value kValid = w.minsi(w.i32c(blockK), w.sub(s.kLen, k0));
        Value stageK, stageV;
        if (hopper) {
          // Block kb sits in stage kb % 2, published by the previous
          // iteration's (or the prologue's) wait, fence and barrier. The
          // other stage was last read by block kb - 1's wgmmas, which every
          // thread waited for before that barrier: free to overwrite.
          Value stage = w.andi(kb, w.i32c(1));
          stageK = w.add(w.i32c(smemK), w.mul(stage, w.i32c(2 * kvTileBytes)));
          stageV = w.add(stageK, w.i32c(kvTileBytes));
          Value nextKb = w.add(kb, w.i32c(1));
          w.ifThen(w.lt(nextKb, keyBlocks), [&] {
            prefetchKeyBlock(w, nextKb, w.sub(w.i32c(1), stage));
          });
          w.cpAsyncCommit();
        } else {
          Value kvBytes = w.mul(w.toI64(w.add(kvRow0, k0)), rowBytes);
          w.barrier(); // every warp is done with the previous K and V tiles
          w.copyTile(w.globalAt(k, kvBytes), kValid, blockK, d, w.i32c(smemK), pitch, tid, threads);
          w.copyTile(w.globalAt(v, kvBytes), kValid, blockK, d, w.i32c(smemV), pitch, tid, threads);
          w.barrier();
        }

        // S = Q K^T, 16 x blockK per warp.
        SmallVector<Quad> scores =
            hopper ? scoresByWarpgroup(w, qFrag, stageK, keyTiles, d)
                   : w.mmaABt(qFrag, w.i32c(smemK), kLane, keyTiles, pitch);

        // Scale to log2 units and mask keys past k_len (and above the
        // diagonal when causal) to -inf.
        Value colBase = w.add(k0, w.mul(t, w.i32c(2)));
        for (int64_t nt = 0; nt < keyTiles; ++nt)
          for (int j = 0; j < 4; ++j) {
            Value col = w.add(colBase, w.i32c(nt * 8 + j % 2));
            Value valid = w.lt(col, s.kLen);
            if (config.causal)
              valid = w.andi(valid, w.le(col, rows[j / 2]));
            scores[nt][j] = w.select(valid, w.fmul(scores[nt][j], scaleLog2), minusInf);
          }

        SmallVector<Value> next(state.begin(), state.end());
        std::array<Value, 2> alpha;
        for (int h = 0; h < 2; ++h) {
          Value rowMax = minusInf;
          for (int64_t nt = 0; nt < keyTiles; ++nt)
            rowMax = w.fmax(rowMax, w.fmax(scores[nt][2 * h], scores[nt][2 * h + 1]));
          rowMax = w.quadMax(rowMax);
          Value mNew = w.fmax(state[h], rowMax);
          // A row that has seen no key yet keeps m = -inf; exp2 uses 0 then.
          Value mUse = w.select(w.feq(mNew, minusInf), zeroF, mNew);
          alpha[h] = w.exp2(w.fsub(state[h], mUse));
          Value rowSum = zeroF;
          for (int64_t nt = 0; nt < keyTiles; ++nt)
            for (int j = 2 * h; j < 2 * h + 2; ++j) {
              scores[nt][j] = w.exp2(w.fsub(scores[nt][j], mUse));
              rowSum = w.fadd(rowSum, scores[nt][j]);
            }
          next[h] = mNew;
          next[2 + h] = w.fadd(w.fmul(state[2 + h], alpha[h]), rowSum);
        }
        for (int64_t dt = 0; dt < dTiles; ++dt)
          for (int j = 0; j < 4; ++j)
            next[4 + dt * 4 + j] = w.fmul(state[4 + dt * 4 + j], alpha[j / 2]);

        // O += P V.
        SmallVector<Quad> acc(dTiles);
        for (int64_t dt = 0; dt < dTiles; ++dt)
          for (int j = 0; j < 4; ++j)
            acc[dt][j] = next[4 + dt * 4 + j];
        if (hopper) {
          accumulateByWarpgroup(w, w.toA(scores), stageV, acc, d);
          // Publish block kb + 1 (this thread's copies landed, fenced to
          // the async proxy); past this barrier no wgmma reads stage kb % 2.
          w.cpAsyncWait(0);
          w.fenceSharedToAsyncProxy();
          w.barrier();
        } else {
          w.mmaAB(w.toA(scores), w.i32c(smemV), vLane, acc, pitch);
        }
        for (int64_t dt = 0; dt < dTiles; ++dt)
          for (int j = 0; j < 4; ++j)
            next[4 + dt * 4 + j] = acc[dt][j];
        scf::YieldOp::create(lb, next);
      });

  // Epilogue: finish the row sums across the quad, normalise, store.
  ValueRange state = loop.getResults();
  Value outBytes = e.mul(e.toI64(qRow0), rowBytes);
  Value outTile = e.globalAt(out, outBytes);
  Value lseTile = e.globalAt(lse, e.mul(e.toI64(qRow0), e.i64c(4)));
  for (int h = 0; h < 2; ++h) {
    Value rowSum = e.quadSum(state[2 + h]);
    Value positive = e.fgt(rowSum, zeroF);
    Value inverse = e.select(positive, arith::DivFOp::create(b, e.f32c(1.0), rowSum), zeroF);
    Value mUse = e.select(e.feq(state[h], minusInf), zeroF, state[h]);
    Value rowLse = e.fmul(e.fadd(mUse, e.log2(rowSum)), e.f32c(llvm::numbers::ln2));
    Value localRow = e.add(e.add(e.mul(warp, e.i32c(16)), g), e.i32c(8 * h));
    SmallVector<Value> packed;
    for (int64_t dt = 0; dt < dTiles; ++dt)
      packed.push_back(e.pack(e.fmul(state[4 + dt * 4 + 2 * h], inverse),
                              e.fmul(state[5 + dt * 4 + 2 * h], inverse)));
    e.ifThen(e.lt(localRow, qValid), [&] {
      Value rowStart = e.mul(e.add(e.mul(localRow, e.i32c(d)), e.mul(t, e.i32c(2))), e.i32c(2));
      for (int64_t dt = 0; dt < dTiles; ++dt)
        e.store(packed[dt], e.globalAt(outTile, e.toI64(e.add(rowStart, e.i32c(dt * 16)))), 4);
      e.ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, t, e.i32c(0)), [&] {
        e.store(rowLse, e.globalAt(lseTile, e.toI64(e.mul(localRow, e.i32c(4)))), 4);
      });
    });
  }
  mlir::gpu::ReturnOp::create(b);
}

} // namespace weft::gpu
