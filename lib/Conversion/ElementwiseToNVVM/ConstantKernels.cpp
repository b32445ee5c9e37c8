// A constant tensor that is not a float splat (an index table such as the
// rows weft-expand-kv-heads gathers): its bytes go into the kernel image as
// a global, and a copy kernel writes them to the op's buffer each step.
#include "ShapeKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace weft::gpu {

namespace {

constexpr int64_t kThreads = 256;
constexpr int64_t kMaxBlocks = 132 * 16;
constexpr llvm::StringLiteral kDataSymbol = "weft_constant_data";

DenseElementsAttr denseValue(Operation *op) {
  auto constant = dyn_cast<arith::ConstantOp>(op);
  return constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : DenseElementsAttr();
}

/// The constant's elements as integers of their width (bf16 / f16 / f32 /
/// f64 bits as they are), which the LLVM global holds.
DenseElementsAttr asBits(DenseElementsAttr value) {
  Type element = value.getElementType();
  auto bits = IntegerType::get(element.getContext(), element.getIntOrFloatBitWidth());
  auto type = RankedTensorType::get({value.getNumElements()}, bits);
  SmallVector<APInt> words;
  words.reserve(value.getNumElements());
  if (isa<FloatType>(element))
    for (const APFloat &x : value.getValues<APFloat>())
      words.push_back(x.bitcastToAPInt());
  else
    for (const APInt &x : value.getValues<APInt>())
      words.push_back(x);
  return DenseElementsAttr::get(type, words);
}

} // namespace

bool isDenseConstantOp(Operation *op) {
  DenseElementsAttr value = denseValue(op);
  return value && !(value.isSplat() && isa<FloatType>(value.getElementType()));
}

LogicalResult planDenseConstant(Operation *op, int64_t &gridX, int64_t &threads,
                                std::string &message) {
  DenseElementsAttr value = denseValue(op);
  Type element = value.getElementType();
  unsigned width = element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 0;
  if (width != 8 && width != 16 && width != 32 && width != 64) {
    message = llvm::formatv("a constant of {0} elements: the copy kernel takes 1, 2, 4 or "
                            "8-byte elements",
                            element);
    return failure();
  }
  // Elements first: a splat's shape may be any size (no overflow below).
  int64_t elements = value.getNumElements();
  int64_t bytes = elements > kMaxDenseConstantBytes ? elements : elements * (width / 8);
  if (bytes > kMaxDenseConstantBytes) {
    message = llvm::formatv("a constant of {0} elements of {1} bytes: the kernel image "
                            "holds at most {2} bytes",
                            elements, width / 8, kMaxDenseConstantBytes);
    return failure();
  }
  threads = kThreads;
  gridX = std::clamp<int64_t>((value.getNumElements() + kThreads - 1) / kThreads, 1, kMaxBlocks);
  return success();
}

void emitDenseConstantGlobal(ImplicitLocOpBuilder &b, Operation *op) {
  DenseElementsAttr bits = asBits(denseValue(op));
  auto type = LLVM::LLVMArrayType::get(bits.getElementType(), bits.getNumElements());
  LLVM::GlobalOp::create(b, type, /*isConstant=*/true, LLVM::Linkage::Internal, kDataSymbol,
                         bits, /*alignment=*/16, /*addrSpace=*/1);
}

void emitDenseConstant(ElementMath &m, Operation *op) {
  DenseElementsAttr value = denseValue(op);
  unsigned bytes = value.getElementType().getIntOrFloatBitWidth() / 8;
  Type bits = m.b.getIntegerType(bytes * 8);
  Value data = LLVM::AddressOfOp::create(m.b, LLVM::LLVMPointerType::get(m.b.getContext(), 1),
                                         kDataSymbol);
  Value start = m.i64Add(m.i64Mul(m.blockId64(), m.i64c(m.threads)), m.tid64());
  Value stride = m.i64Mul(m.gridDim64(), m.i64c(m.threads));
  m.loop(start, m.i64c(value.getNumElements()), stride, {},
         [&](Value i, ValueRange) -> SmallVector<Value> {
           Value offset = m.i64Mul(i, m.i64c(bytes));
           m.store(m.load(bits, m.globalAt(data, offset), bytes), m.globalAt(m.param(0), offset),
                   bytes);
           return {};
         });
}

} // namespace weft::gpu
