// The attention kernels' dropout factors from weft's Philox builder
// (weft/Codegen/PhiloxBuilder.h), the same draws as the interpreter's.
#include "AttentionDropout.h"

#include "weft/Codegen/PhiloxBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace weft::gpu {

static constexpr codegen::PhiloxMultiply kMultiply = codegen::PhiloxMultiply::Nvptx;

Value headOffsetBefore(Value seedPointer) {
  auto seed = cast<BlockArgument>(seedPointer);
  return seed.getOwner()->getArgument(seed.getArgNumber() - 1);
}

AttentionDropout::AttentionDropout(WarpEmitter &e, const AttentionKernelConfig &config,
                                   Value seedPointer, Value kLen, Value qHeads, Value qLen)
    : p(config.dropoutP), rngId(config.rngId), dropoutHeads(config.dropoutHeads),
      headOffset(config.dropoutHeads ? headOffsetBefore(seedPointer) : Value()),
      qHeads(qHeads), qLen(qLen), seed(e.load(e.i64, seedPointer, 8)),
      kLen64(e.toI64(kLen)),
      aligned(arith::CmpIOp::create(e.b, arith::CmpIPredicate::eq,
                                    arith::AndIOp::create(e.b, kLen, e.i32c(3)), e.i32c(0))) {}

Value AttentionDropout::rowIndex(WarpEmitter &w, Value flatRow) const {
  Value row = w.toI64(flatRow);
  if (dropoutHeads) {
    // flatRow = (b * q_heads + h) * q_len + i; the global row adds
    // (b * (dropoutHeads - q_heads) + head_offset) * q_len.
    ImplicitLocOpBuilder &b = w.b;
    Value len = w.toI64(qLen), heads = w.toI64(qHeads);
    Value batch = arith::DivUIOp::create(b, row, arith::MulIOp::create(b, heads, len));
    Value shift = arith::AddIOp::create(
        b, arith::MulIOp::create(b, batch, arith::SubIOp::create(b, w.i64c(dropoutHeads), heads)),
        w.toI64(headOffset));
    row = arith::AddIOp::create(b, row, arith::MulIOp::create(b, shift, len));
  }
  return arith::MulIOp::create(w.b, row, kLen64);
}

Value AttentionDropout::factorOf(WarpEmitter &w, Value draw) const {
  Value kept = codegen::buildDrawKept(w.b, draw, p);
  return w.select(kept, w.f32c(1.0 / (1.0 - p)), w.f32c(0.0));
}

std::array<Value, 4> AttentionDropout::tileDraws(WarpEmitter &w, Value t,
                                                 Value rowIndex,
                                                 Value key) const {
  ImplicitLocOpBuilder &b = w.b;
  Value key64 = w.toI64(key);
  Value row0 = arith::AddIOp::create(b, rowIndex, key64);
  Value row1 = arith::AddIOp::create(
      b, row0, arith::MulIOp::create(b, kLen64, w.i64c(8)));
  auto branches = scf::IfOp::create(b, TypeRange(SmallVector<Type>(4, w.i32)), aligned,
                                    /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branches.thenBlock());
    // Keys 2t .. 2t + 3 (t even) of row g are one block, and so are keys
    // 2t - 2 .. 2t + 1 (t odd) of row g + 8: each lane draws its block.
    Value odd = arith::CmpIOp::create(b, arith::CmpIPredicate::ne,
                                      arith::AndIOp::create(b, t, w.i32c(1)), w.i32c(0));
    Value block = arith::ShRUIOp::create(b, w.select(odd, row1, row0), w.i64c(2));
    std::array<Value, 4> words = codegen::buildPhiloxBlock(b, seed, rngId, block, kMultiply);
    // The even lane needs row g + 8's words 0, 1; the odd lane row g's 2, 3.
    Value got0 = w.shuffleXor(w.select(odd, words[0], words[2]), 1);
    Value got1 = w.shuffleXor(w.select(odd, words[1], words[3]), 1);
    scf::YieldOp::create(b, ValueRange{w.select(odd, got0, words[0]),
                                       w.select(odd, got1, words[1]),
                                       w.select(odd, words[2], got0),
                                       w.select(odd, words[3], got1)});
    b.setInsertionPointToStart(branches.elseBlock());
    std::array<Value, 2> first = pairDraws(w, row0), second = pairDraws(w, row1);
    scf::YieldOp::create(b, ValueRange{first[0], first[1], second[0], second[1]});
  }
  return {branches.getResult(0), branches.getResult(1), branches.getResult(2),
          branches.getResult(3)};
}

/// values[which] for a run-time `which` (i32 in 0..3).
static Value pick(WarpEmitter &w, Value which, ArrayRef<Value> values) {
  Value result = values[3];
  for (int i = 2; i >= 0; --i)
    result = w.select(arith::CmpIOp::create(w.b, arith::CmpIPredicate::eq, which, w.i32c(i)),
                      values[i], result);
  return result;
}

std::array<Value, 4>
AttentionDropout::transposedTileDraws(WarpEmitter &w, Value m,
                                      const std::array<Value, 2> &queryIndex,
                                      const std::array<Value, 2> &keys) const {
  // Element (key, query) is P[query, key]: global index query row + key.
  std::array<Value, 4> indices;
  for (int j = 0; j < 4; ++j)
    indices[j] = arith::AddIOp::create(w.b, queryIndex[j % 2], w.toI64(keys[j / 2]));
  return quadDraws(w, m, indices);
}

std::array<Value, 4> AttentionDropout::tileFactors(WarpEmitter &w, Value t,
                                                   Value rowIndex,
                                                   Value key) const {
  return factorsOf(w, tileDraws(w, t, rowIndex, key));
}

std::array<Value, 4>
AttentionDropout::transposedTileFactors(WarpEmitter &w, Value m,
                                        const std::array<Value, 2> &queryIndex,
                                        const std::array<Value, 2> &keys) const {
  return factorsOf(w, transposedTileDraws(w, m, queryIndex, keys));
}

Value AttentionDropout::factorAt(WarpEmitter &w, ArrayRef<Value> words, int64_t nt,
                                 int j) const {
  Value bit = w.andi(words[nt / 8], w.i32c(static_cast<int32_t>(uint32_t(1) << (4 * (nt % 8) + j))));
  Value kept = arith::CmpIOp::create(w.b, arith::CmpIPredicate::ne, bit, w.i32c(0));
  return w.select(kept, w.f32c(1.0 / (1.0 - p)), w.f32c(0.0));
}

std::array<Value, 4> AttentionDropout::factorsOf(WarpEmitter &w,
                                                 const std::array<Value, 4> &draws) const {
  std::array<Value, 4> factors;
  for (int i = 0; i < 4; ++i)
    factors[i] = factorOf(w, draws[i]);
  return factors;
}

std::array<Value, 4> AttentionDropout::quadDraws(WarpEmitter &w, Value m,
                                                 const std::array<Value, 4> &indices) const {
  ImplicitLocOpBuilder &b = w.b;
  auto branches = scf::IfOp::create(b, TypeRange(SmallVector<Type>(4, w.i32)), aligned,
                                    /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branches.thenBlock());
    Value block = arith::ShRUIOp::create(b, pick(w, m, indices), w.i64c(2));
    std::array<Value, 4> words = codegen::buildPhiloxBlock(b, seed, rngId, block, kMultiply);
    // Round r: lane m sends word m ^ r of its block (element m's) and gets
    // word m of element (m ^ r)'s block from lane m ^ r.
    std::array<Value, 4> received;
    for (int r = 0; r < 4; ++r) {
      Value word = pick(w, arith::XOrIOp::create(b, m, w.i32c(r)), words);
      received[r] = r == 0 ? word : w.shuffleXor(word, 4 * r);
    }
    SmallVector<Value> draws;
    for (int j = 0; j < 4; ++j)
      draws.push_back(pick(w, arith::XOrIOp::create(b, m, w.i32c(j)), received));
    scf::YieldOp::create(b, draws);
    b.setInsertionPointToStart(branches.elseBlock());
    SmallVector<Value> single;
    for (Value index : indices)
      single.push_back(codegen::buildPhiloxDraw(b, seed, rngId, index, kMultiply));
    scf::YieldOp::create(b, single);
  }
  return {branches.getResult(0), branches.getResult(1), branches.getResult(2),
          branches.getResult(3)};
}

std::array<Value, 2> AttentionDropout::pairDraws(WarpEmitter &w, Value index) const {
  ImplicitLocOpBuilder &b = w.b;
  Value block = arith::ShRUIOp::create(b, index, w.i64c(2));
  std::array<Value, 4> words = codegen::buildPhiloxBlock(b, seed, rngId, block, kMultiply);
  Value lane = arith::TruncIOp::create(b, w.i32, arith::AndIOp::create(b, index, w.i64c(3)));
  auto laneIs = [&](int which) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, w.i32c(which));
  };
  Value first = w.select(laneIs(0), words[0],
                         w.select(laneIs(1), words[1], w.select(laneIs(2), words[2], words[3])));
  // The second element is the next lane, or lane 0 of the next block.
  auto crosses = scf::IfOp::create(b, TypeRange{w.i32}, laneIs(3), /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(crosses.thenBlock());
    Value next = arith::AddIOp::create(b, block, w.i64c(1));
    scf::YieldOp::create(b, codegen::buildPhiloxBlock(b, seed, rngId, next, kMultiply)[0]);
    b.setInsertionPointToStart(crosses.elseBlock());
    scf::YieldOp::create(b, w.select(laneIs(0), words[1],
                                     w.select(laneIs(1), words[2], words[3])));
  }
  return {first, crosses.getResult(0)};
}

} // namespace weft::gpu
