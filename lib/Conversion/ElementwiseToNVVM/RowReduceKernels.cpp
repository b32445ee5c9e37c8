// Row kernels outside the fusion groups: reduce_max / sum / mean over the
// last dim, and
// the vocabulary-parallel cross-entropy (one shard's row statistics, the
// loss from the global ones, one shard's gradient). A CTA per row
// (grid-stride), its threads striding the columns, f32 throughout.
#include "ShapeKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <tuple>

using namespace mlir;

namespace weft::gpu {

namespace {

constexpr int64_t kRowThreads = 256;
constexpr int64_t kCombineThreads = 1024;
constexpr int64_t kMaxRowBlocks = 65535;

ArrayRef<int64_t> shapeOf(Value v) { return cast<ShapedType>(v.getType()).getShape(); }
Type elementOf(Value v) { return cast<ShapedType>(v.getType()).getElementType(); }
int64_t elementsOf(Value v) { return cast<ShapedType>(v.getType()).getNumElements(); }

/// A reduction of the last dim alone of a tensor of rank 2 or more (the
/// vocabulary-parallel loss's local row maximum): x, then y.
bool isLastDimReduce(Operation *op) {
  if (!isa<ReduceMaxOp, ReduceSumOp, ReduceMeanOp>(op))
    return false;
  int64_t rank = int64_t(shapeOf(op->getOperand(0)).size());
  auto dims = op->getAttrOfType<DenseI64ArrayAttr>("dims").asArrayRef();
  return rank >= 2 && dims.size() == 1 && (dims[0] == rank - 1 || dims[0] == -1);
}

/// The matrix [rows, cols] a row kernel walks: `x`'s last dim and the rest.
std::pair<int64_t, int64_t> rowsAndCols(Value x) {
  int64_t cols = shapeOf(x).empty() ? 1 : shapeOf(x).back();
  return {cols == 0 ? 0 : elementsOf(x) / cols, cols};
}

/// for each row of `rows` (a CTA per row, grid-stride): body(row).
void forEachRow(ElementMath &m, int64_t rows, function_ref<void(Value)> body) {
  m.loop(m.blockId64(), m.i64c(rows), m.gridDim64(), {},
         [&](Value row, ValueRange) -> SmallVector<Value> {
           body(row);
           return {};
         });
}

/// The f32 fold of f(col) over the row's columns, strided by the threads.
Value foldColumns(ElementMath &m, int64_t cols, Value init,
                  function_ref<Value(Value, Value)> step) {
  return m.loop(m.tid64(), m.i64c(cols), m.i64c(m.threads), {init},
                [&](Value col, ValueRange acc) -> SmallVector<Value> {
                  return {step(acc[0], col)};
                })[0];
}

void onThreadZero(ElementMath &m, function_ref<void()> body) {
  m.ifThen(arith::CmpIOp::create(m.b, arith::CmpIPredicate::eq, m.threadIdX(), m.i32c(0)),
           body);
}

/// The label of `row` relative to the shard's first class, and whether the
/// shard holds it.
std::pair<Value, Value> localLabel(ElementMath &m, Value labels, Value offset, Value row,
                                   int64_t cols) {
  Value label = m.i64Sub(m.loadElement(labels, m.i64, row), offset);
  Value held = m.andi(arith::CmpIOp::create(m.b, arith::CmpIPredicate::sge, label, m.i64c(0)),
                      m.i64Lt(label, m.i64c(cols)));
  return {label, held};
}

/// y[row] = max / sum / mean of x[row, :], in f32 (a fixed order).
void emitRowReduce(ElementMath &m, Operation *op) {
  Value x = op->getOperand(0), y = op->getResult(0);
  int64_t rows, cols;
  std::tie(rows, cols) = rowsAndCols(x);
  Type in = elementOf(x), out = elementOf(y);
  bool max = isa<ReduceMaxOp>(op);
  forEachRow(m, rows, [&](Value row) {
    Value first = m.i64Mul(row, m.i64c(cols));
    Value local = foldColumns(m, cols, m.f32c(max ? -INFINITY : 0.0), [&](Value acc, Value col) {
      Value v = m.loadElement(m.param(0), in, m.i64Add(first, col));
      return max ? m.fmax(acc, v) : m.fadd(acc, v);
    });
    Value total = m.blockReduce(local, max);
    if (isa<ReduceMeanOp>(op))
      total = m.fdiv(total, m.f32c(double(cols)));
    onThreadZero(m, [&] { m.storeElement(m.param(1), out, row, total); });
  });
}

/// (logits, labels, max, offset) -> (sumexp, target).
void emitPartial(ElementMath &m, CrossEntropyPartialOp op) {
  int64_t rows, cols;
  std::tie(rows, cols) = rowsAndCols(op.getLogits());
  Type logits = elementOf(op.getLogits()), stat = elementOf(op.getMax());
  Type sumexpType = elementOf(op.getSumexp()), targetType = elementOf(op.getTarget());
  forEachRow(m, rows, [&](Value row) {
    Value first = m.i64Mul(row, m.i64c(cols));
    Value max = m.loadElement(m.param(2), stat, row);
    Value local = foldColumns(m, cols, m.f32c(0.0), [&](Value acc, Value col) {
      Value x = m.loadElement(m.param(0), logits, m.i64Add(first, col));
      return m.fadd(acc, m.exp(m.fsub(x, max)));
    });
    Value sumexp = m.blockReduce(local, /*max=*/false);
    onThreadZero(m, [&] {
      Value label, held;
      std::tie(label, held) = localLabel(m, m.param(1), m.param(3), row, cols);
      Value at = m.i64Add(first, m.select(held, label, m.i64c(0)));
      Value target = m.select(held, m.fsub(m.loadElement(m.param(0), logits, at), max),
                              m.f32c(0.0));
      m.storeElement(m.param(4), sumexpType, row, sumexp);
      m.storeElement(m.param(5), targetType, row, target);
    });
  });
}

/// (sumexp, target) -> the mean over rows of log(sumexp) - target: one CTA.
void emitCombine(ElementMath &m, CrossEntropyCombineOp op) {
  int64_t rows = elementsOf(op.getSumexp());
  Type sumexpType = elementOf(op.getSumexp()), targetType = elementOf(op.getTarget());
  Value local = foldColumns(m, rows, m.f32c(0.0), [&](Value acc, Value p) {
    Value term = m.fsub(m.log(m.loadElement(m.param(0), sumexpType, p)),
                        m.loadElement(m.param(1), targetType, p));
    return m.fadd(acc, term);
  });
  Value total = m.blockReduce(local, /*max=*/false);
  onThreadZero(m, [&] {
    // An empty batch gives NaN, like the reference (0 / 0).
    m.storeElement(m.param(2), elementOf(op.getLoss()), m.i64c(0),
                   m.fdiv(total, m.f32c(double(rows))));
  });
}

/// (dloss, logits, labels, max, sumexp, offset) -> dlogits.
void emitGradPartial(ElementMath &m, CrossEntropyGradPartialOp op) {
  int64_t rows, cols;
  std::tie(rows, cols) = rowsAndCols(op.getLogits());
  Type logits = elementOf(op.getLogits()), out = elementOf(op.getDlogits());
  Value factor = m.fdiv(m.loadElement(m.param(0), elementOf(op.getDloss()), m.i64c(0)),
                        m.f32c(double(rows)));
  forEachRow(m, rows, [&](Value row) {
    Value first = m.i64Mul(row, m.i64c(cols));
    Value max = m.loadElement(m.param(3), elementOf(op.getMax()), row);
    Value sumexp = m.loadElement(m.param(4), elementOf(op.getSumexp()), row);
    Value label, held;
    std::tie(label, held) = localLabel(m, m.param(2), m.param(5), row, cols);
    Value scale = m.fdiv(factor, sumexp);
    foldColumns(m, cols, m.f32c(0.0), [&](Value acc, Value col) {
      Value at = m.i64Add(first, col);
      Value grad = m.fmul(m.exp(m.fsub(m.loadElement(m.param(1), logits, at), max)), scale);
      Value isLabel = m.andi(held, m.i64Eq(col, label));
      grad = m.select(isLabel, m.fsub(grad, factor), grad);
      m.storeElement(m.param(6), out, at, grad);
      return acc;
    });
  });
}

} // namespace

bool isRowReduceKernelOp(Operation *op) {
  if (isa<ReduceMaxOp, ReduceSumOp, ReduceMeanOp>(op))
    return isLastDimReduce(op);
  return isa<CrossEntropyPartialOp, CrossEntropyCombineOp, CrossEntropyGradPartialOp>(op);
}

LogicalResult planRowReduceKernel(Operation *op, int64_t &gridX, int64_t &threads,
                                  std::string &message) {
  if (auto combine = dyn_cast<CrossEntropyCombineOp>(op)) {
    gridX = 1;
    threads = kCombineThreads;
    return success();
  }
  Value x = op->getOperand(isa<CrossEntropyGradPartialOp>(op) ? 1 : 0);
  int64_t rows, cols;
  std::tie(rows, cols) = rowsAndCols(x);
  if (rows < 1 || cols < 1) {
    message = llvm::formatv("{0} of an empty tensor", op->getName());
    return failure();
  }
  gridX = std::min(rows, kMaxRowBlocks);
  threads = kRowThreads;
  return success();
}

void emitRowReduceKernel(ElementMath &m, Operation *op) {
  if (isa<ReduceMaxOp, ReduceSumOp, ReduceMeanOp>(op))
    return emitRowReduce(m, op);
  if (auto partial = dyn_cast<CrossEntropyPartialOp>(op))
    return emitPartial(m, partial);
  if (auto combine = dyn_cast<CrossEntropyCombineOp>(op))
    return emitCombine(m, combine);
  emitGradPartial(m, cast<CrossEntropyGradPartialOp>(op));
}

} // namespace weft::gpu
