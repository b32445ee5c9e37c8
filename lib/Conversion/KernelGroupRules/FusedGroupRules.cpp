// The weft dialect's FusedGroupRulesInterface for the CUDA target: a group
// holding a GEMM and its bias-gradient or GELU epilogue is one cuBLASLt GEMM
// (verified by the rules in BiasGradGemm.cpp and GeluGemm.cpp); the
// workspace of a group is that GEMM's, or the column sums' scratch of the GPU
// kernels (ColumnSums.cpp).
#include "weft/Conversion/KernelGroupRules.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace weft;

namespace {

bool holds(FusedOp group, function_ref<bool(Operation &)> isOp) {
  return llvm::any_of(group.getBodyBlock().without_terminator(), isOp);
}

/// Named so, or a GEMM holding a gelu / gelu_grad.
bool claimsGeluGemm(FusedOp group) {
  return group.getKind() == kLinearGeluGemmKind || group.getKind() == kDGeluGemmKind ||
         (holds(group, [](Operation &op) { return isa<GeluOp, GeluGradOp>(op); }) &&
          holds(group, [](Operation &op) { return isa<LinearOp, MatmulOp>(op); }));
}

/// Named so, or holding both a matmul and a reduce_sum (a lone matmul gets
/// the elementwise verifier's per-op error).
bool claimsBiasGradGemm(FusedOp group) {
  return group.getKind() == kBiasGradGemmKind ||
         (holds(group, [](Operation &op) { return isa<MatmulOp>(op); }) &&
          holds(group, [](Operation &op) { return isa<ReduceSumOp>(op); }));
}

struct CudaFusedGroupRules : FusedGroupRulesInterface {
  using FusedGroupRulesInterface::FusedGroupRulesInterface;

  bool isLibraryGroup(FusedOp group) const override {
    return claimsGeluGemm(group) || claimsBiasGradGemm(group);
  }

  LogicalResult verifyLibraryGroup(FusedOp group) const override {
    std::string why;
    if (claimsGeluGemm(group)) {
      std::optional<GeluGemm> gemm = getGeluGemm(group, &why);
      if (!gemm)
        return group.emitOpError("is not a GELU GEMM group (a linear and its "
                                 "tanh gelu, or dY W and its tanh gelu_grad): ")
               << why;
      StringRef kind = gemm->backward ? kDGeluGemmKind : kLinearGeluGemmKind;
      if (group.getKind() != kind)
        return group.emitOpError("is a GELU GEMM group but has kind '")
               << group.getKind() << "', expected '" << kind << "'";
      return success();
    }
    if (!getBiasGradGemm(group, &why))
      return group.emitOpError("is not a bias-gradient GEMM group (dW = dY^T X "
                               "with db = dY summed over its leading dims): ")
             << why;
    if (group.getKind() != kBiasGradGemmKind)
      return group.emitOpError("is a bias-gradient GEMM group but has kind '")
             << group.getKind() << "', expected '" << kBiasGradGemmKind << "'";
    return success();
  }

  int64_t getWorkspaceBytes(FusedOp group) const override {
    // A bias-gradient GEMM group runs its matmul's cuBLASLt GEMM.
    if (std::optional<BiasGradGemm> gemm = getBiasGradGemm(group))
      return cast<MatmulOp>(gemm->matmul).getWorkspaceBytes();
    // So does a GELU GEMM group, its linear's or matmul's.
    if (std::optional<GeluGemm> gemm = getGeluGemm(group))
      return cast<MemoryOpInterface>(gemm->gemm).getWorkspaceBytes();
    std::optional<ColumnSumScratch> scratch = getColumnSumScratch(group);
    return scratch ? scratch->workspaceBytes : 0;
  }

  std::optional<unsigned> getGemmRowOperand(FusedOp group) const override {
    // A GELU GEMM group's rows are its GEMM's A rows (a dgelu's aux has
    // them too); a bias-gradient group's A is transposed.
    std::optional<GeluGemm> gemm = getGeluGemm(group);
    if (!gemm)
      return std::nullopt;
    auto rows = cast<GemmRowsOpInterface>(gemm->gemm).getGemmRowOperand();
    if (!rows)
      return std::nullopt;
    auto argument = dyn_cast<BlockArgument>(gemm->gemm->getOperand(*rows));
    if (!argument)
      return std::nullopt;
    return argument.getArgNumber();
  }
};

} // namespace

void weft::registerKernelGroupRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *, WeftDialect *dialect) {
    dialect->addInterfaces<CudaFusedGroupRules>();
  });
}
