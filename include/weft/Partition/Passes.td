// Tensor and sequence parallelism: placements on a shard.grid, then the
// per-rank SPMD step. One pass per file in lib/Partition.
#ifndef WEFT_PARTITION_PASSES_TD
#define WEFT_PARTITION_PASSES_TD

include "mlir/Pass/PassBase.td"

def PlacePass : Pass<"weft-place", "mlir::ModuleOp"> {
  let summary = "Place a training step's parameters on a device grid the way Megatron-LM does";
  let description = [{
    Adds `shard.grid @grid` (shape from `grid`, e.g. `tp=4` or `dp=2,tp=2`;
    axis names in `weft.axis_names`; the dp axis only replicates for now)
    and annotates the arguments of every function with `weft.param`
    arguments (or the one `func` names) with `shard.shard` to a
    `shard.sharding`: Megatron-LM's strategy, found from the graph. A linear
    whose input does not come from a split GEMM is column-parallel (weight
    split along its rows, bias split): qkv (the per-head fused weight gives
    each rank whole heads), fc1, gate and up, and the LM head (vocabulary
    parallel). A linear whose input does is row-parallel (weight split along
    its columns, bias replicated): proj, fc2, down. Embedding tables are
    split along the vocabulary; norms, position embeddings and row-parallel
    biases are replicated; the AdamW moments (and split low halves and
    carried copies) follow their master. With `sequence-parallel`, a
    hidden-state input `[batch, seq, hidden]` is split along the sequence.

    A head count, kv-head count, hidden, vocabulary or sequence size that
    the tensor-parallel size does not divide is an error naming the tensor,
    the dimension and the grid. The placements are ordinary IR: a user can
    write them by hand instead and run `weft-partition` directly.
  }];
  let options = [
    Option<"gridSpec", "grid", "std::string", "\"tp=2\"",
           "The device grid: tp=N, or dp=M,tp=N (dp replicates)">,
    Option<"sequenceParallel", "sequence-parallel", "bool", "false",
           "Split hidden-state inputs along the sequence (Megatron-LM SP)">,
    Option<"funcName", "func", "std::string", "\"\"",
           "Only this function (default: every function with weft.param arguments)">,
  ];
  let dependentDialects = ["mlir::shard::ShardDialect"];
}

def ExpandKvHeadsPass : Pass<"weft-expand-kv-heads", "mlir::func::FuncOp"> {
  let summary = "Replicate GQA kv heads that the tensor-parallel size exceeds";
  let description = [{
    On a forward function, before autodiff: an attention with fewer kv heads
    than `tp` (tp a multiple of them, dividing the q heads) gets each kv head
    replicated tp / kv_heads times, as tensor-parallel GQA does when tp
    exceeds the kv heads, so each rank holds whole q heads and the one kv
    head they read. Its fused QKV projection (rows per kv group `[kv_heads,
    group + 2, head_dim]`) reads an expanded weight, a row gather of the
    parameter (`weft.embedding` of constant row ids): the rows of tp groups,
    each group / r of its kv group's q heads (r = tp / kv_heads) and the
    group's k and v rows. Autodiff then sums the replicas' gradients into the
    parameter. The function computes the same values. weft-compile and the
    training pipeline run it when `grid`'s tp exceeds an attention's kv heads.
  }];
  let options = [
    Option<"tp", "tp", "int64_t", "2", "The tensor-parallel size">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def HoistCollectivesPass : Pass<"weft-hoist-collectives", "mlir::func::FuncOp"> {
  let summary = "Issue all-gathers early enough to hide them behind compute";
  let description = [{
    On a partitioned step (weft-partition): each all-gather moves up, past
    the ops before it that it does not depend on, until their roofline time
    (CostOpInterface) covers its link time (LinkModel) or its operand's
    definition is reached. weft-build-plan runs collectives on a
    communication stream that stream 0 waits for only where their results
    are first read, so a hoisted all-gather (the backward's re-gather of a
    sequence shard for a weight gradient, issued before the data-gradient
    GEMM) runs beside that compute, and the reduce-scatter or all-reduce of
    the data gradient then runs beside the weight-gradient GEMM instead of
    behind the gather (Megatron-LM's overlap of the backward's collectives).
    The gathered tensor lives from its new position: the memory planner and
    remat see it. Latency-bound collectives (link time below twice the
    link's latency: a norm weight's gradient all-reduce) move down to just
    before their first reader, so on the communication stream they queue
    behind, not ahead of, the gathers the compute waits for. The function
    computes the same values.
  }];
}

def FillCollectiveWaitsPass : Pass<"weft-fill-collective-waits", "mlir::func::FuncOp"> {
  let summary = "Move compute nothing waits for behind the collectives the step would wait for";
  let description = [{
    On a partitioned step's final schedule (after remat and
    weft-collective-matmul): a collective whose link time (LinkModel) the
    ops between it and its first reader cover (roofline time,
    CostOpInterface) less than half of leaves stream 0 idle. Under sequence
    parallelism that is the backward's all-gather of a data gradient after
    a norm's gradient: a tensor-parallel all-reduce there hides behind the
    weight gradient's GEMM, the reduce-scatter still does, but the
    all-gather that follows the norm's gradient has nothing beside it.
    This pass looks back from each such collective (at most 8 ops worth
    moving, never the backward's first op or one before it) for ops whose
    results are all read after it, that are free of memory effects, that
    hide no earlier collective and that take at least `min-share` (a tenth)
    of its link time: the weight gradients' GEMMs, which only the optimizer
    reads. At most two move to just after the collective, so they run
    beside it. Their operands live that much longer: a move that takes the
    planned arena's peak (ScheduleLiveness, the arena planner) above 1.025
    times the peak before the pass, or above `budget`, is undone, so the
    step keeps the memory that remat and the budget chose. The function
    computes the same values.
  }];
  let options = [
    Option<"busBytesPerSecond", "bus-bytes-per-second", "double", "330e9",
           "The link's bus bandwidth (LinkModel; tests lower it so small "
           "collectives count)">,
    Option<"minShare", "min-share", "double", "0.1",
           "The smallest op worth moving, as a share of the collective's link time">,
    Option<"keepPeak", "keep-peak", "bool", "true",
           "Undo a move that raises the planned arena's peak beyond its slack">,
    Option<"budget", "budget", "int64_t", "-1",
           "The step's memory budget in bytes (-1: none): no move takes the "
           "planned peak above it">,
  ];
}

def CoalesceCollectivesPass : Pass<"weft-coalesce-collectives", "mlir::func::FuncOp"> {
  let summary = "Reduce a partitioned step's small all-reduces as one bucket";
  let description = [{
    On a partitioned step (weft-partition, after weft-hoist-collectives):
    the latency-bound all-reduces (link time below twice the link's
    latency, LinkModel: with sequence parallelism, every norm weight's and
    row-parallel bias's gradient, partial over the sequence shards) that
    share a grid, grid axes, reduction and element type become one
    all-reduce of their concatenation, placed before the earliest reader,
    as DDP's gradient buckets do: one latency instead of one per tensor.
    A member whose result is read before another member's operand exists
    stays alone. The pieces are flattened (weft.reshape), joined
    (weft.concat), reduced, split (weft.split) and reshaped back. The
    function computes the same values.

    ```mlir
    %a = shard.all_reduce %dgamma on @grid grid_axes = [0] : tensor<64xf32> -> tensor<64xf32>
    %b = shard.all_reduce %dbeta on @grid grid_axes = [0] : tensor<64xf32> -> tensor<64xf32>
    // becomes
    %c = weft.concat %dgamma, %dbeta {dim = 0 : i64} : (tensor<64xf32>, tensor<64xf32>) -> tensor<128xf32>
    %r = shard.all_reduce %c on @grid grid_axes = [0] : tensor<128xf32> -> tensor<128xf32>
    %a, %b = weft.split %r {dim = 0 : i64, sizes = array<i64: 64, 64>} : ...
    ```
  }];
}

def ReduceScatterSlabsPass : Pass<"weft-reduce-scatter-slabs", "mlir::func::FuncOp"> {
  let summary = "Run sum reduce-scatters as an all-to-all of slabs and their sum";
  let description = [{
    For a step whose collectives run on the copy engines (weft-run
    --collectives=copy-engine moves all-gathers and all-to-alls, not
    reduce-scatters): each sum `shard.reduce_scatter` whose blocks are
    contiguous (every dim before the scatter axis 1) and that carries no
    chunking attributes becomes an all-to-all of the t slabs (slab j of the
    input goes to group position j) and a `weft.reduce_sum` over them, which
    weft-build-plan runs as a pointwise kernel of the t rows. The sum is in
    f32, in group order, the same on every rank. The function computes the
    same values. Not in weft-compile's pipeline: on 2 H200s the anchor's
    TP+SP step ran 1.1-2.0 ms slower with it than with NCCL's
    reduce-scatters (bench/RESULTS.md, 2026-11-28).

    ```mlir
    %r = shard.reduce_scatter %x on @grid grid_axes = [0] scatter_axis = 1 : tensor<1x8x16xbf16> -> tensor<1x4x16xbf16>
    // becomes
    %s = weft.reshape %x : (tensor<1x8x16xbf16>) -> tensor<2x64xbf16>
    %a = shard.all_to_all %s on @grid grid_axes = [0] split_axis = 0 concat_axis = 0 : tensor<2x64xbf16> -> tensor<2x64xbf16>
    %m = weft.reduce_sum %a {dims = array<i64: 0>} : (tensor<2x64xbf16>) -> tensor<64xbf16>
    %r = weft.reshape %m : (tensor<64xbf16>) -> tensor<1x4x16xbf16>
    ```
  }];
}

def CollectiveMatmulPass : Pass<"weft-collective-matmul", "mlir::func::FuncOp"> {
  let summary = "Split the collectives around GEMMs into chunks that pipeline with partial GEMMs";
  let description = [{
    Collective matmul (Wang et al., ASPLOS 2023) on a partitioned step, run
    after remat on the final schedule: an all-gather whose result only a
    GEMM reads, as its A (the sequence-parallel gather before a
    column-parallel GEMM), and a reduce-scatter whose operand only a GEMM
    writes (after a row-parallel GEMM, or a column-parallel GEMM's input
    gradient) get `weft.chunks = k`. weft-build-plan then issues k
    collectives of one chunk of rows of every rank block each, on the
    communication stream, and the GEMM as k x ranks partial GEMMs on those
    row blocks (GemmRowsOpInterface): the partial GEMMs of chunk c run while
    chunk c + 1 is gathered, or while chunk c - 1 is reduce-scattered. The
    gathered (or reduced) whole tensor is laid out chunk by chunk, which
    only that GEMM sees. A reduce-scatter moves to right after its GEMM,
    and its result's buffer lives from the GEMM on (Liveness).

    `chunks` = -1 chooses k in {1, 2, 4, 8} by the cost model: the link time
    (LinkModel, one latency per chunk) against the GEMM's roofline time
    (CostOpInterface), plus a fixed cost per partial GEMM and per chunk (what
    the NCCL kernels take from the GEMMs they overlap, measured on H200s),
    each partial GEMM at least 128 rows; k = 1 leaves the pair as it was
    (the anchor's seq-8192 GEMMs, where chunks were measured slower). With
    `engine=copy-engine` an all-gather's chunk costs kCopyEngineChunkSeconds
    instead (the runtime's copy-engine gathers: two flag handshakes and the
    copies' start, no SMs), so gathers long enough to gain are chunked.

    With `local-first=auto`, an all-gather the model leaves whole, or whose
    first reader (of several) is a GEMM reading it as rows, gets
    `weft.local_first` where that gains: that GEMM's own rank block (1/t of
    the rows, read from the local shard) runs while the whole gather does,
    the other t - 1 blocks after it (rank-relative row blocks in the plan);
    later readers see the whole gather in the tensor's own order.
    The model: min(link, compute / t) hidden, against one partial GEMM per
    block and one chunk's cost of NCCL kernels beside the GEMM. `chunks` = 0 turns
    the pass off, a positive value asks for that many wherever the rows
    divide and every chunk's offset is a multiple of 256 bytes. The
    function computes the same values.
  }];
  let options = [
    Option<"chunks", "chunks", "int64_t", "-1",
           "Chunks per collective: -1 chooses by the cost model, 0 turns the pass off">,
    Option<"sides", "sides", "std::string", "\"both\"",
           "Which collectives it chunks: both, gather (all-gathers before GEMMs) or "
           "scatter (reduce-scatters after them)">,
    Option<"localFirst", "local-first", "std::string", "\"off\"",
           "An all-gather left whole (one chunk) before a GEMM gets weft.local_first: "
           "off, auto (where the cost model gains by it, each rank block at least 128 "
           "rows) or on (wherever each rank block starts at a 256-byte offset). weft-build-plan runs the GEMM's "
           "own rank block from the local shard beside the gather, then the others">,
    Option<"engine", "engine", "std::string", "\"nccl\"",
           "What runs the all-gathers (weft-run --collectives): nccl, or copy-engine, "
           "whose chunks take no SMs from the GEMMs and cost a few microseconds of "
           "flag handshakes each (reduce-scatters stay on NCCL)">,
  ];
}

def PartitionPass : Pass<"weft-partition", "mlir::ModuleOp"> {
  let summary = "Turn a step with placements into the per-rank SPMD step with shard collectives";
  let description = [{
    Every function whose arguments carry `shard.shard` annotations becomes
    its per-rank form: local tensor types, the weft ops partitioned through
    their `ShardingInterface` models, and `shard.all_reduce`,
    `reduce_scatter`, `all_gather` and `all_slice` where placements meet.
    TP gives an all-reduce after each row-parallel GEMM in the forward and
    after each column-parallel GEMM's input gradient in the backward. With
    `sequence-parallel`, partial sums of `[batch, seq, ...]` activations are
    reduce-scattered along the sequence (the batch and sequence sizes are
    the leading dims of the first non-parameter argument), the norms,
    residual adds and dropouts run on sequence shards, an all-gather
    precedes each column-parallel GEMM, and the backward mirrors it. The
    result carries `weft.grid`, `weft.grid_axis` and `weft.split_dim` on
    split arguments and results, so `weft-run` can slice global inputs and
    gather results.

    Why not upstream `sharding-propagation` + `shard-partition` (MLIR 22):
    they have no partial-sum state, so a sharded reduction is all-reduced
    inside the op and sequence parallelism comes out as all-reduce +
    all_slice instead of a reduce-scatter; propagation picks placements
    without regard to communication (gathering weights FSDP-style); ops
    without the interface (reshapes of heads) stop it; and its reshards are
    silently wrong or crash on multi-axis moves in release builds
    (../shared/notes/shard-dialect-mlir22.md). This pass uses the upstream
    interface, sharding type and collectives, and decides placements itself:
    for each op the split loop that moves the fewest bytes, parameters never
    gathered, partial sums resolved at once.
  }];
  let options = [
    Option<"sequenceParallel", "sequence-parallel", "bool", "false",
           "Reduce-scatter partial activations along the sequence (Megatron-LM SP)">,
  ];
  let dependentDialects = ["mlir::shard::ShardDialect", "mlir::arith::ArithDialect"];
}

#endif // WEFT_PARTITION_PASSES_TD
