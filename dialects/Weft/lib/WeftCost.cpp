// CostOpInterface and MemoryOpInterface of the weft ops: FLOPs per execution
// (a multiply-add counts 2, a transcendental 1), attention's and the GEMMs'
// workspaces.
#include "weft/Dialect/AttentionWorkspace.h"
#include "weft/Dialect/WeftDialect.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#include <algorithm>
#include <cstdint>
#include <limits>

using namespace mlir;
using namespace weft;

/// FLOP counts of valid but huge shapes (up to 2^48 elements per tensor) can
/// pass int64: products are formed in double and clamped, never wrapped.
static int64_t clampToInt64(double value) {
  // The largest double below 2^63; anything at or above it saturates.
  constexpr double kLimit = 9223372036854774784.0;
  return value >= kLimit ? std::numeric_limits<int64_t>::max() : int64_t(value);
}

// Both helpers answer 0 rather than crash or overflow on shapes a verifier
// would reject (wrong rank, dynamic, over 2^48 elements): the interfaces may
// be queried before the op is verified (dialect attribute verifiers run
// first). Below 2^48, count * 16 and the like fit in int64.
constexpr int64_t kMaxElements = int64_t(1) << 48;

static int64_t elements(Value value) {
  int64_t count = tensorElements(value.getType());
  return count <= kMaxElements ? count : 0;
}

static int64_t dim(Value value, int64_t i) {
  auto tensor = dyn_cast<RankedTensorType>(value.getType());
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  ArrayRef<int64_t> shape = tensor.getShape();
  int64_t index = i < 0 ? i + int64_t(shape.size()) : i;
  if (index < 0 || index >= int64_t(shape.size()))
    return 0;
  return shape[index] <= kMaxElements ? shape[index] : 0;
}

int64_t LinearOp::getFlops() {
  double outputs = elements(getY());
  return clampToInt64(2.0 * outputs * dim(getX(), -1) + (getBias() ? outputs : 0.0));
}

int64_t MatmulOp::getFlops() {
  int64_t k = getTransposeA() ? dim(getA(), -2) : dim(getA(), -1);
  return clampToInt64(2.0 * double(elements(getC())) * k);
}

/// Score-matrix entries actually computed: half (plus the diagonal) when
/// causal. Seq-major operands are [b, s, h, d].
static double scoreEntries(Value q, Value k, bool causal, bool seqMajor) {
  int seqDim = seqMajor ? 1 : 2, headDim = seqMajor ? 2 : 1;
  double sq = dim(q, seqDim), sk = dim(k, seqDim);
  double full = double(dim(q, 0)) * dim(q, headDim) * sq * sk;
  if (!causal)
    return full;
  if (sq == 0 || sk == 0)
    return 0;
  // Bottom-right causal (the verifier keeps sq <= sk): row i sees
  // i + 1 + (sk - sq) keys. In closed form (a loop over rows would take
  // hours for the longest valid sequences).
  double seen = sq * (sq + 1) / 2 + sq * std::max(0.0, sk - sq);
  return double(dim(q, 0)) * dim(q, headDim) * seen;
}

int64_t AttentionOp::getFlops() {
  double entries = scoreEntries(getQ(), getK(), getCausal(), getSeqMajor());
  // QK^T and PV, plus about 5 operations per score for the softmax.
  return clampToInt64(entries * (2.0 * dim(getQ(), 3) + 2.0 * dim(getV(), 3) + 5.0));
}

int64_t AttentionGradOp::getFlops() {
  double entries = scoreEntries(getQ(), getK(), getCausal(), getSeqMajor());
  // Recompute S = QK^T, then dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q.
  double d = dim(getQ(), 3), dv = dim(getV(), 3);
  return clampToInt64(entries * (2.0 * (3.0 * d + 2.0 * dv) + 8.0));
}

int64_t AttentionOp::getWorkspaceBytes() {
  // With dropout, the keep mask the Hopper forward's keep-mask kernel draws
  // and its forward kernel reads (weft/Dialect/AttentionWorkspace.h). An
  // unverified op may lack q: no workspace then.
  if ((*this)->getNumOperands() < 3 || getDropoutP().convertToDouble() <= 0.0)
    return 0;
  int seqDim = getSeqMajor() ? 1 : 2, headDim = getSeqMajor() ? 2 : 1;
  // Sizes past int64 (an absurd but valid shape) clamp instead of wrapping:
  // the products are formed in double first.
  double planeCount = double(dim(getQ(), 0)) * double(dim(getQ(), headDim));
  int64_t qLen = dim(getQ(), seqDim), kLen = dim(getK(), seqDim);
  double estimate = 2.0 * planeCount * qLen * kLen / 8.0;
  if (estimate > 1e18 || planeCount > 1e18)
    return clampToInt64(estimate);
  int64_t planes = dim(getQ(), 0) * dim(getQ(), headDim);
  return attentionKeepMaskBytes(planes, qLen, kLen);
}

int64_t AttentionGradOp::getWorkspaceBytes() {
  // The row statistic delta = rowsum(dO * O) in f32, one per query row, and
  // with dropout the keep mask the dK/dV kernel hands the dQ kernel
  // (weft/Dialect/AttentionWorkspace.h). The deterministic backward (dK, dV
  // per key block, then dQ per query block; AttentionToNVVM's
  // BackwardKernels) accumulates dQ in registers per query block and writes
  // it once, so no f32 dQ accumulator is reserved; with `atomic_dq` the
  // accumulator [planes, q_len, head_dim] f32 follows. An unverified op may lack
  // q (attribute verifiers ask before the op's verifier ran): no workspace
  // then.
  if ((*this)->getNumOperands() < 6 || (*this)->getNumOperands() > 8) // rng: seed, head offset
    return 0;
  int seqDim = getSeqMajor() ? 1 : 2, headDim = getSeqMajor() ? 2 : 1;
  // Sizes past int64 (an absurd but valid shape) clamp instead of wrapping:
  // the products are formed in double first.
  double planeCount = double(dim(getQ(), 0)) * double(dim(getQ(), headDim));
  int64_t qLen = dim(getQ(), seqDim), kLen = dim(getK(), seqDim);
  bool dropout = getDropoutP().convertToDouble() > 0.0;
  int64_t accumulatorDim = getAtomicDq() ? dim(getQ(), 3) : 0;
  double estimate = 4.0 * planeCount * qLen * (1.0 + accumulatorDim) +
                    (dropout ? 2.0 * planeCount * qLen * kLen / 8.0 : 0.0);
  if (estimate > 1e18 || planeCount > 1e18)
    return clampToInt64(estimate);
  int64_t planes = dim(getQ(), 0) * dim(getQ(), headDim);
  return attentionGradWorkspaceBytes(planes, qLen, kLen, dropout, accumulatorDim);
}

/// The cuBLASLt workspace of a GEMM (linear, matmul) writing `result`, in a
/// function planned with weft.gemm_workspace = cap bytes; 0 without the
/// attribute (a step not meant for cuBLASLt plans no workspace). cuBLASLt
/// uses the workspace for split-K / stream-K partial sums in f32: room for
/// four f32 copies of the output, at least 1 MiB so small problems keep
/// those kernels, never more than the cap (32 MiB, PyTorch's choice on
/// sm_90, for large ones). weft_gemm_select picks the best algorithm that
/// fits what was planned, so any size is correct; this one bounds the waste.
static int64_t gemmWorkspaceBytes(Operation *op, Value result) {
  auto function = op->getParentOfType<FunctionOpInterface>();
  auto cap = function ? function->getAttrOfType<IntegerAttr>(
                            WeftDialect::kGemmWorkspaceAttr)
                      : IntegerAttr();
  int64_t outputs = elements(result);
  if (!cap || cap.getInt() <= 0 || outputs == 0)
    return 0;
  constexpr int64_t kMinBytes = int64_t(1) << 20, kGranule = 256;
  int64_t need = std::max(kMinBytes, 4 * 4 * outputs);
  need = (need + kGranule - 1) / kGranule * kGranule;
  return std::min(cap.getInt(), need);
}

int64_t LinearOp::getWorkspaceBytes() {
  // An unverified op (attribute verifiers run first) may lack its result.
  if ((*this)->getNumResults() != 1)
    return 0;
  return gemmWorkspaceBytes(*this, getY());
}

// GemmRowsOpInterface: x's rows are y's; a's rows are c's when a is not
// transposed and b is one 2-d matrix (every batch of a one GEMM's rows).
std::optional<unsigned> LinearOp::getGemmRowOperand() { return 0; }

std::optional<unsigned> MatmulOp::getGemmRowOperand() {
  if (getTransposeA() || getB().getType().getRank() != 2)
    return std::nullopt;
  return 0;
}

int64_t MatmulOp::getWorkspaceBytes() {
  if ((*this)->getNumResults() != 1)
    return 0;
  return gemmWorkspaceBytes(*this, getC());
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
int64_t DivOp::getFlops() { return elements(getResult()); }
int64_t ScaleOp::getFlops() { return elements(getY()); }
int64_t DropoutOp::getFlops() { return 2 * elements(getY()); }
int64_t CausalMaskOp::getFlops() { return elements(getY()); }
int64_t WhereOp::getFlops() { return elements(getResult()); }
int64_t ConvertOp::getFlops() { return elements(getY()); }
int64_t ReduceSumOp::getFlops() { return elements(getX()); }
int64_t ReduceMeanOp::getFlops() { return elements(getX()) + elements(getY()); }
int64_t ReduceMaxOp::getFlops() { return elements(getX()); }
int64_t ReshapeOp::getFlops() { return 0; }
int64_t TransposeOp::getFlops() { return 0; }
int64_t SplitOp::getFlops() { return 0; }
int64_t ConcatOp::getFlops() { return 0; }
int64_t EmbeddingOp::getFlops() { return 0; }
int64_t EmbeddingGradOp::getFlops() { return elements(getDy()); }
int64_t CrossEntropyOp::getFlops() { return 5 * elements(getLogits()); }
int64_t CrossEntropyGradOp::getFlops() { return 6 * elements(getLogits()); }
int64_t CrossEntropyPartialOp::getFlops() { return 3 * elements(getLogits()); }
int64_t CrossEntropyCombineOp::getFlops() { return 3 * elements(getSumexp()); }
int64_t CrossEntropyGradPartialOp::getFlops() { return 4 * elements(getLogits()); }
int64_t RopeOp::getFlops() { return 3 * elements(getX()); }
int64_t AdamWOp::getFlops() { return 14 * elements(getParam()); }
