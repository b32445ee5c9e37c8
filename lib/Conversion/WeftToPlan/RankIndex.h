// A kernel's index operand as a function of the rank: the partitioner places
// a shard in its global tensor with `shard.process_multi_index` times the
// block size (plus constants), which a package carries as a rank-relative
// i64 immediate (weft_plan.launch's {base, rank_axes, scale}).
#ifndef WEFT_LIB_CONVERSION_WEFTTOPLAN_RANKINDEX_H
#define WEFT_LIB_CONVERSION_WEFTTOPLAN_RANKINDEX_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

#include "llvm/ADT/SmallVector.h"

#include <string>

namespace weft {

/// base + scale * (the rank's position along `axes`); `axes` empty: a
/// constant.
struct RankIndex {
  int64_t base = 0, scale = 0;
  llvm::SmallVector<int64_t> axes;
};

/// Evaluates `value` (of type index) from index constants, one grid
/// position (shard.process_multi_index / process_linear_index) and
/// arith.addi / subi / muli by constants; failure with `why` for anything
/// else (a value that is not affine in one rank position).
mlir::FailureOr<RankIndex> evaluateRankIndex(mlir::Value value, std::string &why);

/// The launch argument of `index`: an i64 (or `i32`) immediate, or
/// {base, rank_axes, scale} when it depends on the rank.
mlir::Attribute rankIndexArg(mlir::Builder &builder, const RankIndex &index, bool i32 = false);

/// Whether `op` only computes index values the kernels take as immediates
/// (it gets no plan entry of its own).
bool isRankIndexOp(mlir::Operation *op);

} // namespace weft

#endif // WEFT_LIB_CONVERSION_WEFTTOPLAN_RANKINDEX_H
