// Transpose / split / concat as per-element index maps (bits copied, no
// conversion; matrix transposes in tiles), embedding as a row gather
// (embedding_grad: EmbeddingGradKernel.cpp),
// reduce_sum / reduce_mean over leading dims as column sums, and fill.
#include "ShapeKernels.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace weft::gpu {

namespace {

constexpr int64_t kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

ArrayRef<int64_t> shapeOf(Value v) { return cast<ShapedType>(v.getType()).getShape(); }
Type elementOf(Value v) { return cast<ShapedType>(v.getType()).getElementType(); }
int64_t count(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}
int64_t blocksFor(int64_t elements) {
  return std::clamp<int64_t>((elements + kThreads - 1) / kThreads, 1, kMaxBlocks);
}

int64_t bytesOf(Type element) {
  unsigned bits = element.getIntOrFloatBitWidth();
  return bits < 8 ? 1 : bits / 8;
}

/// What a copy kernel moves per index: one element, or `width` consecutive
/// elements as one 16-byte vector (the storage bits; i1 masks are bytes).
struct CopyUnit {
  Type storage;
  int64_t bytes;
  int64_t width;
};

CopyUnit copyUnit(ElementMath &m, Type element, int64_t width) {
  Type scalar = element.isInteger(1) ? Type(m.b.getI8Type()) : element;
  int64_t size = bytesOf(element);
  if (width == 1)
    return {scalar, size, 1};
  return {VectorType::get({width}, scalar), size * width, width};
}

/// The 16-byte vector width of `element` when `extent` (the contiguous
/// run every index of the copy stays within) is a multiple of it, else 1.
int64_t vectorWidth(Type element, int64_t extent) {
  int64_t width = 16 / bytesOf(element);
  return extent % width == 0 ? width : 1;
}

Value loadBits(ElementMath &m, Value base, const CopyUnit &unit, Value index) {
  return m.load(unit.storage, m.globalAt(base, m.i64Mul(index, m.i64c(unit.bytes))),
                unsigned(std::min<int64_t>(16, unit.bytes)));
}
void storeBits(ElementMath &m, Value base, const CopyUnit &unit, Value index, Value bits) {
  m.store(bits, m.globalAt(base, m.i64Mul(index, m.i64c(unit.bytes))),
          unsigned(std::min<int64_t>(16, unit.bytes)));
}

/// `shape` with its last dim counted in units of `width` elements.
SmallVector<int64_t> inUnits(ArrayRef<int64_t> shape, int64_t width) {
  SmallVector<int64_t> result(shape);
  result.back() /= width;
  return result;
}

/// Grid-stride loop over [0, total).
void forEachElement(ElementMath &m, int64_t total,
                    llvm::function_ref<void(Value)> body) {
  Value start = m.i64Add(m.i64Mul(m.blockId64(), m.i64c(m.threads)), m.tid64());
  Value stride = m.i64Mul(m.gridDim64(), m.i64c(m.threads));
  m.loop(start, m.i64c(total), stride, {}, [&](Value i, ValueRange) -> SmallVector<Value> {
    body(i);
    return {};
  });
}

/// Row-major coordinates of `linear` in `shape`.
SmallVector<Value> coordinates(ElementMath &m, Value linear, ArrayRef<int64_t> shape) {
  SmallVector<Value> coords(shape.size());
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    coords[d] = m.i64Rem(linear, m.i64c(shape[d]));
    linear = m.i64Div(linear, m.i64c(shape[d]));
  }
  return coords;
}

/// Leading dims 0..k-1 of `x`, or -1 when the dims are not such a prefix.
int64_t leadingPrefix(ArrayRef<int64_t> dims, int64_t rank) {
  SmallVector<int64_t> sorted;
  for (int64_t d : dims)
    sorted.push_back(d < 0 ? d + rank : d);
  llvm::sort(sorted);
  for (auto [i, d] : llvm::enumerate(sorted))
    if (d != int64_t(i))
      return -1;
  return int64_t(sorted.size());
}

/// out[c] = scale * sum over r of x[r * cols + c] (emitColumnSums' order).
void emitLeadingReduce(ElementMath &m, Value x, Value y, int64_t rows,
                       int64_t cols, double scale) {
  emitColumnSums(
      m, rows, cols, 1,
      [&](Value r, Value c) -> SmallVector<Value> {
        Value index = m.i64Add(m.i64Mul(r, m.i64c(cols)), c);
        return {m.loadElement(m.param(0), elementOf(x), index)};
      },
      [&](Value, Value c, ArrayRef<Value> totals) {
        m.storeElement(m.param(1), elementOf(y), c, m.fmul(totals[0], m.f32c(scale)));
      },
      /*chunks=*/1);
}

/// A few long rows summed (the slabs of an all-to-all reduce-scatter,
/// weft-reduce-scatter-slabs): a pointwise kernel, 16-byte vectors of each
/// row, instead of the column sums' 32-row lanes.
constexpr int64_t kMaxSlabRows = 8, kMinSlabCols = 1 << 16;
bool isSlabSum(int64_t rows, int64_t cols) {
  return rows <= kMaxSlabRows && cols >= kMinSlabCols;
}

/// y[c] = scale * sum over r (in order) of x[r, c], in f32.
void emitSlabSum(ElementMath &m, Value x, Value y, int64_t rows, int64_t cols, double scale) {
  Type in = elementOf(x), out = elementOf(y);
  int64_t width = vectorWidth(in, cols);
  forEachElement(m, cols / width, [&](Value v) {
    Value first = m.i64Mul(v, m.i64c(width));
    SmallVector<Value> sums = m.loadVector(m.param(0), in, first, width);
    for (int64_t r = 1; r < rows; ++r) {
      SmallVector<Value> row =
          m.loadVector(m.param(0), in, m.i64Add(first, m.i64c(r * cols)), width);
      for (int64_t k = 0; k < width; ++k)
        sums[k] = m.fadd(sums[k], row[k]);
    }
    for (Value &s : sums)
      s = m.fmul(s, m.f32c(scale));
    m.storeVector(m.param(1), out, first, sums);
  });
}

/// Whether `perm` swaps the last two dims and keeps the others: a batch of
/// matrix transposes (a weight's [in, out] as [out, in]), tiled below.
bool swapsLastTwo(ArrayRef<int64_t> perm) {
  int64_t rank = int64_t(perm.size());
  if (rank < 2 || perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return false;
  for (int64_t d = 0; d < rank - 2; ++d)
    if (perm[d] != d)
      return false;
  return true;
}

/// 32 x 32 element tiles of a matrix transpose, 256 threads (32 x 8).
constexpr int64_t kTransposeTile = 32;

int64_t transposeTiles(ArrayRef<int64_t> xShape) {
  int64_t rows = xShape[xShape.size() - 2], cols = xShape.back();
  int64_t batch = count(xShape.drop_back(2));
  return batch * ((rows + kTransposeTile - 1) / kTransposeTile) *
         ((cols + kTransposeTile - 1) / kTransposeTile);
}

/// y[b, c, r] = x[b, r, c] a 32 x 32 tile per CTA step (grid-stride): the
/// tile's rows are read along c (coalesced) into shared memory, its columns
/// written along r (coalesced); a row pitch of 33 elements keeps the column
/// reads off one bank. The bits are copied. Element by element, a warp's
/// writes were 32 rows apart: about 370 GB/s on GPT-2's weights.
void emitTiledTranspose(ElementMath &m, TransposeOp transpose) {
  ArrayRef<int64_t> shape = shapeOf(transpose.getX());
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  int64_t tilesR = (rows + kTransposeTile - 1) / kTransposeTile;
  int64_t tilesC = (cols + kTransposeTile - 1) / kTransposeTile;
  CopyUnit unit = copyUnit(m, elementOf(transpose.getX()), 1);
  const int64_t pitch = kTransposeTile + 1, steps = kTransposeTile / (kThreads / 32);
  Value tid = m.threadIdX();
  Value tx = m.toI64(arith::RemUIOp::create(m.b, tid, m.i32c(32)));
  Value ty = m.toI64(m.divu(tid, m.i32c(32)));
  auto smemAt = [&](Value row, Value col) {
    Value element = m.i64Add(m.i64Mul(row, m.i64c(pitch)), col);
    return m.sharedAt(arith::TruncIOp::create(m.b, m.i32, m.i64Mul(element, m.i64c(unit.bytes))));
  };
  unsigned align = unsigned(unit.bytes);
  m.loop(m.blockId64(), m.i64c(transposeTiles(shape)), m.gridDim64(), {},
         [&](Value tile, ValueRange) -> SmallVector<Value> {
           Value batch = m.i64Div(tile, m.i64c(tilesR * tilesC));
           Value rest = m.i64Rem(tile, m.i64c(tilesR * tilesC));
           Value r0 = m.i64Mul(m.i64Div(rest, m.i64c(tilesC)), m.i64c(kTransposeTile));
           Value c0 = m.i64Mul(m.i64Rem(rest, m.i64c(tilesC)), m.i64c(kTransposeTile));
           Value base = m.i64Mul(batch, m.i64c(rows * cols));
           for (int64_t k = 0; k < steps; ++k) {
             Value local = m.i64Add(ty, m.i64c(k * (kThreads / 32)));
             Value r = m.i64Add(r0, local), c = m.i64Add(c0, tx);
             m.ifThen(m.andi(m.i64Lt(r, m.i64c(rows)), m.i64Lt(c, m.i64c(cols))), [&] {
               Value bits = loadBits(m, m.param(0), unit,
                                     m.i64Add(base, m.i64Add(m.i64Mul(r, m.i64c(cols)), c)));
               m.store(bits, smemAt(local, tx), align);
             });
           }
           m.barrier();
           for (int64_t k = 0; k < steps; ++k) {
             Value local = m.i64Add(ty, m.i64c(k * (kThreads / 32)));
             Value c = m.i64Add(c0, local), r = m.i64Add(r0, tx);
             m.ifThen(m.andi(m.i64Lt(c, m.i64c(cols)), m.i64Lt(r, m.i64c(rows))), [&] {
               Value bits = m.load(unit.storage, smemAt(tx, local), align);
               storeBits(m, m.param(1), unit,
                         m.i64Add(base, m.i64Add(m.i64Mul(c, m.i64c(rows)), r)), bits);
             });
           }
           // The tile's shared memory is rewritten by the next step.
           m.barrier();
           return {};
         });
}

} // namespace

bool isShapeKernelOp(Operation *op) {
  return isa<TransposeOp, SplitOp, ConcatOp, EmbeddingOp, EmbeddingGradOp,
             ReduceSumOp, ReduceMeanOp, arith::ConstantOp>(op) ||
         isRowReduceKernelOp(op) || isBlockKernelOp(op);
}

LogicalResult planShapeKernel(Operation *op, int64_t &gridX, int64_t &threads,
                              std::string &message) {
  threads = kThreads;
  for (Type type : llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes())) {
    if (type.isIndex()) // a vocabulary shard's offset: an i64 parameter
      continue;
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape()) {
      message = "the GPU kernels take static tensors";
      return failure();
    }
    if (tensor.getElementType().isF64()) {
      message = "the GPU kernels take bf16, f16 or f32 tensors, not f64";
      return failure();
    }
  }
  if (isRowReduceKernelOp(op))
    return planRowReduceKernel(op, gridX, threads, message);
  if (isDenseConstantOp(op))
    return planDenseConstant(op, gridX, threads, message);
  if (isBlockKernelOp(op))
    return planBlockKernel(op, gridX, threads, message);
  if (auto grad = dyn_cast<EmbeddingGradOp>(op)) {
    // Up to 16 f32 accumulators per thread: 256 threads to hidden 4096,
    // 1024 threads to 16384.
    int64_t hidden = shapeOf(grad.getDtable())[1];
    threads = hidden <= 16 * 256 ? 256 : 1024;
    if (hidden > 16 * 1024) {
      message = llvm::formatv("embedding_grad with hidden {0}: the kernel "
                              "keeps at most 16 columns per thread (16384)",
                              hidden);
      return failure();
    }
    int64_t rows = embeddingGradRows(hidden, threads);
    gridX = std::min<int64_t>((shapeOf(grad.getDtable())[0] + rows - 1) / rows, kMaxBlocks);
    return success();
  }
  if (isa<ReduceSumOp, ReduceMeanOp>(op)) {
    Value x = op->getOperand(0);
    auto dims = op->getAttrOfType<DenseI64ArrayAttr>("dims");
    int64_t prefix = leadingPrefix(dims.asArrayRef(), shapeOf(x).size());
    if (prefix < 0) {
      message = llvm::formatv("{0} over dims that are not the leading ones: the "
                              "GPU kernel sums over leading dims (column sums)",
                              op->getName().getStringRef());
      return failure();
    }
    int64_t rows = count(shapeOf(x).take_front(prefix));
    int64_t cols = count(shapeOf(x).drop_front(prefix));
    if (isSlabSum(rows, cols)) {
      gridX = blocksFor(cols / vectorWidth(elementOf(x), cols));
      return success();
    }
    gridX = (cols + 31) / 32;
    threads = kColumnThreads;
    return success();
  }
  if (auto transpose = dyn_cast<TransposeOp>(op); transpose && swapsLastTwo(transpose.getPerm())) {
    gridX = std::min<int64_t>(transposeTiles(shapeOf(transpose.getX())), kMaxBlocks);
    return success();
  }
  // Every copy kernel here moves up to 16 bytes per thread and step.
  int64_t elements = 0, narrowest = 16;
  for (Type type : llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes())) {
    if (type.isIndex())
      continue;
    elements = std::max(elements, count(cast<ShapedType>(type).getShape()));
    narrowest = std::min(narrowest, bytesOf(cast<ShapedType>(type).getElementType()));
  }
  gridX = blocksFor(std::max<int64_t>(elements / (16 / narrowest), 1));
  return success();
}

void emitShapeKernelBody(ElementMath &m, Operation *op) {
  if (isRowReduceKernelOp(op))
    return emitRowReduceKernel(m, op);
  if (isDenseConstantOp(op))
    return emitDenseConstant(m, op);
  if (isBlockKernelOp(op))
    return emitBlockKernel(m, op);
  if (auto transpose = dyn_cast<TransposeOp>(op)) {
    ArrayRef<int64_t> perm = transpose.getPerm();
    if (swapsLastTwo(perm))
      return emitTiledTranspose(m, transpose);
    Type element = elementOf(transpose.getX());
    // A transpose that keeps the last dim moves 16-byte vectors of it.
    int64_t rank = int64_t(perm.size());
    int64_t width = perm.back() == rank - 1
                        ? vectorWidth(element, shapeOf(transpose.getX()).back())
                        : 1;
    CopyUnit unit = copyUnit(m, element, width);
    SmallVector<int64_t> in = inUnits(shapeOf(transpose.getX()), width);
    SmallVector<int64_t> out = inUnits(shapeOf(transpose.getY()), width);
    SmallVector<int64_t> inStrides(in.size(), 1);
    for (int64_t d = int64_t(in.size()) - 2; d >= 0; --d)
      inStrides[d] = inStrides[d + 1] * in[d + 1];
    forEachElement(m, count(out), [&](Value o) {
      SmallVector<Value> coords = coordinates(m, o, out);
      Value index = m.i64c(0);
      for (auto [d, coord] : llvm::enumerate(coords))
        index = m.i64Add(index, m.i64Mul(coord, m.i64c(inStrides[perm[d]])));
      storeBits(m, m.param(1), unit, o, loadBits(m, m.param(0), unit, index));
    });
    return;
  }
  if (isa<SplitOp, ConcatOp>(op)) {
    // The whole tensor as [outer, extent, inner] around the split dim; the
    // piece of an index along it is chosen by comparisons, no branches.
    bool split = isa<SplitOp>(op);
    Value whole = split ? op->getOperand(0) : op->getResult(0);
    ValueRange pieces = split ? ValueRange(op->getResults()) : ValueRange(op->getOperands());
    int64_t rank = int64_t(shapeOf(whole).size());
    int64_t dim = split ? cast<SplitOp>(op).getDim() : cast<ConcatOp>(op).getDim();
    dim = dim < 0 ? dim + rank : dim;
    Type element = elementOf(whole);
    // Split / concat along a leading dim move 16-byte vectors of the last.
    int64_t width = dim < rank - 1 ? vectorWidth(element, shapeOf(whole).back()) : 1;
    CopyUnit unit = copyUnit(m, element, width);
    SmallVector<int64_t> shape = inUnits(shapeOf(whole), width);
    int64_t inner = count(ArrayRef<int64_t>(shape).drop_front(dim + 1)), extent = shape[dim];
    unsigned wholeParam = split ? 0 : unsigned(pieces.size());
    unsigned firstPiece = split ? 1 : 0;
    forEachElement(m, count(shape), [&](Value i) {
      Value outer = m.i64Div(i, m.i64c(extent * inner));
      Value along = m.i64Rem(m.i64Div(i, m.i64c(inner)), m.i64c(extent));
      Value within = m.i64Rem(i, m.i64c(inner));
      Value base = m.param(firstPiece), size = m.i64c(shapeOf(pieces[0])[dim]);
      Value offset = m.i64c(0);
      int64_t start = 0;
      for (auto [k, piece] : llvm::enumerate(pieces)) {
        int64_t length = shapeOf(piece)[dim];
        if (k > 0) {
          Value here = arith::CmpIOp::create(m.b, arith::CmpIPredicate::sge, along,
                                             m.i64c(start));
          base = m.select(here, m.param(firstPiece + unsigned(k)), base);
          size = m.select(here, m.i64c(length), size);
          offset = m.select(here, m.i64c(start), offset);
        }
        start += length;
      }
      Value pieceIndex = m.i64Add(
          m.i64Mul(m.i64Add(m.i64Mul(outer, size), m.i64Sub(along, offset)), m.i64c(inner)),
          within);
      if (split)
        storeBits(m, base, unit, pieceIndex, loadBits(m, m.param(wholeParam), unit, i));
      else
        storeBits(m, m.param(wholeParam), unit, i, loadBits(m, base, unit, pieceIndex));
    });
    return;
  }
  if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
    ArrayRef<int64_t> table = shapeOf(embedding.getTable());
    int64_t vocab = table[0], hidden = table[1];
    // A vocabulary shard holds global rows [offset, offset + vocab) (an i64
    // parameter after the table); other ids give zero rows, which the
    // ranks' all-reduce sums into the global lookup.
    bool shard = bool(embedding.getVocabOffset());
    Value out = m.param(shard ? 3 : 2);
    Type element = elementOf(embedding.getTable());
    // 16-byte vectors of a table row when the hidden size allows.
    int64_t width = vectorWidth(element, hidden);
    int64_t units = hidden / width;
    forEachElement(m, count(shapeOf(embedding.getY())) / width, [&](Value i) {
      Value token = m.i64Div(i, m.i64c(units));
      Value h = m.i64Mul(m.i64Rem(i, m.i64c(units)), m.i64c(width));
      Value id = m.loadElement(m.param(0), m.i64, token);
      if (shard)
        id = m.i64Sub(id, m.param(2));
      // An id outside [0, vocab) reads nothing and gives NaN (the reference
      // interpreter rejects it; a kernel cannot report), or a shard's zeros.
      Value inRange = m.andi(arith::CmpIOp::create(m.b, arith::CmpIPredicate::sge, id,
                                                   m.i64c(0)),
                             m.i64Lt(id, m.i64c(vocab)));
      Value safe = m.select(inRange, id, m.i64c(0));
      SmallVector<Value> lanes = m.loadVector(
          m.param(1), element, m.i64Add(m.i64Mul(safe, m.i64c(hidden)), h), width);
      for (Value &lane : lanes)
        lane = m.select(inRange, lane, m.f32c(shard ? 0.0 : std::nan("")));
      m.storeVector(out, element, m.i64Mul(i, m.i64c(width)), lanes);
    });
    return;
  }
  if (auto grad = dyn_cast<EmbeddingGradOp>(op)) {
    emitEmbeddingGrad(m, grad);
    return;
  }
  if (isa<ReduceSumOp, ReduceMeanOp>(op)) {
    Value x = op->getOperand(0), y = op->getResult(0);
    auto dims = op->getAttrOfType<DenseI64ArrayAttr>("dims");
    int64_t prefix = leadingPrefix(dims.asArrayRef(), shapeOf(x).size());
    int64_t rows = count(shapeOf(x).take_front(prefix));
    int64_t cols = count(shapeOf(x).drop_front(prefix));
    double scale = isa<ReduceMeanOp>(op) ? 1.0 / double(rows) : 1.0;
    if (isSlabSum(rows, cols))
      emitSlabSum(m, x, y, rows, cols, scale);
    else
      emitLeadingReduce(m, x, y, rows, cols, scale);
    return;
  }
  // Fill: (ptr, i64 elements, f32 value).
  auto constant = cast<arith::ConstantOp>(op);
  Type element = cast<ShapedType>(constant.getType()).getElementType();
  Value elements = m.param(1), value = m.param(2);
  Value start = m.i64Add(m.i64Mul(m.blockId64(), m.i64c(m.threads)), m.tid64());
  Value stride = m.i64Mul(m.gridDim64(), m.i64c(m.threads));
  // 16-byte vector stores, then the scalar tail of the runtime count.
  int64_t width = 16 / bytesOf(element);
  Value vectors = m.i64Div(elements, m.i64c(width));
  m.loop(start, vectors, stride, {}, [&](Value i, ValueRange) -> SmallVector<Value> {
    m.storeVector(m.param(0), element, m.i64Mul(i, m.i64c(width)),
                  SmallVector<Value>(width, value));
    return {};
  });
  m.loop(m.i64Add(m.i64Mul(vectors, m.i64c(width)), start), elements, stride, {},
         [&](Value i, ValueRange) -> SmallVector<Value> {
           m.storeElement(m.param(0), element, i, value);
           return {};
         });
}

} // namespace weft::gpu
