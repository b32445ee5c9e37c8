// The weft dialect: dialect class, op interfaces and ops.
#ifndef WEFT_DIALECT_WEFTDIALECT_H
#define WEFT_DIALECT_WEFTDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace weft {
/// Elements of a static ranked tensor type (saturating at INT64_MAX), 0 for
/// anything else. Safe on unverified IR: attribute verifiers may query the
/// cost and memory interfaces before the op's own verifier ran.
int64_t tensorElements(mlir::Type type);
/// Bytes of a static ranked tensor type (i1 counts one byte per element),
/// saturating at INT64_MAX; 0 for other types and non-int/float elements.
int64_t tensorBytes(mlir::Type type);
/// Sum of operand and result bytes: an unfused kernel's traffic.
int64_t defaultBytesMoved(mlir::Operation *op);
/// Sum of result bytes.
int64_t defaultResultBytes(mlir::Operation *op);
} // namespace weft

#include "weft/Dialect/WeftDialect.h.inc"
#include "weft/Dialect/WeftInterfaces.h.inc"

#define GET_OP_CLASSES
#include "weft/Dialect/WeftOps.h.inc"

namespace weft {
/// The iteration domain `[..., n]` of an op that may join a `weft.fused`
/// group (WeftFused.cpp): a pointwise op, a norm, a last-dim softmax, a
/// cross-entropy or an AdamW update, each of whose tensor operands is
/// domain-shaped, a row vector `[n]`, one value per row `[...]` or 0-d.
/// nullopt for every other op.
std::optional<llvm::SmallVector<int64_t>> getFusionDomain(mlir::Operation *op);
} // namespace weft

#endif // WEFT_DIALECT_WEFTDIALECT_H
