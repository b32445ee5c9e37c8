// Philox4x32-10 (Salmon et al., SC'11) as arith ops: each round is two
// 32x32->64 multiplications (arith.mului_extended gives the low and high
// halves; for NVPTX, arith.muli and PTX's mul.hi.u32), xors with the counter
// and the key, and a key bump.
#include "weft/Codegen/PhiloxBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Matchers.h"

#include <array>
#include <cmath>
#include <cstdint>

using namespace mlir;

namespace weft::codegen {

namespace {
// Random123's constants, as in lib/Reference/Numerics.cpp.
constexpr uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u, kPhiloxW1 = 0xBB67AE85u;
} // namespace

static Value constantI32(ImplicitLocOpBuilder &b, uint32_t value) {
  return arith::ConstantOp::create(
      b, b.getI32Type(), b.getI32IntegerAttr(static_cast<int32_t>(value)));
}

/// The high and low 32 bits of multiplier * x (i32 each).
static std::pair<Value, Value> multiplyWide(ImplicitLocOpBuilder &b, Value multiplier, Value x,
                                            PhiloxMultiply multiply) {
  if (multiply == PhiloxMultiply::Portable) {
    auto product = arith::MulUIExtendedOp::create(b, multiplier, x);
    return {product.getHigh(), product.getLow()};
  }
  // The first round's zero counter words: no instruction for them.
  if (matchPattern(x, m_Zero()))
    return {x, x};
  Type i32 = b.getI32Type();
  Value high = LLVM::InlineAsmOp::create(
                   b, i32, ValueRange{multiplier, x}, b.getStringAttr("mul.hi.u32 $0, $1, $2;"),
                   b.getStringAttr("=r,r,r"), UnitAttr(), UnitAttr(),
                   LLVM::TailCallKindAttr(), LLVM::AsmDialectAttr(), ArrayAttr())
                   .getResult(0);
  return {high, arith::MulIOp::create(b, multiplier, x)};
}

std::array<Value, 4> buildPhiloxBlock(ImplicitLocOpBuilder &b, Value seed,
                                      int64_t rngId, Value block, PhiloxMultiply multiply) {
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Value blockHigh = b.createOrFold<arith::ShRUIOp>(
      block, arith::ConstantOp::create(b, i64, b.getI64IntegerAttr(32)));
  Value zero = constantI32(b, 0);
  std::array<Value, 4> counter = {b.createOrFold<arith::TruncIOp>(i32, block),
                                  b.createOrFold<arith::TruncIOp>(i32, blockHigh),
                                  zero, zero};
  Value seedLow = b.createOrFold<arith::TruncIOp>(i32, seed);
  uint32_t rngLow = static_cast<uint32_t>(static_cast<uint64_t>(rngId));
  Value multiplier0 = constantI32(b, kPhiloxM0);
  Value multiplier1 = constantI32(b, kPhiloxM1);
  for (uint32_t round = 0; round < 10; ++round) {
    // The key of round r is the initial key plus r bumps (mod 2^32); the
    // rng_id half is a compile-time constant.
    Value key0 = b.createOrFold<arith::AddIOp>(
        seedLow, constantI32(b, round * kPhiloxW0));
    Value key1 = constantI32(b, rngLow + round * kPhiloxW1);
    auto [high0, low0] = multiplyWide(b, multiplier0, counter[0], multiply);
    auto [high1, low1] = multiplyWide(b, multiplier1, counter[2], multiply);
    Value lane0 = b.createOrFold<arith::XOrIOp>(
        b.createOrFold<arith::XOrIOp>(high1, counter[1]), key0);
    Value lane2 = b.createOrFold<arith::XOrIOp>(
        b.createOrFold<arith::XOrIOp>(high0, counter[3]), key1);
    counter = {lane0, low1, lane2, low0};
  }
  return counter;
}

Value buildPhiloxDraw(ImplicitLocOpBuilder &b, Value seed, int64_t rngId,
                      Value index, PhiloxMultiply multiply) {
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Value block = b.createOrFold<arith::ShRUIOp>(
      index, arith::ConstantOp::create(b, i64, b.getI64IntegerAttr(2)));
  std::array<Value, 4> words = buildPhiloxBlock(b, seed, rngId, block, multiply);
  // Lane index % 4 of the block's four draws.
  Value lane = b.createOrFold<arith::TruncIOp>(
      i32, b.createOrFold<arith::AndIOp>(
               index, arith::ConstantOp::create(b, i64, b.getI64IntegerAttr(3))));
  Value draw = words[3];
  for (int which = 2; which >= 0; --which) {
    Value isLane = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane,
                                         constantI32(b, which));
    draw = arith::SelectOp::create(b, isLane, words[which], draw);
  }
  return draw;
}

Value buildDrawKept(ImplicitLocOpBuilder &b, Value draw, double p) {
  auto threshold = static_cast<uint64_t>(std::ldexp(p, 32));
  // p < 1 (the verifiers' range) puts the threshold below 2^32: an unsigned
  // 32-bit comparison. At 2^32 no draw reaches it.
  if (threshold > UINT32_MAX)
    return arith::ConstantOp::create(b, b.getI1Type(), b.getBoolAttr(false));
  return arith::CmpIOp::create(b, arith::CmpIPredicate::uge, draw,
                               constantI32(b, static_cast<uint32_t>(threshold)));
}

Value buildDropoutKeep(ImplicitLocOpBuilder &b, Value seed, int64_t rngId,
                       Value index, double p, PhiloxMultiply multiply) {
  return buildDrawKept(b, buildPhiloxDraw(b, seed, rngId, index, multiply), p);
}

} // namespace weft::codegen
