// weft-build-plan: the host schedule of a planned training step as a
// weft_plan.step, and the attention kernel images that schedule needs.
#ifndef WEFT_CONVERSION_WEFTTOPLAN_BUILDPLAN_H
#define WEFT_CONVERSION_WEFTTOPLAN_BUILDPLAN_H

#include "weft/Conversion/AttentionKernels.h"
#include "weft/Plan/PlanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

#include <functional>
#include <string>
#include <vector>

namespace weft {

#define GEN_PASS_DECL
#include "weft/Conversion/WeftToPlan/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "weft/Conversion/WeftToPlan/Passes.h.inc"

struct BuildPlanOptions {
  std::string arch = "sm_90a";
  /// Sets an attention op's tiles (blockQ, blockK, warpgroupMma) on a config
  /// whose dtype, head_dim and causal are filled in; default 64/64 mma.sync.
  std::function<void(gpu::AttentionKernelConfig &config, bool backward)>
      chooseTiles;
  /// Collectives run on stream 1 beside the compute on stream 0: stream 1
  /// waits for an event recorded after their producers, stream 0 for one
  /// recorded after them, at the first entry that reads their result
  /// (ScheduleLiveness::getCollectiveWait). Off: everything on stream 0.
  bool overlapCollectives = true;
};

/// A module of attention kernels the step launches: the image to build.
struct AttentionImage {
  std::string name; // "weft_attention_<suffix>" / "weft_attention_grad_<suffix>"
  gpu::AttentionKernelConfig config;
  bool backward = false;
};

/// A non-GEMM, non-attention op (or splat constant) whose kernels
/// (ElementwiseToNVVM) the step launches; `op` lives in the planned function.
struct ElementwiseImage {
  std::string name;
  mlir::Operation *op = nullptr;
};

/// A step's host schedule: the weft_plan.step (launches, GEMMs, events over
/// the arena weft-plan-memory laid out) and the kernel images it launches.
struct HostSchedule {
  plan::StepOp step;
  std::vector<AttentionImage> attentionImages;
  std::vector<ElementwiseImage> elementwiseImages;
};

/// Appends `weft_plan.step @<func>_plan` after `func`, which must carry
/// weft-plan-memory's offsets. Emits diagnostics at the ops it cannot plan.
mlir::FailureOr<HostSchedule>
buildHostSchedule(mlir::func::FuncOp func, const BuildPlanOptions &options);

/// Registers the weft_plan dialect in `registry` (tools that parse or build
/// host schedules).
void registerPlanDialect(mlir::DialectRegistry &registry);

} // namespace weft

#endif // WEFT_CONVERSION_WEFTTOPLAN_BUILDPLAN_H
