// Reference kernels for attention and attention_grad: exact SDPA (GQA/MQA,
// bottom-right causal mask, Philox dropout on the probabilities) in float64.
#include "Kernels.h"

#include "weft/Reference/Numerics.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;

namespace weft::reference::detail {

namespace {

/// What both attention kernels need: the operands, their sizes, the softmax
/// scale, masking and dropout parameters.
struct AttentionProblem {
  const Tensor *q, *k, *v;
  int64_t batch, qHeads, kvHeads, qLen, kLen, headDim, valueDim;
  double scale;
  bool causal;
  double dropoutP;
  int64_t seed = 0, rngId = 0;
  /// A partition's place in the global mask: its first q head and the q
  /// heads in all (qHeads when not partitioned).
  int64_t headOffset = 0, globalHeads = 0;

  int64_t kvHeadOf(int64_t qHead) const {
    return qHead / (qHeads / kvHeads);
  }
  const double *qRow(int64_t b, int64_t h, int64_t i) const {
    return q->data.data() + ((b * qHeads + h) * qLen + i) * headDim;
  }
  const double *kRow(int64_t b, int64_t g, int64_t j) const {
    return k->data.data() + ((b * kvHeads + g) * kLen + j) * headDim;
  }
  const double *vRow(int64_t b, int64_t g, int64_t j) const {
    return v->data.data() + ((b * kvHeads + g) * kLen + j) * valueDim;
  }
};

template <typename OpTy>
AttentionProblem makeProblem(OpTy op, const Tensor &q, const Tensor &k,
                             const Tensor &v, const Tensor *seed) {
  AttentionProblem problem{&q,          &k,          &v,
                           q.shape[0],  q.shape[1],  k.shape[1],
                           q.shape[2],  k.shape[2],  q.shape[3],
                           v.shape[3],  op.getScaleValue(), op.getCausal(),
                           op.getDropoutP().convertToDouble()};
  problem.globalHeads = op.getDropoutHeads().value_or(problem.qHeads);
  if (problem.dropoutP > 0.0) {
    problem.seed = static_cast<int64_t>(seed->data[0]);
    problem.rngId = rngIdOf(op);
  }
  return problem;
}

/// One query row's softmax: probabilities P (0 where masked), the dropout
/// factors (0, or 1/(1-p) where kept; 1 without dropout) and the row
/// log-sum-exp of the scaled, masked scores.
struct AttentionRow {
  std::vector<double> probability, dropoutFactor;
  double logSumExp;
};

void computeRow(const AttentionProblem &problem, int64_t b, int64_t h,
                int64_t i, AttentionRow &row) {
  int64_t g = problem.kvHeadOf(h);
  const double *query = problem.qRow(b, h, i);
  row.probability.assign(problem.kLen, 0.0);
  row.dropoutFactor.assign(problem.kLen, 1.0);
  // Bottom-right causal: query i sees keys 0..i + (kLen - qLen), so with a
  // shorter query (decoding) its last row sees the whole cache.
  int64_t visible =
      problem.causal
          ? std::clamp<int64_t>(i + 1 + problem.kLen - problem.qLen, 0, problem.kLen)
          : problem.kLen;
  double maxScore = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < visible; ++j) {
    const double *key = problem.kRow(b, g, j);
    double dot = 0.0;
    for (int64_t t = 0; t < problem.headDim; ++t)
      dot += query[t] * key[t];
    row.probability[j] = problem.scale * dot;
    maxScore = std::max(maxScore, row.probability[j]);
  }
  if (visible == 0) {
    // A fully masked row attends to nothing: zero output, lse -inf.
    row.logSumExp = -std::numeric_limits<double>::infinity();
  } else {
    double sum = 0.0;
    for (int64_t j = 0; j < visible; ++j) {
      row.probability[j] = std::exp(row.probability[j] - maxScore);
      sum += row.probability[j];
    }
    for (int64_t j = 0; j < visible; ++j)
      row.probability[j] /= sum;
    row.logSumExp = maxScore + std::log(sum);
  }
  if (problem.dropoutP > 0.0) {
    uint64_t rowStart =
        ((b * problem.globalHeads + problem.headOffset + h) * problem.qLen + i) *
        problem.kLen;
    double keptScale = 1.0 / (1.0 - problem.dropoutP);
    for (int64_t j = 0; j < problem.kLen; ++j)
      row.dropoutFactor[j] = dropoutKeeps(problem.seed, problem.rngId,
                                          rowStart + j, problem.dropoutP)
                                 ? keptScale
                                 : 0.0;
  }
}

} // namespace

/// The kernels proper, on [b, h, s, d] tensors.
static LogicalResult attentionHeadMajor(AttentionOp op, Operands in, Results out) {
  const Tensor *seed = in.size() > 3 ? in[3] : nullptr;
  AttentionProblem problem = makeProblem(op, *in[0], *in[1], *in[2], seed);
  if (in.size() > 4)
    problem.headOffset = static_cast<int64_t>(in[4]->data[0]);
  Tensor &result = out[0];
  Tensor *lse = out.size() > 1 ? &out[1] : nullptr;
  AttentionRow row;
  for (int64_t b = 0; b < problem.batch; ++b)
    for (int64_t h = 0; h < problem.qHeads; ++h) {
      int64_t g = problem.kvHeadOf(h);
      for (int64_t i = 0; i < problem.qLen; ++i) {
        computeRow(problem, b, h, i, row);
        int64_t rowIndex = (b * problem.qHeads + h) * problem.qLen + i;
        double *output = result.data.data() + rowIndex * problem.valueDim;
        for (int64_t j = 0; j < problem.kLen; ++j) {
          double weight = row.probability[j] * row.dropoutFactor[j];
          if (weight == 0.0)
            continue;
          const double *value = problem.vRow(b, g, j);
          for (int64_t t = 0; t < problem.valueDim; ++t)
            output[t] += weight * value[t];
        }
        if (lse)
          lse->data[rowIndex] = row.logSumExp;
      }
    }
  return success();
}

// With A = P * F (F the dropout factors) and O = A V:
//   dV = A^T dO,  dP = (dO V^T) * F,  dS = P * (dP - D) with
//   D = rowsum(P * dP) = rowsum(dO * O),  dQ = scale dS K,  dK = scale dS^T Q.
// P and D are recomputed in float64 from q, k, v and dout rather than read
// from the `lse` (f32) and `out` operands, so the gradient is exact for the
// given inputs: those operands only carry values the recomputation reproduces.
static LogicalResult attentionGradHeadMajor(AttentionGradOp op, Operands in, Results out) {
  const Tensor &dout = *in[0];
  const Tensor *seed = in.size() > 6 ? in[6] : nullptr;
  AttentionProblem problem = makeProblem(op, *in[1], *in[2], *in[3], seed);
  if (in.size() > 7)
    problem.headOffset = static_cast<int64_t>(in[7]->data[0]);
  Tensor &dq = out[0], &dk = out[1], &dv = out[2];
  AttentionRow row;
  std::vector<double> dProbability(problem.kLen);
  for (int64_t b = 0; b < problem.batch; ++b)
    for (int64_t h = 0; h < problem.qHeads; ++h) {
      int64_t g = problem.kvHeadOf(h);
      for (int64_t i = 0; i < problem.qLen; ++i) {
        computeRow(problem, b, h, i, row);
        int64_t rowIndex = (b * problem.qHeads + h) * problem.qLen + i;
        const double *dOut = dout.data.data() + rowIndex * problem.valueDim;
        double rowDot = 0.0; // D
        for (int64_t j = 0; j < problem.kLen; ++j) {
          dProbability[j] = 0.0;
          if (row.probability[j] == 0.0)
            continue;
          const double *value = problem.vRow(b, g, j);
          double dot = 0.0;
          for (int64_t t = 0; t < problem.valueDim; ++t)
            dot += dOut[t] * value[t];
          dProbability[j] = dot * row.dropoutFactor[j];
          rowDot += row.probability[j] * dProbability[j];
          double weight = row.probability[j] * row.dropoutFactor[j];
          double *dValue =
              dv.data.data() + ((b * problem.kvHeads + g) * problem.kLen + j) *
                                   problem.valueDim;
          for (int64_t t = 0; t < problem.valueDim; ++t)
            dValue[t] += weight * dOut[t];
        }
        const double *query = problem.qRow(b, h, i);
        double *dQuery = dq.data.data() + rowIndex * problem.headDim;
        for (int64_t j = 0; j < problem.kLen; ++j) {
          if (row.probability[j] == 0.0)
            continue;
          double dScore = problem.scale * row.probability[j] *
                          (dProbability[j] - rowDot);
          const double *key = problem.kRow(b, g, j);
          double *dKey =
              dk.data.data() + ((b * problem.kvHeads + g) * problem.kLen + j) *
                                   problem.headDim;
          for (int64_t t = 0; t < problem.headDim; ++t) {
            dQuery[t] += dScore * key[t];
            dKey[t] += dScore * query[t];
          }
        }
      }
    }
  return success();
}

namespace {

/// A rank-4 tensor with dims 1 and 2 exchanged ([b, s, h, d] <-> [b, h, s, d]).
Tensor swapSeqAndHeads(const Tensor &x) {
  Tensor y{{x.shape[0], x.shape[2], x.shape[1], x.shape[3]}, x.dtype, {}};
  y.data.resize(x.data.size());
  int64_t n1 = x.shape[1], n2 = x.shape[2], n3 = x.shape[3];
  for (int64_t a = 0; a < x.shape[0]; ++a)
    for (int64_t i = 0; i < n1; ++i)
      for (int64_t j = 0; j < n2; ++j)
        std::copy_n(x.data.data() + ((a * n1 + i) * n2 + j) * n3, n3,
                    y.data.data() + ((a * n2 + j) * n1 + i) * n3);
  return y;
}

/// Runs `core` on head-major copies of the op's seq-major tensors (operands
/// `rank4Operands`, results `rank4Results`) and lays the results back out.
template <typename OpTy, typename Core>
LogicalResult inHeadMajor(OpTy op, Operands in, Results out, unsigned rank4Operands,
                          unsigned rank4Results, Core core) {
  if (!op.getSeqMajor())
    return core(op, in, out);
  std::vector<Tensor> swapped;
  swapped.reserve(in.size());
  std::vector<const Tensor *> operands(in.begin(), in.end());
  for (unsigned i = 0; i < rank4Operands; ++i) {
    swapped.push_back(swapSeqAndHeads(*in[i]));
    operands[i] = &swapped.back();
  }
  std::vector<Tensor> results(out.begin(), out.end());
  for (unsigned i = 0; i < rank4Results; ++i)
    results[i] = swapSeqAndHeads(out[i]);
  if (failed(core(op, operands, results)))
    return failure();
  for (unsigned i = 0; i < out.size(); ++i)
    out[i] = i < rank4Results ? swapSeqAndHeads(results[i]) : std::move(results[i]);
  return success();
}

} // namespace

LogicalResult runAttention(AttentionOp op, Operands in, Results out) {
  // q, k, v; out (lse is [b, hq, sq] in either layout).
  return inHeadMajor(op, in, out, 3, 1, attentionHeadMajor);
}

LogicalResult runAttentionGrad(AttentionGradOp op, Operands in, Results out) {
  // dout, q, k, v, out (lse stays); dq, dk, dv.
  return inHeadMajor(op, in, out, 5, 3, attentionGradHeadMajor);
}

} // namespace weft::reference::detail
