// Reference kernels for reductions and shape ops (reduce_sum/mean, reshape,
// transpose, split, concat), and the index helpers every kernel shares.
#include "Kernels.h"

using namespace mlir;

namespace weft::reference::detail {

std::vector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

int64_t product(ArrayRef<int64_t> shape, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t d = begin; d < end; ++d)
    result *= shape[d];
  return result;
}

std::vector<int64_t> broadcastStrides(ArrayRef<int64_t> operandShape,
                                      ArrayRef<int64_t> resultShape) {
  std::vector<int64_t> own = rowMajorStrides(operandShape);
  size_t lead = resultShape.size() - operandShape.size();
  std::vector<int64_t> strides(resultShape.size(), 0);
  for (size_t d = 0; d < operandShape.size(); ++d)
    strides[lead + d] = operandShape[d] == 1 ? 0 : own[d];
  return strides;
}

std::vector<int64_t> broadcastOffsets(ArrayRef<int64_t> operandShape,
                                      ArrayRef<int64_t> resultShape) {
  std::vector<int64_t> offsets;
  offsets.reserve(product(resultShape, 0, resultShape.size()));
  forEachBroadcast(resultShape, operandShape, operandShape,
                   [&](int64_t, int64_t offset, int64_t) {
                     offsets.push_back(offset);
                   });
  return offsets;
}

/// Views `shape` as [outer, size(dim), inner] around `dim`.
static void splitAround(ArrayRef<int64_t> shape, int64_t dim, int64_t &outer,
                        int64_t &inner) {
  outer = product(shape, 0, dim);
  inner = product(shape, dim + 1, shape.size());
}

Tensor sliceAlong(const Tensor &source, int64_t dim, int64_t offset,
                  int64_t size) {
  Tensor piece;
  piece.shape = source.shape;
  piece.shape[dim] = size;
  piece.dtype = source.dtype;
  int64_t outer, inner;
  splitAround(source.shape, dim, outer, inner);
  int64_t extent = source.shape[dim];
  piece.data.resize(outer * size * inner);
  for (int64_t o = 0; o < outer; ++o)
    std::copy_n(source.data.begin() + (o * extent + offset) * inner,
                size * inner, piece.data.begin() + o * size * inner);
  return piece;
}

void insertAlong(Tensor &target, const Tensor &piece, int64_t dim,
                 int64_t offset) {
  int64_t outer, inner;
  splitAround(target.shape, dim, outer, inner);
  int64_t extent = target.shape[dim], size = piece.shape[dim];
  for (int64_t o = 0; o < outer; ++o)
    std::copy_n(piece.data.begin() + o * size * inner, size * inner,
                target.data.begin() + (o * extent + offset) * inner);
}

LogicalResult runReduce(Operation *op, ArrayRef<int64_t> dims, ReduceKind kind,
                        Operands in, Results out) {
  const Tensor &x = *in[0];
  int64_t rank = x.shape.size();
  std::vector<bool> reduced(rank, false);
  for (int64_t dim : dims)
    reduced[normalizeDim(dim, rank)] = true;
  // The result viewed with reduced dims kept as size 1, so keepdim and not
  // have the same row-major layout.
  std::vector<int64_t> keptShape(x.shape);
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d]) {
      count *= keptShape[d];
      keptShape[d] = 1;
    }
  Tensor &y = out[0];
  if (kind == ReduceKind::Max)
    std::fill(y.data.begin(), y.data.end(), -INFINITY);
  forEachBroadcast(x.shape, keptShape, keptShape,
                   [&](int64_t flat, int64_t target, int64_t) {
                     if (kind == ReduceKind::Max)
                       y.data[target] = std::isnan(x.data[flat])
                                            ? x.data[flat]
                                            : std::max(y.data[target], x.data[flat]);
                     else
                       y.data[target] += x.data[flat];
                   });
  if (kind == ReduceKind::Mean)
    for (double &value : y.data)
      value /= static_cast<double>(count);
  return success();
}

LogicalResult runReshape(ReshapeOp, Operands in, Results out) {
  out[0].data = in[0]->data;
  return success();
}

LogicalResult runTranspose(TransposeOp op, Operands in, Results out) {
  const Tensor &x = *in[0];
  ArrayRef<int64_t> perm = op.getPerm();
  std::vector<int64_t> inputStrides = rowMajorStrides(x.shape);
  // Result dim i walks input dim perm[i]: gather with permuted strides.
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    strides[i] = inputStrides[perm[i]];
  Tensor &y = out[0];
  size_t rank = y.shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t source = 0;
  for (int64_t flat = 0, count = y.numElements(); flat < count; ++flat) {
    y.data[flat] = x.data[source];
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < y.shape[d]) {
        source += strides[d];
        break;
      }
      source -= strides[d] * (y.shape[d] - 1);
      index[d] = 0;
    }
  }
  return success();
}

LogicalResult runSplit(SplitOp op, Operands in, Results out) {
  const Tensor &x = *in[0];
  int64_t dim = normalizeDim(op.getDim(), x.shape.size());
  int64_t offset = 0;
  for (auto [i, size] : llvm::enumerate(op.getSizes())) {
    Tensor piece = sliceAlong(x, dim, offset, size);
    out[i].data = std::move(piece.data);
    offset += size;
  }
  return success();
}

LogicalResult runConcat(ConcatOp op, Operands in, Results out) {
  Tensor &y = out[0];
  int64_t dim = normalizeDim(op.getDim(), y.shape.size());
  int64_t offset = 0;
  for (const Tensor *piece : in) {
    insertAlong(y, *piece, dim, offset);
    offset += piece->shape[dim];
  }
  return success();
}

} // namespace weft::reference::detail
