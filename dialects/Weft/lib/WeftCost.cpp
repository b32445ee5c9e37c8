// CostOpInterface and MemoryOpInterface of the weft ops: FLOPs per execution
// (a multiply-add counts 2, a transcendental 1) and attention's workspace.
#include "weft/Dialect/WeftDialect.h"

using namespace mlir;
using namespace weft;

static int64_t elements(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements();
}

static int64_t dim(Value value, int64_t i) {
  auto shape = cast<RankedTensorType>(value.getType()).getShape();
  return shape[i < 0 ? i + shape.size() : i];
}

int64_t LinearOp::getFlops() {
  int64_t outputs = elements(getY());
  return 2 * outputs * dim(getX(), -1) + (getBias() ? outputs : 0);
}

int64_t MatmulOp::getFlops() {
  int64_t k = getTransposeA() ? dim(getA(), -2) : dim(getA(), -1);
  return 2 * elements(getC()) * k;
}

/// Score-matrix entries actually computed: half (plus the diagonal) when causal.
static double scoreEntries(Value q, Value k, bool causal) {
  double sq = dim(q, 2), sk = dim(k, 2);
  double full = double(dim(q, 0)) * dim(q, 1) * sq * sk;
  if (!causal)
    return full;
  // Top-left causal: row i sees min(i + 1, sk) keys.
  double seen = 0;
  for (int64_t i = 0; i < dim(q, 2); ++i)
    seen += std::min<double>(i + 1, sk);
  return full * seen / (sq * sk);
}

int64_t AttentionOp::getFlops() {
  double entries = scoreEntries(getQ(), getK(), getCausal());
  // QK^T and PV, plus about 5 operations per score for the softmax.
  return int64_t(entries * (2.0 * dim(getQ(), 3) + 2.0 * dim(getV(), 3) + 5.0));
}

int64_t AttentionGradOp::getFlops() {
  double entries = scoreEntries(getQ(), getK(), getCausal());
  // Recompute S = QK^T, then dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q.
  double d = dim(getQ(), 3), dv = dim(getV(), 3);
  return int64_t(entries * (2.0 * (3.0 * d + 2.0 * dv) + 8.0));
}

int64_t AttentionGradOp::getWorkspaceBytes() {
  // FlashAttention-2's backward: an f32 dQ accumulator and the row statistic
  // D = rowsum(dO * O) in f32.
  int64_t rows = dim(getQ(), 0) * dim(getQ(), 1) * dim(getQ(), 2);
  return 4 * elements(getQ()) + 4 * rows;
}

int64_t LayerNormOp::getFlops() { return 8 * elements(getX()); }
int64_t LayerNormGradOp::getFlops() { return 14 * elements(getX()); }
int64_t RmsNormOp::getFlops() { return 5 * elements(getX()); }
int64_t RmsNormGradOp::getFlops() { return 10 * elements(getX()); }
int64_t SoftmaxOp::getFlops() { return 5 * elements(getX()); }
int64_t SoftmaxGradOp::getFlops() { return 4 * elements(getY()); }
int64_t GeluOp::getFlops() { return 10 * elements(getX()); }
int64_t GeluGradOp::getFlops() { return 16 * elements(getX()); }
int64_t SiluOp::getFlops() { return 5 * elements(getX()); }
int64_t SiluGradOp::getFlops() { return 9 * elements(getX()); }
int64_t AddOp::getFlops() { return elements(getResult()); }
int64_t SubOp::getFlops() { return elements(getResult()); }
int64_t MulOp::getFlops() { return elements(getResult()); }
int64_t ScaleOp::getFlops() { return elements(getY()); }
int64_t DropoutOp::getFlops() { return 2 * elements(getY()); }
int64_t CausalMaskOp::getFlops() { return elements(getY()); }
int64_t WhereOp::getFlops() { return elements(getResult()); }
int64_t ConvertOp::getFlops() { return elements(getY()); }
int64_t ReduceSumOp::getFlops() { return elements(getX()); }
int64_t ReduceMeanOp::getFlops() { return elements(getX()) + elements(getY()); }
int64_t ReshapeOp::getFlops() { return 0; }
int64_t TransposeOp::getFlops() { return 0; }
int64_t SplitOp::getFlops() { return 0; }
int64_t ConcatOp::getFlops() { return 0; }
int64_t EmbeddingOp::getFlops() { return 0; }
int64_t EmbeddingGradOp::getFlops() { return elements(getDy()); }
int64_t CrossEntropyOp::getFlops() { return 5 * elements(getLogits()); }
int64_t CrossEntropyGradOp::getFlops() { return 6 * elements(getLogits()); }
int64_t RopeOp::getFlops() { return 3 * elements(getX()); }
int64_t AdamWOp::getFlops() { return 14 * elements(getParam()); }
