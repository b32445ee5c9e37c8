// The FlashAttention-2 forward nest: for each (batch, q head, query block) an
// online softmax over the key blocks the block sees (running row max and sum
// in the compute type), the output normalised once at the end and the row
// log-sum-exp saved. Also the score and dropout tiles the backward reuses.
#include "TileAttention.h"
#include "weft/Codegen/PhiloxBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;

namespace weft::tiling {

static constexpr double kInfinity = std::numeric_limits<double>::infinity();

DictionaryAttr tileAttr(MLIRContext *context, TileSizes tiles, StringRef kind) {
  Builder b(context);
  return b.getDictionaryAttr(
      {b.getNamedAttr("block_q", b.getI64IntegerAttr(tiles.blockQ)),
       b.getNamedAttr("block_k", b.getI64IntegerAttr(tiles.blockK)),
       b.getNamedAttr("kind", b.getStringAttr(kind))});
}

Value buildScores(TileMath &math, const AttentionProblem &problem, Value qTile,
                  Value kTile, Value q0, Value k0, Value kRows) {
  ImplicitLocOpBuilder &b = math.builder();
  SmallVector<OpFoldResult> sizes = {math.sizesOf(qTile)[0],
                                     math.sizesOf(kTile)[0]};
  Value dots = math.contract(qTile, kTile, /*transposeA=*/false,
                             /*transposeB=*/true, math.filled(sizes, 0.0));
  auto scaled = [&](ImplicitLocOpBuilder &inner, bool masked) {
    TileMath innerMath(inner, math.type());
    return innerMath.mapLike(
        dots, dots,
        [&](ImplicitLocOpBuilder &body, ValueRange args, ValueRange indices) {
          TileMath bodyMath(body, math.type());
          Value score =
              arith::MulFOp::create(body, args[0], bodyMath.scalar(problem.scale));
          if (!masked)
            return score;
          // Global positions: key k0 + j is above the (bottom-right aligned)
          // diagonal of query q0 + i when k0 + j > q0 + i + (sk - sq).
          Value query = arith::AddIOp::create(
              body, arith::AddIOp::create(body, q0, indices[0]),
              bodyMath.index(problem.kLen - problem.qLen));
          Value key = arith::AddIOp::create(body, k0, indices[1]);
          Value above =
              arith::CmpIOp::create(body, arith::CmpIPredicate::sgt, key, query);
          return arith::SelectOp::create(body, above,
                                         bodyMath.scalar(-kInfinity), score)
              .getResult();
        });
  };
  if (!problem.causal)
    return scaled(b, /*masked=*/false);
  // Only a tile whose last key lies past what its first query sees has
  // masked entries.
  Value lastKey = arith::SubIOp::create(
      b, arith::AddIOp::create(b, k0, kRows), math.index(1));
  Value crossesDiagonal = arith::CmpIOp::create(
      b, arith::CmpIPredicate::sgt, lastKey,
      arith::AddIOp::create(b, q0, math.index(problem.kLen - problem.qLen)));
  return buildIf(
      b, crossesDiagonal, dots.getType(),
      [&](ImplicitLocOpBuilder &inner) { return scaled(inner, true); },
      [&](ImplicitLocOpBuilder &inner) { return scaled(inner, false); });
}

Value buildDropoutFactors(TileMath &math, const AttentionProblem &problem,
                          Value like, Value seed, Value batch, Value head,
                          Value q0, Value k0) {
  ImplicitLocOpBuilder &b = math.builder();
  // Index of the tile's element (0, 0) into [b, hq, sq, sk].
  Value row = arith::AddIOp::create(
      b,
      arith::MulIOp::create(
          b,
          arith::AddIOp::create(
              b, arith::MulIOp::create(b, batch, math.index(problem.qHeads)),
              head),
          math.index(problem.qLen)),
      q0);
  Value tileBase = arith::AddIOp::create(
      b, arith::MulIOp::create(b, row, math.index(problem.kLen)), k0);
  return math.mapLike(
      like, {},
      [&](ImplicitLocOpBuilder &body, ValueRange, ValueRange indices) {
        TileMath bodyMath(body, math.type());
        Value offset = arith::AddIOp::create(
            body,
            arith::MulIOp::create(body, indices[0],
                                  bodyMath.index(problem.kLen)),
            indices[1]);
        Value element = arith::IndexCastUIOp::create(
            body, body.getI64Type(),
            arith::AddIOp::create(body, tileBase, offset));
        Value keep = codegen::buildDropoutKeep(body, seed, problem.rngId, element,
                                      problem.dropoutP);
        return arith::SelectOp::create(
                   body, keep, bodyMath.scalar(1.0 / (1.0 - problem.dropoutP)),
                   bodyMath.scalar(0.0))
            .getResult();
      });
}

namespace {

/// The running statistics and accumulator of one query block.
struct RowState {
  Value acc; // [m, dv] sum of P~ V, unnormalised (absent for statistics only)
  Value max; // [m] running row max of the scaled scores
  Value sum; // [m] running sum of exp(score - max)
};

class ForwardNest {
public:
  ForwardNest(const AttentionProblem &problem, TileSizes tiles, Value q,
              Value k, Value v, Value seed, ForwardResults results)
      : problem(problem), tiles(tiles), q(q), k(k), v(v), seed(seed),
        results(results) {}

  SmallVector<Value> build(ImplicitLocOpBuilder &b);

private:
  /// One query block: returns the updated destinations.
  SmallVector<Value> buildQueryBlock(ImplicitLocOpBuilder &b, Value batch,
                                     Value head, Value qBlock,
                                     ValueRange dests);
  /// One key block of the online softmax.
  RowState buildKeyBlock(ImplicitLocOpBuilder &b, const RowState &state,
                         Value qTile, Value batch, Value head, Value kvHead,
                         Value q0, Value kBlock);

  const AttentionProblem &problem;
  TileSizes tiles;
  Value q, k, v, seed;
  ForwardResults results;
};

} // namespace

SmallVector<Value> ForwardNest::build(ImplicitLocOpBuilder &b) {
  TileMath math(b, problem.computeType);
  SmallVector<Value> inits;
  if (results.out)
    inits.push_back(math.empty(
        getAsIndexOpFoldResult(b.getContext(),
                               ArrayRef<int64_t>{problem.batch, problem.qHeads,
                                                 problem.qLen,
                                                 problem.valueDim}),
        problem.ioType));
  if (results.lseType)
    inits.push_back(math.empty(
        getAsIndexOpFoldResult(
            b.getContext(),
            ArrayRef<int64_t>{problem.batch, problem.qHeads, problem.qLen}),
        results.lseType));
  int64_t numQBlocks = llvm::divideCeil(problem.qLen, tiles.blockQ);
  Operation *outer = buildLoop(
      b, math.index(0), math.index(problem.batch), inits,
      [&](ImplicitLocOpBuilder &b1, Value batch, ValueRange dests1) {
        TileMath m1(b1, problem.computeType);
        Operation *headLoop = buildLoop(
            b1, m1.index(0), m1.index(problem.qHeads), dests1,
            [&](ImplicitLocOpBuilder &b2, Value head, ValueRange dests2) {
              TileMath m2(b2, problem.computeType);
              Operation *blockLoop = buildLoop(
                  b2, m2.index(0), m2.index(numQBlocks), dests2,
                  [&](ImplicitLocOpBuilder &b3, Value qBlock,
                      ValueRange dests3) {
                    return buildQueryBlock(b3, batch, head, qBlock, dests3);
                  });
              return SmallVector<Value>(blockLoop->getResults());
            });
        return SmallVector<Value>(headLoop->getResults());
      });
  // The statistics-only nest inside the backward is not a kernel of its own.
  if (results.out)
    outer->setAttr(kTileAttr, tileAttr(b.getContext(), tiles, "forward"));
  return SmallVector<Value>(outer->getResults());
}

SmallVector<Value> ForwardNest::buildQueryBlock(ImplicitLocOpBuilder &b,
                                                Value batch, Value head,
                                                Value qBlock,
                                                ValueRange dests) {
  TileMath math(b, problem.computeType);
  Value q0 = arith::MulIOp::create(b, qBlock, math.index(tiles.blockQ));
  Value rows = math.minIndex(
      math.index(tiles.blockQ),
      arith::SubIOp::create(b, math.index(problem.qLen), q0));
  // GQA/MQA: q head h reads kv head h / (hq / hkv).
  Value kvHead = arith::DivUIOp::create(b, head, math.index(problem.group()));
  Value qTile = math.loadTile(q, batch, head, q0, rows);

  // Causal block skipping: the block's last query q0 + rows - 1 sees keys up
  // to q0 + rows - 1 + (sk - sq), so only ceil(min(q0 + rows + sk - sq, sk)
  // / block_k) key blocks.
  Value numKBlocks = math.index(llvm::divideCeil(problem.kLen, tiles.blockK));
  if (problem.causal)
    numKBlocks = math.ceilDiv(
        math.minIndex(arith::AddIOp::create(
                          b, arith::AddIOp::create(b, q0, rows),
                          math.index(problem.kLen - problem.qLen)),
                      math.index(problem.kLen)),
        tiles.blockK);

  RowState state;
  SmallVector<Value> inits;
  if (results.out) {
    state.acc = math.filled({rows, b.getIndexAttr(problem.valueDim)}, 0.0);
    inits.push_back(state.acc);
  }
  inits.push_back(math.filled({rows}, -kInfinity));
  inits.push_back(math.filled({rows}, 0.0));
  Operation *keyLoop = buildLoop(
      b, math.index(0), numKBlocks, inits,
      [&](ImplicitLocOpBuilder &inner, Value kBlock, ValueRange iters) {
        RowState current;
        unsigned next = 0;
        if (results.out)
          current.acc = iters[next++];
        current.max = iters[next++];
        current.sum = iters[next++];
        RowState updated = buildKeyBlock(inner, current, qTile, batch, head,
                                         kvHead, q0, kBlock);
        SmallVector<Value> yields;
        if (results.out)
          yields.push_back(updated.acc);
        yields.append({updated.max, updated.sum});
        return yields;
      });
  unsigned next = 0;
  if (results.out)
    state.acc = keyLoop->getResult(next++);
  state.max = keyLoop->getResult(next++);
  state.sum = keyLoop->getResult(next++);

  SmallVector<Value> updated;
  unsigned dest = 0;
  if (results.out) {
    // O = acc / l; a row that sees no key (l = 0) is 0, as in the reference.
    Value normalised = math.map(
        state.sum, state.acc,
        [&](ImplicitLocOpBuilder &body, ValueRange args, ValueRange) {
          TileMath bodyMath(body, problem.computeType);
          Value zero = bodyMath.scalar(0.0);
          Value empty =
              arith::CmpFOp::create(body, arith::CmpFPredicate::OEQ, args[0], zero);
          Value quotient = arith::DivFOp::create(body, args[1], args[0]);
          return arith::SelectOp::create(body, empty, zero, quotient).getResult();
        });
    updated.push_back(math.storeTile(normalised, dests[dest++], batch, head, q0));
  }
  if (results.lseType) {
    // lse = max + log(sum): -inf for a row that sees no key.
    Value logSumExp = math.mapLike(
        state.max, {state.max, state.sum},
        [&](ImplicitLocOpBuilder &body, ValueRange args, ValueRange) {
          return arith::AddFOp::create(body, args[0],
                                       mlir::math::LogOp::create(body, args[1]))
              .getResult();
        });
    updated.push_back(math.storeTile(logSumExp, dests[dest++], batch, head, q0));
  }
  return updated;
}

RowState ForwardNest::buildKeyBlock(ImplicitLocOpBuilder &b,
                                    const RowState &state, Value qTile,
                                    Value batch, Value head, Value kvHead,
                                    Value q0, Value kBlock) {
  TileMath math(b, problem.computeType);
  Value k0 = arith::MulIOp::create(b, kBlock, math.index(tiles.blockK));
  Value kRows = math.minIndex(
      math.index(tiles.blockK),
      arith::SubIOp::create(b, math.index(problem.kLen), k0));
  Value kTile = math.loadTile(k, batch, kvHead, k0, kRows);
  Value scores = buildScores(math, problem, qTile, kTile, q0, k0, kRows);

  // m' = max(m, rowmax(S)); exponents are taken against m' (0 while a row has
  // seen only masked keys, so exp(-inf - m') = 0 and never NaN). The running
  // values are updated in place (each map writes into its iteration value
  // after the last read of the old one), so they bufferize in place.
  Value blockMax = math.rowMax(scores);
  auto shiftedExp = [&](ImplicitLocOpBuilder &body, Value value, Value max,
                        Value candidate) {
    TileMath bodyMath(body, problem.computeType);
    Value newMax = arith::MaximumFOp::create(body, max, candidate);
    Value isNegInf = arith::CmpFOp::create(body, arith::CmpFPredicate::OEQ,
                                           newMax, bodyMath.scalar(-kInfinity));
    Value safeMax =
        arith::SelectOp::create(body, isNegInf, bodyMath.scalar(0.0), newMax);
    return mlir::math::ExpOp::create(
               body, arith::SubFOp::create(body, value, safeMax))
        .getResult();
  };
  Value probabilities = math.mapLike(
      scores, {scores, state.max, blockMax},
      [&](ImplicitLocOpBuilder &body, ValueRange args, ValueRange) {
        return shiftedExp(body, args[0], args[1], args[2]);
      });
  // alpha = exp(m - m') rescales what earlier key blocks accumulated.
  Value alpha = math.mapLike(
      state.max, {state.max, blockMax},
      [&](ImplicitLocOpBuilder &body, ValueRange args, ValueRange) {
        return shiftedExp(body, args[0], args[0], args[1]);
      });
  RowState next;
  next.max = math.map(
      blockMax, state.max,
      [&](ImplicitLocOpBuilder &body, ValueRange args, ValueRange) {
        return arith::MaximumFOp::create(body, args[1], args[0]).getResult();
      });
  Value blockSum = math.rowSum(probabilities);
  next.sum = math.map(
      {alpha, blockSum}, state.sum,
      [&](ImplicitLocOpBuilder &body, ValueRange args, ValueRange) {
        Value rescaled = arith::MulFOp::create(body, args[2], args[0]);
        return arith::AddFOp::create(body, rescaled, args[1]).getResult();
      });
  if (!results.out)
    return next;

  // Dropout applies to the normalised probabilities; the row sum above
  // (the softmax denominator) is taken before it.
  Value weights = probabilities;
  if (problem.hasDropout()) {
    Value factors = buildDropoutFactors(math, problem, probabilities, seed,
                                        batch, head, q0, k0);
    weights = math.mapLike(
        probabilities, {probabilities, factors},
        [&](ImplicitLocOpBuilder &body, ValueRange args, ValueRange) {
          return arith::MulFOp::create(body, args[0], args[1]).getResult();
        });
  }
  Value rescaledAcc = math.map(
      alpha, state.acc,
      [&](ImplicitLocOpBuilder &body, ValueRange args, ValueRange) {
        return arith::MulFOp::create(body, args[1], args[0]).getResult();
      });
  Value vTile = math.loadTile(v, batch, kvHead, k0, kRows);
  next.acc = math.contract(weights, vTile, /*transposeA=*/false,
                           /*transposeB=*/false, rescaledAcc);
  return next;
}

SmallVector<Value> buildTiledForward(ImplicitLocOpBuilder &b,
                                     const AttentionProblem &problem,
                                     TileSizes tiles, Value q, Value k, Value v,
                                     Value seed, ForwardResults results) {
  return ForwardNest(problem, tiles, q, k, v, seed, results).build(b);
}

} // namespace weft::tiling
