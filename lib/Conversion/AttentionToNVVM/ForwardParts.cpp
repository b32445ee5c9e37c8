// What the two attention forward kernels share: the softmax constants, the
// masked online-softmax step of one key block and the store of O and lse.
#include "ForwardParts.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
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
  if (config->dropoutP > 0.0) {
    dropout.emplace(e, *config, seedPointer, s.kLen, s.qHeads, s.qLen);
    // Row `rows[0]` of this (batch, head) is flat row statsRow0 + rows[0] - q0.
    rowIndex = dropout->rowIndex(e, e.add(block.statsRow0, e.sub(rows[0], block.q0)));
    if (maskPointer) {
      keepMask.emplace(maskPointer, s, /*afterDelta=*/false);
      plane = e.add(e.mul(block.batch, s.qHeads), block.head);
      warpRow0 = e.sub(rows[0], ids.g);
    }
  }
}

namespace {

/// Scales the scores to log2 units; masks keys at or past k_len (and above
/// the diagonal when causal) to -inf.
void scaleAndMask(WarpEmitter &w, const ForwardRows &r, MutableArrayRef<Quad> scores,
                  Value k0, bool mask) {
  Value colBase = w.add(k0, w.mul(r.ids.t, w.i32c(2)));
  for (size_t nt = 0; nt < scores.size(); ++nt)
    for (int j = 0; j < 4; ++j) {
      Value scaled = w.fmul(scores[nt][j], r.scaleLog2);
      if (!mask) {
        scores[nt][j] = scaled;
        continue;
      }
      Value col = w.add(colBase, w.i32c(static_cast<int64_t>(nt) * 8 + j % 2));
      Value valid = w.lt(col, r.s.kLen);
      if (r.config->causal)
        valid = w.andi(valid, w.le(col, r.rows[j / 2]));
      scores[nt][j] = w.select(valid, scaled, r.minusInf);
    }
}

} // namespace

SmallVector<Value> ForwardRows::initialLoopState(int64_t dTiles) const {
  SmallVector<Value> init = {minusInf, minusInf, zeroF, zeroF};
  init.append(dTiles * 4, zeroF);
  return init;
}

std::array<Value, 2> onlineSoftmaxStep(WarpEmitter &w, const ForwardRows &r,
                                       MutableArrayRef<Quad> scores, Value k0,
                                       ValueRange mAndL, MutableArrayRef<Value> next,
                                       Value maskNeeded, bool mask) {
  const int64_t keyTiles = static_cast<int64_t>(scores.size());
  Value minusInf = r.minusInf, zeroF = r.zeroF;
  if (!maskNeeded) {
    scaleAndMask(w, r, scores, k0, mask);
  } else {
    // Both branches yield the block's scores, masked or only scaled.
    SmallVector<Type> types(keyTiles * 4, w.f32);
    auto ifOp = scf::IfOp::create(w.b, types, maskNeeded, /*withElseRegion=*/true);
    for (bool mask : {true, false}) {
      OpBuilder::InsertionGuard guard(w.b);
      w.b.setInsertionPointToStart(mask ? ifOp.thenBlock() : ifOp.elseBlock());
      SmallVector<Quad> copy(scores.begin(), scores.end());
      scaleAndMask(w, r, copy, k0, mask);
      SmallVector<Value> flat;
      for (const Quad &quad : copy)
        flat.append(quad.begin(), quad.end());
      scf::YieldOp::create(w.b, flat);
    }
    for (int64_t i = 0; i < keyTiles * 4; ++i)
      scores[i / 4][i % 4] = ifOp.getResult(i);
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
  if (r.keepMask) {
    SmallVector<Value> keep = r.keepMask->loadRows(w, keyTiles, r.plane, r.warpRow0, k0, r.ids);
    for (int64_t nt = 0; nt < keyTiles; ++nt)
      for (int j = 0; j < 4; ++j)
        scores[nt][j] = w.fmul(scores[nt][j], r.dropout->factorAt(w, keep, nt, j));
  } else if (r.dropout) {
    Value key = w.add(k0, w.mul(r.ids.t, w.i32c(2)));
    for (int64_t nt = 0; nt < keyTiles; ++nt) {
      std::array<Value, 4> factors =
          r.dropout->tileFactors(w, r.ids.t, r.rowIndex, w.add(key, w.i32c(nt * 8)));
      for (int j = 0; j < 4; ++j)
        scores[nt][j] = w.fmul(scores[nt][j], factors[j]);
    }
  }
  return alpha;
}

void storeForwardOutput(WarpEmitter &e, const ForwardRows &r, ValueRange state,
                        Value out, Value lse) {
  ImplicitLocOpBuilder &b = e.b;
  const int64_t d = r.config->headDim, dTiles = d / 8;
  Value minusInf = r.minusInf, zeroF = r.zeroF, t = r.ids.t;
  TensorRows outRows(e, *r.config, r.s, AttentionOperand::Out);
  Value outTile = e.globalAt(out, outRows.at(e, r.block.batch, r.block.head, r.block.q0));
  Value lseTile = e.globalAt(lse, e.mul(e.toI64(r.block.statsRow0), e.i64c(4)));
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
      Value rowStart = e.mul(
          e.add(e.mul(localRow, outRows.pitchElements), e.mul(t, e.i32c(2))), e.i32c(2));
      for (int64_t dt = 0; dt < dTiles; ++dt)
        e.store(packed[dt], e.globalAt(outTile, e.toI64(e.add(rowStart, e.i32c(dt * 16)))), 4);
      e.ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, t, e.i32c(0)), [&] {
        e.store(rowLse, e.globalAt(lseTile, e.toI64(e.mul(localRow, e.i32c(4)))), 4);
      });
    });
  }
}

} // namespace weft::gpu
