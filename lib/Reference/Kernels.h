// Private to the reference interpreter: the per-op kernels and the index
// helpers they share. A kernel reads its operands (in the op's operand order,
// absent optional operands left out) and fills `results`, which the driver has
// already shaped and typed from the op's result types; the driver rounds every
// result to its element type afterwards, so kernels compute in plain double.
#ifndef WEFT_LIB_REFERENCE_KERNELS_H
#define WEFT_LIB_REFERENCE_KERNELS_H

#include "weft/Dialect/WeftDialect.h"
#include "weft/Support/Tensor.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>
#include <vector>

namespace weft::reference::detail {

using Operands = llvm::ArrayRef<const Tensor *>;
using Results = llvm::MutableArrayRef<Tensor>;

//===----------------------------------------------------------------------===//
// Index helpers
//===----------------------------------------------------------------------===//

/// Row-major strides of `shape`.
std::vector<int64_t> rowMajorStrides(llvm::ArrayRef<int64_t> shape);
/// "[2, 3, 4]".
std::string shapeString(llvm::ArrayRef<int64_t> shape);
/// Product of shape[begin, end).
int64_t product(llvm::ArrayRef<int64_t> shape, size_t begin, size_t end);
/// A possibly negative dimension index made non-negative (verified in range).
inline int64_t normalizeDim(int64_t dim, int64_t rank) {
  return dim < 0 ? dim + rank : dim;
}

/// The elements of `source` with indices [offset, offset + size) along `dim`.
Tensor sliceAlong(const Tensor &source, int64_t dim, int64_t offset,
                  int64_t size);
/// Writes `piece` into `target` at `offset` along `dim` (other dims equal).
void insertAlong(Tensor &target, const Tensor &piece, int64_t dim,
                 int64_t offset);

/// Calls `body(resultIndex, lhsIndex, rhsIndex)` for every element of the
/// NumPy broadcast of two shapes onto `resultShape`.
template <typename Body>
void forEachBroadcast(llvm::ArrayRef<int64_t> resultShape,
                      llvm::ArrayRef<int64_t> lhsShape,
                      llvm::ArrayRef<int64_t> rhsShape, Body body);

/// Strides of `operand` viewed in the broadcast `resultShape`: 0 along
/// stretched or missing dimensions.
std::vector<int64_t> broadcastStrides(llvm::ArrayRef<int64_t> operandShape,
                                      llvm::ArrayRef<int64_t> resultShape);
/// For every element of `resultShape` (row-major), the offset of the operand
/// element NumPy broadcasting reads for it.
std::vector<int64_t> broadcastOffsets(llvm::ArrayRef<int64_t> operandShape,
                                      llvm::ArrayRef<int64_t> resultShape);

//===----------------------------------------------------------------------===//
// Kernels, by family
//===----------------------------------------------------------------------===//

// Linalg.cpp
mlir::LogicalResult runLinear(LinearOp op, Operands in, Results out);
mlir::LogicalResult runMatmul(MatmulOp op, Operands in, Results out);

// Attention.cpp
mlir::LogicalResult runAttention(AttentionOp op, Operands in, Results out);
mlir::LogicalResult runAttentionGrad(AttentionGradOp op, Operands in,
                                     Results out);

// Norms.cpp
mlir::LogicalResult runLayerNorm(LayerNormOp op, Operands in, Results out);
mlir::LogicalResult runLayerNormGrad(LayerNormGradOp op, Operands in,
                                     Results out);
mlir::LogicalResult runRmsNorm(RmsNormOp op, Operands in, Results out);
mlir::LogicalResult runRmsNormGrad(RmsNormGradOp op, Operands in, Results out);
mlir::LogicalResult runSoftmax(SoftmaxOp op, Operands in, Results out);
mlir::LogicalResult runSoftmaxGrad(SoftmaxGradOp op, Operands in, Results out);

// Pointwise.cpp
/// Any op with a formula (ScalarFormulaOpInterface), in float64.
mlir::LogicalResult runFormula(ScalarFormulaOpInterface op, Operands in,
                               Results out);
mlir::LogicalResult runDropout(DropoutOp op, Operands in, Results out);
mlir::LogicalResult runCausalMask(CausalMaskOp op, Operands in, Results out);
mlir::LogicalResult runConvert(ConvertOp op, Operands in, Results out);

// Shapes.cpp
enum class ReduceKind { Sum, Mean, Max };
mlir::LogicalResult runReduce(mlir::Operation *op, llvm::ArrayRef<int64_t> dims,
                              ReduceKind kind, Operands in, Results out);
mlir::LogicalResult runReshape(ReshapeOp op, Operands in, Results out);
mlir::LogicalResult runTranspose(TransposeOp op, Operands in, Results out);
mlir::LogicalResult runSplit(SplitOp op, Operands in, Results out);
mlir::LogicalResult runConcat(ConcatOp op, Operands in, Results out);

// Training.cpp
/// Checks that every id lies in [0, limit) or is `ignored`, reporting the
/// first that does not with its value and position.
mlir::LogicalResult checkIds(mlir::Operation *op, llvm::StringRef what,
                             const Tensor &ids, int64_t limit,
                             std::optional<int64_t> ignored = std::nullopt);
mlir::LogicalResult runEmbedding(EmbeddingOp op, Operands in, Results out);
mlir::LogicalResult runEmbeddingGrad(EmbeddingGradOp op, Operands in,
                                     Results out);
mlir::LogicalResult runCrossEntropy(CrossEntropyOp op, Operands in,
                                    Results out);
mlir::LogicalResult runCrossEntropyGrad(CrossEntropyGradOp op, Operands in,
                                        Results out);
mlir::LogicalResult runRope(RopeOp op, Operands in, Results out);

// VocabParallel.cpp
mlir::LogicalResult runCrossEntropyPartial(CrossEntropyPartialOp op,
                                           Operands in, Results out);
mlir::LogicalResult runCrossEntropyCombine(CrossEntropyCombineOp op,
                                           Operands in, Results out);
mlir::LogicalResult runCrossEntropyGradPartial(CrossEntropyGradPartialOp op,
                                               Operands in, Results out);
mlir::LogicalResult runAdamW(AdamWOp op, Operands in, Results out);

// Collectives.cpp
/// Whether `op` is a shard op whose result depends on other ranks' values or
/// on the rank's position in its device group.
bool isCollective(mlir::Operation *op);
/// Runs the collective `op` over all ranks of a grid of shape `gridShape` at
/// once: `inputs[r]` is rank r's input tensor, `results[r]` its result, shaped
/// and typed from the op's result type.
mlir::LogicalResult runCollective(mlir::Operation *op,
                                  llvm::ArrayRef<int64_t> gridShape,
                                  llvm::ArrayRef<const Tensor *> inputs,
                                  llvm::MutableArrayRef<Tensor> results);

/// Runs one weft op on one rank (Dispatch.cpp). Ops of other dialects are the
/// driver's business.
mlir::LogicalResult runWeftOp(mlir::Operation *op, Operands in, Results out);

// Structured.cpp
/// Whether `op` is an upstream arith/math/scf/tensor/linalg op that
/// runStructuredOp runs (the driver keeps its own arith.constant path for the
/// constants it can hold).
bool isStructuredOp(mlir::Operation *op);
/// Runs `op` (and its regions) on one rank, reading operands from and writing
/// results into `frame`; scalars are 0-d tensors.
mlir::LogicalResult
runStructuredOp(mlir::Operation *op, llvm::DenseMap<mlir::Value, Tensor> &frame);

/// The op's `weft.rng_id` (verified present on random ops).
int64_t rngIdOf(mlir::Operation *op);

//===----------------------------------------------------------------------===//
// Template definitions
//===----------------------------------------------------------------------===//

template <typename Body>
void forEachBroadcast(llvm::ArrayRef<int64_t> resultShape,
                      llvm::ArrayRef<int64_t> lhsShape,
                      llvm::ArrayRef<int64_t> rhsShape, Body body) {
  std::vector<int64_t> lhsStrides = broadcastStrides(lhsShape, resultShape);
  std::vector<int64_t> rhsStrides = broadcastStrides(rhsShape, resultShape);
  size_t rank = resultShape.size();
  int64_t count = product(resultShape, 0, rank);
  std::vector<int64_t> index(rank, 0);
  int64_t lhs = 0, rhs = 0;
  for (int64_t flat = 0; flat < count; ++flat) {
    body(flat, lhs, rhs);
    // Odometer increment, updating the operand offsets incrementally.
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < resultShape[d]) {
        lhs += lhsStrides[d];
        rhs += rhsStrides[d];
        break;
      }
      lhs -= lhsStrides[d] * (resultShape[d] - 1);
      rhs -= rhsStrides[d] * (resultShape[d] - 1);
      index[d] = 0;
    }
  }
}

} // namespace weft::reference::detail

#endif // WEFT_LIB_REFERENCE_KERNELS_H
