// The target's rules for weft.fused groups that are not elementwise kernels
// (one cuBLASLt GEMM with a bias-gradient or GELU epilogue) and the scratch
// layout of the GPU kernels' column sums: the fusion passes form groups by
// them, the plan builder and the kernel builders lower them, and
// registerKernelGroupRules gives the dialect's verifier and memory model
// their answers (FusedGroupRulesInterface), so the dialect holds no target
// knowledge.
#ifndef WEFT_CONVERSION_KERNELGROUPRULES_H
#define WEFT_CONVERSION_KERNELGROUPRULES_H

#include "weft/Dialect/WeftDialect.h"

#include "mlir/IR/DialectRegistry.h"

#include <optional>
#include <string>

namespace weft {

/// Attaches the rules below to the weft dialect (its FusedGroupRulesInterface).
/// Every tool registers them through registerWeftDialects.
void registerKernelGroupRules(mlir::DialectRegistry &registry);

/// Where the GPU kernels of an op or weft.fused group with column sums keep
/// the row statistics (f32 [statCount][rows]) and, with chunks > 1, each
/// row chunk's partial sums after them (f32 [chunk][sum][cols]) between
/// launches (ColumnSums.cpp).
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

/// The kind of a weft.fused group that is one cuBLASLt GEMM with a
/// bias-gradient epilogue (BiasGradGemm.cpp).
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
/// epilogue (GeluGemm.cpp): a linear and its tanh gelu (GELU_BIAS, or
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

#endif // WEFT_CONVERSION_KERNELGROUPRULES_H
