// The weft dialect: declaration and the type constraints its ops share.
#ifndef WEFT_BASE_TD
#define WEFT_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Weft_Dialect : Dialect {
  let name = "weft";
  let cppNamespace = "::weft";
  let summary = "Transformer training graphs: layers, attention, losses, their gradients and the optimizer step.";
  let description = [{
    Ops on ranked tensors with PyTorch's semantics (activations `[batch, seq,
    hidden]`, attention operands `[batch, heads, seq, head_dim]`). Every op
    prints as `weft.<op> operands attr-dict : functional-type(operands, results)`.

    Discardable attributes the dialect owns:
    - `weft.rng_id` (i64) on every random op: the Philox key's second word.
    - `weft.layer` (i64) on ops: the transformer layer an op belongs to.
    - `weft.recompute` (unit) on ops: a clone of a forward op that
      `weft-remat` placed in the backward to recompute an activation.
    - `weft.param` (unit) on function arguments of floating-point tensor
      type: a trainable parameter.
    - `weft.range` (array<i64: lo, hi>) on integer function arguments (an
      integer or a tensor of integers): the half-open range of valid values
      (token ids, labels, seeds, steps).
    - `weft.alias` (i64) on function results: the index of the argument,
      of the same type, that the result updates in place (a training step's
      new parameters and optimizer state; XLA's input_output_alias).
    - `weft.grad_of` (i64) on function results: the result is the gradient
      of the argument at that index (a step built with optimizer=none);
      partitioning keeps it placed like that argument.
    - `weft.copy_of` (i64) on function arguments: the argument is the
      lower-precision copy of the master weight at that argument index (same
      shape, a narrower float type), carried between steps: the step's
      optimizer writes it, and a runtime derives it from the master (rounding
      to nearest even) whenever it binds the master.
    - weft-plan-memory's arena plan: `weft.offsets` (array<i64>, one byte
      offset per result, -1 for a non-tensor result) and
      `weft.workspace_offset` (i64) on ops, `weft.offset` (i64) on tensor
      function arguments, `weft.memory_plan` (a dictionary: alignment,
      peak_bytes, lower_bound_bytes, fragmentation, categories, ...) on
      functions.
    - `weft.gemm_workspace` (i64 bytes) on functions: the cuBLASLt workspace
      cap the step is planned for; every `linear` / `matmul` in it then owns
      a workspace (MemoryOpInterface) of at most that many bytes.
  }];
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    static constexpr llvm::StringLiteral kRngIdAttr = "weft.rng_id";
    static constexpr llvm::StringLiteral kLayerAttr = "weft.layer";
    static constexpr llvm::StringLiteral kRecomputeAttr = "weft.recompute";
    static constexpr llvm::StringLiteral kParamAttr = "weft.param";
    static constexpr llvm::StringLiteral kRangeAttr = "weft.range";
    static constexpr llvm::StringLiteral kAliasAttr = "weft.alias";
    static constexpr llvm::StringLiteral kCopyOfAttr = "weft.copy_of";
    static constexpr llvm::StringLiteral kGradOfAttr = "weft.grad_of";
    static constexpr llvm::StringLiteral kOffsetsAttr = "weft.offsets";
    static constexpr llvm::StringLiteral kWorkspaceOffsetAttr = "weft.workspace_offset";
    static constexpr llvm::StringLiteral kOffsetAttr = "weft.offset";
    static constexpr llvm::StringLiteral kMemoryPlanAttr = "weft.memory_plan";
    static constexpr llvm::StringLiteral kGemmWorkspaceAttr = "weft.gemm_workspace";
    // A partitioned step: its grid, the tensor-parallel axis, the split
    // dimension of each split argument and result; a grid's axis names.
    static constexpr llvm::StringLiteral kGridAttr = "weft.grid";
    static constexpr llvm::StringLiteral kGridAxisAttr = "weft.grid_axis";
    static constexpr llvm::StringLiteral kSplitDimAttr = "weft.split_dim";
    static constexpr llvm::StringLiteral kAxisNamesAttr = "weft.axis_names";
    // A collective matmul (weft-collective-matmul): the chunk count of an
    // all-gather before a GEMM or a reduce-scatter after one.
    static constexpr llvm::StringLiteral kChunksAttr = "weft.chunks";
    // A local-first collective matmul (weft-collective-matmul local-first):
    // an all-gather whose GEMM runs its own rank block from the local shard
    // while the gather runs, then the other blocks.
    static constexpr llvm::StringLiteral kLocalFirstAttr = "weft.local_first";
    // The row chunks weft-chunk-loss split a function's loss into.
    static constexpr llvm::StringLiteral kLossChunksAttr = "weft.loss_chunks";
  }];
}

def Weft_Float : AnyTypeOf<[F64, F32, F16, BF16]>;
def Weft_FloatTensor : RankedTensorOf<[F64, F32, F16, BF16]>;
def Weft_IdTensor : RankedTensorOf<[I64]>;
def Weft_MaskTensor : RankedTensorOf<[I1]>;
// The low 16 bits of split f32 master weights (weft.adamw's param_low).
def Weft_LowBitsTensor : RankedTensorOf<[I16]>;
def Weft_AnyTensor : RankedTensorOf<[F64, F32, F16, BF16, I64, I1, I16]>;
// 0-d i64 tensors: the dropout seed and the optimizer step.
def Weft_ScalarI64 : 0DTensorOf<[I64]>;
// attention's rng operands: the seed, then a partition's head offset.
def Weft_RngOperand : AnyTypeOf<[Weft_ScalarI64, Index]>;

// Every operand and result a static, encoding-free tensor of at most 2^48
// elements (weft::trait::StaticShapes in WeftDialect.h).
def Weft_StaticShapes : NativeOpTrait<"StaticShapes"> {
  let cppNamespace = "::weft::trait";
}

#endif // WEFT_BASE_TD
