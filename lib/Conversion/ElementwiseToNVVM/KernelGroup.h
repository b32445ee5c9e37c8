// What a kernel computes, independent of how it is emitted: the group's body
// ops over one domain [rows, cols], where each tensor sits in that domain,
// which kernel shape runs it, and the parameter each leaf and output uses.
#ifndef WEFT_LIB_CONVERSION_ELEMENTWISETONVVM_KERNELGROUP_H
#define WEFT_LIB_CONVERSION_ELEMENTWISETONVVM_KERNELGROUP_H

#include "weft/Conversion/KernelGroupRules.h"
#include "weft/Dialect/WeftDialect.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace weft::gpu {

/// How a tensor is indexed from the element (row, col) of the domain, with
/// linear = row * cols + col: the whole domain, a broadcast trailing suffix
/// of `elements` values (an [n] row vector is one; leading 1s ignored), one
/// value per row (ids), a single value (0-d or all dims 1: loaded once), or
/// any other NumPy broadcast onto the domain (size-1 dims in between).
enum class Extent { Full, Suffix, Row, Scalar, Strided };

/// One run of consecutive domain dims that a Strided tensor keeps: its
/// index gains ((linear / inner) % size) * stride.
struct StrideRun {
  int64_t inner, size, stride;
};

struct TensorPlace {
  Extent extent = Extent::Full;
  int64_t elements = 0;
  /// Strided: the kept runs, innermost first.
  llvm::SmallVector<StrideRun, 2> runs;
  /// Strided: domain elements that share one value (the product of the
  /// trailing broadcast dims), or 1 when the last dim is kept.
  int64_t innerRepeat = 1;
};

/// pointwise: elements independent (grid-stride, 16-byte vectors);
/// rows: one CTA per row, row statistics by block reductions;
/// rowsWithColumnSums: rows plus [cols] outputs summed over rows (a stats
///   kernel, a column-sum kernel, then the rows kernel);
/// singleBlock: one CTA walks every row (the mean over rows of a loss).
enum class KernelShape { Pointwise, Rows, RowsWithColumnSums, SingleBlock };

/// The all_labels of a chunk's cross_entropy or cross_entropy_grad (its
/// share of the mean over them), null when it has none.
mlir::Value allLabelsOf(mlir::Operation *op);

struct KernelGroup {
  mlir::Operation *op = nullptr;
  llvm::SmallVector<int64_t> domain;
  int64_t rows = 1, cols = 1;
  KernelShape shape = KernelShape::Pointwise;
  llvm::SmallVector<mlir::Operation *> body;
  /// Kernel parameters (op operands, then results) in order.
  llvm::SmallVector<mlir::Type> paramTypes;
  /// Leaf value (fused body argument or a single op's operand) -> param.
  /// Insertion-ordered (operand order): kernels emit their loads in this
  /// order, so the same group always gives the same code.
  llvm::MapVector<mlir::Value, unsigned> leafParam;
  /// The all_labels of chunked losses (allLabelsOf): read whole for their
  /// kept count, never per element of the domain, so they are no leaves.
  llvm::MapVector<mlir::Value, unsigned> countedLabels;
  /// Values written by the kernel: (body value, param).
  llvm::SmallVector<std::pair<mlir::Value, unsigned>> outputs;
  /// Row statistics the column-sum kernel reads back (RowsWithColumnSums):
  /// a full output (until the rows kernel overwrites it) or the op's
  /// workspace (the last param) holds them as f32 [statCount][rows]
  /// (weft::getColumnSumScratch decides).
  int64_t statCount = 0;
  unsigned scratchParam = 0;
  /// Whether the last param is the op's workspace.
  bool hasWorkspace = false;
  /// Row chunks of the column sums: with more than one, each chunk's sums go
  /// to the scratch after the statistics ([chunk][sum][cols] f32) and a
  /// final kernel adds them in chunk order (more CTAs, same determinism).
  int64_t columnChunks = 1;

  TensorPlace place(mlir::Value value) const;
  /// Whether a tensor of `shape` can be indexed over `domain`: it broadcasts
  /// onto it (NumPy) or is its rows.
  static bool isIndexable(llvm::ArrayRef<int64_t> shape,
                          llvm::ArrayRef<int64_t> domain);
  /// Whether `value` is a [cols] result summed over rows (dgamma, dbeta).
  static bool isColumnSum(mlir::Value value) { return weft::isColumnSum(value); }
};

/// The group of `op` (weft.fused or one fusible weft op); the reason in
/// `message` when no row/pointwise kernel implements it.
mlir::FailureOr<KernelGroup> analyzeGroup(mlir::Operation *op, std::string &message);

} // namespace weft::gpu

#endif // WEFT_LIB_CONVERSION_ELEMENTWISETONVVM_KERNELGROUP_H
