// WarpEmitter's Hopper part: core-matrix tiles in shared memory, their wgmma
// descriptors, and wgmma.mma_async with a register A operand (inline PTX: the
// NVVM op takes A only by descriptor).
#include "WarpEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;

namespace weft::gpu {

void WarpEmitter::copyTileCoresAsync(Value global, Value validRows, int64_t rows,
                                     int64_t cols, Value sharedOffset, Value tid,
                                     int64_t threads) {
  // Chunk c (16 bytes) is row c % 8 of core (c / 8) in core order, so
  // consecutive threads fill one 128-byte core: conflict-free writes. A
  // chunk past `validRows` copies 0 of its 16 bytes (cp.async zero-fills
  // the rest) from row 0, always present.
  int64_t coresPerRow = cols / 8;
  int64_t chunks = rows * coresPerRow;
  for (int64_t first = 0; first < chunks; first += threads) {
    Value chunk = add(tid, i32c(first));
    Value core = divu(chunk, i32c(8));
    Value rowInCore = arith::RemUIOp::create(b, chunk, i32c(8));
    Value coreColumn = arith::RemUIOp::create(b, core, i32c(coresPerRow));
    Value rowGroup = divu(core, i32c(coresPerRow));
    Value row = add(mul(rowGroup, i32c(8)), rowInCore);
    Value inRange = lt(row, validRows);
    Value safeRow = select(inRange, row, i32c(0));
    Value byteOffset = add(mul(safeRow, i32c(cols * 2)), mul(coreColumn, i32c(16)));
    Value source = globalAt(global, toI64(byteOffset));
    Value sourceBytes = select(inRange, i32c(16), i32c(0));
    Value destination = sharedAt(add(sharedOffset, mul(chunk, i32c(16))));
    auto issue = [&] {
      NVVM::CpAsyncOp::create(b, destination, source, 16u,
                              NVVM::LoadCacheModifierKind::CG, sourceBytes);
    };
    if (first + threads > chunks)
      ifThen(lt(chunk, i32c(chunks)), issue);
    else
      issue();
  }
}

void WarpEmitter::cpAsyncCommit() { NVVM::CpAsyncCommitGroupOp::create(b); }
void WarpEmitter::cpAsyncWait(int pending) {
  NVVM::CpAsyncWaitGroupOp::create(b, pending);
}

Value WarpEmitter::matrixDescriptor(Value sharedOffset, int64_t leadingBytes,
                                    int64_t strideBytes) {
  // Bits 0-13: address >> 4; 16-29: leading-dimension byte offset >> 4;
  // 32-45: stride-dimension byte offset >> 4; 62-63: layout 0 (no swizzle).
  Value address = LLVM::PtrToIntOp::create(b, i32, sharedAt(sharedOffset));
  Value low = arith::AndIOp::create(b, arith::ShRUIOp::create(b, address, i32c(4)),
                                    i32c(0x3FFF));
  uint64_t fields = (uint64_t((leadingBytes >> 4) & 0x3FFF) << 16) |
                    (uint64_t((strideBytes >> 4) & 0x3FFF) << 32);
  return arith::OrIOp::create(b, arith::ExtUIOp::create(b, i64, low),
                              i64c(static_cast<int64_t>(fields)));
}

void WarpEmitter::fenceSharedToAsyncProxy() {
  NVVM::FenceProxyOp::create(
      b, NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(b.getContext(), NVVM::SharedSpace::shared_cta));
}

void WarpEmitter::wgmmaFence() { NVVM::WgmmaFenceAlignedOp::create(b); }
void WarpEmitter::wgmmaCommit() { NVVM::WgmmaGroupSyncAlignedOp::create(b); }
void WarpEmitter::wgmmaWait(int pending) {
  NVVM::WgmmaWaitGroupSyncOp::create(b, pending);
}

SmallVector<Value> WarpEmitter::wgmma(ArrayRef<Value> acc, const Quad &a,
                                      Value descriptorB, int64_t n,
                                      bool transposeB, bool accumulate) {
  int64_t count = n / 2;
  assert(static_cast<int64_t>(acc.size()) == count && "accumulator size");
  std::string outputs, constraints;
  for (int64_t i = 0; i < count; ++i) {
    outputs += (i ? ", $" : "$") + std::to_string(i);
    constraints += (i ? ",=f" : "=f");
  }
  // Operands: A (4 x r), the B descriptor (l), scale-d (r: 0 overwrites the
  // accumulator), then the accumulator tied to the outputs.
  auto ref = [](int64_t i) { return "$" + std::to_string(i); };
  std::string asmString =
      "{\n.reg .pred p;\nsetp.ne.b32 p, " + ref(count + 5) + ", 0;\n" +
      "wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k16.f32." +
      (bf16 ? "bf16.bf16" : "f16.f16") + " {" + outputs + "}, {" + ref(count) +
      ", " + ref(count + 1) + ", " + ref(count + 2) + ", " + ref(count + 3) +
      "}, " + ref(count + 4) + ", p, 1, 1, " + (transposeB ? "1" : "0") + ";\n}";
  constraints += ",r,r,r,r,l,r";
  for (int64_t i = 0; i < count; ++i)
    constraints += "," + std::to_string(i);
  SmallVector<Value> operands(a.begin(), a.end());
  operands.push_back(descriptorB);
  operands.push_back(i32c(accumulate ? 1 : 0));
  operands.append(acc.begin(), acc.end());
  SmallVector<Type> fields(count, f32);
  auto resultType = LLVM::LLVMStructType::getLiteral(b.getContext(), fields);
  auto asmOp = LLVM::InlineAsmOp::create(
      b, resultType, operands, b.getStringAttr(asmString),
      b.getStringAttr(constraints), b.getUnitAttr(), UnitAttr(),
      LLVM::TailCallKindAttr(), LLVM::AsmDialectAttr(), ArrayAttr());
  SmallVector<Value> result;
  for (int64_t i = 0; i < count; ++i)
    result.push_back(LLVM::ExtractValueOp::create(b, asmOp.getResult(0), i));
  return result;
}

} // namespace weft::gpu
