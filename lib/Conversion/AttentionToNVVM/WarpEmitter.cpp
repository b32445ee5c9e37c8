// WarpEmitter: the gpu / nvvm / llvm / arith ops the attention kernels are
// written with (see WarpEmitter.h for the fragment layouts).
#include "WarpEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;

namespace weft::gpu {

/// The dynamic shared memory of every kernel (an extern .shared array).
constexpr llvm::StringLiteral kSharedSymbol = "weft_smem";

WarpEmitter::WarpEmitter(ImplicitLocOpBuilder &b, bool bf16) : b(b), bf16(bf16) {
  MLIRContext *context = b.getContext();
  i1 = b.getI1Type();
  i32 = b.getI32Type();
  i64 = b.getI64Type();
  f32 = b.getF32Type();
  v4i32 = VectorType::get({4}, i32);
  globalPtr = LLVM::LLVMPointerType::get(context, 1);
  sharedPtr = LLVM::LLVMPointerType::get(context, 3);
  elementType = bf16 ? Type(b.getBF16Type()) : Type(b.getF16Type());
}

Value WarpEmitter::i32c(int64_t value) {
  return arith::ConstantIntOp::create(b, i32, value);
}
Value WarpEmitter::i64c(int64_t value) {
  return arith::ConstantIntOp::create(b, i64, value);
}
Value WarpEmitter::f32c(double value) {
  return arith::ConstantOp::create(b, b.getF32FloatAttr(value));
}
Value WarpEmitter::add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
Value WarpEmitter::sub(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
Value WarpEmitter::mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
Value WarpEmitter::divu(Value x, Value y) { return arith::DivUIOp::create(b, x, y); }
Value WarpEmitter::minsi(Value x, Value y) { return arith::MinSIOp::create(b, x, y); }
Value WarpEmitter::lt(Value x, Value y) {
  return arith::CmpIOp::create(b, arith::CmpIPredicate::slt, x, y);
}
Value WarpEmitter::le(Value x, Value y) {
  return arith::CmpIOp::create(b, arith::CmpIPredicate::sle, x, y);
}
Value WarpEmitter::andi(Value x, Value y) { return arith::AndIOp::create(b, x, y); }
Value WarpEmitter::select(Value c, Value x, Value y) {
  return arith::SelectOp::create(b, c, x, y);
}
Value WarpEmitter::toI64(Value x) { return arith::ExtSIOp::create(b, i64, x); }
Value WarpEmitter::ceilDiv(Value x, int64_t y) {
  return divu(add(x, i32c(y - 1)), i32c(y));
}

Value WarpEmitter::fadd(Value x, Value y) { return arith::AddFOp::create(b, x, y); }
Value WarpEmitter::fsub(Value x, Value y) { return arith::SubFOp::create(b, x, y); }
Value WarpEmitter::fmul(Value x, Value y) { return arith::MulFOp::create(b, x, y); }
// llvm.maxnum lowers to PTX max.f32; arith.maxnumf would become a libdevice
// call (__nv_fmaxf), which ties PTX generation to the toolkit's libdevice.
Value WarpEmitter::fmax(Value x, Value y) { return LLVM::MaxNumOp::create(b, x, y); }
Value WarpEmitter::feq(Value x, Value y) {
  return arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, x, y);
}
Value WarpEmitter::fgt(Value x, Value y) {
  return arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, x, y);
}

Value WarpEmitter::exp2(Value x) {
  return LLVM::CallIntrinsicOp::create(b, f32,
                                       b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f"),
                                       ValueRange{x})
      .getResult(0);
}
Value WarpEmitter::log2(Value x) {
  return LLVM::CallIntrinsicOp::create(b, f32,
                                       b.getStringAttr("llvm.nvvm.lg2.approx.ftz.f"),
                                       ValueRange{x})
      .getResult(0);
}

Value WarpEmitter::threadIdX() {
  Value id = mlir::gpu::ThreadIdOp::create(b, mlir::gpu::Dimension::x);
  return arith::IndexCastUIOp::create(b, i32, id);
}
Value WarpEmitter::blockId(int dim) {
  auto dimension = dim == 0   ? mlir::gpu::Dimension::x
                   : dim == 1 ? mlir::gpu::Dimension::y
                              : mlir::gpu::Dimension::z;
  Value id = mlir::gpu::BlockIdOp::create(b, dimension);
  return arith::IndexCastUIOp::create(b, i32, id);
}

Value WarpEmitter::globalAt(Value base, Value byteOffset) {
  return LLVM::GEPOp::create(b, globalPtr, b.getI8Type(), base,
                             ValueRange{byteOffset});
}
Value WarpEmitter::sharedBase() {
  return LLVM::AddressOfOp::create(b, sharedPtr, kSharedSymbol);
}
Value WarpEmitter::sharedAt(Value byteOffset) {
  return LLVM::GEPOp::create(b, sharedPtr, b.getI8Type(), sharedBase(),
                             ValueRange{byteOffset});
}
Value WarpEmitter::load(Type type, Value ptr, unsigned alignment) {
  return LLVM::LoadOp::create(b, type, ptr, alignment);
}
void WarpEmitter::store(Value value, Value ptr, unsigned alignment) {
  LLVM::StoreOp::create(b, value, ptr, alignment);
}
void WarpEmitter::barrier() { mlir::gpu::BarrierOp::create(b); }

void WarpEmitter::ifThen(Value condition, llvm::function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(b, condition, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  body();
}

Quad WarpEmitter::ldmatrix4(Value ptr, bool transpose) {
  MLIRContext *context = b.getContext();
  auto resultType = LLVM::LLVMStructType::getLiteral(context, {i32, i32, i32, i32});
  Value result = NVVM::LdMatrixOp::create(
      b, resultType, ptr, /*num=*/4u,
      transpose ? NVVM::MMALayout::col : NVVM::MMALayout::row,
      NVVM::LdStMatrixShapeAttr::get(context, 8, 8), NVVM::LdStMatrixEltType::B16);
  Quad quad;
  for (int i = 0; i < 4; ++i)
    quad[i] = LLVM::ExtractValueOp::create(b, result, i);
  return quad;
}

Quad WarpEmitter::mma(const Quad &a, Value b0, Value b1, const Quad &c) {
  MLIRContext *context = b.getContext();
  auto resultType = LLVM::LLVMStructType::getLiteral(context, {f32, f32, f32, f32});
  SmallVector<Value, 4> aOperands(a.begin(), a.end());
  SmallVector<Value, 2> bOperands{b0, b1};
  NVVM::MMATypes ptxType = bf16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  if (!bf16) {
    // f16 fragments are vector<2xf16> in the NVVM op; bf16 ones are i32.
    auto half2 = VectorType::get({2}, b.getF16Type());
    for (Value &v : aOperands)
      v = LLVM::BitcastOp::create(b, half2, v);
    for (Value &v : bOperands)
      v = LLVM::BitcastOp::create(b, half2, v);
  }
  Value result = NVVM::MmaOp::create(
      b, resultType, aOperands, bOperands, ValueRange(c), {16, 8, 16},
      std::nullopt, std::nullopt,
      std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row, NVVM::MMALayout::col});
  Quad d;
  for (int i = 0; i < 4; ++i)
    d[i] = LLVM::ExtractValueOp::create(b, result, i);
  return d;
}

Value WarpEmitter::pack(Value lo, Value hi) {
  auto pair = VectorType::get({2}, elementType);
  Value vec = LLVM::UndefOp::create(b, pair);
  vec = LLVM::InsertElementOp::create(b, vec, arith::TruncFOp::create(b, elementType, lo), i32c(0));
  vec = LLVM::InsertElementOp::create(b, vec, arith::TruncFOp::create(b, elementType, hi), i32c(1));
  return LLVM::BitcastOp::create(b, i32, vec);
}

std::array<Value, 2> WarpEmitter::unpack(Value packed) {
  auto pair = VectorType::get({2}, elementType);
  Value vec = LLVM::BitcastOp::create(b, pair, packed);
  Value lo = LLVM::ExtractElementOp::create(b, vec, i32c(0));
  Value hi = LLVM::ExtractElementOp::create(b, vec, i32c(1));
  return {arith::ExtFOp::create(b, f32, lo), arith::ExtFOp::create(b, f32, hi)};
}

Value WarpEmitter::shuffleXor(Value x, int mask) {
  auto shuffle = mlir::gpu::ShuffleOp::create(b, x, mask, 32, mlir::gpu::ShuffleMode::XOR);
  return shuffle.getShuffleResult();
}
Value WarpEmitter::opaqueCopy(Value x) {
  return LLVM::InlineAsmOp::create(b, i32, ValueRange{x}, b.getStringAttr("mov.b32 $0, $1;"),
                                   b.getStringAttr("=r,r"), UnitAttr(), UnitAttr(),
                                   LLVM::TailCallKindAttr(), LLVM::AsmDialectAttr(),
                                   ArrayAttr())
      .getResult(0);
}
Value WarpEmitter::pinned(Value x) {
  bool wide = x.getType() == i64;
  return LLVM::InlineAsmOp::create(b, x.getType(), ValueRange{x},
                                   b.getStringAttr(wide ? "mov.b64 $0, $1;" : "mov.b32 $0, $1;"),
                                   b.getStringAttr(wide ? "=l,l" : "=r,r"),
                                   /*has_side_effects=*/b.getUnitAttr(), UnitAttr(),
                                   LLVM::TailCallKindAttr(), LLVM::AsmDialectAttr(), ArrayAttr())
      .getResult(0);
}
Value WarpEmitter::quadMax(Value x) {
  x = fmax(x, shuffleXor(x, 1));
  return fmax(x, shuffleXor(x, 2));
}
Value WarpEmitter::quadSum(Value x) {
  x = fadd(x, shuffleXor(x, 1));
  return fadd(x, shuffleXor(x, 2));
}

Value WarpEmitter::laneOffsetA(Value lane, int64_t pitch) {
  Value row = arith::RemUIOp::create(b, lane, i32c(16));
  Value half = divu(lane, i32c(16));
  return add(mul(row, i32c(pitch)), mul(half, i32c(16)));
}
Value WarpEmitter::laneOffsetB(Value lane, int64_t pitch) {
  Value row = add(mul(divu(lane, i32c(16)), i32c(8)), arith::RemUIOp::create(b, lane, i32c(8)));
  Value half = arith::RemUIOp::create(b, divu(lane, i32c(8)), i32c(2));
  return add(mul(row, i32c(pitch)), mul(half, i32c(16)));
}
Value WarpEmitter::laneOffsetBTransposed(Value lane, int64_t pitch) {
  Value half = arith::RemUIOp::create(b, divu(lane, i32c(8)), i32c(2));
  Value row = add(mul(half, i32c(8)), arith::RemUIOp::create(b, lane, i32c(8)));
  return add(mul(row, i32c(pitch)), mul(divu(lane, i32c(16)), i32c(16)));
}

SmallVector<Quad> WarpEmitter::loadA(Value rowsAt, int64_t steps) {
  SmallVector<Quad> fragments;
  for (int64_t step = 0; step < steps; ++step)
    fragments.push_back(ldmatrix4(sharedAt(add(rowsAt, i32c(step * 32))), false));
  return fragments;
}

SmallVector<Quad> WarpEmitter::mmaABt(ArrayRef<Quad> a, Value tileAt, Value laneB,
                                      int64_t tiles, int64_t pitch) {
  Value zero = f32c(0.0);
  SmallVector<Quad> c(tiles, Quad{zero, zero, zero, zero});
  Value base = add(tileAt, laneB);
  for (int64_t pair = 0; pair < tiles / 2; ++pair)
    for (size_t step = 0; step < a.size(); ++step) {
      Quad bFrag = ldmatrix4(
          sharedAt(add(base, i32c(pair * 16 * pitch + static_cast<int64_t>(step) * 32))), false);
      c[2 * pair] = mma(a[step], bFrag[0], bFrag[1], c[2 * pair]);
      c[2 * pair + 1] = mma(a[step], bFrag[2], bFrag[3], c[2 * pair + 1]);
    }
  return c;
}

void WarpEmitter::mmaAB(ArrayRef<Quad> a, Value tileAt, Value laneBt,
                        MutableArrayRef<Quad> acc, int64_t pitch) {
  Value base = add(tileAt, laneBt);
  for (size_t step = 0; step < a.size(); ++step)
    for (size_t pair = 0; pair < acc.size() / 2; ++pair) {
      Quad bFrag = ldmatrix4(
          sharedAt(add(base, i32c(static_cast<int64_t>(step) * 16 * pitch +
                                  static_cast<int64_t>(pair) * 32))),
          true);
      acc[2 * pair] = mma(a[step], bFrag[0], bFrag[1], acc[2 * pair]);
      acc[2 * pair + 1] = mma(a[step], bFrag[2], bFrag[3], acc[2 * pair + 1]);
    }
}

SmallVector<Quad> WarpEmitter::toA(ArrayRef<Quad> tiles) {
  SmallVector<Quad> fragments;
  for (size_t i = 0; i + 1 < tiles.size(); i += 2)
    fragments.push_back({pack(tiles[i][0], tiles[i][1]), pack(tiles[i][2], tiles[i][3]),
                         pack(tiles[i + 1][0], tiles[i + 1][1]),
                         pack(tiles[i + 1][2], tiles[i + 1][3])});
  return fragments;
}

void WarpEmitter::copyTile(Value global, Value globalPitch, Value validRows,
                           int64_t rows, int64_t cols, Value sharedOffset,
                           int64_t sharedPitch, Value tid, int64_t threads) {
  // 16-byte chunks of 8 elements; a row has cols / 8 of them.
  int64_t chunksPerRow = cols / 8;
  int64_t chunks = rows * chunksPerRow;
  Value zero = LLVM::ZeroOp::create(b, v4i32);
  for (int64_t first = 0; first < chunks; first += threads) {
    Value chunk = add(tid, i32c(first));
    Value row = divu(chunk, i32c(chunksPerRow));
    Value column = arith::RemUIOp::create(b, chunk, i32c(chunksPerRow));
    Value inRange = lt(row, validRows);
    if (first + threads > chunks)
      inRange = andi(inRange, lt(chunk, i32c(chunks)));
    // Out-of-range rows read row 0 (always present) and are replaced by 0.
    Value safeRow = select(inRange, row, i32c(0));
    Value byteOffset = add(mul(safeRow, globalPitch), mul(column, i32c(16)));
    Value value = load(v4i32, globalAt(global, toI64(byteOffset)), 16);
    value = select(inRange, value, zero);
    Value sharedByte = add(sharedOffset, add(mul(row, i32c(sharedPitch)),
                                             mul(column, i32c(16))));
    if (first + threads > chunks)
      ifThen(lt(chunk, i32c(chunks)), [&] { store(value, sharedAt(sharedByte), 16); });
    else
      store(value, sharedAt(sharedByte), 16);
  }
}

} // namespace weft::gpu
