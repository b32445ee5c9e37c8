// The loop nests of the weft ops as ShardingInterface describes them: one
// loop per independent index, its iterator type (and reduction kind), and one
// indexing map per operand and result. LoopNests.cpp writes each op's nest
// once; the models in ShardingModels.cpp serve them to the interface.
//
// Kinds, as the partitioner reads them:
//  - parallel: the loop may be split; results index it (a result that does
//    not, like cross_entropy's loss over the vocabulary, is made whole by the
//    op's own partition());
//  - reduction `sum` (or `average`): the loop may be split; results that do
//    not index it are partial sums (averages) over the split;
//  - reduction `generic`: the loop is never split (softmax rows, norms'
//    hidden dimension, causal positions).
// A dimension's expression is one loop, a constant 0 (a broadcast size-1
// dimension) or a linearized sum of loops (a reshape's merged dimension),
// whose outermost loop is the one a split of that dimension splits.
#ifndef WEFT_LIB_PARTITION_LOOPNESTS_H
#define WEFT_LIB_PARTITION_LOOPNESTS_H

#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Operation.h"

namespace weft::partition {

struct LoopNest {
  llvm::SmallVector<mlir::utils::IteratorType> iterators;
  /// One per reduction loop, in loop order (ShardingInterface's convention).
  llvm::SmallVector<mlir::shard::ReductionKind> reductionKinds;
  /// Operands' maps, then results'.
  llvm::SmallVector<mlir::AffineMap> maps;
  /// The kind of loop `loop` (parallel loops report Sum, never asked).
  mlir::shard::ReductionKind kindOf(unsigned loop) const;
};

/// Builds a LoopNest: loops first, then each map in operand-then-result order.
class LoopNestBuilder {
public:
  explicit LoopNestBuilder(mlir::MLIRContext *context) : context(context) {}
  /// A parallel loop.
  mlir::AffineExpr parallel();
  /// A reduction loop of `kind`.
  mlir::AffineExpr reduction(mlir::shard::ReductionKind kind);
  mlir::AffineExpr constant(int64_t value);
  /// Appends a map (its results indexed by the loops).
  void map(llvm::ArrayRef<mlir::AffineExpr> exprs) {
    maps.emplace_back(exprs.begin(), exprs.end());
  }
  /// An operand or result without a tensor dimension (0-d, index).
  void scalar() { maps.emplace_back(); }
  LoopNest build() const;

private:
  mlir::MLIRContext *context;
  LoopNest nest;
  llvm::SmallVector<llvm::SmallVector<mlir::AffineExpr>> maps;
};

/// Each op's nest (LoopNests.cpp). A pointwise op (formula, dropout, convert,
/// adamw) iterates its first result with operands broadcast from the right.
LoopNest pointwiseLoops(mlir::Operation *op);
LoopNest describeLoops(LinearOp op);
LoopNest describeLoops(MatmulOp op);
LoopNest describeLoops(AttentionOp op);
LoopNest describeLoops(AttentionGradOp op);
LoopNest describeLoops(LayerNormOp op);
LoopNest describeLoops(LayerNormGradOp op);
LoopNest describeLoops(RmsNormOp op);
LoopNest describeLoops(RmsNormGradOp op);
LoopNest describeLoops(SoftmaxOp op);
LoopNest describeLoops(SoftmaxGradOp op);
LoopNest describeLoops(CausalMaskOp op);
LoopNest describeLoops(ReduceSumOp op);
LoopNest describeLoops(ReduceMeanOp op);
LoopNest describeLoops(ReduceMaxOp op);
LoopNest describeLoops(ReshapeOp op);
LoopNest describeLoops(TransposeOp op);
LoopNest describeLoops(SplitOp op);
LoopNest describeLoops(ConcatOp op);
LoopNest describeLoops(EmbeddingOp op);
LoopNest describeLoops(EmbeddingGradOp op);
LoopNest describeLoops(CrossEntropyOp op);
LoopNest describeLoops(CrossEntropyGradOp op);
LoopNest describeLoops(RopeOp op);

} // namespace weft::partition

#endif // WEFT_LIB_PARTITION_LOOPNESTS_H
