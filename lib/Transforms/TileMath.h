// Builders for the tile math of the tiled attention nest: 2-D tiles of
// dynamic size as tensors, and linalg.generic ops over them (contractions,
// row reductions, elementwise maps with row broadcasts), all in one compute
// element type (f32, or f64 for f64 IR).
#ifndef WEFT_LIB_TRANSFORMS_TILEMATH_H
#define WEFT_LIB_TRANSFORMS_TILEMATH_H

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace weft::tiling {

/// Builds an elementwise body: gets the scalar operands (inputs, then the
/// current value of the output) and the iteration indices; returns the value
/// to store.
using ElementwiseBody = llvm::function_ref<mlir::Value(
    mlir::ImplicitLocOpBuilder &, mlir::ValueRange args,
    mlir::ValueRange indices)>;

class TileMath {
public:
  TileMath(mlir::ImplicitLocOpBuilder &builder, mlir::FloatType computeType)
      : b(builder), computeType(computeType) {}

  mlir::ImplicitLocOpBuilder &builder() { return b; }
  mlir::FloatType type() const { return computeType; }

  mlir::Value index(int64_t value);
  /// A scalar of the compute type.
  mlir::Value scalar(double value);
  /// `value` of `type` (float) as an arith.constant.
  mlir::Value floatConstant(mlir::Type type, double value);
  mlir::Value minIndex(mlir::Value a, mlir::Value b);
  mlir::Value ceilDiv(mlir::Value a, int64_t divisor);

  /// A tensor of the compute type with `sizes`, every element `value`.
  mlir::Value filled(llvm::ArrayRef<mlir::OpFoldResult> sizes, double value);
  /// `tensor.empty` of `elementType` with `sizes`.
  mlir::Value empty(llvm::ArrayRef<mlir::OpFoldResult> sizes,
                    mlir::Type elementType);

  /// The rank-reduced slice [rows(, d)] of the 3-D or 4-D `source`
  /// [b, h, s(, d)] at (batch, head, row0), in `source`'s element type.
  mlir::Value sliceRows(mlir::Value source, mlir::Value batch, mlir::Value head,
                        mlir::Value row0, mlir::Value rows);
  /// Rows [row0, row0 + rows) of head `head` of batch `batch` of the 4-D
  /// `source` [b, h, s, d]: a [rows, d] tile in the compute type (a slice
  /// when `source` already has it, else converted elementwise).
  mlir::Value loadTile(mlir::Value source, mlir::Value batch, mlir::Value head,
                       mlir::Value row0, mlir::Value rows);
  /// The same for a 3-D row statistic [b, h, s]: a [rows] vector.
  mlir::Value loadRows(mlir::Value source, mlir::Value batch, mlir::Value head,
                       mlir::Value row0, mlir::Value rows);
  /// Writes the [rows, d] or [rows] `tile` into `dest` at (batch, head, row0),
  /// converted to `dest`'s element type; returns the updated `dest`.
  mlir::Value storeTile(mlir::Value tile, mlir::Value dest, mlir::Value batch,
                        mlir::Value head, mlir::Value row0);

  /// `init + op(a) op(bMatrix)` with op(x) = x^T where its flag is set (GEMM
  /// semantics): S = Q K^T is contract(q, k, false, true, zeros).
  mlir::Value contract(mlir::Value a, mlir::Value bMatrix, bool transposeA,
                       bool transposeB, mlir::Value init);
  /// Row maxima of a [m, n] tile, starting from -inf: a [m] vector.
  mlir::Value rowMax(mlir::Value tile);
  /// Row sums of a [m, n] tile: a [m] vector.
  mlir::Value rowSum(mlir::Value tile);

  /// A linalg.generic writing `init` (rank 1 or 2) elementwise: each input is
  /// read at the same indices when it has the output's rank, or broadcast
  /// along the rows ((i, j) -> (i)) when it is 1-D and the output 2-D.
  mlir::Value map(mlir::ValueRange inputs, mlir::Value init,
                  ElementwiseBody body);
  /// As map, into a fresh tensor of the compute type shaped like `like`.
  mlir::Value mapLike(mlir::Value like, mlir::ValueRange inputs,
                      ElementwiseBody body);
  /// `value` converted to `elementType` elementwise (the same tensor when it
  /// already has it).
  mlir::Value convert(mlir::Value value, mlir::Type elementType);

  /// Scalar float conversion between float types (extf / truncf / no-op).
  mlir::Value convertScalar(mlir::Value value, mlir::Type to);

  /// The sizes of `tensor` as fold results (static dims as attributes).
  llvm::SmallVector<mlir::OpFoldResult> sizesOf(mlir::Value tensor);

private:
  mlir::ImplicitLocOpBuilder &b;
  mlir::FloatType computeType;
};

/// Builds the body of a loop: gets the induction variable and the iteration
/// values, returns the values to yield.
using LoopBody = llvm::function_ref<llvm::SmallVector<mlir::Value>(
    mlir::ImplicitLocOpBuilder &, mlir::Value iv, mlir::ValueRange iters)>;

/// scf.for %iv = lower to upper step 1 with `inits` as iteration values.
mlir::Operation *buildLoop(mlir::ImplicitLocOpBuilder &b, mlir::Value lower,
                           mlir::Value upper, mlir::ValueRange inits,
                           LoopBody body);

/// scf.if `condition` yielding one value of `type`, built by the branches.
mlir::Value buildIf(mlir::ImplicitLocOpBuilder &b, mlir::Value condition,
                    mlir::Type type,
                    llvm::function_ref<mlir::Value(mlir::ImplicitLocOpBuilder &)>
                        thenBranch,
                    llvm::function_ref<mlir::Value(mlir::ImplicitLocOpBuilder &)>
                        elseBranch);

} // namespace weft::tiling

#endif // WEFT_LIB_TRANSFORMS_TILEMATH_H
