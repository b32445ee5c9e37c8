// Reference kernels of the vocabulary-parallel cross-entropy: one shard's row
// statistics, the loss from the global statistics, and one shard's gradient.
#include "Kernels.h"

#include <cmath>
#include <cstdint>

using namespace mlir;

namespace weft::reference::detail {

namespace {

/// The label of row `p` relative to a shard's first entry.
int64_t localLabel(const Tensor &labels, int64_t p, int64_t offset) {
  return static_cast<int64_t>(labels.data[p]) - offset;
}

} // namespace

LogicalResult runCrossEntropyPartial(CrossEntropyPartialOp op, Operands in,
                                     Results out) {
  const Tensor &logits = *in[0], &labels = *in[1], &max = *in[2];
  auto offset = static_cast<int64_t>(in[3]->data[0]);
  if (failed(checkIds(op, "label", labels, INT64_MAX)))
    return failure();
  int64_t classes = logits.shape.back();
  for (size_t p = 0; p < labels.data.size(); ++p) {
    const double *row = logits.data.data() + p * classes;
    double sum = 0.0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(row[c] - max.data[p]);
    out[0].data[p] = sum;
    int64_t label = localLabel(labels, p, offset);
    out[1].data[p] =
        label >= 0 && label < classes ? row[label] - max.data[p] : 0.0;
  }
  return success();
}

LogicalResult runCrossEntropyCombine(CrossEntropyCombineOp, Operands in,
                                     Results out) {
  const Tensor &sumexp = *in[0], &target = *in[1];
  double total = 0.0;
  for (size_t p = 0; p < sumexp.data.size(); ++p)
    total += std::log(sumexp.data[p]) - target.data[p];
  // Like PyTorch's mean reduction, an empty batch gives NaN.
  out[0].data[0] = total / double(sumexp.data.size());
  return success();
}

LogicalResult runCrossEntropyGradPartial(CrossEntropyGradPartialOp op,
                                         Operands in, Results out) {
  const Tensor &dloss = *in[0], &logits = *in[1], &labels = *in[2];
  const Tensor &max = *in[3], &sumexp = *in[4];
  auto offset = static_cast<int64_t>(in[5]->data[0]);
  if (failed(checkIds(op, "label", labels, INT64_MAX)))
    return failure();
  int64_t classes = logits.shape.back();
  auto positions = static_cast<int64_t>(labels.data.size());
  double factor = dloss.data[0] / double(positions);
  for (int64_t p = 0; p < positions; ++p) {
    const double *row = logits.data.data() + p * classes;
    double *grad = out[0].data.data() + p * classes;
    for (int64_t c = 0; c < classes; ++c)
      grad[c] = std::exp(row[c] - max.data[p]) / sumexp.data[p] * factor;
    int64_t label = localLabel(labels, p, offset);
    if (label >= 0 && label < classes)
      grad[label] -= factor;
  }
  return success();
}

} // namespace weft::reference::detail
