// The weft dialect: registration and the discardable attributes it owns.
#include "weft/Dialect/WeftDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace weft;

#include "weft/Dialect/WeftDialect.cpp.inc"
#include "weft/Dialect/WeftInterfaces.cpp.inc"

void WeftDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "weft/Dialect/WeftOps.cpp.inc"
      >();
}

llvm::StringRef weft::elementTypeName(Type type) {
  Type element = getElementTypeOrSelf(type);
  if (element.isBF16())
    return "bf16";
  if (element.isF16())
    return "f16";
  if (element.isF32())
    return "f32";
  if (element.isF64())
    return "f64";
  if (element.isInteger(64))
    return "i64";
  if (element.isInteger(32))
    return "i32";
  if (element.isInteger(16))
    return "i16";
  if (element.isInteger(1))
    return "bool";
  return "";
}

int64_t weft::tensorElements(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  int64_t count = 1;
  for (int64_t dim : tensor.getShape())
    if (llvm::MulOverflow(count, dim, count))
      return std::numeric_limits<int64_t>::max();
  return count;
}

int64_t weft::tensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.getElementType().isIntOrFloat())
    return 0;
  unsigned bits = tensor.getElementType().getIntOrFloatBitWidth();
  int64_t bytesPerElement = bits < 8 ? 1 : bits / 8;
  int64_t bytes;
  if (llvm::MulOverflow(tensorElements(type), bytesPerElement, bytes))
    return std::numeric_limits<int64_t>::max();
  return bytes;
}

/// a + b, saturating at INT64_MAX: a variadic op's operands of up to 2^51
/// bytes each may add up past int64.
static int64_t addBytes(int64_t a, int64_t b) {
  int64_t sum;
  return llvm::AddOverflow(a, b, sum) ? std::numeric_limits<int64_t>::max() : sum;
}

int64_t weft::defaultResultBytes(Operation *op) {
  int64_t bytes = 0;
  for (Type type : op->getResultTypes())
    bytes = addBytes(bytes, tensorBytes(type));
  return bytes;
}

int64_t weft::defaultBytesMoved(Operation *op) {
  int64_t bytes = defaultResultBytes(op);
  for (Type type : op->getOperandTypes())
    bytes = addBytes(bytes, tensorBytes(type));
  return bytes;
}

/// weft-plan-memory's attributes: `weft.offsets` (one offset per result, -1
/// only for a non-tensor result), `weft.workspace_offset` (on an op with a
/// workspace) and `weft.memory_plan` (on a function).
static LogicalResult verifyMemoryPlanAttribute(Operation *op,
                                               NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  if (name == WeftDialect::kOffsetsAttr) {
    auto offsets = dyn_cast<DenseI64ArrayAttr>(value);
    if (!offsets || offsets.size() != int64_t(op->getNumResults()))
      return op->emitOpError("expects '")
             << name << "' to be array<i64> with one offset per result ("
             << op->getNumResults() << "), got " << value;
    for (auto [i, offset] : llvm::enumerate(offsets.asArrayRef()))
      if (offset < -1 ||
          (offset == -1 && isa<TensorType>(op->getResult(i).getType())))
        return op->emitOpError("expects '")
               << name << "' entry " << i
               << " to be a non-negative offset (-1 only for a non-tensor "
                  "result), got "
               << offset;
    return success();
  }
  if (name == WeftDialect::kWorkspaceOffsetAttr) {
    auto offset = dyn_cast<IntegerAttr>(value);
    if (!offset || !offset.getType().isInteger(64) || offset.getInt() < 0)
      return op->emitOpError("expects '")
             << name << "' to be a non-negative i64 offset, got " << value;
    auto memory = dyn_cast<MemoryOpInterface>(op);
    if (!memory || memory.getWorkspaceBytes() <= 0)
      return op->emitOpError("has '") << name << "' but no workspace";
    return success();
  }
  // weft.memory_plan
  if (!isa<FunctionOpInterface>(op))
    return op->emitOpError("expects '") << name << "' on a function only";
  auto plan = dyn_cast<DictionaryAttr>(value);
  if (!plan)
    return op->emitOpError("expects '")
           << name << "' to be a dictionary, got " << value;
  auto bytes = [&](StringRef key) -> int64_t {
    auto entry = plan.getAs<IntegerAttr>(key);
    return entry && entry.getType().isInteger(64) ? entry.getInt() : -1;
  };
  for (StringRef key : {"alignment", "peak_bytes", "lower_bound_bytes"})
    if (bytes(key) < 0)
      return op->emitOpError("expects '")
             << name << "' to have a non-negative i64 '" << key << "', got "
             << value;
  if (bytes("lower_bound_bytes") > bytes("peak_bytes"))
    return op->emitOpError("expects '")
           << name << "' lower_bound_bytes (" << bytes("lower_bound_bytes")
           << ") to be at most peak_bytes (" << bytes("peak_bytes") << ")";
  auto fragmentation = plan.getAs<FloatAttr>("fragmentation");
  if (!fragmentation || !(fragmentation.getValueAsDouble() >= 0.0) ||
      fragmentation.getValueAsDouble() >= 1.0)
    return op->emitOpError("expects '")
           << name << "' to have a 'fragmentation' float in [0, 1), got "
           << value;
  if (!plan.getAs<DictionaryAttr>("categories"))
    return op->emitOpError("expects '")
           << name << "' to have a 'categories' dictionary, got " << value;
  return success();
}

/// weft.grid / weft.grid_axis on a partitioned function, weft.axis_names on
/// the shard.grid it names.
static LogicalResult verifyGridAttribute(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  if (name == WeftDialect::kAxisNamesAttr) {
    auto names = dyn_cast<ArrayAttr>(value);
    if (!names || !llvm::all_of(names, [](Attribute a) { return isa<StringAttr>(a); }))
      return op->emitOpError("expects '")
             << name << "' to be an array of axis names, got " << value;
    return success();
  }
  if (!isa<FunctionOpInterface>(op))
    return op->emitOpError("expects '") << name << "' on a function only";
  if (name == WeftDialect::kGridAttr && !isa<FlatSymbolRefAttr>(value))
    return op->emitOpError("expects '") << name << "' to name a shard.grid, got " << value;
  if (name == WeftDialect::kGridAxisAttr) {
    auto axis = dyn_cast<IntegerAttr>(value);
    if (!axis || !axis.getType().isInteger(64) || axis.getInt() < 0)
      return op->emitOpError("expects '")
             << name << "' to be a non-negative i64 grid axis, got " << value;
  }
  return success();
}

/// weft.split_dim on an argument or result of a partitioned function.
static LogicalResult verifySplitDim(Operation *op, StringRef what, unsigned index,
                                    Type type, NamedAttribute attr) {
  auto dim = dyn_cast<IntegerAttr>(attr.getValue());
  auto tensor = dyn_cast_or_null<RankedTensorType>(type);
  if (!dim || !dim.getType().isInteger(64) || !tensor || dim.getInt() < 0 ||
      dim.getInt() >= tensor.getRank())
    return op->emitOpError("expects '")
           << attr.getName().getValue() << "' on " << what << " " << index
           << " to be an i64 dimension of its tensor type " << type << ", got "
           << attr.getValue();
  return success();
}

LogicalResult WeftDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kRngIdAttr || name == kLayerAttr) {
    auto value = dyn_cast<IntegerAttr>(attr.getValue());
    if (!value || !value.getType().isInteger(64))
      return op->emitOpError("expects '")
             << name << "' to be an i64 integer attribute, got "
             << attr.getValue();
    if (value.getInt() < 0)
      return op->emitOpError("expects '")
             << name << "' to be non-negative, got " << value.getInt();
    return success();
  }
  if (name == kRecomputeAttr) {
    // weft-remat's mark on a forward op cloned into the backward.
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError("expects '")
             << name << "' to be a unit attribute, got " << attr.getValue();
    return success();
  }
  if (name == "weft.tile") {
    // weft-tile-attention's record of a tiled nest's configuration, on the
    // nest's outer loop (what the GPU kernel builders read).
    auto tile = dyn_cast<DictionaryAttr>(attr.getValue());
    auto positive = [&](StringRef key) {
      auto value = tile ? tile.getAs<IntegerAttr>(key) : IntegerAttr();
      return value && value.getType().isInteger(64) && value.getInt() > 0;
    };
    auto kind = tile ? tile.getAs<StringAttr>("kind") : StringAttr();
    if (!tile || tile.size() != 3 || !positive("block_q") ||
        !positive("block_k") || !kind ||
        (kind.getValue() != "forward" && kind.getValue() != "backward"))
      return op->emitOpError("expects 'weft.tile' to be {block_q = <positive "
                             "i64>, block_k = <positive i64>, kind = "
                             "\"forward\" | \"backward\"}, got ")
             << attr.getValue();
    return success();
  }
  if (name == kGemmWorkspaceAttr) {
    auto bytes = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<FunctionOpInterface>(op) || !bytes ||
        !bytes.getType().isInteger(64) || bytes.getInt() < 0)
      return op->emitOpError("expects '")
             << name << "' to be a non-negative i64 byte count on a "
             << "function, got " << attr.getValue();
    return success();
  }
  if (name == kOffsetsAttr || name == kWorkspaceOffsetAttr ||
      name == kMemoryPlanAttr)
    return verifyMemoryPlanAttribute(op, attr);
  if (name == kGridAttr || name == kGridAxisAttr || name == kAxisNamesAttr)
    return verifyGridAttribute(op, attr);
  if (name == kChunksAttr) {
    // weft-collective-matmul's chunk count, on an all-gather or reduce-scatter.
    auto chunks = dyn_cast<IntegerAttr>(attr.getValue());
    if (!chunks || !chunks.getType().isInteger(64) || chunks.getInt() < 2 ||
        op->getNumOperands() != 1 || op->getNumResults() != 1)
      return op->emitOpError("expects '")
             << name << "' to be an i64 chunk count of at least 2 on a one-operand "
             << "collective, got " << attr.getValue();
    return success();
  }
  if (name == kLocalFirstAttr) {
    if (!isa<UnitAttr>(attr.getValue()) || op->getNumOperands() != 1 ||
        op->getNumResults() != 1 || op->hasAttr(kChunksAttr))
      return op->emitOpError("expects '")
             << name << "' to be a unit attribute on a one-operand all-gather without '"
             << kChunksAttr << "', got " << attr.getValue();
    return success();
  }
  if (name == kLossChunksAttr) {
    auto chunks = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<FunctionOpInterface>(op) || !chunks || !chunks.getType().isInteger(64) ||
        chunks.getInt() < 2)
      return op->emitOpError("expects '")
             << name << "' to be an i64 chunk count of at least 2 on a function, got "
             << attr.getValue();
    return success();
  }
  return op->emitOpError("has unknown weft attribute '") << name << "'";
}

/// The type of argument `argIndex` of region `regionIndex`: from the function
/// type where `op` is a function (a declaration has no entry block), else from
/// the region's entry block; null when there is no such argument.
static Type regionArgumentType(Operation *op, unsigned regionIndex,
                               unsigned argIndex) {
  if (auto function = dyn_cast<FunctionOpInterface>(op)) {
    ArrayRef<Type> types = function.getArgumentTypes();
    return argIndex < types.size() ? types[argIndex] : Type();
  }
  if (regionIndex >= op->getNumRegions() || op->getRegion(regionIndex).empty())
    return {};
  Block &entry = op->getRegion(regionIndex).front();
  return argIndex < entry.getNumArguments() ? entry.getArgument(argIndex).getType()
                                            : Type();
}

LogicalResult WeftDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Type type = regionArgumentType(op, regionIndex, argIndex);
  if (name == kSplitDimAttr)
    return verifySplitDim(op, "argument", argIndex, type, attr);
  if (name == kParamAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError("expects '")
             << name << "' on argument " << argIndex << " to be a unit attribute";
    // A parameter is trained: a floating-point tensor, or the i16 low half
    // of a split master (its bf16 high half is marked weft.copy_of).
    auto tensor = dyn_cast_or_null<RankedTensorType>(type);
    if (!tensor ||
        !(isa<FloatType>(tensor.getElementType()) || tensor.getElementType().isInteger(16)))
      return op->emitOpError("expects '")
             << name << "' on argument " << argIndex
             << " of floating-point (or i16 split-master) tensor type, got " << type;
    return success();
  }
  // weft.bound (kBoundAttrName in weft/Analysis/Liveness.h, which gives it
  // its meaning): an argument the caller binds outside the arena.
  if (name == "weft.bound") {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError("expects '")
             << name << "' on argument " << argIndex << " to be a unit attribute";
    auto tensor = dyn_cast_or_null<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape())
      return op->emitOpError("expects '")
             << name << "' on argument " << argIndex
             << " of statically shaped tensor type, got " << type;
    return success();
  }
  if (name == kRangeAttr) {
    auto range = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!range || range.size() != 2 || range[0] >= range[1])
      return op->emitOpError("expects '")
             << name << "' on argument " << argIndex
             << " to be array<i64: lo, hi> with lo < hi, got " << attr.getValue();
    // Token ids, labels, seeds and steps: integers or tensors of integers.
    Type element = type ? getElementTypeOrSelf(type) : Type();
    if (!element || !element.isSignlessInteger() || element.isInteger(1))
      return op->emitOpError("expects '")
             << name << "' on argument " << argIndex
             << " of integer (or integer tensor) type, got " << type;
    return success();
  }
  if (name == kOffsetAttr) {
    // weft-plan-memory's arena offset of a tensor argument.
    auto offset = dyn_cast<IntegerAttr>(attr.getValue());
    if (!offset || !offset.getType().isInteger(64) || offset.getInt() < 0)
      return op->emitOpError("expects '")
             << name << "' on argument " << argIndex
             << " to be a non-negative i64 offset, got " << attr.getValue();
    if (!isa_and_nonnull<RankedTensorType>(type))
      return op->emitOpError("expects '")
             << name << "' on argument " << argIndex
             << " of ranked tensor type, got " << type;
    return success();
  }
  if (name == kCopyOfAttr) {
    // A carried copy of a master weight: same shape, a narrower float; or
    // the bf16 high half of a split master whose slot holds the i16 low half.
    auto index = dyn_cast<IntegerAttr>(attr.getValue());
    auto function = dyn_cast<FunctionOpInterface>(op);
    if (!index || !index.getType().isInteger(64) || !function)
      return op->emitOpError("expects '")
             << name << "' on argument " << argIndex
             << " to be an i64 argument index of a function, got " << attr.getValue();
    ArrayRef<Type> arguments = function.getArgumentTypes();
    int64_t master = index.getInt();
    if (master < 0 || master >= int64_t(arguments.size()) || master == int64_t(argIndex))
      return op->emitOpError("expects '")
             << name << "' on argument " << argIndex << " to name another of the "
             << arguments.size() << " arguments, got " << master;
    auto copy = dyn_cast_or_null<RankedTensorType>(type);
    auto source = dyn_cast<RankedTensorType>(arguments[master]);
    auto narrower = [&] {
      auto c = dyn_cast<FloatType>(copy.getElementType());
      if (source.getElementType().isInteger(16))
        return c && c.isBF16();
      auto s = dyn_cast<FloatType>(source.getElementType());
      return c && s && c.getWidth() < s.getWidth();
    };
    if (!copy || !source || copy.getShape() != source.getShape() || !narrower())
      return op->emitOpError("expects argument ")
             << argIndex << " (" << type << ") marked '" << name
             << "' to be a narrower float tensor (bf16 for an i16 split-master low half) "
             << "of the shape of argument " << master << " (" << arguments[master] << ")";
    return success();
  }
  return op->emitOpError("has unknown weft argument attribute '")
         << name << "' on argument " << argIndex;
}

LogicalResult WeftDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kGradOfAttr) {
    auto index = dyn_cast<IntegerAttr>(attr.getValue());
    auto function = dyn_cast<FunctionOpInterface>(op);
    if (!index || !index.getType().isInteger(64) || !function || index.getInt() < 0 ||
        index.getInt() >= int64_t(function.getArgumentTypes().size()))
      return op->emitOpError("expects '")
             << name << "' on result " << resultIndex
             << " to be the i64 index of an argument, got " << attr.getValue();
    return success();
  }
  if (name == kSplitDimAttr) {
    auto function = dyn_cast<FunctionOpInterface>(op);
    Type type = function && resultIndex < function.getResultTypes().size()
                    ? function.getResultTypes()[resultIndex]
                    : Type();
    return verifySplitDim(op, "result", resultIndex, type, attr);
  }
  if (name == kAliasAttr) {
    // The result reuses the bytes of an argument of its type.
    auto index = dyn_cast<IntegerAttr>(attr.getValue());
    if (!index || !index.getType().isInteger(64))
      return op->emitOpError("expects '")
             << name << "' on result " << resultIndex
             << " to be an i64 argument index, got " << attr.getValue();
    auto function = dyn_cast<FunctionOpInterface>(op);
    if (!function)
      return op->emitOpError("expects '")
             << name << "' on result " << resultIndex << " of a function";
    ArrayRef<Type> arguments = function.getArgumentTypes();
    int64_t argIndex = index.getInt();
    if (argIndex < 0 || argIndex >= int64_t(arguments.size()))
      return op->emitOpError("expects '")
             << name << "' on result " << resultIndex << " to name one of the "
             << arguments.size() << " arguments, got " << argIndex;
    ArrayRef<Type> results = function.getResultTypes();
    Type resultType = resultIndex < results.size() ? results[resultIndex] : Type();
    if (resultType != arguments[argIndex])
      return op->emitOpError("expects result ")
             << resultIndex << " (" << resultType << ") aliased by '" << name
             << "' to have the type of argument " << argIndex << " ("
             << arguments[argIndex] << ")";
    // Two results updating one argument in place would overwrite each other.
    for (unsigned other = 0; other < resultIndex; ++other)
      if (auto earlier = function.getResultAttrOfType<IntegerAttr>(other, name);
          earlier && earlier.getInt() == argIndex)
        return op->emitOpError("expects one result per argument aliased by '")
               << name << "', results " << other << " and " << resultIndex
               << " both alias argument " << argIndex;
    return success();
  }
  return op->emitOpError("has unknown weft result attribute '")
         << attr.getName().getValue() << "' on result " << resultIndex;
}
