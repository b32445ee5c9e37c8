// What a target says about weft.fused groups beyond the elementwise kernels:
// groups it runs as one library call (a cuBLASLt GEMM with an epilogue) and
// the scratch memory its kernels need. A dialect interface the conversion
// libraries implement (weft::registerKernelGroupRules), so the dialect's
// verifier and memory model ask it instead of knowing cuBLASLt or the GPU
// kernels.
#ifndef WEFT_DIALECT_FUSEDGROUPRULES_H
#define WEFT_DIALECT_FUSEDGROUPRULES_H

#include "mlir/IR/DialectInterface.h"
#include "mlir/Support/TypeID.h"

#include <optional>

namespace weft {

class FusedOp;

class FusedGroupRulesInterface
    : public mlir::DialectInterface::Base<FusedGroupRulesInterface> {
public:
  FusedGroupRulesInterface(mlir::Dialect *dialect) : Base(dialect) {}

  /// Whether `group` is, or by its kind or body claims to be, a group the
  /// target runs as a library call; verifyLibraryGroup then decides.
  virtual bool isLibraryGroup(FusedOp group) const = 0;
  /// Verifies such a group, with a diagnostic on `group` when it is not one.
  virtual mlir::LogicalResult verifyLibraryGroup(FusedOp group) const = 0;
  /// Bytes of scratch memory the group's kernels use while it runs.
  virtual int64_t getWorkspaceBytes(FusedOp group) const = 0;
  /// The operand whose rows are the rows of every result, when the group
  /// runs as one GEMM on them (GemmRowsOpInterface); none otherwise.
  virtual std::optional<unsigned> getGemmRowOperand(FusedOp group) const = 0;
};

/// The rules registered on `group`'s dialect; null when no target
/// registered any (library groups then fail to verify, as unknown bodies).
const FusedGroupRulesInterface *getFusedGroupRules(FusedOp group);

} // namespace weft

MLIR_DECLARE_EXPLICIT_TYPE_ID(weft::FusedGroupRulesInterface)

#endif // WEFT_DIALECT_FUSEDGROUPRULES_H
