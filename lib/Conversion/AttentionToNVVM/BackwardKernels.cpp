// The FlashAttention-2 backward as three deterministic kernels (no atomics):
// delta = rowsum(dO * O); dK, dV per key block (a warp owns 16 keys and
// walks every query of the kv head's q-head group, so P^T and dS^T are
// built directly in the A-fragment layout); dQ per query block (the forward
// kernel's shape with dP = dO V^T and dQ += dS K). With dropout (factors F,
// 0 or 1 / (1 - p), redrawn by the forward's rule): dV += (P F)^T dO and
// dS = P (dP F - delta); delta = rowsum(dO * O) is unchanged.
#include "AttentionDropout.h"
#include "BackwardAtomicDq.h"
#include "KernelBodies.h"
#include "WarpEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>
#include <optional>
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace weft::gpu {

SmallVector<Value> flattenQuads(ArrayRef<Quad> quads) {
  SmallVector<Value> values;
  for (const Quad &quad : quads)
    values.append(quad.begin(), quad.end());
  return values;
}

SmallVector<Quad> toQuads(ValueRange values) {
  SmallVector<Quad> quads(values.size() / 4);
  for (size_t i = 0; i < values.size(); ++i)
    quads[i / 4][i % 4] = values[i];
  return quads;
}

void storeAccumulatorRows(WarpEmitter &e, const LaneIds &ids, ArrayRef<Quad> acc,
                          Value factor, Value tile, Value pitchElements, Value localRow0,
                          Value validRows) {
  for (int h = 0; h < 2; ++h) {
    Value row = e.add(e.add(localRow0, ids.g), e.i32c(8 * h));
    SmallVector<Value> packed;
    for (const Quad &quad : acc)
      packed.push_back(e.pack(e.fmul(quad[2 * h], factor), e.fmul(quad[2 * h + 1], factor)));
    e.ifThen(e.lt(row, validRows), [&] {
      // (row * pitch + 2 t) * 2 bytes, in this form: LLVM then leaves the
      // HeadMajor kernels' register allocation as it was (no spills).
      Value rowStart =
          e.mul(e.add(e.mul(row, pitchElements), e.mul(ids.t, e.i32c(2))), e.i32c(2));
      for (size_t dt = 0; dt < packed.size(); ++dt)
        e.store(packed[dt],
                e.globalAt(tile, e.toI64(e.add(rowStart, e.i32c(static_cast<int64_t>(dt) * 16)))),
                4);
    });
  }
}


void storeDkDv(WarpEmitter &e, const LaneIds &ids, const AttentionKernelConfig &config,
               const KernelScalars &s, ValueRange state, Value dk, Value dv, Value kvPlane,
               Value k0, Value localRow0, Value validRows, Value column0) {
  const int64_t half = static_cast<int64_t>(state.size()) / 2;
  TensorRows dkRows(e, config, s, AttentionOperand::DK), dvRows(e, config, s, AttentionOperand::DV);
  auto at = [&](Value tensor, const TensorRows &rows) {
    Value start = rows.atPlane(e, kvPlane, k0);
    if (column0)
      start = e.add(start, e.toI64(e.mul(column0, e.i32c(2))));
    return e.globalAt(tensor, start);
  };
  storeAccumulatorRows(e, ids, toQuads(state.take_front(half)), s.scale, at(dk, dkRows),
                       dkRows.pitchElements, localRow0, validRows);
  storeAccumulatorRows(e, ids, toQuads(state.drop_front(half)), e.f32c(1.0), at(dv, dvRows),
                       dvRows.pitchElements, localRow0, validRows);
}

void emitPreprocessBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config) {
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToEnd(&func.getBody().front());
  WarpEmitter e(b, config.bf16);
  Value out = func.getArgument(0), dout = func.getArgument(1), delta = func.getArgument(2);
  KernelScalars s = KernelScalars::of(func, 3);
  const int64_t rowsPerBlock = kPreprocessRows;
  Value row = e.add(e.mul(e.blockId(0), e.i32c(rowsPerBlock)), e.threadIdX());
  // out and dout share one layout ([b, q_heads, q_len, d] or its SeqMajor form).
  TensorRows outRows(e, config, s, AttentionOperand::Out);
  e.ifThen(e.lt(row, s.qLen), [&] {
    Value batch = e.blockId(2), head = e.blockId(1);
    Value flatRow = e.add(e.mul(e.add(e.mul(batch, s.qHeads), head), s.qLen), row);
    Value rowBytes = outRows.at(e, batch, head, row);
    Value sum = e.f32c(0.0);
    for (int64_t chunk = 0; chunk < config.headDim / 8; ++chunk) {
      Value offset = e.add(rowBytes, e.i64c(chunk * 16));
      Value o = e.load(e.v4i32, e.globalAt(out, offset), 16);
      Value g = e.load(e.v4i32, e.globalAt(dout, offset), 16);
      for (int word = 0; word < 4; ++word) {
        auto oPair = e.unpack(LLVM::ExtractElementOp::create(b, o, e.i32c(word)));
        auto gPair = e.unpack(LLVM::ExtractElementOp::create(b, g, e.i32c(word)));
        sum = e.fadd(sum, e.fadd(e.fmul(oPair[0], gPair[0]), e.fmul(oPair[1], gPair[1])));
      }
    }
    e.store(sum, e.globalAt(delta, e.mul(e.toI64(flatRow), e.i64c(4))), 4);
  });
  // The atomic-dQ backward's accumulator rows start at zero.
  if (config.atomicDq) {
    Value row0 = e.mul(e.blockId(0), e.i32c(rowsPerBlock));
    zeroDqAccumulatorRows(e, config, s, dqAccumulator(e, config, s, delta),
                          e.add(e.mul(e.blockId(2), s.qHeads), e.blockId(1)), row0,
                          e.minsi(e.i32c(rowsPerBlock), e.sub(s.qLen, row0)), e.threadIdX(),
                          rowsPerBlock);
  }
  mlir::gpu::ReturnOp::create(b);
}

void emitDkDvBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config) {
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToEnd(&func.getBody().front());
  WarpEmitter e(b, config.bf16);
  Value q = func.getArgument(0), k = func.getArgument(1), v = func.getArgument(2);
  Value dout = func.getArgument(3), lse = func.getArgument(4), delta = func.getArgument(5);
  Value dk = func.getArgument(6), dv = func.getArgument(7);
  KernelScalars s = KernelScalars::of(func, 8);
  const int64_t d = config.headDim, blockK = config.blockK, inner = dkdvInnerRows(config);
  const int64_t pitch = tilePitch(d), threads = blockK / 16 * 32;
  const int64_t dSteps = d / 16, dTiles = d / 8, queryTiles = inner / 8;
  const int64_t smemV = blockK * pitch, smemQ = 2 * blockK * pitch;
  const int64_t smemDout = smemQ + inner * pitch, smemLse = smemDout + inner * pitch;
  const int64_t smemDelta = smemLse + inner * 4;
  const double inf = std::numeric_limits<double>::infinity();

  LaneIds ids(e);
  Value kvHead = e.blockId(1), batch = e.blockId(2);
  Value group = e.divu(s.qHeads, s.kvHeads);
  Value k0 = e.mul(e.blockId(0), e.i32c(blockK));
  Value kValid = e.minsi(e.i32c(blockK), e.sub(s.kLen, k0));
  TensorRows kRows(e, config, s, AttentionOperand::K), vRows(e, config, s, AttentionOperand::V);
  TensorRows qRows(e, config, s, AttentionOperand::Q), doutRows(e, config, s, AttentionOperand::DOut);
  e.copyTile(e.globalAt(k, kRows.at(e, batch, kvHead, k0)), kRows.pitch, kValid, blockK, d,
             e.i32c(0), pitch, ids.tid, threads);
  e.copyTile(e.globalAt(v, vRows.at(e, batch, kvHead, k0)), vRows.pitch, kValid, blockK, d,
             e.i32c(smemV), pitch, ids.tid, threads);

  Value warpRows = e.add(e.mul(ids.warp, e.i32c(16 * pitch)), e.laneOffsetA(ids.lane, pitch));
  Value laneB = e.laneOffsetB(ids.lane, pitch);
  Value laneBt = e.laneOffsetBTransposed(ids.lane, pitch);
  Value scaleLog2 = e.fmul(s.scale, e.f32c(llvm::numbers::log2e));
  Value myKey = e.add(e.add(k0, e.mul(ids.warp, e.i32c(16))), ids.g);
  std::array<Value, 2> keys = {myKey, e.add(myKey, e.i32c(8))};
  Value zeroF = e.f32c(0.0);
  // Causal: query i sees key j iff j <= i, so this key block's first query
  // block is the one holding query k0.
  Value firstQueryBlock = config.causal ? e.divu(k0, e.i32c(inner)) : e.i32c(0);
  Value queryBlocks = e.ceilDiv(s.qLen, inner);
  std::optional<AttentionDropout> dropout;
  Value keyInQuad;
  if (config.dropoutP > 0.0) {
    dropout.emplace(e, config, func.getArguments().back(), s.kLen, s.qHeads, s.qLen);
    keyInQuad = arith::AndIOp::create(b, ids.g, e.i32c(3));
  }

  // State: dK[dTiles] then dV[dTiles] accumulators.
  SmallVector<Value> init(2 * dTiles * 4, zeroF);
  auto headLoop = scf::ForOp::create(
      b, e.i32c(0), group, e.i32c(1), init,
      [&](OpBuilder &nested, Location loc, Value gi, ValueRange headState) {
        ImplicitLocOpBuilder hb(loc, nested);
        WarpEmitter he(hb, config.bf16);
        Value qHead = he.add(he.mul(kvHead, group), gi);
        Value qRowBase = he.mul(he.add(he.mul(batch, s.qHeads), qHead), s.qLen);
        auto blockLoop = scf::ForOp::create(
            hb, firstQueryBlock, queryBlocks, he.i32c(1), headState,
            [&](OpBuilder &nested2, Location loc2, Value qb, ValueRange state) {
              ImplicitLocOpBuilder lb(loc2, nested2);
              WarpEmitter w(lb, config.bf16);
              Value q0 = w.mul(qb, w.i32c(inner));
              Value qValid = w.minsi(w.i32c(inner), w.sub(s.qLen, q0));
              Value qRow0 = w.add(qRowBase, q0);
              w.barrier(); // the previous query tile is no longer read
              w.copyTile(w.globalAt(q, qRows.at(w, batch, qHead, q0)), qRows.pitch, qValid, inner,
                         d, w.i32c(smemQ), pitch, ids.tid, threads);
              w.copyTile(w.globalAt(dout, doutRows.at(w, batch, qHead, q0)), doutRows.pitch,
                         qValid, inner, d, w.i32c(smemDout), pitch, ids.tid, threads);
              // Row statistics of the tile; rows past q_len get lse = +inf so
              // their probabilities are 0.
              for (int64_t first = 0; first < inner; first += threads) {
                Value r = w.add(ids.tid, w.i32c(first));
                w.ifThen(w.lt(r, w.i32c(inner)), [&] {
                  Value valid = w.lt(r, qValid);
                  Value at = w.toI64(w.mul(w.add(qRow0, w.select(valid, r, w.i32c(0))), w.i32c(4)));
                  Value rowLse = w.load(w.f32, w.globalAt(lse, at), 4);
                  Value rowDelta = w.load(w.f32, w.globalAt(delta, at), 4);
                  w.store(w.select(valid, w.fmul(rowLse, w.f32c(llvm::numbers::log2e)), w.f32c(inf)),
                          w.sharedAt(w.add(w.i32c(smemLse), w.mul(r, w.i32c(4)))), 4);
                  w.store(w.select(valid, rowDelta, zeroF),
                          w.sharedAt(w.add(w.i32c(smemDelta), w.mul(r, w.i32c(4)))), 4);
                });
              }
              w.barrier();

              // S^T = K Q^T (16 keys x inner queries per warp), P^T from it.
              SmallVector<Quad> kFrag = w.loadA(warpRows, dSteps);
              SmallVector<Quad> probs = w.mmaABt(kFrag, w.i32c(smemQ), laneB, queryTiles, pitch);
              SmallVector<std::array<Value, 2>> rowStats(queryTiles * 2);
              Value colBase = w.mul(ids.t, w.i32c(2));
              for (int64_t nt = 0; nt < queryTiles; ++nt)
                for (int j = 0; j < 2; ++j) {
                  Value col = w.add(colBase, w.i32c(nt * 8 + j));
                  rowStats[nt * 2 + j] = {
                      w.load(w.f32, w.sharedAt(w.add(w.i32c(smemLse), w.mul(col, w.i32c(4)))), 4),
                      w.load(w.f32, w.sharedAt(w.add(w.i32c(smemDelta), w.mul(col, w.i32c(4)))), 4)};
                }
              for (int64_t nt = 0; nt < queryTiles; ++nt)
                for (int j = 0; j < 4; ++j) {
                  Value p = w.exp2(w.fsub(w.fmul(probs[nt][j], scaleLog2), rowStats[nt * 2 + j % 2][0]));
                  if (config.causal) {
                    Value query = w.add(w.add(q0, colBase), w.i32c(nt * 8 + j % 2));
                    p = w.select(w.le(keys[j / 2], query), p, zeroF);
                  }
                  probs[nt][j] = p;
                }
              SmallVector<Quad> dkAcc = toQuads(state.take_front(dTiles * 4));
              SmallVector<Quad> dvAcc = toQuads(state.drop_front(dTiles * 4));
              // The keep factors of P^T: lanes g = 4a .. 4a + 3 (same t)
              // hold keys 4a' .. 4a' + 3 of each query, one Philox block.
              SmallVector<Quad> factors;
              if (dropout)
                for (int64_t nt = 0; nt < queryTiles; ++nt) {
                  std::array<Value, 2> queryIndex;
                  for (int j = 0; j < 2; ++j)
                    queryIndex[j] = dropout->rowIndex(
                        w, w.add(w.add(qRow0, colBase), w.i32c(nt * 8 + j)));
                  factors.push_back(
                      dropout->transposedTileFactors(w, keyInQuad, queryIndex, keys));
                }
              // dV += (P F)^T dO.
              SmallVector<Quad> kept = probs;
              for (size_t nt = 0; nt < factors.size(); ++nt)
                for (int j = 0; j < 4; ++j)
                  kept[nt][j] = w.fmul(probs[nt][j], factors[nt][j]);
              w.mmaAB(w.toA(kept), w.i32c(smemDout), laneBt, dvAcc, pitch);
              // dP^T = V dO^T, dS^T = P^T (dP^T F - delta).
              SmallVector<Quad> vFrag = w.loadA(w.add(warpRows, w.i32c(smemV)), dSteps);
              SmallVector<Quad> dsT = w.mmaABt(vFrag, w.i32c(smemDout), laneB, queryTiles, pitch);
              for (int64_t nt = 0; nt < queryTiles; ++nt)
                for (int j = 0; j < 4; ++j) {
                  Value dp = dsT[nt][j];
                  if (dropout)
                    dp = w.fmul(dp, factors[nt][j]);
                  dsT[nt][j] = w.fmul(probs[nt][j], w.fsub(dp, rowStats[nt * 2 + j % 2][1]));
                }
              // dK += dS^T Q (scaled once at the end).
              w.mmaAB(w.toA(dsT), w.i32c(smemQ), laneBt, dkAcc, pitch);
              SmallVector<Value> next = flattenQuads(dkAcc);
              next.append(flattenQuads(dvAcc));
              scf::YieldOp::create(lb, next);
            });
        scf::YieldOp::create(hb, blockLoop.getResults());
      });

  ValueRange state = headLoop.getResults();
  Value localRow0 = e.mul(ids.warp, e.i32c(16));
  storeDkDv(e, ids, config, s, state, dk, dv, e.add(e.mul(batch, s.kvHeads), kvHead), k0,
            localRow0, kValid);
  mlir::gpu::ReturnOp::create(b);
}

void emitDqBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config) {
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToEnd(&func.getBody().front());
  WarpEmitter e(b, config.bf16);
  Value q = func.getArgument(0), k = func.getArgument(1), v = func.getArgument(2);
  Value dout = func.getArgument(3), lse = func.getArgument(4), delta = func.getArgument(5);
  Value dq = func.getArgument(6);
  KernelScalars s = KernelScalars::of(func, 7);
  const int64_t d = config.headDim, blockQ = config.blockQ, inner = dqInnerRows(config);
  const int64_t pitch = tilePitch(d), threads = blockQ / 16 * 32;
  const int64_t dSteps = d / 16, dTiles = d / 8, keyTiles = inner / 8;
  const int64_t smemDout = blockQ * pitch, smemK = 2 * blockQ * pitch;
  const int64_t smemV = smemK + inner * pitch;

  LaneIds ids(e);
  QueryBlock block(e, s, blockQ);
  Value q0 = block.q0, qValid = block.qValid, qRow0 = block.statsRow0;
  TensorRows qRows(e, config, s, AttentionOperand::Q), doutRows(e, config, s, AttentionOperand::DOut);
  TensorRows kRows(e, config, s, AttentionOperand::K), vRows(e, config, s, AttentionOperand::V);
  e.copyTile(e.globalAt(q, qRows.at(e, block.batch, block.head, q0)), qRows.pitch, qValid, blockQ,
             d, e.i32c(0), pitch, ids.tid, threads);
  e.copyTile(e.globalAt(dout, doutRows.at(e, block.batch, block.head, q0)), doutRows.pitch, qValid,
             blockQ, d, e.i32c(smemDout), pitch, ids.tid, threads);
  e.barrier();
  Value warpRows = e.add(e.mul(ids.warp, e.i32c(16 * pitch)), e.laneOffsetA(ids.lane, pitch));
  SmallVector<Quad> qFrag = e.loadA(warpRows, dSteps);
  SmallVector<Quad> doutFrag = e.loadA(e.add(warpRows, e.i32c(smemDout)), dSteps);
  Value laneB = e.laneOffsetB(ids.lane, pitch);
  Value laneBt = e.laneOffsetBTransposed(ids.lane, pitch);

  // This lane's two rows: their query index, log2-scaled lse and delta.
  Value localRow = e.add(e.mul(ids.warp, e.i32c(16)), ids.g);
  std::array<Value, 2> rows, rowLse, rowDelta;
  for (int h = 0; h < 2; ++h) {
    Value local = e.add(localRow, e.i32c(8 * h));
    rows[h] = e.add(q0, local);
    Value valid = e.lt(local, qValid);
    Value at = e.toI64(e.mul(e.add(qRow0, e.select(valid, local, e.i32c(0))), e.i32c(4)));
    rowLse[h] = e.fmul(e.load(e.f32, e.globalAt(lse, at), 4), e.f32c(llvm::numbers::log2e));
    rowDelta[h] = e.load(e.f32, e.globalAt(delta, at), 4);
  }
  Value scaleLog2 = e.fmul(s.scale, e.f32c(llvm::numbers::log2e));
  Value kEnd = config.causal ? e.minsi(s.kLen, e.add(q0, e.i32c(blockQ))) : s.kLen;
  Value keyBlocks = e.ceilDiv(kEnd, inner);
  Value zeroF = e.f32c(0.0);
  // With dropout: the global index of element (row, key 0) of the two rows.
  std::optional<AttentionDropout> dropout;
  Value rowIndex;
  if (config.dropoutP > 0.0) {
    dropout.emplace(e, config, func.getArguments().back(), s.kLen, s.qHeads, s.qLen);
    rowIndex = dropout->rowIndex(e, e.add(qRow0, localRow));
  }

  SmallVector<Value> init(dTiles * 4, zeroF);
  auto loop = scf::ForOp::create(
      b, e.i32c(0), keyBlocks, e.i32c(1), init,
      [&](OpBuilder &nested, Location loc, Value kb, ValueRange state) {
        ImplicitLocOpBuilder lb(loc, nested);
        WarpEmitter w(lb, config.bf16);
        Value k0 = w.mul(kb, w.i32c(inner));
        Value kValid = w.minsi(w.i32c(inner), w.sub(s.kLen, k0));
        w.barrier();
        w.copyTile(w.globalAt(k, kRows.at(w, block.batch, block.kvHead, k0)), kRows.pitch, kValid,
                   inner, d, w.i32c(smemK), pitch, ids.tid, threads);
        w.copyTile(w.globalAt(v, vRows.at(w, block.batch, block.kvHead, k0)), vRows.pitch, kValid,
                   inner, d, w.i32c(smemV), pitch, ids.tid, threads);
        w.barrier();
        SmallVector<Quad> probs = w.mmaABt(qFrag, w.i32c(smemK), laneB, keyTiles, pitch);
        SmallVector<Quad> ds = w.mmaABt(doutFrag, w.i32c(smemV), laneB, keyTiles, pitch);
        Value colBase = w.add(k0, w.mul(ids.t, w.i32c(2)));
        if (dropout)
          for (int64_t nt = 0; nt < keyTiles; ++nt) {
            std::array<Value, 4> factors =
                dropout->tileFactors(w, ids.t, rowIndex, w.add(colBase, w.i32c(nt * 8)));
            for (int j = 0; j < 4; ++j)
              ds[nt][j] = w.fmul(ds[nt][j], factors[j]);
          }
        for (int64_t nt = 0; nt < keyTiles; ++nt)
          for (int j = 0; j < 4; ++j) {
            Value col = w.add(colBase, w.i32c(nt * 8 + j % 2));
            Value valid = w.lt(col, s.kLen);
            if (config.causal)
              valid = w.andi(valid, w.le(col, rows[j / 2]));
            Value p = w.exp2(w.fsub(w.fmul(probs[nt][j], scaleLog2), rowLse[j / 2]));
            p = w.select(valid, p, zeroF);
            ds[nt][j] = w.fmul(p, w.fsub(ds[nt][j], rowDelta[j / 2]));
          }
        SmallVector<Quad> acc = toQuads(state);
        w.mmaAB(w.toA(ds), w.i32c(smemK), laneBt, acc, pitch);
        scf::YieldOp::create(lb, flattenQuads(acc));
      });
  TensorRows dqRows(e, config, s, AttentionOperand::DQ);
  storeAccumulatorRows(e, ids, toQuads(loop.getResults()), s.scale,
                       e.globalAt(dq, dqRows.at(e, block.batch, block.head, q0)), dqRows.pitchElements,
                       e.mul(ids.warp, e.i32c(16)), qValid);
  mlir::gpu::ReturnOp::create(b);
}

} // namespace weft::gpu
