// The shard dialect's collectives over simulated ranks. A device group is the
// set of ranks that share every grid coordinate outside the op's grid_axes;
// a rank's in-group index is row-major over its coordinates along grid_axes,
// in the order grid_axes lists them.
#include "Kernels.h"

#include "weft/Reference/Numerics.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
namespace shard = mlir::shard;

namespace weft::reference::detail {

namespace {

/// Device groups of one collective over a grid.
class DeviceGroups {
public:
  DeviceGroups(ArrayRef<int64_t> gridShape, ArrayRef<shard::GridAxis> axes)
      : gridShape(gridShape), axes(axes) {}

  int64_t size() const {
    int64_t count = 1;
    for (shard::GridAxis axis : axes)
      count *= gridShape[axis];
    return count;
  }

  std::vector<int64_t> coordinates(int64_t rank) const {
    std::vector<int64_t> coords(gridShape.size());
    for (size_t d = gridShape.size(); d-- > 0;) {
      coords[d] = rank % gridShape[d];
      rank /= gridShape[d];
    }
    return coords;
  }

  int64_t linearize(ArrayRef<int64_t> coords) const {
    int64_t rank = 0;
    for (size_t d = 0; d < gridShape.size(); ++d)
      rank = rank * gridShape[d] + coords[d];
    return rank;
  }

  int64_t inGroupIndex(int64_t rank) const {
    std::vector<int64_t> coords = coordinates(rank);
    int64_t index = 0;
    for (shard::GridAxis axis : axes)
      index = index * gridShape[axis] + coords[axis];
    return index;
  }

  /// The ranks of `rank`'s group, ordered by in-group index.
  std::vector<int64_t> members(int64_t rank) const {
    std::vector<int64_t> coords = coordinates(rank);
    std::vector<int64_t> result;
    for (int64_t k = 0, count = size(); k < count; ++k) {
      int64_t rest = k;
      for (size_t a = axes.size(); a-- > 0;) {
        coords[axes[a]] = rest % gridShape[axes[a]];
        rest /= gridShape[axes[a]];
      }
      result.push_back(linearize(coords));
    }
    return result;
  }

  /// The rank of `rank`'s group member at in-group multi-index `groupCoords`
  /// (one coordinate per grid axis of the group), or -1 if out of range.
  int64_t memberAt(int64_t rank, ArrayRef<int64_t> groupCoords) const {
    if (groupCoords.size() != axes.size())
      return -1;
    std::vector<int64_t> coords = coordinates(rank);
    for (auto [a, axis] : llvm::enumerate(axes)) {
      if (groupCoords[a] < 0 || groupCoords[a] >= gridShape[axis])
        return -1;
      coords[axis] = groupCoords[a];
    }
    return linearize(coords);
  }

  ArrayRef<int64_t> gridShape;
  ArrayRef<shard::GridAxis> axes;
};

/// Element-wise reduction of the members' inputs, each first converted to
/// the result's element type as the shard ops specify.
FailureOr<std::vector<double>> reduceMembers(Operation *op,
                                             shard::ReductionKind kind,
                                             ArrayRef<int64_t> members,
                                             ArrayRef<const Tensor *> inputs,
                                             DType resultType) {
  size_t count = inputs[members.front()]->data.size();
  std::vector<double> acc(count);
  auto converted = [&](int64_t member, size_t i) {
    return roundValue(inputs[member]->data[i], resultType);
  };
  bool integral = resultType == DType::I64 || resultType == DType::I1;
  for (size_t i = 0; i < count; ++i) {
    double value = converted(members.front(), i);
    for (int64_t member : members.drop_front()) {
      double next = converted(member, i);
      switch (kind) {
      case shard::ReductionKind::Sum:
      case shard::ReductionKind::Average:
        value += next;
        break;
      case shard::ReductionKind::Max:
        value = std::isnan(next) ? next : std::max(value, next);
        break;
      case shard::ReductionKind::Min:
        value = std::isnan(next) ? next : std::min(value, next);
        break;
      case shard::ReductionKind::Product:
        value *= next;
        break;
      case shard::ReductionKind::BitwiseAnd:
      case shard::ReductionKind::BitwiseOr:
      case shard::ReductionKind::BitwiseXor: {
        if (!integral)
          return op->emitOpError("cannot apply reduction '")
                 << shard::stringifyReductionKind(kind)
                 << "' to floating-point elements";
        auto a = static_cast<int64_t>(value), b = static_cast<int64_t>(next);
        int64_t combined = kind == shard::ReductionKind::BitwiseAnd   ? (a & b)
                           : kind == shard::ReductionKind::BitwiseOr ? (a | b)
                                                                      : (a ^ b);
        value = static_cast<double>(combined);
        break;
      }
      case shard::ReductionKind::Generic:
        return op->emitOpError("reference interpreter cannot run reduction '")
               << shard::stringifyReductionKind(kind) << "'";
      }
    }
    if (kind == shard::ReductionKind::Average)
      value /= static_cast<double>(members.size());
    acc[i] = value;
  }
  return acc;
}

/// The piece of a collective's result must have the shape the op declares.
LogicalResult expectShape(Operation *op, const Tensor &piece,
                          const Tensor &result) {
  if (piece.shape == result.shape)
    return success();
  return op->emitOpError("produces a piece of shape ")
         << shapeString(piece.shape) << " for a result of shape "
         << shapeString(result.shape);
}

/// Checks that tensor dimension `dim` of `shape` splits into `parts`.
LogicalResult expectDivisible(Operation *op, ArrayRef<int64_t> shape,
                              int64_t dim, int64_t parts) {
  if (dim < 0 || dim >= int64_t(shape.size()))
    return op->emitOpError("names tensor axis ")
           << dim << ", out of range for shape " << shapeString(shape);
  if (shape[dim] % parts != 0)
    return op->emitOpError("cannot split tensor axis ")
           << dim << " of size " << shape[dim] << " into " << parts
           << " equal pieces";
  return success();
}

/// The root rank of `rank`'s group for ops with a static `root`.
FailureOr<int64_t> rootOf(Operation *op, const DeviceGroups &groups,
                          int64_t rank, ArrayRef<int64_t> root,
                          ValueRange rootDynamic) {
  if (!rootDynamic.empty())
    return op->emitOpError(
        "reference interpreter needs a static root, got a dynamic one");
  int64_t member = groups.memberAt(rank, root);
  if (member < 0)
    return op->emitOpError("has root ")
           << shapeString(root) << " outside its device group";
  return member;
}

LogicalResult runGatherTo(Operation *op, const DeviceGroups &groups,
                          int64_t axis, ArrayRef<const Tensor *> inputs,
                          MutableArrayRef<Tensor> results) {
  for (size_t rank = 0; rank < results.size(); ++rank) {
    Tensor &result = results[rank];
    int64_t offset = 0;
    for (int64_t member : groups.members(rank)) {
      const Tensor &input = *inputs[member];
      if (axis < 0 || axis >= int64_t(input.shape.size()) ||
          input.shape.size() != result.shape.size() ||
          offset + input.shape[axis] > result.shape[axis])
        return op->emitOpError("cannot gather inputs of shape ")
               << shapeString(input.shape) << " along tensor axis " << axis
               << " into a result of shape " << shapeString(result.shape);
      insertAlong(result, input, axis, offset);
      offset += input.shape[axis];
    }
    if (offset != result.shape[axis])
      return op->emitOpError("gathers ")
             << offset << " elements along tensor axis " << axis
             << " into a result with " << result.shape[axis];
  }
  return success();
}

/// Rank `rank`'s piece of `whole` split evenly along `axis` over the group.
LogicalResult takePiece(Operation *op, const DeviceGroups &groups, int64_t rank,
                        const Tensor &whole, int64_t axis, Tensor &result) {
  if (failed(expectDivisible(op, whole.shape, axis, groups.size())))
    return failure();
  int64_t size = whole.shape[axis] / groups.size();
  Tensor piece = sliceAlong(whole, axis, groups.inGroupIndex(rank) * size, size);
  if (failed(expectShape(op, piece, result)))
    return failure();
  result.data = std::move(piece.data);
  return success();
}

/// shard.all_to_all: every rank's input split along split_axis, piece k of
/// each member concatenated along concat_axis on the group's k-th rank.
LogicalResult runAllToAll(shard::AllToAllOp allToAll, const DeviceGroups &groups,
                          ArrayRef<const Tensor *> inputs,
                          MutableArrayRef<Tensor> results) {
  Operation *op = allToAll;
  int64_t ranks = results.size();
  int64_t splitAxis = allToAll.getSplitAxis().getSExtValue();
  int64_t concatAxis = allToAll.getConcatAxis().getSExtValue();
  int64_t parts = groups.size();
  for (int64_t rank = 0; rank < ranks; ++rank) {
    Tensor &result = results[rank];
    int64_t k = groups.inGroupIndex(rank), offset = 0;
    for (int64_t member : groups.members(rank)) {
      const Tensor &input = *inputs[member];
      if (failed(expectDivisible(op, input.shape, splitAxis, parts)))
        return failure();
      int64_t size = input.shape[splitAxis] / parts;
      Tensor piece = sliceAlong(input, splitAxis, k * size, size);
      if (concatAxis < 0 || concatAxis >= int64_t(result.shape.size()) ||
          offset + piece.shape[concatAxis] > result.shape[concatAxis])
        return op->emitOpError("cannot concatenate pieces of shape ")
               << shapeString(piece.shape) << " along tensor axis "
               << concatAxis << " into a result of shape "
               << shapeString(result.shape);
      insertAlong(result, piece, concatAxis, offset);
      offset += piece.shape[concatAxis];
    }
  }
  return success();
}

/// shard.shift: rank at coordinate c along shift_axis receives the tensor of
/// the rank at c - offset (the tensors move by +offset). Without `rotate`, a
/// rank with no source (undefined upstream) gets zeros.
LogicalResult runShift(shard::ShiftOp shift, ArrayRef<int64_t> gridShape,
                       ArrayRef<shard::GridAxis> gridAxes,
                       const DeviceGroups &groups,
                       ArrayRef<const Tensor *> inputs,
                       MutableArrayRef<Tensor> results) {
  Operation *op = shift;
  int64_t ranks = results.size();
  int64_t shiftAxis = shift.getShiftAxis().getSExtValue();
  if (!llvm::is_contained(gridAxes, shiftAxis))
    return op->emitOpError("expects shift_axis ")
           << shiftAxis << " to be one of grid_axes";
  int64_t extent = gridShape[shiftAxis];
  auto offset = static_cast<int64_t>(shift.getOffset());
  for (int64_t rank = 0; rank < ranks; ++rank) {
    std::vector<int64_t> coords = groups.coordinates(rank);
    int64_t source = coords[shiftAxis] - offset;
    if (shift.getRotate())
      source = ((source % extent) + extent) % extent;
    if (source < 0 || source >= extent) {
      std::fill(results[rank].data.begin(), results[rank].data.end(),
                0.0);
      continue;
    }
    coords[shiftAxis] = source;
    const Tensor &input = *inputs[groups.linearize(coords)];
    if (failed(expectShape(op, input, results[rank])))
      return failure();
    results[rank].data = input.data;
  }
  return success();
}

} // namespace

bool isCollective(Operation *op) {
  return isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp,
             shard::AllToAllOp, shard::AllSliceOp, shard::ShiftOp,
             shard::BroadcastOp, shard::ReduceOp, shard::GatherOp,
             shard::ScatterOp>(op);
}

LogicalResult runCollective(Operation *op, ArrayRef<int64_t> gridShape,
                            ArrayRef<const Tensor *> inputs,
                            MutableArrayRef<Tensor> results) {
  auto axes = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
  ArrayRef<shard::GridAxis> gridAxes;
  if (axes)
    gridAxes = axes.asArrayRef();
  for (shard::GridAxis axis : gridAxes)
    if (axis < 0 || axis >= int16_t(gridShape.size()))
      return op->emitOpError("names grid axis ")
             << axis << " of a grid of rank " << gridShape.size();
  DeviceGroups groups(gridShape, gridAxes);
  int64_t ranks = results.size();

  auto reduceEach = [&](shard::ReductionKind kind,
                        auto finish) -> LogicalResult {
    for (int64_t rank = 0; rank < ranks; ++rank) {
      std::vector<int64_t> members = groups.members(rank);
      auto reduced = reduceMembers(op, kind, members, inputs,
                                   results[rank].dtype);
      if (failed(reduced) || failed(finish(rank, *reduced)))
        return failure();
    }
    return success();
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](shard::AllReduceOp allReduce) {
        return reduceEach(allReduce.getReduction(),
                          [&](int64_t rank, std::vector<double> &reduced) {
                            results[rank].data = std::move(reduced);
                            return success();
                          });
      })
      .Case([&](shard::ReduceOp reduce) -> LogicalResult {
        // Only the root's result is defined; every member gets the value.
        for (int64_t rank = 0; rank < ranks; ++rank)
          if (failed(rootOf(op, groups, rank, reduce.getRoot(),
                            reduce.getRootDynamic())))
            return failure();
        return reduceEach(reduce.getReduction(),
                          [&](int64_t rank, std::vector<double> &reduced) {
                            results[rank].data = std::move(reduced);
                            return success();
                          });
      })
      .Case([&](shard::ReduceScatterOp reduceScatter) {
        int64_t axis = reduceScatter.getScatterAxis().getSExtValue();
        return reduceEach(
            reduceScatter.getReduction(),
            [&](int64_t rank, std::vector<double> &reduced) {
              Tensor whole{inputs[rank]->shape, results[rank].dtype,
                           std::move(reduced)};
              return takePiece(op, groups, rank, whole, axis, results[rank]);
            });
      })
      .Case([&](shard::AllGatherOp allGather) {
        return runGatherTo(op, groups, allGather.getGatherAxis().getSExtValue(),
                           inputs, results);
      })
      .Case([&](shard::GatherOp gather) -> LogicalResult {
        // Only the root's result is defined; every member gets the value.
        for (int64_t rank = 0; rank < ranks; ++rank)
          if (failed(rootOf(op, groups, rank, gather.getRoot(),
                            gather.getRootDynamic())))
            return failure();
        return runGatherTo(op, groups, gather.getGatherAxis().getSExtValue(),
                           inputs, results);
      })
      .Case([&](shard::AllSliceOp allSlice) -> LogicalResult {
        int64_t axis = allSlice.getSliceAxis().getSExtValue();
        for (int64_t rank = 0; rank < ranks; ++rank)
          if (failed(takePiece(op, groups, rank, *inputs[rank], axis,
                               results[rank])))
            return failure();
        return success();
      })
      .Case([&](shard::ScatterOp scatter) -> LogicalResult {
        int64_t axis = scatter.getScatterAxis().getSExtValue();
        for (int64_t rank = 0; rank < ranks; ++rank) {
          auto root = rootOf(op, groups, rank, scatter.getRoot(),
                             scatter.getRootDynamic());
          if (failed(root) || failed(takePiece(op, groups, rank,
                                               *inputs[*root], axis,
                                               results[rank])))
            return failure();
        }
        return success();
      })
      .Case([&](shard::BroadcastOp broadcast) -> LogicalResult {
        for (int64_t rank = 0; rank < ranks; ++rank) {
          auto root = rootOf(op, groups, rank, broadcast.getRoot(),
                             broadcast.getRootDynamic());
          if (failed(root) ||
              failed(expectShape(op, *inputs[*root], results[rank])))
            return failure();
          results[rank].data = inputs[*root]->data;
        }
        return success();
      })
      .Case([&](shard::AllToAllOp allToAll) {
        return runAllToAll(allToAll, groups, inputs, results);
      })
      .Case([&](shard::ShiftOp shift) {
        return runShift(shift, gridShape, gridAxes, groups, inputs, results);
      })
      .Default([&](Operation *) {
        return op->emitOpError("reference interpreter cannot run '")
               << op->getName() << "'";
      });
}

} // namespace weft::reference::detail
