// Checks the weft ops' verifiers share (WeftOps.cpp defines them). Every
// message names the operand or attribute and the shapes or values involved.
#ifndef WEFT_DIALECT_LIB_VERIFY_H
#define WEFT_DIALECT_LIB_VERIFY_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <string>
#include <utility>

namespace weft::verify {

using NamedValue = std::pair<llvm::StringRef, mlir::Value>;

mlir::RankedTensorType tensorOf(mlir::Value value);
std::string shapeString(llvm::ArrayRef<int64_t> shape);
mlir::LogicalResult verifySameElementType(mlir::Operation *op,
                                          llvm::ArrayRef<NamedValue> values);
mlir::LogicalResult verifyShape(mlir::Operation *op, llvm::StringRef name,
                                mlir::Value value,
                                llvm::ArrayRef<int64_t> expected);
mlir::LogicalResult verifyRank(mlir::Operation *op, llvm::StringRef name,
                               mlir::Value value, int64_t rank);
mlir::LogicalResult verifyMinRank(mlir::Operation *op, llvm::StringRef name,
                                  mlir::Value value, int64_t rank);
mlir::LogicalResult verifyRngId(mlir::Operation *op);
mlir::LogicalResult verifyReduce(mlir::Operation *op, mlir::Value x,
                                 llvm::ArrayRef<int64_t> dims, bool keepdim,
                                 mlir::Value result);
/// A loss (or its gradient dloss) of logits: its element type is the
/// logits' or, for bf16/f16 logits, f32: the op then reads the narrow logits
/// and computes in f32, rounding once (as PyTorch's bf16 cross-entropy).
mlir::LogicalResult verifyLossPrecision(mlir::Operation *op, llvm::StringRef name,
                                        mlir::Value loss, mlir::Value logits);
/// The label checks of the cross-entropy ops: logits [..., V] with V >= 1 and
/// labels [...].
mlir::LogicalResult verifyLabels(mlir::Operation *op, mlir::Value logits,
                                 mlir::Value labels);

/// A partitioned op's block of a global tensor: no offsets and no global
/// shape, or one offset per dimension and a global shape that each block
/// dimension fits in.
mlir::LogicalResult
verifyBlockOfGlobal(mlir::Operation *op, llvm::ArrayRef<int64_t> block,
                    size_t offsetCount,
                    std::optional<llvm::ArrayRef<int64_t>> globalShape);
/// attention's rng operands: none, the 0-d i64 seed, or the seed and an index
/// head offset with `dropout_heads` (at least `qHeads`).
mlir::LogicalResult verifyAttentionRng(mlir::Operation *op,
                                       mlir::ValueRange rng,
                                       std::optional<int64_t> dropoutHeads,
                                       int64_t qHeads);

} // namespace weft::verify

#endif // WEFT_DIALECT_LIB_VERIFY_H
