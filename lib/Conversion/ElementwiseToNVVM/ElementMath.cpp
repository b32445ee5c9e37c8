// ElementMath: typed global memory access, rounding, f32 math, loops and the
// deterministic block reduction of the elementwise kernels.
#include "KernelEmitter.h"

#include "weft/Codegen/PhiloxBuilder.h"


#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>

using namespace mlir;

namespace weft::gpu {

namespace {
int64_t elementBytes(Type element) {
  unsigned bits = element.getIntOrFloatBitWidth();
  return bits < 8 ? 1 : bits / 8;
}
/// i1 masks are stored one byte per element.
Type storageType(Type element) {
  return element.isInteger(1) ? IntegerType::get(element.getContext(), 8) : element;
}
} // namespace

Value ElementMath::widen(Value raw, Type element) {
  if (element.isInteger(1))
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ne, raw,
                                 arith::ConstantIntOp::create(b, raw.getType(), 0));
  // The low half of a split master: computed on as a signed i32.
  if (element.isInteger(16))
    return arith::ExtSIOp::create(b, i32, raw);
  if (element.isInteger(64) || element.isF32())
    return raw;
  return arith::ExtFOp::create(b, f32, raw);
}

Value ElementMath::narrow(Value value, Type element, bool exactBits) {
  if (element.isInteger(16))
    return arith::TruncIOp::create(b, element, value);
  if (element.isF32())
    return value;
  if (exactBits && element.isBF16()) {
    // The high 16 bits as they are: cvt.rn.bf16.f32 would be exact for a
    // number but may canonicalize a NaN (its sign and payload are kept).
    Value bits = arith::BitcastOp::create(b, i32, value);
    Value high = arith::ShRUIOp::create(b, bits, i32c(16));
    return arith::BitcastOp::create(
        b, element, arith::TruncIOp::create(b, b.getI16Type(), high));
  }
  return arith::TruncFOp::create(b, element, value);
}

ElementMath::ElementMath(ImplicitLocOpBuilder &b, mlir::gpu::GPUFuncOp func,
                         int64_t threads)
    : WarpEmitter(b, /*bf16=*/true), func(func), threads(threads) {}

Value ElementMath::loadElement(Value base, Type element, Value index) {
  Value offset = i64Mul(index, i64c(elementBytes(element)));
  Type storage = storageType(element);
  Value raw = load(storage, globalAt(base, offset), unsigned(elementBytes(element)));
  return widen(raw, element);
}

void ElementMath::storeElement(Value base, Type element, Value index, Value value,
                               bool exactBits) {
  Value offset = i64Mul(index, i64c(elementBytes(element)));
  store(narrow(value, element, exactBits), globalAt(base, offset),
        unsigned(elementBytes(element)));
}

SmallVector<Value> ElementMath::loadVector(Value base, Type element, Value index,
                                           int64_t width) {
  int64_t size = elementBytes(element);
  auto vectorType = VectorType::get({width}, storageType(element));
  Value offset = i64Mul(index, i64c(size));
  Value vector = load(vectorType, globalAt(base, offset),
                      unsigned(std::min<int64_t>(16, width * size)));
  SmallVector<Value> lanes;
  for (int64_t lane = 0; lane < width; ++lane) {
    lanes.push_back(widen(LLVM::ExtractElementOp::create(b, vector, i32c(lane)), element));
  }
  return lanes;
}

void ElementMath::storeVector(Value base, Type element, Value index,
                              ArrayRef<Value> values, bool exactBits) {
  int64_t size = elementBytes(element);
  int64_t width = int64_t(values.size());
  auto vectorType = VectorType::get({width}, element);
  Value vector = LLVM::UndefOp::create(b, vectorType);
  for (auto [lane, value] : llvm::enumerate(values)) {
    vector = LLVM::InsertElementOp::create(b, vector, narrow(value, element, exactBits),
                                           i32c(int64_t(lane)));
  }
  Value offset = i64Mul(index, i64c(size));
  store(vector, globalAt(base, offset), unsigned(std::min<int64_t>(16, width * size)));
}

Value ElementMath::round(Value value, Type element) {
  if (element.isF32())
    return value;
  Value rounded = arith::TruncFOp::create(b, element, value);
  return arith::ExtFOp::create(b, f32, rounded);
}

Value ElementMath::fdiv(Value x, Value y) { return arith::DivFOp::create(b, x, y); }
Value ElementMath::exp(Value x) { return exp2(fmul(x, f32c(M_LOG2E))); }
// tanh(x) = 1 - 2 / (e^{2x} + 1): exact at +-inf, no libdevice call.
Value ElementMath::tanh(Value x) {
  Value e = exp(fmul(x, f32c(2.0)));
  return fsub(f32c(1.0), fdiv(f32c(2.0), fadd(e, f32c(1.0))));
}
// log, cos, sin and pow: libdevice's logf, cosf, sinf and powf (linked by
// lowerToPtx); powf keeps pow's sign rules for negative bases with integral
// exponents.
Value ElementMath::log(Value x) { return math::LogOp::create(b, x); }
Value ElementMath::cos(Value x) { return math::CosOp::create(b, x); }
Value ElementMath::sin(Value x) { return math::SinOp::create(b, x); }
Value ElementMath::pow(Value x, Value y) { return math::PowFOp::create(b, x, y); }
// erf has no short exact form; libdevice's erff (linked by lowerToPtx).
Value ElementMath::erf(Value x) { return math::ErfOp::create(b, x); }
// sqrt.rn.f32 (correctly rounded); convert-gpu-to-nvvm rejects llvm.sqrt.
Value ElementMath::sqrt(Value x) {
  return LLVM::CallIntrinsicOp::create(b, f32, b.getStringAttr("llvm.nvvm.sqrt.rn.f"),
                                       ValueRange{x})
      .getResult(0);
}
Value ElementMath::rsqrt(Value x) { return fdiv(f32c(1.0), sqrt(x)); }
Value ElementMath::sigmoid(Value x) {
  return fdiv(f32c(1.0), fadd(f32c(1.0), exp(fsub(f32c(0.0), x))));
}
Value ElementMath::i64ToF32(Value x) { return arith::SIToFPOp::create(b, f32, x); }

Value ElementMath::i64Add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
Value ElementMath::i64Sub(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
Value ElementMath::i64Mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
Value ElementMath::i64Div(Value x, Value y) { return arith::DivSIOp::create(b, x, y); }
Value ElementMath::i64Rem(Value x, Value y) { return arith::RemSIOp::create(b, x, y); }
Value ElementMath::i64Lt(Value x, Value y) {
  return arith::CmpIOp::create(b, arith::CmpIPredicate::slt, x, y);
}
Value ElementMath::i64Eq(Value x, Value y) {
  return arith::CmpIOp::create(b, arith::CmpIPredicate::eq, x, y);
}
Value ElementMath::tid64() { return toI64(threadIdX()); }
Value ElementMath::blockId64() { return toI64(blockId(0)); }
Value ElementMath::gridDim64() {
  Value dim = mlir::gpu::GridDimOp::create(b, mlir::gpu::Dimension::x);
  return arith::IndexCastUIOp::create(b, i64, dim);
}

SmallVector<Value>
ElementMath::loop(Value lb, Value ub, Value step, ValueRange init,
                  function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto forOp = scf::ForOp::create(b, lb, ub, step, init);
  OpBuilder::InsertionGuard guard(b);
  Block *block = forOp.getBody();
  if (!block->empty() && block->back().hasTrait<OpTrait::IsTerminator>()) {
    b.setInsertionPoint(&block->back());
    body(forOp.getInductionVar(), forOp.getRegionIterArgs());
  } else {
    b.setInsertionPointToEnd(block);
    SmallVector<Value> next = body(forOp.getInductionVar(), forOp.getRegionIterArgs());
    scf::YieldOp::create(b, next);
  }
  return SmallVector<Value>(forOp.getResults());
}

Value ElementMath::blockReduce(Value x, bool max) {
  auto combine = [&](Value p, Value q) { return max ? fmax(p, q) : fadd(p, q); };
  for (int mask = 16; mask >= 1; mask /= 2)
    x = combine(x, shuffleXor(x, mask));
  int64_t warps = (threads + 31) / 32;
  if (warps == 1)
    return x;
  Value tid = threadIdX();
  Value lane = arith::RemUIOp::create(b, tid, i32c(32));
  Value warp = divu(tid, i32c(32));
  ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, i32c(0)),
         [&] { store(x, sharedAt(mul(warp, i32c(4))), 4); });
  barrier();
  Value result = load(f32, sharedAt(i32c(0)), 4);
  for (int64_t w = 1; w < warps; ++w)
    result = combine(result, load(f32, sharedAt(i32c(4 * w)), 4));
  // The slots are reused by the next reduction.
  barrier();
  return result;
}

SmallVector<Value> ElementMath::blockSums(ArrayRef<Value> xs) {
  SmallVector<Value> values(xs.begin(), xs.end());
  for (int mask = 16; mask >= 1; mask /= 2)
    for (Value &x : values)
      x = fadd(x, shuffleXor(x, mask));
  int64_t warps = (threads + 31) / 32;
  if (warps == 1)
    return values;
  Value tid = threadIdX();
  Value lane = arith::RemUIOp::create(b, tid, i32c(32));
  Value warp = divu(tid, i32c(32));
  // Value k of warp w in slot k * 32 + w.
  ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, i32c(0)), [&] {
    for (auto [k, x] : llvm::enumerate(values))
      store(x, sharedAt(mul(add(warp, i32c(int64_t(k) * 32)), i32c(4))), 4);
  });
  barrier();
  SmallVector<Value> results;
  for (size_t k = 0; k < values.size(); ++k) {
    Value result = load(f32, sharedAt(i32c(int64_t(k) * 128)), 4);
    for (int64_t w = 1; w < warps; ++w)
      result = fadd(result, load(f32, sharedAt(i32c(int64_t(k) * 128 + 4 * w)), 4));
    results.push_back(result);
  }
  barrier();
  return results;
}

Value ElementMath::dropoutValue(Value x, Value draw, double p) {
  Value kept = codegen::buildDrawKept(b, draw, p);
  // x / (1 - p) as the reference (float64, then one rounding): the factor
  // split into two f32s, x * hi + x * lo with one fma, is within about half
  // an f32 ulp of it; x * f32(1 / (1 - p)) alone would be off by up to one.
  double factor = 1.0 / (1.0 - p);
  double factorHigh = static_cast<float>(factor);
  Value scaled = math::FmaOp::create(b, x, f32c(factorHigh), fmul(x, f32c(factor - factorHigh)));
  return select(kept, scaled, f32c(0.0));
}

} // namespace weft::gpu
