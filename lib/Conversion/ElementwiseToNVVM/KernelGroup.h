// What a kernel computes, independent of how it is emitted: the group's body
// ops over one domain [rows, cols], where each tensor sits in that domain,
// which kernel shape runs it, and the parameter each leaf and output uses.
#ifndef WEFT_LIB_CONVERSION_ELEMENTWISETONVVM_KERNELGROUP_H
#define WEFT_LIB_CONVERSION_ELEMENTWISETONVVM_KERNELGROUP_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace weft::gpu {

/// How a tensor is indexed from the element (row, col) of the domain, with
/// linear = row * cols + col: the whole domain, a broadcast trailing suffix
/// of `elements` values (an [n] row vector is one), one value per row, or a
/// single value.
enum class Extent { Full, Suffix, Row, Scalar };

struct TensorPlace {
  Extent extent = Extent::Full;
  int64_t elements = 0;
};

/// pointwise: elements independent (grid-stride, 16-byte vectors);
/// rows: one CTA per row, row statistics by block reductions;
/// rowsWithColumnSums: rows plus [cols] outputs summed over rows (a stats
///   kernel, a column-sum kernel, then the rows kernel);
/// singleBlock: one CTA walks every row (the mean over rows of a loss).
enum class KernelShape { Pointwise, Rows, RowsWithColumnSums, SingleBlock };

struct KernelGroup {
  mlir::Operation *op = nullptr;
  llvm::SmallVector<int64_t> domain;
  int64_t rows = 1, cols = 1;
  KernelShape shape = KernelShape::Pointwise;
  llvm::SmallVector<mlir::Operation *> body;
  /// Kernel parameters (op operands, then results) in order.
  llvm::SmallVector<mlir::Type> paramTypes;
  /// Leaf value (fused body argument or a single op's operand) -> param.
  llvm::DenseMap<mlir::Value, unsigned> leafParam;
  /// Values written by the kernel: (body value, param).
  llvm::SmallVector<std::pair<mlir::Value, unsigned>> outputs;
  /// Row statistics the column-sum kernel reads back (RowsWithColumnSums):
  /// the first full output holds them as f32 [statCount][rows] until the
  /// rows kernel overwrites it.
  int64_t statCount = 0;
  unsigned scratchParam = 0;
  /// Row chunks of the column sums: with more than one, each chunk's sums go
  /// to the scratch after the statistics ([chunk][sum][cols] f32) and a
  /// final kernel adds them in chunk order (more CTAs, same determinism).
  int64_t columnChunks = 1;

  TensorPlace place(mlir::Value value) const;
  /// Whether `value` is a [cols] result summed over rows (dgamma, dbeta).
  static bool isColumnSum(mlir::Value value);
};

/// The group of `op` (weft.fused or one fusible weft op); the reason in
/// `message` when no row/pointwise kernel implements it.
mlir::FailureOr<KernelGroup> analyzeGroup(mlir::Operation *op, std::string &message);

/// How many row statistics `op` needs per row (0 for pointwise ops).
int64_t rowStatCount(mlir::Operation *op);

} // namespace weft::gpu

#endif // WEFT_LIB_CONVERSION_ELEMENTWISETONVVM_KERNELGROUP_H
