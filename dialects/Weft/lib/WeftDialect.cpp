// The weft dialect: registration and the discardable attributes it owns.
#include "weft/Dialect/WeftDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"

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

int64_t weft::tensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  unsigned bits = tensor.getElementType().getIntOrFloatBitWidth();
  int64_t bytesPerElement = bits < 8 ? 1 : bits / 8;
  return tensor.getNumElements() * bytesPerElement;
}

int64_t weft::defaultResultBytes(Operation *op) {
  int64_t bytes = 0;
  for (Type type : op->getResultTypes())
    bytes += tensorBytes(type);
  return bytes;
}

int64_t weft::defaultBytesMoved(Operation *op) {
  int64_t bytes = defaultResultBytes(op);
  for (Type type : op->getOperandTypes())
    bytes += tensorBytes(type);
  return bytes;
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
  return op->emitOpError("has unknown weft attribute '") << name << "'";
}

LogicalResult WeftDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kParamAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError("expects '")
             << name << "' on argument " << argIndex << " to be a unit attribute";
    return success();
  }
  if (name == kRangeAttr) {
    auto range = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!range || range.size() != 2 || range[0] >= range[1])
      return op->emitOpError("expects '")
             << name << "' on argument " << argIndex
             << " to be array<i64: lo, hi> with lo < hi, got " << attr.getValue();
    return success();
  }
  return op->emitOpError("has unknown weft argument attribute '")
         << name << "' on argument " << argIndex;
}
