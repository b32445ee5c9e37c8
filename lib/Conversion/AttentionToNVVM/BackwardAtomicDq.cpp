// The Hopper backward's non-deterministic dQ (AttentionKernelConfig::
// atomicDq, FlashAttention-3's default): the dK/dV kernel, which already
// holds dS^T of its key block, also forms dQ += dS K. Each consumer
// warpgroup stores its dS^T fragments into a 128-byte-swizzled shared tile
// (keys as rows, queries as 64-column slabs: the transposed A operand of
// wgmma), the consumers meet at a named barrier, and each multiplies its
// share of the tile (its columns of head_dim over every key, or every column
// over its own keys) with the resident K tile, stages the f32 result in
// shared memory and has the TMA unit add each row into the workspace's
// accumulator (cp.reduce.async.bulk .add.f32, as FlashAttention-3 does).
// The delta kernel zeroed the accumulator; the last kernel scales it into
// dq. Two dS tiles alternate by iteration, so a consumer refills one while
// another may still read the other.
#include "BackwardAtomicDq.h"

#include "weft/Dialect/AttentionWorkspace.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;

namespace weft::gpu {

Value dqAccumulator(WarpEmitter &e, const AttentionKernelConfig &config,
                    const KernelScalars &s, Value delta) {
  // attentionDqAccumOffset (weft/Dialect/AttentionWorkspace.h) in i64.
  auto align256 = [&](Value bytes) {
    return e.mul(arith::DivUIOp::create(e.b, e.add(bytes, e.i64c(255)), e.i64c(256)),
                 e.i64c(256));
  };
  Value planes = e.toI64(e.mul(s.batch, s.qHeads));
  Value rows = e.mul(planes, e.toI64(s.qLen));
  Value end = e.mul(rows, e.i64c(4));
  if (config.dropoutP > 0.0) {
    Value rowGroups = e.toI64(e.ceilDiv(s.qLen, 8));
    Value keyChunks = e.toI64(e.ceilDiv(s.kLen, 16));
    end = e.add(align256(end), e.mul(e.mul(e.mul(planes, rowGroups), keyChunks), e.i64c(16)));
  }
  return e.globalAt(delta, e.pinned(align256(end)));
}

void zeroDqAccumulatorRows(WarpEmitter &e, const AttentionKernelConfig &config,
                           const KernelScalars &s, Value accumulator, Value plane, Value row0,
                           Value validRows, Value tid, int64_t threads) {
  // Rows row0 .. row0 + validRows - 1 of the plane are contiguous: 16-byte
  // stores, consecutive threads on consecutive chunks.
  const int64_t chunksPerRow = config.headDim / 4;
  Value start = e.mul(e.toI64(e.add(e.mul(plane, s.qLen), row0)), e.i64c(config.headDim * 4));
  Value chunks = e.mul(validRows, e.i32c(chunksPerRow));
  Value zero = LLVM::ConstantOp::create(e.b, e.v4i32, e.b.getZeroAttr(e.v4i32));
  for (int64_t first = 0; first < kPreprocessRows * chunksPerRow; first += threads) {
    Value chunk = e.add(tid, e.i32c(first));
    e.ifThen(e.lt(chunk, chunks), [&] {
      e.store(zero, e.globalAt(accumulator, e.add(start, e.toI64(e.mul(chunk, e.i32c(16))))),
              16);
    });
  }
}

namespace {

/// Consumer c's share of dQ += dS K: with head_dim / consumers whole
/// 64-column slabs, those columns over every key of the block; else (head_dim
/// 64 over two consumers) all columns over its own 64 keys, each consumer
/// adding its partial.
struct Share {
  bool splitKeys;
  int64_t keys, columns;
};
Share shareOf(const AttentionKernelConfig &config) {
  int64_t consumers = dkdvConsumers(config);
  int64_t columns = config.headDim / consumers;
  if (columns % 64 == 0)
    return {false, config.blockK, columns};
  return {true, 64, config.headDim};
}

/// The f32 staging rows of one consumer's share: 16 bytes of padding a row
/// spread the rows' banks.
int64_t stagingPitch(const Share &share) { return share.columns * 4 + 16; }
int64_t dsTilesBytes(const AttentionKernelConfig &config) {
  return 2 * config.blockK * kAtomicDqQueryRows * 2;
}

} // namespace

int64_t atomicDqScratchBytes(const AttentionKernelConfig &config) {
  Share share = shareOf(config);
  return dsTilesBytes(config) +
         dkdvConsumers(config) * kAtomicDqQueryRows * stagingPitch(share);
}

AtomicDqTile::AtomicDqTile(const AttentionKernelConfig &config, const TmaRing &ring,
                           int64_t consumers)
    : config(config), ring(ring), consumers(consumers), keyRows(config.blockK) {
  Share share = shareOf(config);
  splitKeys = share.splitKeys;
  columns = share.columns;
  keys = share.keys;
}

AtomicDqTile::Place AtomicDqTile::place(WarpEmitter &w) const {
  // From the thread index where used, not held across the loop (registers
  // are tight at head_dim 128).
  Value consumer = w.pinned(w.sub(w.divu(w.threadIdX(), w.i32c(128)), w.i32c(1)));
  Place p;
  p.key0 = splitKeys ? w.mul(consumer, w.i32c(64)) : w.i32c(0);
  p.column0 = splitKeys ? w.i32c(0) : w.mul(consumer, w.i32c(columns));
  p.staging = w.add(w.i32c(ring.layout.scratch() + dsTilesBytes(config)),
                    w.mul(consumer, w.i32c(kAtomicDqQueryRows * (columns * 4 + 16))));
  p.groupBarrier = w.add(consumer, w.i32c(kAtomicDqBarrier + 1));
  return p;
}

Value AtomicDqTile::tile(WarpEmitter &w, Value it) const {
  Value parity = arith::RemUIOp::create(w.b, it, w.i32c(2));
  return w.add(w.i32c(ring.layout.scratch()),
               w.mul(parity, w.i32c(keyRows * kAtomicDqQueryRows * 2)));
}

void AtomicDqTile::storeDsT(WarpEmitter &w, Value it, ArrayRef<Quad> dsA, Value keyRow0,
                            const LaneIds &ids, Value warpInGroup) const {
  // Element (key r, query q) at row r (128 bytes), 16-byte chunk q / 8 XOR
  // r % 8 (the swizzle), byte 2 (q % 8): the 64 queries are one slab. A
  // lane's pairs (g / g + 8, 2 t) of 8-query tile nt sit at byte 4 t of
  // chunk nt; keyRow0 is a multiple of 16, so r % 8 = g. As A fragments
  // (WarpEmitter::toA) tile nt's pair of row g (+ 8 h) is word 2 (nt % 2) +
  // h of fragment nt / 2.
  Value base = tile(w, it);
  for (int h = 0; h < 2; ++h) {
    Value row = w.add(w.add(keyRow0, ids.g), w.i32c(8 * h));
    Value rowBase = w.add(base, w.add(w.mul(row, w.i32c(128)), w.mul(ids.t, w.i32c(4))));
    for (size_t nt = 0; nt < 2 * dsA.size(); ++nt) {
      Value chunk = arith::XOrIOp::create(w.b, w.i32c(static_cast<int64_t>(nt)), ids.g);
      w.store(dsA[nt / 2][2 * (nt % 2) + h],
              w.sharedAt(w.add(rowBase, w.mul(chunk, w.i32c(16)))), 4);
    }
  }
  // dK and dV's products are done with the fragments (registers for dQ's).
  w.wgmmaWait(0);
  // Warp 0's bulk reductions of the last iteration have read the staging
  // rows before anyone passes the barrier (and rewrites them).
  w.ifThen(arith::CmpIOp::create(w.b, arith::CmpIPredicate::eq, warpInGroup, w.i32c(0)),
           [&] { w.bulkWait(0, /*readOnly=*/true); });
  // The generic proxy's stores, then every consumer's, before the async
  // proxy (wgmma) reads the tile.
  w.fenceProxyAsyncShared();
  w.namedBarrierSync(w.i32c(kAtomicDqBarrier), consumers * 128);
}

void AtomicDqTile::accumulate(WarpEmitter &w, Value it, Value accumulator, Value plane,
                              Value q0, Value qLen, const LaneIds &ids,
                              Value warpInGroup) const {
  const int64_t headDim = config.headDim, kSlab = keyRows * 128;
  const int64_t pitch = columns * 4 + 16;
  auto [key0, column0, staging, groupBarrier] = place(w);
  // A: the dS tile's rows key0 .. (keys), MN-major (the queries
  // contiguous); B: K's rows key0 .., columns column0 .., MN-major. Both
  // start on 1024-byte swizzle atoms.
  Value aTile = w.add(tile(w, it), w.mul(key0, w.i32c(128)));
  Value kTile = w.add(w.add(w.i32c(ring.layout.resident(0)), w.mul(key0, w.i32c(128))),
                      w.mul(w.divu(column0, w.i32c(64)), w.i32c(kSlab)));
  SmallVector<Value> acc(columns / 2, w.f32c(0.0));
  w.wgmmaFence();
  for (int64_t step = 0; step < keys / 16; ++step) {
    Value a = w.matrixDescriptor(w.add(aTile, w.i32c(2048 * step)), kSlab, 1024, true);
    Value b = w.matrixDescriptor(w.add(kTile, w.i32c(2048 * step)), kSlab, 1024, true);
    acc = w.wgmmaSharedTransposed(acc, a, b, columns, /*accumulate=*/step != 0);
  }
  w.wgmmaCommit();
  w.wgmmaWait(0);
  // The share into this consumer's staging rows (row g (+ 8) of the warp's
  // 16, columns 2 t, 2 t + 1 of each 8), then its warp 0 hands each valid
  // row to the TMA unit to add into the accumulator.
  Type v2f32 = VectorType::get({2}, w.f32);
  Value rowOfWarp = w.mul(warpInGroup, w.i32c(16));
  for (int h = 0; h < 2; ++h) {
    Value row = w.add(w.add(rowOfWarp, ids.g), w.i32c(8 * h));
    Value at = w.add(staging, w.add(w.mul(row, w.i32c(pitch)), w.mul(ids.t, w.i32c(8))));
    for (int64_t nt = 0; nt < columns / 8; ++nt) {
      Value pair = LLVM::PoisonOp::create(w.b, v2f32);
      for (int j = 0; j < 2; ++j)
        pair = LLVM::InsertElementOp::create(w.b, pair, acc[nt * 4 + 2 * h + j], w.i32c(j));
      w.store(pair, w.sharedAt(w.add(at, w.i32c(nt * 32))), 8);
    }
  }
  w.fenceProxyAsyncShared();
  w.namedBarrierSync(groupBarrier, 128);
  w.ifThen(arith::CmpIOp::create(w.b, arith::CmpIPredicate::eq, warpInGroup, w.i32c(0)), [&] {
    for (int half = 0; half < 2; ++half) {
      Value row = w.add(ids.lane, w.i32c(32 * half));
      Value query = w.add(q0, row);
      w.ifThen(w.lt(query, qLen), [&] {
        Value to = w.mul(w.toI64(w.add(w.mul(w.add(w.mul(plane, qLen), query),
                                             w.i32c(headDim)),
                                       column0)),
                         w.i64c(4));
        w.bulkReduceAddF32(w.globalAt(accumulator, to),
                           w.add(staging, w.mul(row, w.i32c(pitch))), columns * 4);
      });
    }
    w.bulkCommit();
  });
}

void AtomicDqTile::finish(WarpEmitter &w, Value warpInGroup) const {
  // The last reductions complete before the kernel ends.
  w.ifThen(arith::CmpIOp::create(w.b, arith::CmpIPredicate::eq, warpInGroup, w.i32c(0)),
           [&] { w.bulkWait(0, /*readOnly=*/false); });
}

void emitDqConvertBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config) {
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToEnd(&func.getBody().front());
  WarpEmitter e(b, config.bf16);
  Value delta = func.getArgument(0), dq = func.getArgument(1);
  KernelScalars s = KernelScalars::of(func, 2);
  QueryBlock block(e, s, kDqConvertRows);
  Value accumulator = dqAccumulator(e, config, s, delta);
  TensorRows dqRows(e, config, s, AttentionOperand::DQ);
  Value plane = e.add(e.mul(block.batch, s.qHeads), block.head);
  Value tid = e.threadIdX();
  Type v4f32 = VectorType::get({4}, e.f32);
  // 8 columns (two f32 x 4 in, one 16-byte store out) a thread per step.
  const int64_t chunksPerRow = config.headDim / 8;
  for (int64_t first = 0; first < kDqConvertRows * chunksPerRow; first += kDqConvertThreads) {
    Value chunk = e.add(tid, e.i32c(first));
    Value row = e.divu(chunk, e.i32c(chunksPerRow));
    Value column = e.mul(arith::RemUIOp::create(b, chunk, e.i32c(chunksPerRow)), e.i32c(8));
    e.ifThen(e.lt(row, block.qValid), [&] {
      Value query = e.add(block.q0, row);
      Value from = e.mul(e.toI64(e.add(e.mul(e.add(e.mul(plane, s.qLen), query),
                                             e.i32c(config.headDim)),
                                       column)),
                         e.i64c(4));
      SmallVector<Value> words;
      for (int half = 0; half < 2; ++half) {
        Value x = e.load(v4f32, e.globalAt(accumulator, e.add(from, e.i64c(16 * half))), 16);
        for (int pair = 0; pair < 2; ++pair) {
          Value lo = LLVM::ExtractElementOp::create(b, x, e.i32c(2 * pair));
          Value hi = LLVM::ExtractElementOp::create(b, x, e.i32c(2 * pair + 1));
          words.push_back(e.pack(e.fmul(lo, s.scale), e.fmul(hi, s.scale)));
        }
      }
      Value packed = LLVM::PoisonOp::create(b, e.v4i32);
      for (int i = 0; i < 4; ++i)
        packed = LLVM::InsertElementOp::create(b, packed, words[i], e.i32c(i));
      Value to = e.add(dqRows.at(e, block.batch, block.head, query),
                       e.toI64(e.mul(column, e.i32c(2))));
      e.store(packed, e.globalAt(dq, to), 16);
    });
  }
  mlir::gpu::ReturnOp::create(b);
}

} // namespace weft::gpu
