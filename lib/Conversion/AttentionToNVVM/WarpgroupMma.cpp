// WarpEmitter's Hopper MMA part: shared-memory matrix descriptors and
// wgmma.mma_async with A in registers or shared memory (inline PTX: the NVVM
// op takes A only by descriptor).
#include "WarpEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;

namespace weft::gpu {

Value WarpEmitter::matrixDescriptor(Value sharedOffset, int64_t leadingBytes,
                                    int64_t strideBytes, bool swizzle128) {
  // Bits 0-13: address >> 4; 16-29: leading-dimension byte offset >> 4;
  // 32-45: stride-dimension byte offset >> 4; 62-63: layout (0 no swizzle,
  // 1 the 128-byte swizzle).
  Value address = LLVM::PtrToIntOp::create(b, i32, sharedAt(sharedOffset));
  Value low = arith::AndIOp::create(b, arith::ShRUIOp::create(b, address, i32c(4)),
                                    i32c(0x3FFF));
  uint64_t fields = (uint64_t((leadingBytes >> 4) & 0x3FFF) << 16) |
                    (uint64_t((strideBytes >> 4) & 0x3FFF) << 32) |
                    (uint64_t(swizzle128 ? 1 : 0) << 62);
  return arith::OrIOp::create(b, arith::ExtUIOp::create(b, i64, low),
                              i64c(static_cast<int64_t>(fields)));
}

void WarpEmitter::wgmmaFence() { NVVM::WgmmaFenceAlignedOp::create(b); }
void WarpEmitter::wgmmaCommit() { NVVM::WgmmaGroupSyncAlignedOp::create(b); }
void WarpEmitter::wgmmaWait(int pending) {
  NVVM::WgmmaWaitGroupSyncOp::create(b, pending);
}

SmallVector<Value> WarpEmitter::fenceOperands(ArrayRef<Value> values) {
  if (values.empty())
    return {};
  std::string constraints;
  SmallVector<Type> types;
  for (Value value : values) {
    constraints += std::string(constraints.empty() ? "" : ",") +
                   (value.getType() == f32 ? "=f" : "=r");
    types.push_back(value.getType());
  }
  for (size_t i = 0; i < values.size(); ++i)
    constraints += "," + std::to_string(i);
  auto resultType = LLVM::LLVMStructType::getLiteral(b.getContext(), types);
  auto asmOp = LLVM::InlineAsmOp::create(
      b, resultType, values, b.getStringAttr(""), b.getStringAttr(constraints),
      b.getUnitAttr(), UnitAttr(), LLVM::TailCallKindAttr(), LLVM::AsmDialectAttr(),
      ArrayAttr());
  SmallVector<Value> result;
  for (size_t i = 0; i < values.size(); ++i)
    result.push_back(LLVM::ExtractValueOp::create(b, asmOp.getResult(0), i));
  return result;
}

namespace {

/// wgmma.mma_async m64nNk16 with f32 accumulators tied to the results: the
/// A operand is `aText` over `aOperands` (four registers or a descriptor),
/// then the B descriptor, scale-d (0 overwrites the accumulator) and
/// `immediates` (scale-a, scale-b, and the transposes the form takes).
SmallVector<Value> emitWgmma(WarpEmitter &w, ArrayRef<Value> acc, ArrayRef<Value> aOperands,
                             StringRef aConstraints, Value descriptorB, int64_t n,
                             bool accumulate, StringRef immediates) {
  int64_t count = n / 2;
  assert(static_cast<int64_t>(acc.size()) == count && "accumulator size");
  auto ref = [](int64_t i) { return "$" + std::to_string(i); };
  std::string outputs, constraints;
  for (int64_t i = 0; i < count; ++i) {
    outputs += (i ? ", " : "") + ref(i);
    constraints += (i ? ",=f" : "=f");
  }
  int64_t next = count;
  std::string aText;
  if (aOperands.size() == 1) {
    aText = ref(next++);
  } else {
    aText = "{";
    for (size_t i = 0; i < aOperands.size(); ++i)
      aText += (i ? ", " : "") + ref(next++);
    aText += "}";
  }
  std::string bText = ref(next++), scaleText = ref(next++);
  std::string asmString = "{\n.reg .pred p;\nsetp.ne.b32 p, " + scaleText + ", 0;\n" +
                          "wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) +
                          "k16.f32." + (w.bf16 ? "bf16.bf16" : "f16.f16") + " {" +
                          outputs + "}, " + aText + ", " + bText + ", p, " +
                          immediates.str() + ";\n}";
  constraints += "," + aConstraints.str() + ",l,r";
  for (int64_t i = 0; i < count; ++i)
    constraints += "," + std::to_string(i);
  SmallVector<Value> operands(aOperands.begin(), aOperands.end());
  operands.push_back(descriptorB);
  operands.push_back(w.i32c(accumulate ? 1 : 0));
  operands.append(acc.begin(), acc.end());
  SmallVector<Type> fields(count, w.f32);
  auto resultType = LLVM::LLVMStructType::getLiteral(w.b.getContext(), fields);
  auto asmOp = LLVM::InlineAsmOp::create(
      w.b, resultType, operands, w.b.getStringAttr(asmString),
      w.b.getStringAttr(constraints), w.b.getUnitAttr(), UnitAttr(),
      LLVM::TailCallKindAttr(), LLVM::AsmDialectAttr(), ArrayAttr());
  SmallVector<Value> result;
  for (int64_t i = 0; i < count; ++i)
    result.push_back(LLVM::ExtractValueOp::create(w.b, asmOp.getResult(0), i));
  return result;
}

} // namespace

SmallVector<Value> WarpEmitter::wgmma(ArrayRef<Value> acc, const Quad &a,
                                      Value descriptorB, int64_t n,
                                      bool transposeB, bool accumulate) {
  return emitWgmma(*this, acc, ArrayRef<Value>(a.data(), a.size()), "r,r,r,r", descriptorB,
                   n, accumulate, transposeB ? "1, 1, 1" : "1, 1, 0");
}

SmallVector<Value> WarpEmitter::wgmmaShared(ArrayRef<Value> acc, Value descriptorA,
                                            Value descriptorB, int64_t n,
                                            bool accumulate) {
  return emitWgmma(*this, acc, descriptorA, "l", descriptorB, n, accumulate, "1, 1, 0, 0");
}

SmallVector<Value> WarpEmitter::wgmmaSharedTransposed(ArrayRef<Value> acc, Value descriptorA,
                                                      Value descriptorB, int64_t n,
                                                      bool accumulate) {
  return emitWgmma(*this, acc, descriptorA, "l", descriptorB, n, accumulate, "1, 1, 1, 1");
}

} // namespace weft::gpu
