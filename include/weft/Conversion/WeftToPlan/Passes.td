// weft-build-plan: a planned step (after weft-plan-memory) -> weft_plan.step.
#ifndef WEFT_CONVERSION_WEFTTOPLAN_PASSES_TD
#define WEFT_CONVERSION_WEFTTOPLAN_PASSES_TD

include "mlir/Pass/PassBase.td"

def BuildPlanPass : Pass<"weft-build-plan", "mlir::ModuleOp"> {
  let summary = "Build the host schedule (weft_plan.step) of a planned step";
  let description = [{
    For each function carrying `weft.memory_plan` (or the one named by
    `function`), appends `weft_plan.step @<function>_plan`: every buffer of
    the schedule/liveness analysis at the offset weft-plan-memory gave it,
    with its live range and role; `weft.linear` / `weft.matmul` become
    `weft_plan.gemm` (cuBLASLt); `weft.attention` / `attention_grad` become
    launches of the GPU attention kernels (attentionKernelSpecs, tiles from
    the options); `weft.reshape` is a view and launches nothing; every other
    weft op (or `weft.fused` group) launches a kernel of its own, declared
    with an image of the same name (made elsewhere). An op that cannot be
    planned (not a weft op, a collective, attention the GPU kernels do not
    implement) is an error at the op.
    ```mlir
    // weft-opt --weft-plan-memory --weft-build-plan
    weft_plan.step @f_plan arena 1536 align 256 arch "sm_90a" version 1 steps 2 streams 1 {
      weft_plan.buffer @arg0 offset 0 size 512 live [0, 1] "input" : tensor<4x32xf32> {arg = 0 : i64}
      ...
      weft_plan.gemm @s0 = @arg0, @arg1 m 4 n 32 k 32 dtype "f32" stream 0 at 0 {trans_b}
    }
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", "",
           "Plan only this function (default: every planned function)">,
    Option<"arch", "arch", "std::string", "\"sm_90a\"", "Target architecture">,
    Option<"blockQ", "block-q", "int64_t", "64", "Attention query rows per tile">,
    Option<"blockK", "block-k", "int64_t", "64", "Attention key rows per tile">,
    Option<"warpgroupMma", "wgmma", "bool", "false",
           "Attention forward with Hopper warpgroup MMA">,
    Option<"overlapCollectives", "overlap-collectives", "bool", "true",
           "Collectives on stream 1, joined by events where their results are "
           "first read (off: every entry on stream 0)">,
  ];
  let dependentDialects = ["::weft::plan::WeftPlanDialect"];
}

#endif // WEFT_CONVERSION_WEFTTOPLAN_PASSES_TD
