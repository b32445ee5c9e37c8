// Reference kernels for layer_norm, rms_norm, softmax and their gradients,
// with float64 statistics.
#include "Kernels.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace weft::reference::detail {

namespace {

/// Mean and 1/sqrt(biased variance + eps) of one row.
void rowMoments(const double *x, int64_t n, double eps, double &mean,
                double &rstd) {
  double sum = 0.0;
  for (int64_t c = 0; c < n; ++c)
    sum += x[c];
  mean = sum / double(n);
  double squares = 0.0;
  for (int64_t c = 0; c < n; ++c)
    squares += (x[c] - mean) * (x[c] - mean);
  rstd = 1.0 / std::sqrt(squares / double(n) + eps);
}

/// 1/sqrt(mean(x^2) + eps) of one row.
double rowInverseRms(const double *x, int64_t n, double eps) {
  double squares = 0.0;
  for (int64_t c = 0; c < n; ++c)
    squares += x[c] * x[c];
  return 1.0 / std::sqrt(squares / double(n) + eps);
}

/// Calls body(base, stride, extent) for each 1-d fibre of `shape` along `dim`.
template <typename Body>
void forEachFibre(ArrayRef<int64_t> shape, int64_t dim, Body body) {
  int64_t outer = product(shape, 0, dim);
  int64_t inner = product(shape, dim + 1, shape.size());
  int64_t extent = shape[dim];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      body(o * extent * inner + i, inner, extent);
}

} // namespace

LogicalResult runLayerNorm(LayerNormOp op, Operands in, Results out) {
  const Tensor &x = *in[0], &gamma = *in[1], &beta = *in[2];
  double eps = op.getEps().convertToDouble();
  int64_t n = x.shape.back();
  int64_t rows = product(x.shape, 0, x.shape.size() - 1);
  for (int64_t r = 0; r < rows; ++r) {
    const double *row = x.data.data() + r * n;
    double mean, rstd;
    rowMoments(row, n, eps, mean, rstd);
    double *y = out[0].data.data() + r * n;
    for (int64_t c = 0; c < n; ++c)
      y[c] = (row[c] - mean) * rstd * gamma.data[c] + beta.data[c];
  }
  return success();
}

// With xhat = (x - mean) rstd and g = dy * gamma:
//   dx = rstd (g - mean(g) - xhat mean(g xhat)),
//   dgamma = sum over rows of dy xhat,  dbeta = sum over rows of dy.
LogicalResult runLayerNormGrad(LayerNormGradOp op, Operands in, Results out) {
  const Tensor &dy = *in[0], &x = *in[1], &gamma = *in[2];
  double eps = op.getEps().convertToDouble();
  int64_t n = x.shape.back();
  int64_t rows = product(x.shape, 0, x.shape.size() - 1);
  std::vector<double> normalized(n), scaledGrad(n);
  for (int64_t r = 0; r < rows; ++r) {
    const double *row = x.data.data() + r * n;
    const double *dRow = dy.data.data() + r * n;
    double mean, rstd;
    rowMoments(row, n, eps, mean, rstd);
    double gradMean = 0.0, gradDotNormalized = 0.0;
    for (int64_t c = 0; c < n; ++c) {
      normalized[c] = (row[c] - mean) * rstd;
      scaledGrad[c] = dRow[c] * gamma.data[c];
      gradMean += scaledGrad[c];
      gradDotNormalized += scaledGrad[c] * normalized[c];
      out[1].data[c] += dRow[c] * normalized[c];
      out[2].data[c] += dRow[c];
    }
    gradMean /= double(n);
    gradDotNormalized /= double(n);
    double *dx = out[0].data.data() + r * n;
    for (int64_t c = 0; c < n; ++c)
      dx[c] = rstd * (scaledGrad[c] - gradMean -
                      normalized[c] * gradDotNormalized);
  }
  return success();
}

LogicalResult runRmsNorm(RmsNormOp op, Operands in, Results out) {
  const Tensor &x = *in[0], &gamma = *in[1];
  double eps = op.getEps().convertToDouble();
  int64_t n = x.shape.back();
  int64_t rows = product(x.shape, 0, x.shape.size() - 1);
  for (int64_t r = 0; r < rows; ++r) {
    const double *row = x.data.data() + r * n;
    double inverseRms = rowInverseRms(row, n, eps);
    double *y = out[0].data.data() + r * n;
    for (int64_t c = 0; c < n; ++c)
      y[c] = row[c] * inverseRms * gamma.data[c];
  }
  return success();
}

// With r = 1/sqrt(mean(x^2) + eps) and g = dy * gamma:
//   dx = r (g - x r^2 mean(g x)),  dgamma = sum over rows of dy x r.
LogicalResult runRmsNormGrad(RmsNormGradOp op, Operands in, Results out) {
  const Tensor &dy = *in[0], &x = *in[1], &gamma = *in[2];
  double eps = op.getEps().convertToDouble();
  int64_t n = x.shape.back();
  int64_t rows = product(x.shape, 0, x.shape.size() - 1);
  for (int64_t r = 0; r < rows; ++r) {
    const double *row = x.data.data() + r * n;
    const double *dRow = dy.data.data() + r * n;
    double inverseRms = rowInverseRms(row, n, eps);
    double gradDotX = 0.0;
    for (int64_t c = 0; c < n; ++c) {
      gradDotX += dRow[c] * gamma.data[c] * row[c];
      out[1].data[c] += dRow[c] * row[c] * inverseRms;
    }
    gradDotX /= double(n);
    double *dx = out[0].data.data() + r * n;
    for (int64_t c = 0; c < n; ++c)
      dx[c] = inverseRms * (dRow[c] * gamma.data[c] -
                            row[c] * inverseRms * inverseRms * gradDotX);
  }
  return success();
}

LogicalResult runSoftmax(SoftmaxOp op, Operands in, Results out) {
  const Tensor &x = *in[0];
  Tensor &y = out[0];
  int64_t dim = normalizeDim(op.getDim(), x.shape.size());
  forEachFibre(x.shape, dim, [&](int64_t base, int64_t stride, int64_t extent) {
    double maxValue = -std::numeric_limits<double>::infinity();
    for (int64_t e = 0; e < extent; ++e)
      maxValue = std::max(maxValue, x.data[base + e * stride]);
    double sum = 0.0;
    for (int64_t e = 0; e < extent; ++e) {
      double value = std::exp(x.data[base + e * stride] - maxValue);
      y.data[base + e * stride] = value;
      sum += value;
    }
    for (int64_t e = 0; e < extent; ++e)
      y.data[base + e * stride] /= sum;
  });
  return success();
}

LogicalResult runSoftmaxGrad(SoftmaxGradOp op, Operands in, Results out) {
  const Tensor &dy = *in[0], &y = *in[1];
  Tensor &dx = out[0];
  int64_t dim = normalizeDim(op.getDim(), y.shape.size());
  forEachFibre(y.shape, dim, [&](int64_t base, int64_t stride, int64_t extent) {
    double dot = 0.0;
    for (int64_t e = 0; e < extent; ++e)
      dot += dy.data[base + e * stride] * y.data[base + e * stride];
    for (int64_t e = 0; e < extent; ++e) {
      int64_t at = base + e * stride;
      dx.data[at] = y.data[at] * (dy.data[at] - dot);
    }
  });
  return success();
}

} // namespace weft::reference::detail
