// Reference kernels for the GEMM ops: linear and (batched) matmul, with
// float64 accumulation.
#include "Kernels.h"

using namespace mlir;

namespace weft::reference::detail {

namespace {

/// C[m,n] += A[m,k] B[k,n] for row-major contiguous blocks; the i-k-j order
/// streams B and C rows.
void gemmAccumulate(const double *a, const double *b, double *c, int64_t m,
                    int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    double *cRow = c + i * n;
    for (int64_t p = 0; p < k; ++p) {
      double aValue = a[i * k + p];
      const double *bRow = b + p * n;
      for (int64_t j = 0; j < n; ++j)
        cRow[j] += aValue * bRow[j];
    }
  }
}

/// The [rows, cols] matrix at `source`, transposed into a new buffer.
std::vector<double> transposed(const double *source, int64_t rows,
                               int64_t cols) {
  std::vector<double> result(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      result[c * rows + r] = source[r * cols + c];
  return result;
}

} // namespace

LogicalResult runLinear(LinearOp op, Operands in, Results out) {
  const Tensor &x = *in[0], &w = *in[1];
  int64_t inFeatures = w.shape[1], outFeatures = w.shape[0];
  int64_t rows = product(x.shape, 0, x.shape.size() - 1);
  Tensor &y = out[0];
  // y = x W^T: multiply by the [in, out] transpose of w.
  std::vector<double> wT = transposed(w.data.data(), outFeatures, inFeatures);
  gemmAccumulate(x.data.data(), wT.data(), y.data.data(), rows, inFeatures,
                 outFeatures);
  if (op.getBias()) {
    const Tensor &bias = *in[2];
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < outFeatures; ++o)
        y.data[r * outFeatures + o] += bias.data[o];
  }
  return success();
}

LogicalResult runMatmul(MatmulOp op, Operands in, Results out) {
  const Tensor &a = *in[0], &b = *in[1];
  Tensor &c = out[0];
  size_t aRank = a.shape.size(), bRank = b.shape.size();
  int64_t aRows = a.shape[aRank - 2], aCols = a.shape[aRank - 1];
  int64_t bRows = b.shape[bRank - 2], bCols = b.shape[bRank - 1];
  int64_t m = op.getTransposeA() ? aCols : aRows;
  int64_t k = op.getTransposeA() ? aRows : aCols;
  int64_t n = op.getTransposeB() ? bRows : bCols;
  int64_t batches = product(a.shape, 0, aRank - 2);
  bool sharedB = bRank == 2;
  for (int64_t batch = 0; batch < batches; ++batch) {
    const double *aBlock = a.data.data() + batch * aRows * aCols;
    const double *bBlock =
        b.data.data() + (sharedB ? 0 : batch * bRows * bCols);
    std::vector<double> aT, bT;
    if (op.getTransposeA()) {
      aT = transposed(aBlock, aRows, aCols);
      aBlock = aT.data();
    }
    if (op.getTransposeB()) {
      bT = transposed(bBlock, bRows, bCols);
      bBlock = bT.data();
    }
    gemmAccumulate(aBlock, bBlock, c.data.data() + batch * m * n, m, k, n);
  }
  return success();
}

} // namespace weft::reference::detail
