// Reference kernels for the training-specific ops: embedding and its
// gradient, softmax cross-entropy and its gradient, rope, and AdamW.
#include "Kernels.h"

#include "weft/Support/FloatBits.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

using namespace mlir;

namespace weft::reference::detail {

/// Checks that every id lies in [0, limit) or is `ignored`, reporting the
/// first that does not with its value and position.
LogicalResult checkIds(Operation *op, StringRef what, const Tensor &ids,
                       int64_t limit, std::optional<int64_t> ignored) {
  std::vector<int64_t> strides = rowMajorStrides(ids.shape);
  for (size_t flat = 0; flat < ids.data.size(); ++flat) {
    double id = ids.data[flat];
    if ((id >= 0.0 && id < double(limit)) || (ignored && id == double(*ignored)))
      continue;
    InFlightDiagnostic diag = op->emitOpError("has ")
                              << what << " " << static_cast<int64_t>(id)
                              << " at position [";
    int64_t rest = flat;
    for (size_t d = 0; d < strides.size(); ++d) {
      diag << (d ? ", " : "") << rest / strides[d];
      rest %= strides[d];
    }
    return diag << "], outside [0, " << limit << ")";
  }
  return success();
}

namespace {

/// Log-sum-exp of one row of logits.
double rowLogSumExp(const double *logits, int64_t n) {
  double maxValue = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < n; ++c)
    maxValue = std::max(maxValue, logits[c]);
  if (std::isinf(maxValue))
    return maxValue;
  double sum = 0.0;
  for (int64_t c = 0; c < n; ++c)
    sum += std::exp(logits[c] - maxValue);
  return maxValue + std::log(sum);
}

} // namespace

/// A vocabulary-parallel op's first row (0 without the offset operand).
static int64_t vocabOffset(Operands in, size_t index) {
  return in.size() > index ? static_cast<int64_t>(in[index]->data[0]) : 0;
}

LogicalResult runEmbedding(EmbeddingOp op, Operands in, Results out) {
  const Tensor &ids = *in[0], &table = *in[1];
  int64_t vocab = table.shape[0], hidden = table.shape[1];
  int64_t offset = vocabOffset(in, 2);
  // A shard's ids may name rows of other shards (their rows stay zero).
  if (failed(checkIds(op, "id", ids, in.size() > 2 ? INT64_MAX : vocab)))
    return failure();
  for (size_t p = 0; p < ids.data.size(); ++p) {
    auto id = static_cast<int64_t>(ids.data[p]) - offset;
    if (id < 0 || id >= vocab)
      continue;
    std::copy_n(table.data.begin() + id * hidden, hidden,
                out[0].data.begin() + p * hidden);
  }
  return success();
}

LogicalResult runEmbeddingGrad(EmbeddingGradOp op, Operands in, Results out) {
  const Tensor &dy = *in[0], &ids = *in[1];
  Tensor &dtable = out[0];
  int64_t vocab = dtable.shape[0], hidden = dtable.shape[1];
  int64_t offset = vocabOffset(in, 2);
  if (failed(checkIds(op, "id", ids, in.size() > 2 ? INT64_MAX : vocab)))
    return failure();
  for (size_t p = 0; p < ids.data.size(); ++p) {
    auto id = static_cast<int64_t>(ids.data[p]) - offset;
    if (id < 0 || id >= vocab)
      continue;
    for (int64_t c = 0; c < hidden; ++c)
      dtable.data[id * hidden + c] += dy.data[p * hidden + c];
  }
  return success();
}

/// Whether position p's label counts (is not the ignore_index).
static bool counted(const Tensor &labels, int64_t p, std::optional<int64_t> ignored) {
  return !ignored || labels.data[p] != double(*ignored);
}

/// The positions the mean is over: those whose label is not ignored.
static int64_t countedPositions(const Tensor &labels, std::optional<int64_t> ignored) {
  int64_t count = 0;
  for (int64_t p = 0, e = labels.data.size(); p < e; ++p)
    count += counted(labels, p, ignored);
  return count;
}

LogicalResult runCrossEntropy(CrossEntropyOp op, Operands in, Results out) {
  const Tensor &logits = *in[0], &labels = *in[1];
  int64_t classes = logits.shape.back();
  std::optional<int64_t> ignored = op.getIgnoreIndex();
  if (failed(checkIds(op, "label", labels, classes, ignored)))
    return failure();
  int64_t positions = labels.data.size();
  double total = 0.0;
  for (int64_t p = 0; p < positions; ++p) {
    if (!counted(labels, p, ignored))
      continue;
    const double *row = logits.data.data() + p * classes;
    total += rowLogSumExp(row, classes) -
             row[static_cast<int64_t>(labels.data[p])];
  }
  // Like PyTorch's mean reduction, no counted position gives NaN. A chunk
  // (all_labels) is its share of the mean over all the labels.
  const Tensor &countedLabels = in.size() > 2 ? *in[2] : labels;
  out[0].data[0] = total / double(countedPositions(countedLabels, ignored));
  return success();
}

LogicalResult runCrossEntropyGrad(CrossEntropyGradOp op, Operands in,
                                  Results out) {
  const Tensor &dloss = *in[0], &logits = *in[1], &labels = *in[2];
  int64_t classes = logits.shape.back();
  std::optional<int64_t> ignored = op.getIgnoreIndex();
  if (failed(checkIds(op, "label", labels, classes, ignored)))
    return failure();
  int64_t positions = labels.data.size();
  const Tensor &countedLabels = in.size() > 3 ? *in[3] : labels;
  double factor = dloss.data[0] / double(countedPositions(countedLabels, ignored));
  for (int64_t p = 0; p < positions; ++p) {
    double *grad = out[0].data.data() + p * classes;
    if (!counted(labels, p, ignored)) {
      std::fill_n(grad, classes, 0.0);
      continue;
    }
    const double *row = logits.data.data() + p * classes;
    double lse = rowLogSumExp(row, classes);
    for (int64_t c = 0; c < classes; ++c)
      grad[c] = std::exp(row[c] - lse) * factor;
    grad[static_cast<int64_t>(labels.data[p])] -= factor;
  }
  return success();
}

// Forward: y = x cos + rotate_half(x) sin, rotate_half(x) = cat(-x2, x1).
// Inverse (the transpose, since rotate_half^T = -rotate_half):
//   y = x cos - rotate_half(x sin).
LogicalResult runRope(RopeOp op, Operands in, Results out) {
  const Tensor &x = *in[0], &cos = *in[1], &sin = *in[2];
  size_t rank = x.shape.size();
  int64_t seq = x.shape[rank - 2], dim = x.shape[rank - 1], half = dim / 2;
  int64_t matrices = product(x.shape, 0, rank - 2);
  bool inverse = op.getInverse();
  for (int64_t m = 0; m < matrices; ++m)
    for (int64_t s = 0; s < seq; ++s) {
      const double *row = x.data.data() + (m * seq + s) * dim;
      const double *c = cos.data.data() + s * dim;
      const double *sn = sin.data.data() + s * dim;
      double *y = out[0].data.data() + (m * seq + s) * dim;
      for (int64_t k = 0; k < dim; ++k) {
        // Partner element and sign of rotate_half at position k.
        int64_t partner = k < half ? k + half : k - half;
        double sign = k < half ? -1.0 : 1.0;
        if (!inverse)
          y[k] = row[k] * c[k] + sign * row[partner] * sn[k];
        else
          y[k] = row[k] * c[k] - sign * row[partner] * sn[partner];
      }
    }
  return success();
}

// torch.optim.AdamW's single-tensor step, in its order of operations.
LogicalResult runAdamW(AdamWOp op, Operands in, Results out) {
  const Tensor &param = *in[0], &grad = *in[1], &m = *in[2], &v = *in[3];
  double step = in[4]->data[0];
  if (step < 1.0)
    return op.emitOpError("expects step >= 1 (AdamW's bias correction "
                          "divides by 1 - beta^step), got ")
           << static_cast<int64_t>(step);
  double lr = op.getLr().convertToDouble();
  double beta1 = op.getBeta1().convertToDouble();
  double beta2 = op.getBeta2().convertToDouble();
  double eps = op.getEps().convertToDouble();
  double weightDecay = op.getWeightDecay().convertToDouble();
  double biasCorrection1 = 1.0 - std::pow(beta1, step);
  double biasCorrection2Sqrt = std::sqrt(1.0 - std::pow(beta2, step));
  double stepSize = lr / biasCorrection1;
  // A split master: the f32 joined from its halves, and split again below.
  const Tensor *low = op.getParamLow() ? in[5] : nullptr;
  for (size_t i = 0; i < param.data.size(); ++i) {
    double master = low ? joinMaster(bf16Bits(param.data[i]), int16_t(low->data[i]))
                        : param.data[i];
    double p = master * (1.0 - lr * weightDecay);
    double g = grad.data[i];
    double newM = m.data[i] + (1.0 - beta1) * (g - m.data[i]); // lerp
    double newV = v.data[i] * beta2 + (1.0 - beta2) * g * g;
    double denom = std::sqrt(newV) / biasCorrection2Sqrt + eps;
    out[0].data[i] = p - stepSize * newM / denom;
    out[1].data[i] = newM;
    out[2].data[i] = newV;
    if (low) {
      // The f32 master the halves store, rounded to nearest even first.
      auto updated = static_cast<float>(out[0].data[i]);
      out[0].data[i] = bf16Value(splitMasterHigh(updated));
      out[3].data[i] = splitMasterLow(updated);
    }
  }
  return success();
}

} // namespace weft::reference::detail
