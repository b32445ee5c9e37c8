// The split-KV decode kernels (flash decoding): a CTA of the split kernel
// owns every query row of one (batch, kv head), the q heads of its GQA group
// times q_len (group * q_len <= decodeRows, zero-padded), and one split of
// the keys; it streams that split's K and V once through shared memory (16-byte
// loads, all of a tile's loads issued before its stores), computes S = Q K^T
// and O += P V with mma.sync m16n8k16 and an online softmax, and writes the
// split's f32 partial O (normalised) and log-sum-exp. The combine kernel
// merges the splits of one query row by log-sum-exp into O and lse.
#include "ForwardParts.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;

namespace weft::gpu {

namespace {

/// Copies rows [0, blockK) of a K tile and a V tile (rows at or past
/// `validRows` as zeros) into shared memory: every 16-byte load of both
/// tiles first, then the stores, so each thread has all its loads in flight.
void streamKvTiles(WarpEmitter &w, std::array<Value, 2> globals, Value globalPitch,
                   Value validRows, int64_t rows, int64_t cols,
                   std::array<int64_t, 2> sharedOffsets, int64_t sharedPitch, Value tid,
                   int64_t threads) {
  const int64_t chunksPerRow = cols / 8, chunks = rows * chunksPerRow;
  Value zero = LLVM::ZeroOp::create(w.b, w.v4i32);
  SmallVector<std::pair<Value, Value>> pending; // (value, shared byte)
  for (int tile = 0; tile < 2; ++tile)
    for (int64_t first = 0; first < chunks; first += threads) {
      // rows * cols / 8 is a multiple of the thread count (checked by the
      // configuration), so every thread has a chunk.
      Value chunk = w.add(tid, w.i32c(first));
      Value row = w.divu(chunk, w.i32c(chunksPerRow));
      Value column = arith::RemUIOp::create(w.b, chunk, w.i32c(chunksPerRow));
      Value inRange = w.lt(row, validRows);
      Value safeRow = w.select(inRange, row, w.i32c(0));
      Value byteOffset = w.add(w.mul(safeRow, globalPitch), w.mul(column, w.i32c(16)));
      Value value = w.load(w.v4i32, w.globalAt(globals[tile], w.toI64(byteOffset)), 16);
      Value shared = w.add(w.i32c(sharedOffsets[tile]),
                           w.add(w.mul(row, w.i32c(sharedPitch)), w.mul(column, w.i32c(16))));
      pending.push_back({w.select(inRange, value, zero), shared});
    }
  for (auto [value, shared] : pending)
    w.store(value, w.sharedAt(shared), 16);
}

} // namespace

int64_t decodeSplitThreads(const AttentionKernelConfig &config) {
  return config.decodeRows / 16 * 32;
}

void emitDecodeSplitBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config) {
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToEnd(&func.getBody().front());
  WarpEmitter e(b, config.bf16);
  Value q = func.getArgument(0), k = func.getArgument(1), v = func.getArgument(2);
  Value oPartial = func.getArgument(3), lsePartial = func.getArgument(4);
  KernelScalars s = KernelScalars::of(func, 5);
  Value keysPerSplit = func.getArgument(12);
  const int64_t d = config.headDim, blockK = config.blockK, rowsPadded = config.decodeRows;
  const int64_t pitch = tilePitch(d), threads = decodeSplitThreads(config);
  const int64_t kSteps = d / 16, keyTiles = blockK / 8, dTiles = d / 8;
  const int64_t smemK = rowsPadded * pitch, smemV = smemK + blockK * pitch;

  // grid: x = split, y = kv head, z = batch. The group's q heads are
  // consecutive, so its group * q_len query rows are one contiguous block.
  ForwardRows r{&config, s, LaneIds(e), QueryBlock(e, s, 16), {}, {}, {}, {}};
  Value tid = r.ids.tid, warp = r.ids.warp, lane = r.ids.lane;
  Value split = e.blockId(0), kvHead = e.blockId(1), batch = e.blockId(2);
  Value group = e.divu(s.qHeads, s.kvHeads);
  Value headFirst = e.mul(kvHead, group);
  Value validRows = e.mul(group, s.qLen);
  Value row0 = e.mul(e.add(e.mul(batch, s.qHeads), headFirst), s.qLen);
  TensorRows qRows(e, config, s, AttentionOperand::Q), kRows(e, config, s, AttentionOperand::K),
      vRows(e, config, s, AttentionOperand::V);
  e.copyTile(e.globalAt(q, qRows.at(e, batch, headFirst, e.i32c(0))), qRows.pitch, validRows,
             rowsPadded, d, e.i32c(0), pitch, tid, threads);

  r.initSoftmaxConstants(e);
  // Row m = head_in_group * q_len + i; bottom-right causal: query i sees keys
  // j <= i + k_len - q_len. onlineSoftmaxStep masks col > rows[h] when causal.
  Value lastKey = e.sub(s.kLen, s.qLen);
  for (int h = 0; h < 2; ++h) {
    Value m = e.add(e.add(e.mul(warp, e.i32c(16)), r.ids.g), e.i32c(8 * h));
    Value i = arith::RemUIOp::create(b, m, s.qLen);
    r.rows[h] = e.add(i, lastKey);
  }
  // Keys a whole block may see unmasked: up to k_len - q_len when causal.
  Value unmaskedEnd = config.causal ? e.add(lastKey, e.i32c(1)) : s.kLen;

  Value kStart = e.mul(split, keysPerSplit);
  Value kStop = e.minsi(s.kLen, e.add(kStart, keysPerSplit));
  Value keyBlocks = e.ceilDiv(e.sub(kStop, kStart), blockK);
  Value kLane = e.laneOffsetB(lane, pitch), vLane = e.laneOffsetBTransposed(lane, pitch);
  Value warpRows = e.add(e.mul(warp, e.i32c(16 * pitch)), e.laneOffsetA(lane, pitch));
  e.barrier();
  // Q's fragments stay in registers at head_dim 64; above, they are re-read
  // from shared memory each block (8 or 16 ldmatrix per warp), which leaves
  // the room for the accumulator and the block's 16 loads in flight (at 128
  // in registers they spilled).
  bool qInRegisters = d <= 64;
  SmallVector<Quad> qFrag;
  if (qInRegisters)
    qFrag = e.loadA(warpRows, kSteps);

  SmallVector<Value> init = r.initialLoopState(dTiles);
  auto loop = scf::ForOp::create(
      b, e.i32c(0), keyBlocks, e.i32c(1), init,
      [&](OpBuilder &nested, Location loc, Value kb, ValueRange state) {
        ImplicitLocOpBuilder lb(loc, nested);
        WarpEmitter w(lb, config.bf16);
        Value k0 = w.add(kStart, w.mul(kb, w.i32c(blockK)));
        Value kValid = w.minsi(w.i32c(blockK), w.sub(s.kLen, k0));
        w.barrier(); // every warp is done with the previous K and V tiles
        streamKvTiles(w,
                      {w.globalAt(k, kRows.at(w, batch, kvHead, k0)),
                       w.globalAt(v, vRows.at(w, batch, kvHead, k0))},
                      kRows.pitch, kValid, blockK, d, {smemK, smemV}, pitch, tid, threads);
        w.barrier();
        SmallVector<Quad> a = qInRegisters ? qFrag : w.loadA(warpRows, kSteps);
        SmallVector<Quad> scores = w.mmaABt(a, w.i32c(smemK), kLane, keyTiles, pitch);
        Value maskNeeded = w.lt(unmaskedEnd, w.add(k0, w.i32c(blockK)));
        SmallVector<Value> next(state.begin(), state.end());
        std::array<Value, 2> alpha = onlineSoftmaxStep(w, r, scores, k0, state, next, maskNeeded);
        SmallVector<Quad> acc(dTiles);
        for (int64_t dt = 0; dt < dTiles; ++dt)
          for (int j = 0; j < 4; ++j)
            acc[dt][j] = w.fmul(state[4 + dt * 4 + j], alpha[j / 2]);
        w.mmaAB(w.toA(scores), w.i32c(smemV), vLane, acc, pitch);
        for (int64_t dt = 0; dt < dTiles; ++dt)
          for (int j = 0; j < 4; ++j)
            next[4 + dt * 4 + j] = acc[dt][j];
        scf::YieldOp::create(lb, next);
      });

  // The split's partial O (normalised by its own row sum) and lse, f32:
  // o_partial [num_splits, rows, d], lse_partial [num_splits, rows] with rows
  // = batch * q_heads * q_len (the query rows in [b, h, s] order).
  ValueRange state = loop.getResults();
  Value totalRows = e.mul(e.mul(s.batch, s.qHeads), s.qLen);
  Value t = r.ids.t;
  for (int h = 0; h < 2; ++h) {
    Value rowSum = e.quadSum(state[2 + h]);
    Value positive = e.fgt(rowSum, r.zeroF);
    Value inverse = e.select(positive, arith::DivFOp::create(b, e.f32c(1.0), rowSum), r.zeroF);
    Value mUse = e.select(e.feq(state[h], r.minusInf), r.zeroF, state[h]);
    Value rowLse = e.select(positive,
                            e.fmul(e.fadd(mUse, e.log2(rowSum)), e.f32c(llvm::numbers::ln2)),
                            r.minusInf);
    Value m = e.add(e.add(e.mul(warp, e.i32c(16)), r.ids.g), e.i32c(8 * h));
    e.ifThen(e.lt(m, validRows), [&] {
      Value flatRow = e.add(e.mul(e.toI64(split), e.toI64(totalRows)), e.toI64(e.add(row0, m)));
      Value rowAt = e.globalAt(oPartial, e.mul(flatRow, e.i64c(d * 4)));
      for (int64_t dt = 0; dt < dTiles; ++dt)
        for (int j = 0; j < 2; ++j) {
          Value column = e.add(e.mul(t, e.i32c(2)), e.i32c(dt * 8 + j));
          e.store(e.fmul(state[4 + dt * 4 + 2 * h + j], inverse),
                  e.globalAt(rowAt, e.toI64(e.mul(column, e.i32c(4)))), 4);
        }
      e.ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, t, e.i32c(0)), [&] {
        e.store(rowLse, e.globalAt(lsePartial, e.mul(flatRow, e.i64c(4))), 4);
      });
    });
  }
  mlir::gpu::ReturnOp::create(b);
}

void emitDecodeCombineBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config) {
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToEnd(&func.getBody().front());
  WarpEmitter e(b, config.bf16);
  Value oPartial = func.getArgument(0), lsePartial = func.getArgument(1);
  Value out = func.getArgument(2), lse = func.getArgument(3);
  KernelScalars s = KernelScalars::of(func, 4);
  Value numSplits = func.getArgument(10);
  const int64_t d = config.headDim;
  // grid x = query row (of batch * q_heads * q_len), d / 4 threads of 4
  // columns each.
  Value row = e.blockId(0), tid = e.threadIdX();
  Value totalRows = e.toI64(e.mul(e.mul(s.batch, s.qHeads), s.qLen));
  Value minusInf = e.f32c(-std::numeric_limits<double>::infinity());
  Value zeroF = e.f32c(0.0);
  auto lseOf = [&](WarpEmitter &w, Value split) {
    Value flat = w.add(w.mul(w.toI64(split), totalRows), w.toI64(row));
    return std::make_pair(w.load(w.f32, w.globalAt(lsePartial, w.mul(flat, w.i64c(4))), 4),
                          flat);
  };
  auto maxLoop = scf::ForOp::create(
      b, e.i32c(0), numSplits, e.i32c(1), ValueRange{minusInf},
      [&](OpBuilder &nested, Location loc, Value split, ValueRange state) {
        ImplicitLocOpBuilder lb(loc, nested);
        WarpEmitter w(lb, config.bf16);
        scf::YieldOp::create(lb, ValueRange{w.fmax(state[0], lseOf(w, split).first)});
      });
  Value maxLse = maxLoop.getResult(0);
  Value mUse = e.select(e.feq(maxLse, minusInf), zeroF, maxLse);
  Value log2e = e.f32c(llvm::numbers::log2e);
  VectorType v4f32 = VectorType::get({4}, e.f32);
  SmallVector<Value> init(5, zeroF);
  auto sumLoop = scf::ForOp::create(
      b, e.i32c(0), numSplits, e.i32c(1), init,
      [&](OpBuilder &nested, Location loc, Value split, ValueRange state) {
        ImplicitLocOpBuilder lb(loc, nested);
        WarpEmitter w(lb, config.bf16);
        auto [splitLse, flat] = lseOf(w, split);
        // A split whose rows saw no key has lse -inf and weight 0.
        Value weight = w.exp2(w.fmul(w.fsub(splitLse, mUse), log2e));
        Value at = w.add(w.mul(flat, w.i64c(d * 4)), w.toI64(w.mul(tid, w.i32c(16))));
        Value partial = w.load(v4f32, w.globalAt(oPartial, at), 16);
        SmallVector<Value> next;
        next.push_back(w.fadd(state[0], weight));
        for (int j = 0; j < 4; ++j) {
          Value element = LLVM::ExtractElementOp::create(lb, partial, w.i32c(j));
          next.push_back(w.fadd(state[1 + j], w.fmul(weight, element)));
        }
        scf::YieldOp::create(lb, next);
      });
  Value weightSum = sumLoop.getResult(0);
  Value positive = e.fgt(weightSum, zeroF);
  Value inverse = e.select(positive, arith::DivFOp::create(b, e.f32c(1.0), weightSum), zeroF);
  Value outAt = e.globalAt(
      out, e.add(e.mul(e.toI64(row), e.i64c(d * 2)), e.toI64(e.mul(tid, e.i32c(8)))));
  for (int j = 0; j < 2; ++j) {
    Value packed = e.pack(e.fmul(sumLoop.getResult(1 + 2 * j), inverse),
                          e.fmul(sumLoop.getResult(2 + 2 * j), inverse));
    e.store(packed, e.globalAt(outAt, e.i64c(4 * j)), 4);
  }
  Value rowLse = e.select(
      positive, e.fadd(mUse, e.fmul(e.log2(weightSum), e.f32c(llvm::numbers::ln2))), minusInf);
  e.ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, e.i32c(0)), [&] {
    e.store(rowLse, e.globalAt(lse, e.mul(e.toI64(row), e.i64c(4))), 4);
  });
  mlir::gpu::ReturnOp::create(b);
}

} // namespace weft::gpu
