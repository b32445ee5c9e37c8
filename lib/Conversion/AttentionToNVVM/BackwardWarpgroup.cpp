// The Hopper attention backward (deterministic, FlashAttention-3's matmul
// structure) as two TMA + wgmma pipeline kernels (TmaPipeline.h):
// dK/dV per key block: K and V stay in shared memory, Q, dO and the rows'
// lse / delta stream through the ring; each consumer warpgroup owns 64 keys
// and computes S^T = K Q^T and dP^T = V dO^T (both operands by descriptor),
// P^T and dS^T in registers, then dV += P^T dO and dK += dS^T Q with the
// register fragments as A. dQ per query block: Q and dO stay, K and V
// stream; S = Q K^T, dP = dO V^T, dQ += dS K. S and dP are two wgmma
// groups: P is computed under wait_group 1 while dP still runs (one group
// in the dK/dV kernel where its score tiles are 128 queries wide).
// Accumulators live in registers across the whole loop; no atomics (unless
// atomic_dq: BackwardAtomicDq.cpp). With dropout (factors F, 0
// or 1 / (1 - p)): dV += (P F)^T dO and dS = P (dP F - delta), F read
// from the keep mask the keep-mask kernel drew into the workspace
// (KeepMask.h) by the forward's rule.
#include "AttentionDropout.h"
#include "BackwardAtomicDq.h"
#include "KeepMask.h"
#include "TmaPipeline.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <limits>
#include <optional>
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace weft::gpu {

namespace {

/// Runs `compute(values, mask)` on the quads, masked only where `maskNeeded`
/// (i1, uniform over the warpgroup) holds: an scf.if whose branches yield
/// the masked and the unmasked results. Without `maskNeeded`, unmasked.
void computeMaybeMasked(WarpEmitter &w, Value maskNeeded, MutableArrayRef<Quad> quads,
                        llvm::function_ref<void(MutableArrayRef<Quad>, bool)> compute) {
  if (!maskNeeded)
    return compute(quads, false);
  SmallVector<Type> types(quads.size() * 4, w.f32);
  auto ifOp = scf::IfOp::create(w.b, types, maskNeeded, /*withElseRegion=*/true);
  for (bool mask : {true, false}) {
    OpBuilder::InsertionGuard guard(w.b);
    w.b.setInsertionPointToStart(mask ? ifOp.thenBlock() : ifOp.elseBlock());
    SmallVector<Quad> copy(quads.begin(), quads.end());
    compute(copy, mask);
    scf::YieldOp::create(w.b, flattenQuads(copy));
  }
  for (size_t i = 0; i < quads.size() * 4; ++i)
    quads[i / 4][i % 4] = ifOp.getResult(i);
}

/// Two m64 x n accumulators from wgmma with both operands in shared memory
/// (K-major, head_dim deep): A0 B0^T and A1 B1^T. With `overlap` they are
/// two groups and `onFirst` runs on the first product while the second is
/// still on the tensor cores (wgmma.wait_group 1, FlashAttention-3's overlap
/// of the softmax with the next matmul); else one group, `onFirst` after
/// both. Both are complete on return.
std::pair<SmallVector<Quad>, SmallVector<Quad>>
twoScoreMatmuls(WarpEmitter &w, std::array<Value, 2> a, int64_t aSlab, std::array<Value, 2> bT,
                int64_t bSlab, int64_t n, int64_t headDim, Value zero, bool overlap,
                llvm::function_ref<void(MutableArrayRef<Quad>)> onFirst) {
  std::array<SmallVector<Value>, 2> acc = {SmallVector<Value>(n / 2, zero),
                                           SmallVector<Value>(n / 2, zero)};
  w.wgmmaFence();
  for (int i = 0; i < 2; ++i) {
    for (int64_t step = 0; step < headDim / 16; ++step)
      acc[i] = w.wgmmaShared(acc[i], kMajorDescriptor(w, a[i], aSlab, step),
                             kMajorDescriptor(w, bT[i], bSlab, step), n,
                             /*accumulate=*/step != 0);
    if (overlap || i == 1)
      w.wgmmaCommit();
  }
  if (!overlap) {
    w.wgmmaWait(0);
    SmallVector<Quad> first = toQuads(acc[0]);
    onFirst(first);
    return {first, toQuads(acc[1])};
  }
  // The first group is done; the fences keep every use of its registers
  // (and of the second's) after its wait.
  w.wgmmaWait(1);
  SmallVector<Quad> first = toQuads(w.fenceOperands(acc[0]));
  onFirst(first);
  w.wgmmaWait(0);
  SmallVector<Value> firstValues = flattenQuads(first);
  firstValues.append(acc[1].begin(), acc[1].end());
  SmallVector<Value> fenced = w.fenceOperands(firstValues);
  return {toQuads(ArrayRef<Value>(fenced).take_front(n / 2)),
          toQuads(ArrayRef<Value>(fenced).drop_front(n / 2))};
}

/// acc += A B for A as register fragments (16 of the k dimension each) and
/// B a streamed or resident tile read MN-major, n = head_dim.
SmallVector<Value> accumulateTimes(WarpEmitter &w, ValueRange acc, ArrayRef<Quad> a,
                                   Value tile, int64_t slabBytes, int64_t headDim) {
  SmallVector<Value> out(acc.begin(), acc.end());
  for (size_t step = 0; step < a.size(); ++step)
    out = w.wgmma(out, a[step], mnMajorDescriptor(w, tile, slabBytes, step), headDim,
                  /*transposeB=*/true, /*accumulate=*/true);
  return out;
}

} // namespace

void emitWarpgroupDkDvBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config) {
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToEnd(&func.getBody().front());
  WarpEmitter e(b, config.bf16);
  Value qMap = func.getArgument(0), kMap = func.getArgument(1), vMap = func.getArgument(2);
  Value doutMap = func.getArgument(3), lse = func.getArgument(4), delta = func.getArgument(5);
  Value dk = func.getArgument(6), dv = func.getArgument(7);
  KernelScalars s = KernelScalars::of(func, 8);
  const TmaRing ring{dkdvPipelineLayout(config)};
  const int64_t d = config.headDim, blockK = config.blockK, inner = ring.layout.streamRows;
  const int64_t columnGroups = dkdvColumnGroups(config), columns = d / columnGroups;
  const int64_t consumers = dkdvConsumers(config), residentSlab = blockK * 128,
                streamSlab = inner * 128;
  const double inf = std::numeric_limits<double>::infinity();

  LaneIds ids(e);
  Value kvHead = e.blockId(1), batch = e.blockId(2);
  Value group = e.divu(s.qHeads, s.kvHeads);
  Value k0 = e.mul(e.blockId(0), e.i32c(blockK));
  Value kValid = e.minsi(e.i32c(blockK), e.sub(s.kLen, k0));
  // Causal: query i sees key j iff j <= i, so the first query block that
  // sees any of these keys holds query k0. Iterations walk (q head of the
  // group, query block), query blocks fastest.
  Value firstBlock = config.causal ? e.divu(k0, e.i32c(inner)) : e.i32c(0);
  Value queryBlocks = e.ceilDiv(s.qLen, inner);
  Value perHead = e.select(e.lt(firstBlock, queryBlocks), e.sub(queryBlocks, firstBlock),
                           e.i32c(0));
  Value iterations = e.mul(group, perHead);
  // The q head and first query of an iteration.
  auto queryTile = [&](WarpEmitter &w, Value it) {
    Value qHead = w.add(w.mul(kvHead, group), w.divu(it, perHead));
    Value qb = w.add(firstBlock, arith::RemUIOp::create(w.b, it, perHead));
    return std::pair<Value, Value>{w.mul(qb, w.i32c(inner)), qHead};
  };
  TensorRows qRows(e, config, s, AttentionOperand::Q), doutRows(e, config, s, AttentionOperand::DOut);

  PipelineSources sources;
  sources.residentMaps = {kMap, vMap};
  sources.streamMaps = {qMap, doutMap};
  sources.residentRow = k0;
  sources.residentHeads = {TensorRows(e, config, s, AttentionOperand::K).mapHead(e, kvHead),
                           TensorRows(e, config, s, AttentionOperand::V).mapHead(e, kvHead)};
  sources.batch = batch;
  sources.iterations = iterations;
  sources.streamCoords = [&](WarpEmitter &w, Value it) {
    auto [q0, qHead] = queryTile(w, it);
    return StreamCoords{q0, {qRows.mapHead(w, qHead), doutRows.mapHead(w, qHead)}, batch};
  };
  sources.loadStats = [&](WarpEmitter &w, Value it, Value stats, Value lane) {
    auto [q0, qHead] = queryTile(w, it);
    // lse and delta are [batch, q_heads, q_len] in every layout.
    Value rowBase = w.mul(w.add(w.mul(batch, s.qHeads), qHead), s.qLen);
    for (int64_t first = 0; first < inner; first += 32) {
      Value r = w.add(lane, w.i32c(first));
      Value query = w.add(q0, r);
      Value valid = w.lt(query, s.qLen);
      Value at = w.toI64(w.mul(w.add(rowBase, w.select(valid, query, w.i32c(0))), w.i32c(4)));
      Value rowLse = w.load(w.f32, w.globalAt(lse, at), 4);
      Value rowDelta = w.load(w.f32, w.globalAt(delta, at), 4);
      Value slot = w.add(stats, w.mul(r, w.i32c(4)));
      w.store(w.select(valid, w.fmul(rowLse, w.f32c(llvm::numbers::log2e)), w.f32c(inf)),
              w.sharedAt(slot), 4);
      w.store(w.select(valid, rowDelta, w.f32c(0.0)),
              w.sharedAt(w.add(slot, w.i32c(inner * 4))), 4);
    }
  };
  scf::IfOp roles = emitPipelineRoles(e, ids, ring, consumers, sources);

  // Consumer warpgroup c owns keys k0 + 64 (c / columnGroups) .. + 63 and
  // of their dK and dV the columns `columns` (c % columnGroups) .. + columns
  // - 1; it reads those columns of Q and dO from the slab they start in.
  Value consumer = e.sub(e.divu(ids.warp, e.i32c(4)), e.i32c(1));
  Value keyGroup = e.divu(consumer, e.i32c(columnGroups));
  Value column0 = e.mul(arith::RemUIOp::create(b, consumer, e.i32c(columnGroups)),
                        e.i32c(columns));
  Value columnSlabs = e.mul(e.divu(column0, e.i32c(kSlabCols)), e.i32c(streamSlab));
  Value warpInGroup = arith::RemUIOp::create(b, ids.warp, e.i32c(4));
  Value kTile = e.add(e.i32c(ring.layout.resident(0)), e.mul(keyGroup, e.i32c(64 * 128)));
  Value vTile = e.add(e.i32c(ring.layout.resident(1)), e.mul(keyGroup, e.i32c(64 * 128)));
  Value groupKey0 = e.add(k0, e.mul(keyGroup, e.i32c(64)));
  Value localRow0 = e.add(e.mul(keyGroup, e.i32c(64)), e.mul(warpInGroup, e.i32c(16)));
  Value myKey = e.add(e.add(k0, localRow0), ids.g);
  std::array<Value, 2> keys = {myKey, e.add(myKey, e.i32c(8))};
  Value scaleLog2 = e.fmul(s.scale, e.f32c(llvm::numbers::log2e));
  Value zeroF = e.f32c(0.0);
  Value colBase = e.mul(ids.t, e.i32c(2));
  // With dropout the decisions come from the keep mask (the factors from
  // `dropout`).
  std::optional<AttentionDropout> dropout;
  std::optional<KeepMask> keepMask;
  if (config.dropoutP > 0.0) {
    dropout.emplace(e, config, func.getArguments().back(), s.kLen, s.qHeads, s.qLen);
    keepMask.emplace(delta, s, /*afterDelta=*/true);
  }

  // The atomic dQ: the dS tile this consumer shares, the accumulator.
  std::optional<AtomicDqTile> atomicDq;
  if (config.atomicDq)
    atomicDq.emplace(config, ring, consumers);

  SmallVector<Value> init(columns, zeroF); // dK (columns / 2 values), then dV
  auto loop = emitConsumerLoop(
      e, ring, iterations, init,
      [&](WarpEmitter &w, Value it, std::array<Value, 2> tiles, ValueRange state) {
        Value tileQ = tiles[0], tileDout = tiles[1];
        // The keep bits of P^T (64 keys x inner queries), loaded before
        // S^T and dP^T take their registers.
        SmallVector<Value> keep;
        if (keepMask) {
          auto [first, qHead] = queryTile(w, it);
          keep = keepMask->loadTransposed(w, inner / 8, w.add(w.mul(batch, s.qHeads), qHead),
                                          first, w.add(k0, localRow0), ids);
        }
        // The statistics of this lane's query columns, read where they are
        // used: holding all of them (inner / 2 values) would spill.
        Value stats = ring.stats(w, ring.slot(w, it));
        auto rowStat = [&](int64_t column, int64_t which) {
          Value at = w.add(stats, w.mul(w.add(colBase, w.i32c(column)), w.i32c(4)));
          return w.load(w.f32, w.sharedAt(w.add(at, w.i32c(which * inner * 4))), 4);
        };
        // P^T = exp2(S^T scale - lse), while dP^T runs; causal blocks that
        // reach past the diagonal zero keys above their query.
        Value q0 = queryTile(w, it).first;
        Value maskNeeded;
        if (config.causal)
          maskNeeded = w.lt(q0, w.add(groupKey0, w.i32c(63)));
        auto toP = [&](MutableArrayRef<Quad> scores) {
          computeMaybeMasked(w, maskNeeded, scores, [&](MutableArrayRef<Quad> p, bool mask) {
            for (int64_t nt = 0; nt < inner / 8; ++nt)
              for (int j = 0; j < 4; ++j) {
                Value x =
                    w.exp2(w.fsub(w.fmul(p[nt][j], scaleLog2), rowStat(nt * 8 + j % 2, 0)));
                if (mask) {
                  Value query = w.add(w.add(q0, colBase), w.i32c(nt * 8 + j % 2));
                  x = w.select(w.le(keys[j / 2], query), x, zeroF);
                }
                p[nt][j] = x;
              }
          });
        };
        // (Two groups at head_dim 64, 128 queries wide, spilled 4 bytes in
        // the packed grouped unit: one group there.)
        auto [scores, dpT] = twoScoreMatmuls(w, {kTile, vTile}, residentSlab,
                                             {tileQ, tileDout}, streamSlab, inner, d, zeroF,
                                             /*overlap=*/inner <= 64, toP);
        // dS^T = P^T (dP^T F - delta), then P^T F for dV.
        for (int64_t nt = 0; nt < inner / 8; ++nt)
          for (int j = 0; j < 4; ++j) {
            Value factor = dropout ? dropout->factorAt(w, keep, nt, j) : Value();
            Value dp = dropout ? w.fmul(dpT[nt][j], factor) : dpT[nt][j];
            dpT[nt][j] = w.fmul(scores[nt][j], w.fsub(dp, rowStat(nt * 8 + j % 2, 1)));
            if (dropout)
              scores[nt][j] = w.fmul(scores[nt][j], factor);
          }
        SmallVector<Quad> pA = w.toA(scores), dsA = w.toA(dpT);
        w.wgmmaFence();
        SmallVector<Value> dkAcc = accumulateTimes(w, state.take_front(columns / 2), dsA,
                                                   w.add(tileQ, columnSlabs), streamSlab,
                                                   columns);
        SmallVector<Value> dvAcc = accumulateTimes(w, state.drop_front(columns / 2), pA,
                                                   w.add(tileDout, columnSlabs), streamSlab,
                                                   columns);
        w.wgmmaCommit();
        if (atomicDq) {
          // dQ += dS K while dK and dV run (the accumulation waits for all).
          auto [q0, qHead] = queryTile(w, it);
          atomicDq->storeDsT(w, it, dsA, localRow0, ids, warpInGroup);
          atomicDq->accumulate(w, it, dqAccumulator(w, config, s, delta),
                               w.add(w.mul(batch, s.qHeads), qHead), q0,
                               s.qLen, ids, warpInGroup);
        } else {
          w.wgmmaWait(0);
        }
        dkAcc.append(dvAcc);
        return dkAcc;
      });

  if (atomicDq)
    atomicDq->finish(e, warpInGroup);
  Value kvPlane = e.add(e.mul(batch, s.kvHeads), kvHead);
  storeDkDv(e, ids, config, s, loop.getResults(), dk, dv, kvPlane, k0, localRow0, kValid,
            column0);
  b.setInsertionPointAfter(roles);
  mlir::gpu::ReturnOp::create(b);
}

void emitWarpgroupDqBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config) {
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToEnd(&func.getBody().front());
  WarpEmitter e(b, config.bf16);
  Value qMap = func.getArgument(0), kMap = func.getArgument(1), vMap = func.getArgument(2);
  Value doutMap = func.getArgument(3), lse = func.getArgument(4), delta = func.getArgument(5);
  Value dq = func.getArgument(6);
  KernelScalars s = KernelScalars::of(func, 7);
  const TmaRing ring{dqPipelineLayout(config)};
  const int64_t d = config.headDim, blockQ = config.blockQ, blockK = ring.layout.streamRows;
  const int64_t consumers = blockQ / 64, residentSlab = blockQ * 128, streamSlab = blockK * 128;

  LaneIds ids(e);
  QueryBlock block(e, s, blockQ);
  Value kHead = TensorRows(e, config, s, AttentionOperand::K).mapHead(e, block.kvHead);
  Value vHead = TensorRows(e, config, s, AttentionOperand::V).mapHead(e, block.kvHead);
  Value kEnd = config.causal ? e.minsi(s.kLen, e.add(block.q0, e.i32c(blockQ))) : s.kLen;
  Value iterations = e.ceilDiv(kEnd, blockK);

  PipelineSources sources;
  sources.residentMaps = {qMap, doutMap};
  sources.streamMaps = {kMap, vMap};
  sources.residentRow = block.q0;
  sources.residentHeads = {TensorRows(e, config, s, AttentionOperand::Q).mapHead(e, block.head),
                           TensorRows(e, config, s, AttentionOperand::DOut).mapHead(e, block.head)};
  sources.batch = block.batch;
  sources.iterations = iterations;
  sources.streamCoords = [&](WarpEmitter &w, Value it) {
    return StreamCoords{w.mul(it, w.i32c(blockK)), {kHead, vHead}, block.batch};
  };
  scf::IfOp roles = emitPipelineRoles(e, ids, ring, consumers, sources);

  // Consumer warpgroup c owns query rows q0 + 64 c .. + 63; a lane's rows
  // are g and g + 8 of its warp's 16.
  Value consumer = e.sub(e.divu(ids.warp, e.i32c(4)), e.i32c(1));
  Value warpInGroup = arith::RemUIOp::create(b, ids.warp, e.i32c(4));
  Value qTile = e.add(e.i32c(ring.layout.resident(0)), e.mul(consumer, e.i32c(64 * 128)));
  Value doutTile = e.add(e.i32c(ring.layout.resident(1)), e.mul(consumer, e.i32c(64 * 128)));
  Value groupRow0 = e.add(block.q0, e.mul(consumer, e.i32c(64)));
  Value localRow0 = e.add(e.mul(consumer, e.i32c(64)), e.mul(warpInGroup, e.i32c(16)));
  std::array<Value, 2> rows, rowLse, rowDelta;
  for (int h = 0; h < 2; ++h) {
    Value local = e.add(e.add(localRow0, ids.g), e.i32c(8 * h));
    rows[h] = e.add(block.q0, local);
    Value valid = e.lt(local, block.qValid);
    Value at = e.toI64(e.mul(e.add(block.statsRow0, e.select(valid, local, e.i32c(0))), e.i32c(4)));
    rowLse[h] = e.fmul(e.load(e.f32, e.globalAt(lse, at), 4), e.f32c(llvm::numbers::log2e));
    rowDelta[h] = e.load(e.f32, e.globalAt(delta, at), 4);
  }
  Value scaleLog2 = e.fmul(s.scale, e.f32c(llvm::numbers::log2e));
  Value zeroF = e.f32c(0.0);
  // With dropout the decisions come from the keep mask (the factors from
  // `dropout`).
  std::optional<AttentionDropout> dropout;
  std::optional<KeepMask> keepMask;
  Value plane;
  if (config.dropoutP > 0.0) {
    dropout.emplace(e, config, func.getArguments().back(), s.kLen, s.qHeads, s.qLen);
    keepMask.emplace(delta, s, /*afterDelta=*/true);
    plane = e.add(e.mul(block.batch, s.qHeads), block.head);
  }

  SmallVector<Value> init(d / 2, zeroF);
  auto loop = emitConsumerLoop(
      e, ring, iterations, init,
      [&](WarpEmitter &w, Value it, std::array<Value, 2> tiles, ValueRange state) {
        Value tileK = tiles[0], tileV = tiles[1];
        // The keep bits of P (64 rows x block_k keys), loaded before S and
        // dP take their registers.
        SmallVector<Value> keep;
        if (keepMask)
          keep = keepMask->loadRows(w, blockK / 8, plane, w.add(block.q0, localRow0),
                                    w.mul(it, w.i32c(blockK)), ids);
        // P = exp2(S scale - lse) while dP runs, zero for keys at or past
        // k_len and (causal) above the diagonal; only blocks that reach
        // there are masked.
        Value k0 = w.mul(it, w.i32c(blockK));
        Value kBlockEnd = w.add(k0, w.i32c(blockK));
        Value maskNeeded = w.lt(s.kLen, kBlockEnd);
        if (config.causal)
          maskNeeded = arith::OrIOp::create(w.b, maskNeeded,
                                            w.lt(w.add(groupRow0, w.i32c(1)), kBlockEnd));
        Value colBase = w.add(k0, w.mul(ids.t, w.i32c(2)));
        auto toP = [&](MutableArrayRef<Quad> scores) {
          computeMaybeMasked(w, maskNeeded, scores, [&](MutableArrayRef<Quad> p, bool mask) {
            for (int64_t nt = 0; nt < blockK / 8; ++nt)
              for (int j = 0; j < 4; ++j) {
                Value x = w.exp2(w.fsub(w.fmul(p[nt][j], scaleLog2), rowLse[j / 2]));
                if (mask) {
                  Value col = w.add(colBase, w.i32c(nt * 8 + j % 2));
                  Value valid = w.lt(col, s.kLen);
                  if (config.causal)
                    valid = w.andi(valid, w.le(col, rows[j / 2]));
                  x = w.select(valid, x, zeroF);
                }
                p[nt][j] = x;
              }
          });
        };
        auto [scores, ds] = twoScoreMatmuls(w, {qTile, doutTile}, residentSlab, {tileK, tileV},
                                            streamSlab, blockK, d, zeroF, /*overlap=*/true, toP);
        if (dropout)
          for (int64_t nt = 0; nt < blockK / 8; ++nt)
            for (int j = 0; j < 4; ++j)
              ds[nt][j] = w.fmul(ds[nt][j], dropout->factorAt(w, keep, nt, j));
        // dS = P (dP F - delta); dQ += dS K.
        for (int64_t nt = 0; nt < blockK / 8; ++nt)
          for (int j = 0; j < 4; ++j)
            ds[nt][j] = w.fmul(scores[nt][j], w.fsub(ds[nt][j], rowDelta[j / 2]));
        SmallVector<Quad> dsA = w.toA(ds);
        w.wgmmaFence();
        SmallVector<Value> acc = accumulateTimes(w, state, dsA, tileK, streamSlab, d);
        w.wgmmaCommit();
        w.wgmmaWait(0);
        return acc;
      });
  TensorRows dqRows(e, config, s, AttentionOperand::DQ);
  storeAccumulatorRows(e, ids, toQuads(loop.getResults()), s.scale,
                       e.globalAt(dq, dqRows.at(e, block.batch, block.head, block.q0)),
                       dqRows.pitchElements, localRow0, block.qValid);
  b.setInsertionPointAfter(roles);
  mlir::gpu::ReturnOp::create(b);
}

} // namespace weft::gpu
