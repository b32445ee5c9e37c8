// Tile math of the tiled attention nest as linalg.generic ops on tensors of
// dynamic size (tails of sequences that are not a multiple of the tile).
#include "TileMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"

#include <limits>

using namespace mlir;

namespace weft::tiling {

Value TileMath::index(int64_t value) {
  return arith::ConstantIndexOp::create(b, value);
}

Value TileMath::floatConstant(Type type, double value) {
  return arith::ConstantOp::create(b, type, b.getFloatAttr(type, value));
}

Value TileMath::scalar(double value) {
  return floatConstant(computeType, value);
}

Value TileMath::minIndex(Value lhs, Value rhs) {
  return arith::MinSIOp::create(b, lhs, rhs);
}

Value TileMath::ceilDiv(Value value, int64_t divisor) {
  return arith::CeilDivSIOp::create(b, value, index(divisor));
}

SmallVector<OpFoldResult> TileMath::sizesOf(Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  SmallVector<OpFoldResult> sizes;
  for (int64_t dim = 0; dim < type.getRank(); ++dim) {
    if (type.isDynamicDim(dim))
      sizes.push_back(tensor::DimOp::create(b, tensor, dim).getResult());
    else
      sizes.push_back(b.getIndexAttr(type.getDimSize(dim)));
  }
  return sizes;
}

Value TileMath::empty(ArrayRef<OpFoldResult> sizes, Type elementType) {
  return tensor::EmptyOp::create(b, sizes, elementType);
}

Value TileMath::filled(ArrayRef<OpFoldResult> sizes, double value) {
  Value init = empty(sizes, computeType);
  return linalg::FillOp::create(b, ValueRange{scalar(value)}, ValueRange{init})
      .getResult(0);
}

Value TileMath::convertScalar(Value value, Type to) {
  Type from = value.getType();
  if (from == to)
    return value;
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, to, value);
  return arith::TruncFOp::create(b, to, value);
}

Value TileMath::convert(Value value, Type elementType) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getElementType() == elementType)
    return value;
  Value init = empty(sizesOf(value), elementType);
  return map(value, init,
             [&](ImplicitLocOpBuilder &nested, ValueRange args, ValueRange) {
               TileMath inner(nested, computeType);
               return inner.convertScalar(args[0], elementType);
             });
}

Value TileMath::sliceRows(Value source, Value batch, Value head, Value row0,
                          Value rows) {
  auto type = cast<RankedTensorType>(source.getType());
  SmallVector<OpFoldResult> offsets = {batch, head, row0};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1), rows};
  SmallVector<int64_t> sliceShape = {ShapedType::kDynamic};
  if (type.getRank() == 4) {
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(b.getIndexAttr(type.getDimSize(3)));
    sliceShape.push_back(type.getDimSize(3));
  }
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  auto sliceType = RankedTensorType::get(sliceShape, type.getElementType());
  return tensor::ExtractSliceOp::create(b, sliceType, source, offsets, sizes,
                                        strides);
}

Value TileMath::loadTile(Value source, Value batch, Value head, Value row0,
                         Value rows) {
  return convert(sliceRows(source, batch, head, row0, rows), computeType);
}

Value TileMath::loadRows(Value source, Value batch, Value head, Value row0,
                         Value rows) {
  return convert(sliceRows(source, batch, head, row0, rows), computeType);
}

Value TileMath::storeTile(Value tile, Value dest, Value batch, Value head,
                          Value row0) {
  auto destType = cast<RankedTensorType>(dest.getType());
  Value converted = convert(tile, destType.getElementType());
  SmallVector<OpFoldResult> tileSizes = sizesOf(converted);
  SmallVector<OpFoldResult> offsets = {batch, head, row0};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1),
                                     tileSizes[0]};
  if (destType.getRank() == 4) {
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(tileSizes[1]);
  }
  SmallVector<OpFoldResult> strides(destType.getRank(), b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, converted, dest, offsets, sizes,
                                       strides);
}

Value TileMath::contract(Value a, Value bMatrix, bool transposeA,
                         bool transposeB, Value init) {
  MLIRContext *context = b.getContext();
  AffineExpr i = getAffineDimExpr(0, context), j = getAffineDimExpr(1, context),
             k = getAffineDimExpr(2, context);
  SmallVector<AffineMap> maps = {
      AffineMap::get(3, 0, transposeA ? ArrayRef<AffineExpr>{k, i}
                                      : ArrayRef<AffineExpr>{i, k},
                     context),
      AffineMap::get(3, 0, transposeB ? ArrayRef<AffineExpr>{j, k}
                                      : ArrayRef<AffineExpr>{k, j},
                     context),
      AffineMap::get(3, 0, {i, j}, context)};
  SmallVector<utils::IteratorType> iterators = {utils::IteratorType::parallel,
                                                utils::IteratorType::parallel,
                                                utils::IteratorType::reduction};
  auto generic = linalg::GenericOp::create(
      b, TypeRange{init.getType()}, ValueRange{a, bMatrix}, ValueRange{init},
      maps, iterators, [&](OpBuilder &nested, Location loc, ValueRange args) {
        Value product = arith::MulFOp::create(nested, loc, args[0], args[1]);
        Value sum = arith::AddFOp::create(nested, loc, args[2], product);
        linalg::YieldOp::create(nested, loc, sum);
      });
  return generic.getResult(0);
}

/// A [m] reduction of a [m, n] tile with `combine`, starting from `start`.
template <typename CombineOp>
static Value reduceRows(TileMath &math, Value tile, double start) {
  ImplicitLocOpBuilder &b = math.builder();
  MLIRContext *context = b.getContext();
  Value init = math.filled({math.sizesOf(tile)[0]}, start);
  AffineExpr i = getAffineDimExpr(0, context), j = getAffineDimExpr(1, context);
  SmallVector<AffineMap> maps = {AffineMap::get(2, 0, {i, j}, context),
                                 AffineMap::get(2, 0, {i}, context)};
  SmallVector<utils::IteratorType> iterators = {utils::IteratorType::parallel,
                                                utils::IteratorType::reduction};
  auto generic = linalg::GenericOp::create(
      b, TypeRange{init.getType()}, ValueRange{tile}, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nested, Location loc, ValueRange args) {
        Value combined = CombineOp::create(nested, loc, args[1], args[0]);
        linalg::YieldOp::create(nested, loc, combined);
      });
  return generic.getResult(0);
}

Value TileMath::rowMax(Value tile) {
  return reduceRows<arith::MaximumFOp>(*this, tile,
                                       -std::numeric_limits<double>::infinity());
}

Value TileMath::rowSum(Value tile) {
  return reduceRows<arith::AddFOp>(*this, tile, 0.0);
}

Value TileMath::map(ValueRange inputs, Value init, ElementwiseBody body) {
  MLIRContext *context = b.getContext();
  int64_t rank = cast<RankedTensorType>(init.getType()).getRank();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, context);
  SmallVector<AffineMap> maps;
  for (Value input : inputs) {
    int64_t inputRank = cast<RankedTensorType>(input.getType()).getRank();
    if (inputRank == rank)
      maps.push_back(identity);
    else // a row vector broadcast along the columns
      maps.push_back(AffineMap::get(rank, 0, {getAffineDimExpr(0, context)},
                                    context));
  }
  maps.push_back(identity);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, TypeRange{init.getType()}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nested, Location loc, ValueRange args) {
        ImplicitLocOpBuilder inner(loc, nested);
        SmallVector<Value> indices;
        for (int64_t dim = 0; dim < rank; ++dim)
          indices.push_back(linalg::IndexOp::create(inner, dim));
        Value result = body(inner, args, indices);
        linalg::YieldOp::create(inner, result);
        // Drop the indices the body did not use, so the IR says what it reads.
        for (Value index : indices)
          if (index.use_empty())
            index.getDefiningOp()->erase();
      });
  return generic.getResult(0);
}

Value TileMath::mapLike(Value like, ValueRange inputs, ElementwiseBody body) {
  return map(inputs, empty(sizesOf(like), computeType), body);
}

Operation *buildLoop(ImplicitLocOpBuilder &b, Value lower, Value upper,
                     ValueRange inits, LoopBody body) {
  Value step = arith::ConstantIndexOp::create(b, 1);
  auto loop = scf::ForOp::create(
      b, lower, upper, step, inits,
      [&](OpBuilder &nested, Location loc, Value iv, ValueRange iters) {
        ImplicitLocOpBuilder inner(loc, nested);
        SmallVector<Value> results = body(inner, iv, iters);
        scf::YieldOp::create(inner, results);
      });
  return loop;
}

Value buildIf(ImplicitLocOpBuilder &b, Value condition, Type type,
              function_ref<Value(ImplicitLocOpBuilder &)> thenBranch,
              function_ref<Value(ImplicitLocOpBuilder &)> elseBranch) {
  auto ifOp = scf::IfOp::create(b, TypeRange{type}, condition,
                                /*withElseRegion=*/true);
  for (auto [region, branch] :
       {std::pair{&ifOp.getThenRegion(), thenBranch},
        std::pair{&ifOp.getElseRegion(), elseBranch}}) {
    ImplicitLocOpBuilder inner(b.getLoc(), b.getContext());
    inner.setInsertionPointToStart(&region->front());
    Value result = branch(inner);
    scf::YieldOp::create(inner, result);
  }
  return ifOp.getResult(0);
}

} // namespace weft::tiling
