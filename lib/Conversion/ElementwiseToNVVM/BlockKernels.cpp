// Kernels of a rank's block of a global tensor, its place given at launch
// (a rank-relative immediate): a dropout on a block, its mask drawn at the
// global indices (the shards' masks are the global mask's slices), and
// shard.all_slice, the rank's block of a replicated tensor.
#include "ShapeKernels.h"

#include "weft/Codegen/PhiloxBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace weft::gpu {

namespace {

constexpr int64_t kThreads = 256;
constexpr int64_t kMaxBlocks = 132 * 16;

ArrayRef<int64_t> shapeOf(Value v) { return cast<ShapedType>(v.getType()).getShape(); }
Type elementOf(Value v) { return cast<ShapedType>(v.getType()).getElementType(); }
int64_t elementsOf(Value v) { return cast<ShapedType>(v.getType()).getNumElements(); }

/// Grid-stride loop over [0, total).
void forEachIndex(ElementMath &m, int64_t total, function_ref<void(Value)> body) {
  Value start = m.i64Add(m.i64Mul(m.blockId64(), m.i64c(m.threads)), m.tid64());
  Value stride = m.i64Mul(m.gridDim64(), m.i64c(m.threads));
  m.loop(start, m.i64c(total), stride, {}, [&](Value i, ValueRange) -> SmallVector<Value> {
    body(i);
    return {};
  });
}

/// y = dropout(x) on a block: params x, seed, one i64 offset per dim, y.
/// Element i of the block (row-major coordinates c) draws at the global
/// row-major index of c + offsets in global_shape.
void emitDropoutBlock(ElementMath &m, DropoutOp op) {
  ArrayRef<int64_t> local = shapeOf(op.getX());
  ArrayRef<int64_t> global = *op.getGlobalShape();
  int64_t rank = int64_t(local.size());
  double p = op.getP().convertToDouble();
  int64_t rngId = op->getAttrOfType<IntegerAttr>(WeftDialect::kRngIdAttr).getInt();
  Value seed = m.loadElement(m.param(1), m.i64, m.i64c(0));
  Type in = elementOf(op.getX()), out = elementOf(op.getY());
  Value y = m.param(2 + unsigned(rank));
  forEachIndex(m, elementsOf(op.getX()), [&](Value i) {
    Value x = m.loadElement(m.param(0), in, i);
    if (p == 0.0) {
      m.storeElement(y, out, i, x);
      return;
    }
    // Row-major coordinates of i, each moved by its offset, then the
    // global row-major index (innermost first).
    Value rest = i, index = m.i64c(0);
    int64_t stride = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      Value coord = m.i64Rem(rest, m.i64c(local[d]));
      rest = m.i64Div(rest, m.i64c(local[d]));
      index = m.i64Add(index, m.i64Mul(m.i64Add(coord, m.param(2 + unsigned(d))),
                                       m.i64c(stride)));
      stride *= global[d];
    }
    Value draw = codegen::buildPhiloxDraw(m.b, seed, rngId, index,
                                          codegen::PhiloxMultiply::Nvptx);
    m.storeElement(y, out, i, m.dropoutValue(x, draw, p));
  });
}

/// shard.all_slice: params x, i64 first (the block's first index along the
/// slice axis), y. Element i of y, as [outer, extent, inner] around the
/// slice axis, is x's [outer, first + along, inner]; a row outside x (an
/// edited package's offset) reads nothing and gives zero bits.
void emitAllSlice(ElementMath &m, shard::AllSliceOp op) {
  ArrayRef<int64_t> whole = shapeOf(op.getInput());
  ArrayRef<int64_t> block = shapeOf(op.getResult());
  int64_t axis = int64_t(op.getSliceAxis().getZExtValue());
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < int64_t(block.size()); ++d)
    inner *= block[d];
  int64_t extent = block[axis], globalExtent = whole[axis];
  unsigned bytes = elementOf(op.getResult()).getIntOrFloatBitWidth() / 8;
  Type bits = m.b.getIntegerType(bytes * 8);
  forEachIndex(m, elementsOf(op.getResult()), [&](Value i) {
    Value outer = m.i64Div(i, m.i64c(extent * inner));
    Value along = m.i64Rem(m.i64Div(i, m.i64c(inner)), m.i64c(extent));
    Value within = m.i64Rem(i, m.i64c(inner));
    Value row = m.i64Add(along, m.param(1));
    Value inside = m.andi(arith::CmpIOp::create(m.b, arith::CmpIPredicate::sge, row, m.i64c(0)),
                          m.i64Lt(row, m.i64c(globalExtent)));
    Value from = m.i64Add(
        m.i64Mul(m.i64Add(m.i64Mul(outer, m.i64c(globalExtent)), m.select(inside, row, m.i64c(0))),
                 m.i64c(inner)),
        within);
    // The bits as they are.
    Value value = m.load(bits, m.globalAt(m.param(0), m.i64Mul(from, m.i64c(bytes))), bytes);
    value = m.select(inside, value, arith::ConstantOp::create(m.b, m.b.getIntegerAttr(bits, 0)));
    m.store(value, m.globalAt(m.param(2), m.i64Mul(i, m.i64c(bytes))), bytes);
  });
}

} // namespace

bool isBlockKernelOp(Operation *op) {
  if (auto dropout = dyn_cast<DropoutOp>(op))
    return !dropout.getOffsets().empty();
  return isa<shard::AllSliceOp>(op);
}

LogicalResult planBlockKernel(Operation *op, int64_t &gridX, int64_t &threads,
                              std::string &message) {
  if (auto dropout = dyn_cast<DropoutOp>(op)) {
    std::optional<ArrayRef<int64_t>> global = dropout.getGlobalShape();
    if (!global || global->size() != dropout.getOffsets().size() ||
        global->size() != shapeOf(dropout.getX()).size()) {
      message = "weft.dropout on a block needs one offset and one global_shape entry per dim";
      return failure();
    }
    if (!dropout->getAttrOfType<IntegerAttr>(WeftDialect::kRngIdAttr)) {
      message = "weft.dropout has no integer weft.rng_id";
      return failure();
    }
  } else if (auto slice = dyn_cast<shard::AllSliceOp>(op)) {
    Type element = elementOf(slice.getResult());
    if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8 != 0 ||
        element.getIntOrFloatBitWidth() > 64) {
      message = llvm::formatv("shard.all_slice of {0}: the kernel copies elements of 1 to "
                              "8 whole bytes",
                              slice.getResult().getType());
      return failure();
    }
  }
  threads = kThreads;
  gridX = std::clamp<int64_t>((elementsOf(op->getResult(0)) + kThreads - 1) / kThreads, 1,
                              kMaxBlocks);
  return success();
}

void emitBlockKernel(ElementMath &m, Operation *op) {
  if (auto dropout = dyn_cast<DropoutOp>(op))
    return emitDropoutBlock(m, dropout);
  emitAllSlice(m, cast<shard::AllSliceOp>(op));
}

} // namespace weft::gpu
