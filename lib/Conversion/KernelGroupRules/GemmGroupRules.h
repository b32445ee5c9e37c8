// What the GEMM-group rules share (BiasGradGemm.cpp: matmul + bias gradient;
// GeluGemm.cpp: GEMM + GELU or its gradient): static tensor types, the
// refusal reason, and a weft.fused group's body read back.
#ifndef WEFT_LIB_CONVERSION_KERNELGROUPRULES_GEMMGROUPRULES_H
#define WEFT_LIB_CONVERSION_KERNELGROUPRULES_GEMMGROUPRULES_H

#include "weft/Conversion/KernelGroupRules.h"

#include <optional>
#include <string>

namespace weft::gemm_rules {

/// `value`'s type when it is a statically shaped ranked tensor, else null.
inline mlir::RankedTensorType staticTensor(mlir::Value value) {
  auto type = value ? mlir::dyn_cast<mlir::RankedTensorType>(value.getType()) : nullptr;
  return type && type.hasStaticShape() ? type : mlir::RankedTensorType();
}

/// Stores `reason` in `why` (when asked) and refuses.
inline bool fail(std::string *why, const llvm::Twine &reason) {
  if (why)
    *why = reason.str();
  return false;
}

/// A weft.fused group's body: its ops before the terminator, and the yield.
struct GroupBody {
  mlir::Block *block = nullptr;
  YieldOp yield;
  llvm::SmallVector<mlir::Operation *> ops;
};

/// The body of `op` when it is a weft.fused group whose body ends in
/// weft.yield; none otherwise (`why` says which).
inline std::optional<GroupBody> groupBody(mlir::Operation *op, std::string *why) {
  auto fused = mlir::dyn_cast<FusedOp>(op);
  if (!fused || fused->getRegion(0).empty())
    return fail(why, "not a weft.fused op with a body"), std::nullopt;
  GroupBody body;
  body.block = &fused->getRegion(0).front();
  body.yield = body.block->empty() ? YieldOp() : mlir::dyn_cast<YieldOp>(body.block->back());
  if (!body.yield)
    return fail(why, "the body does not end in weft.yield"), std::nullopt;
  for (mlir::Operation &member : body.block->without_terminator())
    body.ops.push_back(&member);
  return body;
}

} // namespace weft::gemm_rules

#endif // WEFT_LIB_CONVERSION_KERNELGROUPRULES_GEMMGROUPRULES_H
