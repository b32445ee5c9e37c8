// The attention kernels' dropout factors from weft's Philox builder
// (weft/Codegen/PhiloxBuilder.h), the same draws as the interpreter's.
#include "AttentionDropout.h"

#include "weft/Codegen/PhiloxBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace weft::gpu {

AttentionDropout::AttentionDropout(WarpEmitter &e, const AttentionKernelConfig &config,
                                   Value seedPointer)
    : p(config.dropoutP), rngId(config.rngId),
      seed(e.load(e.i64, seedPointer, 8)) {}

Value AttentionDropout::factorOf(WarpEmitter &w, Value draw) const {
  Value kept = codegen::buildDrawKept(w.b, draw, p);
  return w.select(kept, w.f32c(1.0 / (1.0 - p)), w.f32c(0.0));
}

Value AttentionDropout::factorAt(WarpEmitter &w, Value index) const {
  return factorOf(w, codegen::buildPhiloxDraw(w.b, seed, rngId, index));
}

std::array<Value, 2> AttentionDropout::pairFactors(WarpEmitter &w, Value index) const {
  ImplicitLocOpBuilder &b = w.b;
  Value block = arith::ShRUIOp::create(b, index, w.i64c(2));
  std::array<Value, 4> words = codegen::buildPhiloxBlock(b, seed, rngId, block);
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
    scf::YieldOp::create(b, codegen::buildPhiloxBlock(b, seed, rngId, next)[0]);
    b.setInsertionPointToStart(crosses.elseBlock());
    scf::YieldOp::create(b, w.select(laneIs(0), words[1],
                                     w.select(laneIs(1), words[2], words[3])));
  }
  return {factorOf(w, first), factorOf(w, crosses.getResult(0))};
}

} // namespace weft::gpu
