// The FlashAttention-2 backward nest: D = rowsum(dO * O) first, then for each
// (batch, kv head, key block) the dK and dV tiles accumulate over the q heads
// of the group and the query blocks that see the key block, recomputing
// P = exp(S - lse) per tile; dQ accumulates in a compute-type buffer.
#include "TileAttention.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;

namespace weft::tiling {

namespace {

/// D[b, h, i] = sum_t dO[b, h, i, t] * O[b, h, i, t] in the compute type:
/// rowsum(P * dP) of the reference, which equals it because O = (P * F) V.
Value buildRowDot(TileMath &math, Value dout, Value out) {
  ImplicitLocOpBuilder &b = math.builder();
  MLIRContext *context = b.getContext();
  auto type = cast<RankedTensorType>(out.getType());
  SmallVector<OpFoldResult> rowSizes =
      getAsIndexOpFoldResult(context, type.getShape().drop_back());
  Value init = math.filled(rowSizes, 0.0);
  AffineMap full = AffineMap::getMultiDimIdentityMap(4, context);
  AffineMap rows = AffineMap::getMultiDimIdentityMap(3, context);
  rows = AffineMap::get(4, 0, rows.getResults(), context);
  SmallVector<utils::IteratorType> iterators(3, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  FloatType computeType = math.type();
  auto generic = linalg::GenericOp::create(
      b, TypeRange{init.getType()}, ValueRange{dout, out}, ValueRange{init},
      SmallVector<AffineMap>{full, full, rows}, iterators,
      [&](OpBuilder &nested, Location loc, ValueRange args) {
        ImplicitLocOpBuilder body(loc, nested);
        TileMath bodyMath(body, computeType);
        Value product = arith::MulFOp::create(
            body, bodyMath.convertScalar(args[0], computeType),
            bodyMath.convertScalar(args[1], computeType));
        linalg::YieldOp::create(body,
                                arith::AddFOp::create(body, args[2], product)
                                    .getResult());
      });
  return generic.getResult(0);
}

/// The gradient accumulators carried through the loops.
struct Gradients {
  Value dqAcc; // [b, hq, sq, d] in the compute type, unscaled
  Value dk;    // [b, hkv, sk, d] in the io type, finished per key block
  Value dv;    // [b, hkv, sk, dv] in the io type
};

class BackwardNest {
public:
  BackwardNest(const AttentionProblem &problem, TileSizes tiles, Value dout,
               Value q, Value k, Value v, Value seed)
      : problem(problem), tiles(tiles), dout(dout), q(q), k(k), v(v),
        seed(seed) {}

  SmallVector<Value> build(ImplicitLocOpBuilder &b, Value out, Value lse);

private:
  /// One key block of one kv head: returns the updated gradients.
  Gradients buildKeyBlock(ImplicitLocOpBuilder &b, const Gradients &grads,
                          Value batch, Value kvHead, Value kBlock);
  /// One (q head, query block) against the key block: updates dqAcc and the
  /// key block's dK/dV tiles (dkTile, dvTile).
  SmallVector<Value> buildQueryBlock(ImplicitLocOpBuilder &b, Value batch,
                                     Value head, Value qBlock, Value k0,
                                     Value kRows, Value kTile, Value vTile,
                                     ValueRange iters);

  const AttentionProblem &problem;
  TileSizes tiles;
  Value dout, q, k, v, seed;
  Value rowDot;       // D [b, hq, sq], compute type
  Value rowLogSumExp; // lse [b, hq, sq], f32 or (f64 IR) recomputed in f64
};

} // namespace

SmallVector<Value> BackwardNest::build(ImplicitLocOpBuilder &b, Value out,
                                       Value lse) {
  TileMath math(b, problem.computeType);
  rowDot = buildRowDot(math, dout, out);
  rowLogSumExp = lse;
  if (problem.computeType.isF64()) {
    // The lse operand is f32 by the op's contract; P = exp(S - lse) through it
    // would carry its rounding (~1e-7) into every gradient. f64 IR recomputes
    // the row statistics in f64 with a statistics-only forward pass.
    ForwardResults statistics;
    statistics.out = false;
    statistics.lseType = problem.computeType;
    rowLogSumExp = buildTiledForward(b, problem, tiles, q, k, v, seed,
                                     statistics)
                       .front();
  }

  auto qType = cast<RankedTensorType>(q.getType());
  Gradients grads;
  grads.dqAcc = math.filled(
      getAsIndexOpFoldResult(b.getContext(), qType.getShape()), 0.0);
  grads.dk = math.empty(
      getAsIndexOpFoldResult(b.getContext(),
                             cast<RankedTensorType>(k.getType()).getShape()),
      problem.ioType);
  grads.dv = math.empty(
      getAsIndexOpFoldResult(b.getContext(),
                             cast<RankedTensorType>(v.getType()).getShape()),
      problem.ioType);
  int64_t numKBlocks = llvm::divideCeil(problem.kLen, tiles.blockK);
  auto unpack = [](ValueRange values) {
    return Gradients{values[0], values[1], values[2]};
  };
  auto pack = [](const Gradients &g) {
    return SmallVector<Value>{g.dqAcc, g.dk, g.dv};
  };
  Operation *outer = buildLoop(
      b, math.index(0), math.index(problem.batch), pack(grads),
      [&](ImplicitLocOpBuilder &b1, Value batch, ValueRange iters1) {
        TileMath m1(b1, problem.computeType);
        Operation *headLoop = buildLoop(
            b1, m1.index(0), m1.index(problem.kvHeads), iters1,
            [&](ImplicitLocOpBuilder &b2, Value kvHead, ValueRange iters2) {
              TileMath m2(b2, problem.computeType);
              Operation *blockLoop = buildLoop(
                  b2, m2.index(0), m2.index(numKBlocks), iters2,
                  [&](ImplicitLocOpBuilder &b3, Value kBlock,
                      ValueRange iters3) {
                    return pack(buildKeyBlock(b3, unpack(iters3), batch,
                                              kvHead, kBlock));
                  });
              return SmallVector<Value>(blockLoop->getResults());
            });
        return SmallVector<Value>(headLoop->getResults());
      });
  outer->setAttr(kTileAttr, tileAttr(b.getContext(), tiles, "backward"));
  grads = unpack(outer->getResults());

  // dQ = scale * dS K, scaled and rounded once at the end.
  Value dqInit = math.empty(
      getAsIndexOpFoldResult(b.getContext(), qType.getShape()), problem.ioType);
  Value dq = math.map(
      grads.dqAcc, dqInit,
      [&](ImplicitLocOpBuilder &body, ValueRange args, ValueRange) {
        TileMath bodyMath(body, problem.computeType);
        Value scaled =
            arith::MulFOp::create(body, args[0], bodyMath.scalar(problem.scale));
        return bodyMath.convertScalar(scaled, problem.ioType);
      });
  return {dq, grads.dk, grads.dv};
}

Gradients BackwardNest::buildKeyBlock(ImplicitLocOpBuilder &b,
                                      const Gradients &grads, Value batch,
                                      Value kvHead, Value kBlock) {
  TileMath math(b, problem.computeType);
  Value k0 = arith::MulIOp::create(b, kBlock, math.index(tiles.blockK));
  Value kRows = math.minIndex(
      math.index(tiles.blockK),
      arith::SubIOp::create(b, math.index(problem.kLen), k0));
  Value kTile = math.loadTile(k, batch, kvHead, k0, kRows);
  Value vTile = math.loadTile(v, batch, kvHead, k0, kRows);
  Value dkTile = math.filled({kRows, b.getIndexAttr(problem.headDim)}, 0.0);
  Value dvTile = math.filled({kRows, b.getIndexAttr(problem.valueDim)}, 0.0);

  // Causal block skipping: query i sees key k0 only when i + (sk - sq) >= k0,
  // so the query blocks before the one holding row max(k0 - (sk - sq), 0)
  // are not visited.
  Value firstQBlock = math.index(0);
  if (problem.causal) {
    Value offset = math.index(problem.kLen - problem.qLen);
    Value firstRow = arith::SelectOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, k0, offset),
        arith::SubIOp::create(b, k0, offset), math.index(0));
    firstQBlock = arith::DivUIOp::create(b, firstRow, math.index(tiles.blockQ));
  }
  Value numQBlocks = math.index(llvm::divideCeil(problem.qLen, tiles.blockQ));

  Operation *groupLoop = buildLoop(
      b, math.index(0), math.index(problem.group()),
      {grads.dqAcc, dkTile, dvTile},
      [&](ImplicitLocOpBuilder &b1, Value member, ValueRange iters1) {
        TileMath m1(b1, problem.computeType);
        // dK/dV of kv head g sum over q heads g * group + r.
        Value head = arith::AddIOp::create(
            b1, arith::MulIOp::create(b1, kvHead, m1.index(problem.group())),
            member);
        Operation *blockLoop = buildLoop(
            b1, firstQBlock, numQBlocks, iters1,
            [&](ImplicitLocOpBuilder &b2, Value qBlock, ValueRange iters2) {
              return buildQueryBlock(b2, batch, head, qBlock, k0, kRows, kTile,
                                     vTile, iters2);
            });
        return SmallVector<Value>(blockLoop->getResults());
      });

  Gradients updated;
  updated.dqAcc = groupLoop->getResult(0);
  Value dkScaled = math.mapLike(
      groupLoop->getResult(1), groupLoop->getResult(1),
      [&](ImplicitLocOpBuilder &body, ValueRange args, ValueRange) {
        TileMath bodyMath(body, problem.computeType);
        return arith::MulFOp::create(body, args[0],
                                     bodyMath.scalar(problem.scale))
            .getResult();
      });
  updated.dk = math.storeTile(dkScaled, grads.dk, batch, kvHead, k0);
  updated.dv =
      math.storeTile(groupLoop->getResult(2), grads.dv, batch, kvHead, k0);
  return updated;
}

SmallVector<Value> BackwardNest::buildQueryBlock(
    ImplicitLocOpBuilder &b, Value batch, Value head, Value qBlock, Value k0,
    Value kRows, Value kTile, Value vTile, ValueRange iters) {
  TileMath math(b, problem.computeType);
  Value dqAcc = iters[0], dkTile = iters[1], dvTile = iters[2];
  Value q0 = arith::MulIOp::create(b, qBlock, math.index(tiles.blockQ));
  Value rows = math.minIndex(
      math.index(tiles.blockQ),
      arith::SubIOp::create(b, math.index(problem.qLen), q0));
  Value qTile = math.loadTile(q, batch, head, q0, rows);
  Value doTile = math.loadTile(dout, batch, head, q0, rows);
  Value lseRows = math.loadRows(rowLogSumExp, batch, head, q0, rows);
  Value dRows = math.loadRows(rowDot, batch, head, q0, rows);

  Value scores = buildScores(math, problem, qTile, kTile, q0, k0, kRows);
  // P = exp(S - lse); masked scores are -inf, so their P is 0.
  Value probabilities = math.mapLike(
      scores, {scores, lseRows},
      [&](ImplicitLocOpBuilder &body, ValueRange args, ValueRange) {
        return mlir::math::ExpOp::create(
                   body, arith::SubFOp::create(body, args[0], args[1]))
            .getResult();
      });
  Value factors, weights = probabilities;
  if (problem.hasDropout()) {
    factors = buildDropoutFactors(math, problem, probabilities, seed, batch,
                                  head, q0, k0);
    weights = math.mapLike(
        probabilities, {probabilities, factors},
        [&](ImplicitLocOpBuilder &body, ValueRange args, ValueRange) {
          return arith::MulFOp::create(body, args[0], args[1]).getResult();
        });
  }
  // dV += (P * F)^T dO.
  dvTile = math.contract(weights, doTile, /*transposeA=*/true,
                         /*transposeB=*/false, dvTile);
  // dP = (dO V^T) * F; dS = P * (dP - D).
  SmallVector<OpFoldResult> scoreSizes = math.sizesOf(scores);
  Value doTimesV = math.contract(doTile, vTile, /*transposeA=*/false,
                                 /*transposeB=*/true,
                                 math.filled(scoreSizes, 0.0));
  SmallVector<Value> dsInputs = {probabilities, doTimesV, dRows};
  if (factors)
    dsInputs.push_back(factors);
  Value dScores = math.mapLike(
      scores, dsInputs,
      [&](ImplicitLocOpBuilder &body, ValueRange args, ValueRange) {
        Value dProbability = args[1];
        if (factors)
          dProbability = arith::MulFOp::create(body, dProbability, args[3]);
        Value centred = arith::SubFOp::create(body, dProbability, args[2]);
        return arith::MulFOp::create(body, args[0], centred).getResult();
      });
  // dK += dS^T Q and dQ += dS K (both scaled once at the end).
  dkTile = math.contract(dScores, qTile, /*transposeA=*/true,
                         /*transposeB=*/false, dkTile);
  Value dqTile = math.sliceRows(dqAcc, batch, head, q0, rows);
  dqTile = math.contract(dScores, kTile, /*transposeA=*/false,
                         /*transposeB=*/false, dqTile);
  dqAcc = math.storeTile(dqTile, dqAcc, batch, head, q0);
  return {dqAcc, dkTile, dvTile};
}

SmallVector<Value> buildTiledBackward(ImplicitLocOpBuilder &b,
                                      const AttentionProblem &problem,
                                      TileSizes tiles, Value dout, Value q,
                                      Value k, Value v, Value out, Value lse,
                                      Value seed) {
  return BackwardNest(problem, tiles, dout, q, k, v, seed).build(b, out, lse);
}

} // namespace weft::tiling
