// The weft dialect: dialect class, op interfaces and ops.
#ifndef WEFT_DIALECT_WEFTDIALECT_H
#define WEFT_DIALECT_WEFTDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "weft/Dialect/ScalarFormula.h"

namespace weft {
/// Elements of a static ranked tensor type (saturating at INT64_MAX), 0 for
/// anything else. Safe on unverified IR: attribute verifiers may query the
/// cost and memory interfaces before the op's own verifier ran.
int64_t tensorElements(mlir::Type type);
/// The element type's short name as packages and kernel units spell it:
/// "bf16", "f16", "f32", "f64", "i64", "i32", "bool" (i1); "" for anything
/// else. Takes a shaped type or an element type.
llvm::StringRef elementTypeName(mlir::Type type);
/// Bytes of a static ranked tensor type (i1 counts one byte per element),
/// saturating at INT64_MAX; 0 for other types and non-int/float elements.
int64_t tensorBytes(mlir::Type type);
/// Sum of operand and result bytes: an unfused kernel's traffic.
int64_t defaultBytesMoved(mlir::Operation *op);
/// Sum of result bytes.
int64_t defaultResultBytes(mlir::Operation *op);
/// FLOPs of an op without a cost model of its own: its formula's per
/// element (ScalarFormulaOpInterface) times its result's elements; 0 for
/// any other op.
int64_t defaultFlops(mlir::Operation *op);
/// Every tensor operand and result has a static shape, no encoding and at
/// most 2^48 elements (other types are left to the ODS constraints).
mlir::LogicalResult verifyStaticShapes(mlir::Operation *op);

namespace trait {
/// The StaticShapes trait every weft op carries.
template <typename ConcreteType>
class StaticShapes : public mlir::OpTrait::TraitBase<ConcreteType, StaticShapes> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifyStaticShapes(op);
  }
};
} // namespace trait
} // namespace weft

#include "weft/Dialect/WeftDialect.h.inc"
#include "weft/Dialect/WeftInterfaces.h.inc"

#define GET_OP_CLASSES
#include "weft/Dialect/WeftOps.h.inc"

#include "weft/Dialect/FusedGroupRules.h"

namespace weft {
/// The iteration domain `[..., n]` of an op that may join a `weft.fused`
/// group (WeftFused.cpp): a FusionOpInterface op (pointwise, a norm, a
/// last-dim softmax, a cross-entropy, a rope, an AdamW update) each of whose
/// tensor operands broadcasts onto the domain (NumPy: `[n]`, 0-d,
/// `[1, 1, 1]`, size-1 dims in between) or holds one value per row `[...]`.
/// nullopt for every other op.
std::optional<llvm::SmallVector<int64_t>> getFusionDomain(mlir::Operation *op);

/// How many f32 row statistics the GPU row kernels keep per row of `op`
/// (FusionOpInterface; 0 for pointwise ops and ops that do not fuse).
int64_t rowStatCount(mlir::Operation *op);
/// Whether `op` fuses and maps each element of its one operand to the
/// element of its one result at the same index (a convert, a gelu, a scale;
/// no row statistics, no random draws): it computes the same values on any
/// row-major view of its operand, and a fused reader may recompute it.
bool isUnaryPointwise(mlir::Operation *op);
/// Whether `value` is a [cols] norm-weight gradient summed over rows
/// (FusionOpInterface: layer_norm_grad's dgamma / dbeta, rms_norm_grad's
/// dgamma).
bool isColumnSum(mlir::Value value);
/// Whether `op` is a view of its operands' buffer that runs nothing
/// (BufferViewOpInterface: a reshape, a packed qkv split or gradient concat).
bool isBufferView(mlir::Operation *op);

/// Whether `op` is a weft.attention or weft.attention_grad whose tensors are
/// [b, s, h, d] (`seq_major`).
bool isSeqMajorAttention(mlir::Operation *op);
/// Whether `op` is an attention (or its gradient) on a block of heads of a
/// partitioned attention (a head offset for the global dropout mask).
bool isPartitionedAttention(mlir::Operation *op);

} // namespace weft

#endif // WEFT_DIALECT_WEFTDIALECT_H
