// The weft_plan dialect: the host schedule of one compiled training step
// (arena buffers, kernel declarations, launches, cuBLASLt GEMMs, events), as
// weft-build-plan writes it and the package serializes it.
#ifndef WEFT_PLAN_OPS_TD
#define WEFT_PLAN_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/SymbolInterfaces.td"

def WeftPlan_Dialect : Dialect {
  let name = "weft_plan";
  let cppNamespace = "::weft::plan";
  let summary = "The host schedule of a compiled step: buffers, launches, GEMMs, events.";
  let description = [{
    One `weft_plan.step` per compiled step. Its body declares the arena's
    buffers (offset, size, live range in schedule indices, role) and the
    kernels, then lists the schedule in issue order: kernel launches,
    cuBLASLt GEMMs and stream events, each at a schedule index (the step of
    the weft op it came from). The step's verifier checks what the runtime
    relies on: every buffer inside the arena, no two buffers overlapping in
    bytes while both are live, every operand a defined buffer live at its
    use, launch limits, events recorded before they are waited on.
  }];
}

class WeftPlan_Op<string mnemonic, list<Trait> traits = []>
    : Op<WeftPlan_Dialect, mnemonic, traits>;

def WeftPlan_StepOp : WeftPlan_Op<"step", [Symbol, SymbolTable,
    IsolatedFromAbove, NoTerminator, SingleBlock, NoRegionArguments]> {
  let summary = "the host schedule of one step over one arena";
  let description = [{
    `arena` bytes in one allocation aligned to `align`; `arch` the target
    ("sm_90a"); `version` the plan/package format version (must be the
    current one); `steps` the number of schedule indices; `streams` the
    streams launches may use; `grid` (optional) the device grid of a
    partitioned step, whose one plan every rank runs, and `split_axis` the
    grid axis its split buffers (`split_dim`) are divided along.
    ```mlir
    weft_plan.step @train arena 1024 align 256 arch "sm_90a" version 1 steps 2 streams 1 {
      weft_plan.buffer @x offset 0 size 512 live [0, 1] "input"
      weft_plan.buffer @y offset 512 size 512 live [0, 1] "output"
      weft_plan.kernel @relu image "relu" entry "relu" params ["ptr", "ptr", "i32"]
      weft_plan.launch @relu [@x, @y, 256 : i32] grid [1, 1, 1] block [256, 1, 1] smem 0 stream 0 at 0
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, I64Attr:$arena_bytes,
                       I64Attr:$alignment, StrAttr:$arch,
                       I64Attr:$format_version, I64Attr:$num_steps,
                       I64Attr:$num_streams,
                       OptionalAttr<DenseI64ArrayAttr>:$grid,
                       OptionalAttr<I64Attr>:$split_axis);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `arena` $arena_bytes `align` $alignment `arch` $arch
    `version` $format_version `steps` $num_steps `streams` $num_streams
    attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
}

def WeftPlan_BufferOp : WeftPlan_Op<"buffer", [Symbol, HasParent<"StepOp">]> {
  let summary = "a tensor's bytes in the arena and when they are live";
  let description = [{
    Bytes `[offset, offset + size)` of the arena, live at schedule indices
    `[first, last]`. The role is one of parameter, optimizer_state, input,
    output, gradient, activation, temporary, workspace. Optional: the tensor
    type, and `arg` / `result`, the step function's argument or result held;
    `copy_of`, on a carried weight copy, the argument of its master (the
    runtime derives the copy from the master whenever it binds the master);
    `split_dim`, on an argument or result of a partitioned step, the
    dimension of the whole tensor this rank holds a block of, along the
    step's `split_axis` (absent: replicated); `bound`, on an argument the
    caller binds (weft-compile --bind-arguments): its bytes stay in the
    caller's memory, outside the arena (offset 0), and the runtime is given
    their address before a run.
    ```mlir
    weft_plan.buffer @arg0 offset 0 size 4096 live [0, 9] "parameter" : tensor<32x32xf32> {arg = 0 : i64}
    weft_plan.buffer @arg1 offset 0 size 4096 live [0, 9] "parameter" : tensor<32x32xf32> {arg = 1 : i64, bound}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, I64Attr:$offset, I64Attr:$size,
                       I64Attr:$first, I64Attr:$last, StrAttr:$role,
                       OptionalAttr<TypeAttr>:$type,
                       OptionalAttr<I64Attr>:$arg, OptionalAttr<I64Attr>:$result,
                       OptionalAttr<I64Attr>:$copy_of,
                       OptionalAttr<I64Attr>:$split_dim,
                       UnitAttr:$bound);
  let assemblyFormat = [{
    $sym_name `offset` $offset `size` $size `live` `[` $first `,` $last `]`
    $role (`:` $type^)? attr-dict
  }];
  let hasVerifier = 1;
}

def WeftPlan_KernelOp : WeftPlan_Op<"kernel", [Symbol, HasParent<"StepOp">]> {
  let summary = "a GPU kernel: the image holding it, its entry and parameters";
  let description = [{
    `image` names the module (cubin / PTX) holding entry `entry`; `params`
    are the parameter kinds in order: "ptr", "i32", "i64", "f32".
    ```mlir
    weft_plan.kernel @relu image "relu" entry "relu" params ["ptr", "ptr", "i32"]
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrAttr:$image, StrAttr:$entry,
                       StrArrayAttr:$params);
  let assemblyFormat = "$sym_name `image` $image `entry` $entry `params` $params attr-dict";
  let hasVerifier = 1;
}

def WeftPlan_LaunchOp : WeftPlan_Op<"launch", [HasParent<"StepOp">]> {
  let summary = "a kernel launch at a schedule index";
  let description = [{
    Arguments in parameter order: buffer symbols for "ptr" parameters,
    `N : i32`, `N : i64` or `X : f32` immediates for the scalars, and for
    "tensormap" parameters (a CUtensorMap by value, encoded once at load)
    `{tensormap = @buffer, dtype = "bf16", dims = array<i64: ...>, strides =
    array<i64: ...>, box = array<i64: ...>, swizzle = 128 : i64}` with dims
    and box innermost first and the byte strides of dims 1..rank-1.
    ```mlir
    weft_plan.launch @relu [@x, @y, 256 : i32] grid [1, 1, 1] block [256, 1, 1] smem 0 stream 0 at 0
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$kernel, ArrayAttr:$args,
                       DenseI64ArrayAttr:$grid, DenseI64ArrayAttr:$block,
                       I64Attr:$smem, I64Attr:$stream, I64Attr:$index);
  let assemblyFormat = [{
    $kernel $args `grid` $grid `block` $block `smem` $smem `stream` $stream
    `at` $index attr-dict
  }];
  let hasVerifier = 1;
}

def WeftPlan_GemmOp : WeftPlan_Op<"gemm", [HasParent<"StepOp">]> {
  let summary = "a cuBLASLt matmul: D = epilogue(alpha op(A) op(B) + beta C)";
  let description = [{
    As `weft_gemm_desc` (runtime/include/weft_runtime.h): row-major A
    `[m, k]` (`[k, m]` with `trans_a`), B `[k, n]` (`[n, k]` with
    `trans_b`), C and D `[m, n]`, `batch` strided batches (`strides` in
    elements for A, B, C, D), `dtype` bf16 / f16 / f32 / f64, `epilogue`
    none / bias / gelu / bias_gelu / bgrad_a (bias[m] = sum over k of
    op(A)[m, k], written to the bias buffer: a linear's bias gradient next
    to its weight gradient; batch 1) / gelu_aux / gelu_aux_bias (D =
    gelu(acc [+ bias]) with the pre-activation written to `aux`) / dgelu
    (D = acc * gelu'(aux), `aux` read). `aux` is `[m, n]` with row pitch
    `ld` elements (at least n, a multiple of 8: cuBLASLt's
    EPILOGUE_AUX_LD), batch 1. `algo` holds the 64 bytes of a chosen
    cublasLtMatmulAlgo_t when one is stored. `offsets` (elements; a, b, c,
    d, aux) start operands inside their buffers: a collective matmul's
    partial GEMMs on row blocks. Each is a multiple of 256 bytes.
    `rank_axes` with `rank_blocks` (shift, then element strides of a, b, c,
    d, aux) make row blocks relative to the rank (a local-first
    collective matmul's partial GEMMs): on the rank at position p of its
    group along the grid axes `rank_axes` (of t ranks), each offset grows by
    ((p + shift) mod t) x its stride.
    ```mlir
    weft_plan.gemm @d = @a, @b bias @bias m 32 n 768 k 256 dtype "bf16" stream 0 at 3 {trans_b, epilogue = "bias"}
    weft_plan.gemm @g = @x, @w bias @b aux @u ld 1024 m 32 n 1024 k 256 dtype "bf16" stream 0 at 4 {trans_b, epilogue = "gelu_aux_bias"}
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$d, FlatSymbolRefAttr:$a,
                       FlatSymbolRefAttr:$b, OptionalAttr<FlatSymbolRefAttr>:$c,
                       OptionalAttr<FlatSymbolRefAttr>:$bias,
                       OptionalAttr<FlatSymbolRefAttr>:$workspace,
                       OptionalAttr<FlatSymbolRefAttr>:$aux,
                       OptionalAttr<I64Attr>:$aux_ld,
                       I64Attr:$m, I64Attr:$n, I64Attr:$k,
                       DefaultValuedAttr<I64Attr, "1">:$batch,
                       OptionalAttr<DenseI64ArrayAttr>:$strides,
                       UnitAttr:$trans_a, UnitAttr:$trans_b, StrAttr:$dtype,
                       DefaultValuedAttr<StrAttr, "\"none\"">:$epilogue,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F32Attr, "0.0">:$beta,
                       OptionalAttr<DenseI8ArrayAttr>:$algo,
                       OptionalAttr<DenseI64ArrayAttr>:$offsets,
                       OptionalAttr<DenseI64ArrayAttr>:$rank_axes,
                       OptionalAttr<DenseI64ArrayAttr>:$rank_blocks,
                       I64Attr:$stream, I64Attr:$index);
  let assemblyFormat = [{
    $d `=` $a `,` $b (`c` $c^)? (`bias` $bias^)? (`workspace` $workspace^)?
    (`aux` $aux^ `ld` $aux_ld)?
    `m` $m `n` $n `k` $k `dtype` $dtype `stream` $stream `at` $index attr-dict
  }];
  let hasVerifier = 1;
}

def WeftPlan_CollectiveOp : WeftPlan_Op<"collective", [HasParent<"StepOp">]> {
  let summary = "an NCCL collective among the ranks of a partitioned step";
  let description = [{
    `kind` is all_reduce, all_gather, reduce_scatter, all_to_all or
    send_recv, over the ranks that share every grid coordinate outside
    `axes` (a rank's position in the group: row-major along `axes`);
    `count` the elements of the whole tensor (an all-gather's output, a
    reduce-scatter's input, both buffers of an all-reduce; the other side
    holds count / ranks, one contiguous block per rank in rank order),
    `reduction` sum, max, min or avg. `offsets` (elements; input, output)
    start the operands inside their buffers: one chunk of a collective
    matmul.

    all_to_all: both buffers hold `count` elements; block j of the input
    (count / ranks contiguous elements) goes to position j, block i of the
    output comes from position i (shard.all_to_all with contiguous blocks).
    send_recv (shard.shift): each rank sends its whole input to the rank
    `shift` positions ahead and receives its output from the one `shift`
    behind; with `rotate` the ends wrap, without it a rank with no source
    gets zeros. Only send_recv has `shift`, which it needs.
    ```mlir
    weft_plan.collective "reduce_scatter" @partial -> @shard count 4096 dtype "bf16" axes [0] stream 0 at 7
    weft_plan.collective "send_recv" @x -> @y count 4096 dtype "bf16" axes [0] stream 0 at 8 {rotate, shift = 1 : i64}
    ```
  }];
  let arguments = (ins StrAttr:$kind, FlatSymbolRefAttr:$input,
                       FlatSymbolRefAttr:$output, I64Attr:$count, StrAttr:$dtype,
                       DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<StrAttr, "\"sum\"">:$reduction,
                       OptionalAttr<DenseI64ArrayAttr>:$offsets,
                       OptionalAttr<I64Attr>:$shift, UnitAttr:$rotate,
                       I64Attr:$stream, I64Attr:$index);
  let assemblyFormat = [{
    $kind $input `->` $output `count` $count `dtype` $dtype `axes` $axes
    `stream` $stream `at` $index attr-dict
  }];
}

def WeftPlan_RecordEventOp : WeftPlan_Op<"record_event", [HasParent<"StepOp">]> {
  let summary = "record event `event` on stream `stream`";
  let description = [{
    ```mlir
    weft_plan.record_event stream 0 event 0 at 4
    ```
  }];
  let arguments = (ins I64Attr:$stream, I64Attr:$event, I64Attr:$index);
  let assemblyFormat = "`stream` $stream `event` $event `at` $index attr-dict";
}

def WeftPlan_WaitEventOp : WeftPlan_Op<"wait_event", [HasParent<"StepOp">]> {
  let summary = "make stream `stream` wait for event `event`";
  let description = [{
    The event must be recorded by an earlier entry of the step.
    ```mlir
    weft_plan.wait_event stream 1 event 0 at 5
    ```
  }];
  let arguments = (ins I64Attr:$stream, I64Attr:$event, I64Attr:$index);
  let assemblyFormat = "`stream` $stream `event` $event `at` $index attr-dict";
}

#endif // WEFT_PLAN_OPS_TD
