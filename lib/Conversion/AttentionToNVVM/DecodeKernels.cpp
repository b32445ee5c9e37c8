// The split-KV decode kernels (flash decoding): a CTA of the split kernel
// owns every query row of one (batch, kv head), the q heads of its GQA group
// times q_len (group * q_len <= decodeRows, zero-padded), and one split of
// the keys; it streams that split's K and V once through a ring of
// `stages` shared-memory slots (16-byte cp.async copies, up to stages - 1
// blocks in flight beside the one computed on), computes
// S = Q K^T and O += P V with mma.sync m16n8k16 and an online softmax, and
// writes the split's f32 partial O (normalised) and log-sum-exp. The combine
// kernel (DecodeCombine.cpp) merges the splits of one query row by
// log-sum-exp into O and lse.
#include "ForwardParts.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;

namespace weft::gpu {

namespace {

/// Issues the cp.async copies of rows [0, rows) of a K or V tile into shared
/// memory, 16 bytes each (.cg: through L2 only, the cache is read once); rows
/// at or past `validRows` are zero-filled (a source size of 0 reads nothing),
/// so a V row past k_len cannot bring a NaN into P V.
void issueTile(WarpEmitter &w, Value global, Value globalPitch, Value validRows, int64_t rows,
               int64_t cols, Value sharedOffset, int64_t sharedPitch, Value tid,
               int64_t threads) {
  const int64_t chunksPerRow = cols / 8, chunks = rows * chunksPerRow;
  for (int64_t first = 0; first < chunks; first += threads) {
    // rows * cols / 8 is a multiple of the thread count (verifyDecodeConfig),
    // so every thread has a chunk.
    Value chunk = w.add(tid, w.i32c(first));
    Value row = w.divu(chunk, w.i32c(chunksPerRow));
    Value column = arith::RemUIOp::create(w.b, chunk, w.i32c(chunksPerRow));
    Value inRange = w.lt(row, validRows);
    Value safeRow = w.select(inRange, row, w.i32c(0));
    Value byteOffset = w.add(w.mul(safeRow, globalPitch), w.mul(column, w.i32c(16)));
    Value shared = w.add(sharedOffset,
                         w.add(w.mul(row, w.i32c(sharedPitch)), w.mul(column, w.i32c(16))));
    w.cpAsync16(shared, w.globalAt(global, w.toI64(byteOffset)),
                w.select(inRange, w.i32c(16), w.i32c(0)));
  }
}

} // namespace

int64_t decodeKeyColumns(const AttentionKernelConfig &config) {
  // At least 4 warps share a CTA; a warp takes at least one 16-key mma step.
  int64_t rowGroups = config.decodeRows / 16;
  return std::max<int64_t>(1, std::min<int64_t>(4 / rowGroups, config.blockK / 16));
}

int64_t decodeSplitThreads(const AttentionKernelConfig &config) {
  return config.decodeRows / 16 * decodeKeyColumns(config) * 32;
}

int64_t decodeSplitSmemBytes(const AttentionKernelConfig &config) {
  return (config.decodeRows + config.stages * 2 * config.blockK) * tilePitch(config.headDim);
}

int64_t decodeMergeBytes(const AttentionKernelConfig &config) {
  if (decodeKeyColumns(config) == 1)
    return 0;
  int64_t warps = decodeSplitThreads(config) / 32;
  return warps * 16 * (config.headDim + 2) * 4;
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
  const int64_t stages = config.stages, columns = decodeKeyColumns(config);
  const int64_t warpKeys = blockK / columns;
  const int64_t kSteps = d / 16, keyTiles = warpKeys / 8, dTiles = d / 8;
  // Shared memory: Q's padded rows, then stages slots of a K tile
  // and a V tile each.
  const int64_t smemSlots = rowsPadded * pitch, slotBytes = 2 * blockK * pitch;

  // grid: x = split, y = kv head, z = batch. The group's q heads are
  // consecutive, so its group * q_len query rows are one contiguous block.
  // Warp w owns rows [16 (w / columns), + 16) and keys [warpKeys (w %
  // columns), + warpKeys) of every block; with columns > 1 the warps of a
  // row group merge their softmax states at the end.
  ForwardRows r{&config, s, LaneIds(e), QueryBlock(e, s, 16), {}, {}, {}, {}};
  Value tid = r.ids.tid, warp = r.ids.warp, lane = r.ids.lane;
  Value rowGroup = e.divu(warp, e.i32c(columns));
  Value column = arith::RemUIOp::create(b, warp, e.i32c(columns));
  Value keyOffset = e.mul(column, e.i32c(warpKeys));
  Value split = e.blockId(0), kvHead = e.blockId(1), batch = e.blockId(2);
  Value group = e.divu(s.qHeads, s.kvHeads);
  Value headFirst = e.mul(kvHead, group);
  Value validRows = e.mul(group, s.qLen);
  Value row0 = e.mul(e.add(e.mul(batch, s.qHeads), headFirst), s.qLen);
  TensorRows qRows(e, config, s, AttentionOperand::Q), kRows(e, config, s, AttentionOperand::K),
      vRows(e, config, s, AttentionOperand::V);

  Value kStart = e.mul(split, keysPerSplit);
  Value kStop = e.minsi(s.kLen, e.add(kStart, keysPerSplit));
  Value keyBlocks = e.ceilDiv(e.sub(kStop, kStart), blockK);
  // Block kb's K and V go to slot kb % stages as one cp.async group; every
  // thread commits a group per block index, issued or not (past the split's
  // last block), so the loop's group count names a block. (K and V as two
  // groups, V issued after the block's scores, measured no faster on the
  // H100: bench/RESULTS.md, 2026-11-28.)
  auto issueBlock = [&](WarpEmitter &w, Value kb) {
    w.ifThen(w.lt(kb, keyBlocks), [&] {
      Value k0 = w.add(kStart, w.mul(kb, w.i32c(blockK)));
      Value slot = arith::RemUIOp::create(w.b, kb, w.i32c(stages));
      Value kAt = w.add(w.i32c(smemSlots), w.mul(slot, w.i32c(slotBytes)));
      for (int tile = 0; tile < 2; ++tile)
        issueTile(w, w.globalAt(tile ? v : k, kRows.at(w, batch, kvHead, k0)), kRows.pitch,
                  w.minsi(w.i32c(blockK), w.sub(s.kLen, k0)), blockK, d,
                  w.add(kAt, w.i32c(tile * blockK * pitch)), pitch, tid, threads);
    });
    w.cpAsyncCommit();
  };
  // The first blocks' copies go out before Q's (which wait for their loads).
  for (int64_t first = 0; first + 1 < stages; ++first)
    issueBlock(e, e.i32c(first));
  e.copyTile(e.globalAt(q, qRows.at(e, batch, headFirst, e.i32c(0))), qRows.pitch, validRows,
             rowsPadded, d, e.i32c(0), pitch, tid, threads);

  r.initSoftmaxConstants(e);
  // Row m = head_in_group * q_len + i; bottom-right causal: query i sees keys
  // j <= i + k_len - q_len. onlineSoftmaxStep masks col > rows[h] when causal.
  Value lastKey = e.sub(s.kLen, s.qLen);
  std::array<Value, 2> ctaRows;
  for (int h = 0; h < 2; ++h) {
    ctaRows[h] = e.add(e.add(e.mul(rowGroup, e.i32c(16)), r.ids.g), e.i32c(8 * h));
    Value i = arith::RemUIOp::create(b, ctaRows[h], s.qLen);
    r.rows[h] = e.add(i, lastKey);
  }
  // Keys a whole block may see unmasked: up to k_len - q_len when causal.
  Value unmaskedEnd = config.causal ? e.add(lastKey, e.i32c(1)) : s.kLen;

  Value kLane = e.add(e.laneOffsetB(lane, pitch), e.mul(keyOffset, e.i32c(pitch)));
  Value vLane = e.add(e.laneOffsetBTransposed(lane, pitch), e.mul(keyOffset, e.i32c(pitch)));
  Value warpRows = e.add(e.mul(rowGroup, e.i32c(16 * pitch)), e.laneOffsetA(lane, pitch));
  e.barrier();
  // Q's fragments stay in registers at head_dim 64; above, they are re-read
  // from shared memory each block (8 or 16 ldmatrix per warp), which leaves
  // the room for the accumulator (at 128 in registers they spilled).
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
        // Blocks up to kb + stages - 2 are committed: waiting until
        // at most stages - 2 groups are pending lands this thread's
        // copies of block kb; after the barrier every thread's have, and
        // every warp is done with block kb - 1, whose slot block kb +
        // stages - 1 then takes.
        w.cpAsyncWait(stages - 2);
        w.barrier();
        issueBlock(w, w.add(kb, w.i32c(stages - 1)));
        Value slot = arith::RemUIOp::create(lb, kb, w.i32c(stages));
        Value smemK = w.add(w.i32c(smemSlots), w.mul(slot, w.i32c(slotBytes)));
        Value smemV = w.add(smemK, w.i32c(blockK * pitch));
        SmallVector<Quad> a = qInRegisters ? qFrag : w.loadA(warpRows, kSteps);
        SmallVector<Quad> scores = w.mmaABt(a, smemK, kLane, keyTiles, pitch);
        Value maskNeeded = w.lt(unmaskedEnd, w.add(k0, w.i32c(blockK)));
        SmallVector<Value> next(state.begin(), state.end());
        std::array<Value, 2> alpha =
            onlineSoftmaxStep(w, r, scores, w.add(k0, keyOffset), state, next, maskNeeded);
        SmallVector<Quad> acc(dTiles);
        for (int64_t dt = 0; dt < dTiles; ++dt)
          for (int j = 0; j < 4; ++j)
            acc[dt][j] = w.fmul(state[4 + dt * 4 + j], alpha[j / 2]);
        w.mmaAB(w.toA(scores), smemV, vLane, acc, pitch);
        for (int64_t dt = 0; dt < dTiles; ++dt)
          for (int j = 0; j < 4; ++j)
            next[4 + dt * 4 + j] = acc[dt][j];
        scf::YieldOp::create(lb, next);
      });
  ValueRange state = loop.getResults();
  // Programmatic dependent launch: once every CTA has read its keys, the
  // combine kernel (launched with the programmatic stream serialization
  // attribute, "programmatic" in the unit) may start; its griddepcontrol.wait
  // still waits for this grid's writes below. Without the attribute both
  // instructions do nothing.
  NVVM::GriddepcontrolOp::create(b, NVVM::GridDepActionKind::launch_dependents);

  // The split's partial O (normalised by its own row sum) and lse, f32:
  // o_partial [num_splits, rows, d], lse_partial [num_splits, rows] with rows
  // = batch * q_heads * q_len (the query rows in [b, h, s] order). `max` is
  // the row's running maximum (log2 units), `sum` its whole row sum, oAt(dt,
  // h, j) this lane's unnormalised O of tile dt in [0, tiles), written at
  // columns colBase + 8 dt + 2 t + j.
  Value totalRows = e.mul(e.mul(s.batch, s.qHeads), s.qLen);
  Value t = r.ids.t;
  auto storeRows = [&](std::array<Value, 2> max, std::array<Value, 2> sum,
                       llvm::function_ref<Value(int64_t, int, int)> oAt, int64_t tiles,
                       Value colBase, Value writesLse) {
    for (int h = 0; h < 2; ++h) {
      Value positive = e.fgt(sum[h], r.zeroF);
      Value inverse = e.select(positive, arith::DivFOp::create(b, e.f32c(1.0), sum[h]), r.zeroF);
      Value mUse = e.select(e.feq(max[h], r.minusInf), r.zeroF, max[h]);
      Value rowLse = e.select(
          positive, e.fmul(e.fadd(mUse, e.log2(sum[h])), e.f32c(llvm::numbers::ln2)), r.minusInf);
      e.ifThen(e.lt(ctaRows[h], validRows), [&] {
        Value flatRow = e.add(e.mul(e.toI64(split), e.toI64(totalRows)),
                              e.toI64(e.add(row0, ctaRows[h])));
        Value rowAt = e.globalAt(oPartial, e.mul(flatRow, e.i64c(d * 4)));
        for (int64_t dt = 0; dt < tiles; ++dt)
          for (int j = 0; j < 2; ++j) {
            Value col = e.add(colBase, e.add(e.mul(t, e.i32c(2)), e.i32c(dt * 8 + j)));
            e.store(e.fmul(oAt(dt, h, j), inverse),
                    e.globalAt(rowAt, e.toI64(e.mul(col, e.i32c(4)))), 4);
          }
        e.ifThen(writesLse, [&] {
          e.store(rowLse, e.globalAt(lsePartial, e.mul(flatRow, e.i64c(4))), 4);
        });
      });
    }
  };
  Value firstLane = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, t, e.i32c(0));
  if (columns == 1) {
    storeRows({state[0], state[1]}, {e.quadSum(state[2]), e.quadSum(state[3])},
              [&](int64_t dt, int h, int j) { return state[4 + dt * 4 + 2 * h + j]; }, dTiles,
              e.i32c(0), firstLane);
    mlir::gpu::ReturnOp::create(b);
    return;
  }

  // Merge: every warp puts its rows' maximum, sum and unnormalised O in
  // shared memory (O at [warp][row][d] f32, then max and sum at [warp][row]
  // each; the K/V slots are free once every warp left the loop), then the
  // warp of column c merges its row group's `columns` states for the tiles
  // [c dTiles / columns, + dTiles / columns) and writes them.
  const int64_t warps = threads / 32, oBytes = warps * 16 * d * 4;
  const int64_t maxAt = oBytes, sumAt = oBytes + warps * 16 * 4;
  auto oSlot = [&](Value ofWarp, Value row, int64_t dt, int j) {
    Value col = e.add(e.mul(t, e.i32c(2)), e.i32c(dt * 8 + j));
    return e.add(e.mul(e.add(e.mul(ofWarp, e.i32c(16)), row), e.i32c(d * 4)),
                 e.mul(col, e.i32c(4)));
  };
  auto rowSlot = [&](int64_t base, Value ofWarp, Value row) {
    return e.add(e.i32c(base), e.mul(e.add(e.mul(ofWarp, e.i32c(16)), row), e.i32c(4)));
  };
  e.barrier();
  for (int h = 0; h < 2; ++h) {
    Value row = e.add(r.ids.g, e.i32c(8 * h));
    Value sum = e.quadSum(state[2 + h]);
    e.ifThen(firstLane, [&] {
      e.store(state[h], e.sharedAt(rowSlot(maxAt, warp, row)), 4);
      e.store(sum, e.sharedAt(rowSlot(sumAt, warp, row)), 4);
    });
    for (int64_t dt = 0; dt < dTiles; ++dt)
      for (int j = 0; j < 2; ++j)
        e.store(state[4 + dt * 4 + 2 * h + j], e.sharedAt(oSlot(warp, row, dt, j)), 4);
  }
  e.barrier();
  const int64_t tilesPerWarp = dTiles / columns;
  std::array<Value, 2> max, sum;
  SmallVector<SmallVector<Value>> weights(2);
  for (int h = 0; h < 2; ++h) {
    Value row = e.add(r.ids.g, e.i32c(8 * h));
    SmallVector<Value> maxes, sums;
    for (int64_t c = 0; c < columns; ++c) {
      Value ofWarp = e.add(e.mul(rowGroup, e.i32c(columns)), e.i32c(c));
      maxes.push_back(e.load(e.f32, e.sharedAt(rowSlot(maxAt, ofWarp, row)), 4));
      sums.push_back(e.load(e.f32, e.sharedAt(rowSlot(sumAt, ofWarp, row)), 4));
    }
    max[h] = maxes[0];
    for (int64_t c = 1; c < columns; ++c)
      max[h] = e.fmax(max[h], maxes[c]);
    // A column whose keys all lay past k_len or the diagonal has max -inf
    // and weight 0.
    Value mUse = e.select(e.feq(max[h], r.minusInf), r.zeroF, max[h]);
    sum[h] = r.zeroF;
    for (int64_t c = 0; c < columns; ++c) {
      weights[h].push_back(e.exp2(e.fsub(maxes[c], mUse)));
      sum[h] = e.fadd(sum[h], e.fmul(weights[h][c], sums[c]));
    }
  }
  SmallVector<Value> merged(tilesPerWarp * 4);
  for (int h = 0; h < 2; ++h) {
    Value row = e.add(r.ids.g, e.i32c(8 * h));
    for (int64_t i = 0; i < tilesPerWarp; ++i)
      for (int j = 0; j < 2; ++j) {
        // Tile column * tilesPerWarp + i of each warp of the row group.
        Value total = r.zeroF;
        for (int64_t c = 0; c < columns; ++c) {
          Value ofWarp = e.add(e.mul(rowGroup, e.i32c(columns)), e.i32c(c));
          Value at = e.add(oSlot(ofWarp, row, i, j),
                           e.mul(column, e.i32c(tilesPerWarp * 8 * 4)));
          total = e.fadd(total, e.fmul(weights[h][c], e.load(e.f32, e.sharedAt(at), 4)));
        }
        merged[i * 4 + 2 * h + j] = total;
      }
  }
  storeRows(max, sum, [&](int64_t dt, int h, int j) { return merged[dt * 4 + 2 * h + j]; },
            tilesPerWarp, e.mul(column, e.i32c(tilesPerWarp * 8)),
            e.andi(firstLane, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, column,
                                                    e.i32c(0))));
  mlir::gpu::ReturnOp::create(b);
}

} // namespace weft::gpu
