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

namespace weft {
/// The iteration domain `[..., n]` of an op that may join a `weft.fused`
/// group (WeftFused.cpp): a FusionOpInterface op (pointwise, a norm, a
/// last-dim softmax, a cross-entropy, an AdamW update) each of whose tensor
/// operands broadcasts onto the domain (NumPy: `[n]`, 0-d, `[1, 1, 1]`,
/// size-1 dims in between) or holds one value per row `[...]`.
/// nullopt for every other op.
std::optional<llvm::SmallVector<int64_t>> getFusionDomain(mlir::Operation *op);

/// How many f32 row statistics the GPU row kernels keep per row of `op`
/// (FusionOpInterface; 0 for pointwise ops and ops that do not fuse).
int64_t rowStatCount(mlir::Operation *op);
/// Whether `value` is a [cols] norm-weight gradient summed over rows
/// (FusionOpInterface: layer_norm_grad's dgamma / dbeta, rms_norm_grad's
/// dgamma).
bool isColumnSum(mlir::Value value);
/// Whether `op` is a view of its operands' buffer that runs nothing
/// (BufferViewOpInterface: a reshape, a packed qkv split or gradient concat).
bool isBufferView(mlir::Operation *op);

/// Where the GPU kernels of an op or weft.fused group with column sums keep
/// the row statistics (f32 [statCount][rows]) and, with chunks > 1, each
/// row chunk's partial sums after them (f32 [chunk][sum][cols]) between
/// launches (WeftColumnSums.cpp).
struct ColumnSumScratch {
  int64_t statCount = 0, sums = 0, rows = 1, cols = 1, chunks = 1;
  /// The output (index among the op's results) that holds them until the
  /// rows kernel overwrites it; -1: the op's workspace holds them.
  int64_t output = -1;
  /// Bytes of that workspace (0 when an output holds them).
  int64_t workspaceBytes = 0;
};
/// nullopt when `op` writes no column sum.
std::optional<ColumnSumScratch> getColumnSumScratch(mlir::Operation *op);

/// Whether `op` is a weft.attention or weft.attention_grad whose tensors are
/// [b, s, h, d] (`seq_major`).
bool isSeqMajorAttention(mlir::Operation *op);

/// The kind of a weft.fused group that is one cuBLASLt GEMM with a
/// bias-gradient epilogue (WeftBiasGrad.cpp).
inline constexpr llvm::StringLiteral kBiasGradGemmKind = "matmul+reduce_sum";
/// Whether `matmul` (dW = dY^T X) and `reduce` (db = dY summed over its
/// leading dims) are a linear layer's weight and bias gradients that one
/// GEMM with cuBLASLt's bias-gradient epilogue computes: `matmul` has
/// transpose_a and not transpose_b, 2-d operands; its a is `reduce`'s operand
/// or a reshape of it to [tokens, n]; `reduce` sums exactly the leading dims
/// (no keepdim) into [n]; every type is bf16, or every type f16. When not,
/// `why` (if given) says which condition failed.
bool isBiasGradPair(mlir::Operation *matmul, mlir::Operation *reduce,
                    std::string *why = nullptr);
/// A weft.fused group of kind kBiasGradGemmKind: its matmul and reduce_sum.
struct BiasGradGemm {
  mlir::Operation *matmul = nullptr, *reduce = nullptr;
  /// Input indices of the summed tensor (dY) and of the matmul's b (X).
  unsigned dyInput = 0, xInput = 0;
};
/// The group's GEMM when `op` is a well-formed bias-gradient group: body
/// [weft.reshape of dY], weft.matmul, weft.reduce_sum, yielding (dW, db).
/// nullopt otherwise, with the reason in `why` (if given).
std::optional<BiasGradGemm> getBiasGradGemm(mlir::Operation *op,
                                            std::string *why = nullptr);

/// Kinds of the weft.fused groups that are one cuBLASLt GEMM with a GELU
/// epilogue (WeftGeluGemm.cpp): a linear and its tanh gelu (GELU_BIAS, or
/// GELU_AUX_BIAS writing the pre-activation too), and dY W with the tanh
/// gelu_grad reading the pre-activation (DGELU).
inline constexpr llvm::StringLiteral kLinearGeluGemmKind = "linear+gelu";
inline constexpr llvm::StringLiteral kDGeluGemmKind = "matmul+gelu_grad";
/// cuBLASLt's EPILOGUE_AUX_LD for a GELU input matrix: a multiple of 8.
inline constexpr int64_t kGeluAuxLdMultiple = 8;
/// Whether `linear` (u = x W^T [+ b]) and `gelu` (tanh, of u) are one GEMM
/// with a GELU epilogue: static tensors, a 2-d weight, bf16 everywhere or
/// f16 everywhere; with `withAux` (u is also read elsewhere, so the GEMM
/// writes it as cuBLASLt's aux matrix) n a multiple of kGeluAuxLdMultiple.
/// When not, `why` (if given) says which condition failed.
bool isLinearGeluPair(mlir::Operation *linear, mlir::Operation *gelu,
                      bool withAux, std::string *why = nullptr);
/// Whether `matmul` (dG = dY W, no transpose_a, a 2-d b) and `geluGrad`
/// (tanh, dy = dG, x = u) are one GEMM with cuBLASLt's DGELU epilogue
/// reading u as its aux matrix: static shapes, u shaped as dG, one half
/// type, n a multiple of kGeluAuxLdMultiple.
bool isDGeluPair(mlir::Operation *matmul, mlir::Operation *geluGrad,
                 std::string *why = nullptr);
/// A weft.fused group of kind kLinearGeluGemmKind or kDGeluGemmKind.
struct GeluGemm {
  /// The linear or matmul, and the gelu or gelu_grad.
  mlir::Operation *gemm = nullptr, *gelu = nullptr;
  /// DGELU (matmul + gelu_grad), else the forward.
  bool backward = false;
  /// Forward: the result holding u (the aux output), -1 when u is not
  /// yielded. Backward: the input holding u (the aux input).
  int auxResult = -1;
  unsigned auxInput = 0;
};
/// The group's GEMM when `op` is a well-formed GELU GEMM group: body
/// (weft.linear, weft.gelu) yielding (gelu(u)[, u]) with the linear's
/// operands the group's inputs, or (weft.matmul, weft.gelu_grad) yielding
/// du with the matmul's operands and u inputs. nullopt otherwise, with the
/// reason in `why` (if given).
std::optional<GeluGemm> getGeluGemm(mlir::Operation *op, std::string *why = nullptr);
} // namespace weft

#endif // WEFT_DIALECT_WEFTDIALECT_H
