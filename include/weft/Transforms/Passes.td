// Weft's graph passes: training-step construction, rematerialization, memory
// planning and the attention rewrites. One pass per file in lib/Transforms.
#ifndef WEFT_TRANSFORMS_PASSES_TD
#define WEFT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AutodiffPass : Pass<"weft-autodiff", "mlir::ModuleOp"> {
  let summary = "Build the training step of a forward function that returns a scalar loss";
  let description = [{
    For `func.func @<entry>` whose only result is a 0-d loss, adds
    `func.func @<entry>_step` (the forward is kept). Parameters are the
    entry's arguments marked `{weft.param}`.

    With `optimizer=none` the step is `(args of the entry, unchanged) ->
    (loss, one gradient per weft.param argument, in argument order)`.

    With `optimizer=adamw` the step is
    `(params, m..., v..., batch..., step, seed) -> (loss, params', m'..., v'...)`:
    params are the entry's parameters in f32 (f64 when the entry's parameter is
    f64; master weights converted to the parameter's type for the forward), m
    and v their moments of the same type, batch the entry's other arguments
    except its seed, `step` a `tensor<i64>` (the AdamW step number, from 1) and
    `seed` a `tensor<i64>` (the entry's seed argument, if it has one). Each
    updated result carries `weft.alias = <argument index>`: the planner updates
    it in place. With `weight-copies=carried`, every master whose entry
    parameter is narrower gets one more argument after the seed (in parameter
    order): its copy, marked `weft.copy_of = <master index>`, which the
    forward and backward read instead of converting the master, and one more
    result after v' (aliased to it): the updated master converted right after
    its AdamW update. With `weight-copies=split`, each bf16 parameter's master
    is stored split: the copy argument is its bf16 high half (what the
    forward and backward read, never converted) and the master slot is an
    i16 tensor of its low half; the AdamW update (with `param_low`) rewrites
    both halves, in place.

    Values the backward needs are the saved activations; nothing else of the
    forward stays live. Random ops keep their `weft.rng_id`; attention_grad
    shares its attention's. Explicit collectives (shard ops) are refused.

    ```mlir
    func.func @forward(%w: tensor<4x4xf32> {weft.param}, %x: tensor<2x4xf32>, %y: tensor<2xi64>) -> tensor<f32>
    // weft-opt --weft-autodiff="optimizer=none" adds:
    func.func @forward_step(%w: tensor<4x4xf32> {weft.param}, %x: tensor<2x4xf32>, %y: tensor<2xi64>) -> (tensor<f32>, tensor<4x4xf32>)
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"forward\"", "Forward function to differentiate">,
    Option<"optimizer", "optimizer", "std::string", "\"none\"", "none | adamw">,
    Option<"lr", "lr", "double", "1.0e-3", "AdamW learning rate">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", "1.0e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.01", "AdamW weight decay">,
    Option<"weightCopies", "weight-copies", "::weft::WeightCopies",
           "::weft::WeightCopies::Converted",
           "converted | carried | split: with optimizer=adamw, the low-precision "
           "copies of the f32 masters are converted inside each step "
           "(converted), or are step arguments marked weft.copy_of that each "
           "AdamW update writes right after its master (carried; "
           "Megatron's bf16 parameters beside fp32 main parameters), or are "
           "the masters' own bf16 high halves, the low halves in i16 master "
           "slots (split: no copy and no conversion; bf16 parameters only)",
           [{::llvm::cl::values(
             clEnumValN(::weft::WeightCopies::Converted, "converted",
                        "converted from the masters inside each step"),
             clEnumValN(::weft::WeightCopies::Carried, "carried",
                        "step arguments written by each AdamW update"),
             clEnumValN(::weft::WeightCopies::Split, "split",
                        "the masters' bf16 high halves, low halves in i16"))}]>,
    ListOption<"convertedParams", "converted-params", "int64_t",
               "With weight-copies=carried: the parameters (weft.param "
               "arguments of the entry, from 0) whose copies stay converted "
               "inside the step, so their bytes are not resident">,
    Option<"gemmWorkspace", "gemm-workspace", "int64_t", "0",
           "cuBLASLt workspace cap (bytes) stamped on the step as "
           "weft.gemm_workspace: each linear / matmul then owns a planned "
           "workspace; 0 plans none">,
  ];
  let dependentDialects = ["::weft::WeftDialect", "::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect"];
}

def InferenceStepPass : Pass<"weft-inference-step", "mlir::ModuleOp"> {
  let summary = "Make a forward function itself the step (inference: no autodiff)";
  let description = [{
    Clones `func.func @<entry>` as `func.func @<entry>_step`, with the same
    arguments (and their attributes) and results, so that the passes after
    `weft-autodiff` in the training pipeline (attention layout, fusion,
    remat, memory planning, the plan and the package) build an inference
    package from it: the step's results are the forward's outputs (logits,
    any tensors), not a loss and gradients; ops no result depends on are
    dropped from the step, and each `weft.attention` gets its row
    log-sum-exp result (the GPU kernel writes it, so the plan gives it a
    buffer), as `weft-autodiff` builds it. With `gemm-workspace` the step
    gets `weft.gemm_workspace`, as `weft-autodiff` stamps it.

    Each result must be a value the forward computes: a result that is an
    argument unchanged, or a value returned twice, has no buffer of its own
    for the package to write, and is refused with the result's index.

    ```mlir
    func.func @forward(%w: tensor<8x4xbf16>, %x: tensor<2x4xbf16>) -> tensor<2x8xbf16>
    // weft-opt --weft-inference-step adds the same function as @forward_step
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"forward\"", "Forward function to package">,
    Option<"gemmWorkspace", "gemm-workspace", "int64_t", "0",
           "cuBLASLt workspace cap (bytes) stamped on the step as "
           "weft.gemm_workspace; 0 plans none">,
  ];
  let dependentDialects = ["::weft::WeftDialect", "::mlir::func::FuncDialect"];
}

def RematPass : Pass<"weft-remat", "mlir::ModuleOp"> {
  let summary = "Recompute activations in the backward to trade time for memory";
  let description = [{
    Works on training steps made by `weft-autodiff` (functions named
    `*_step`, or the one named by `entry`). Policies, as NeMo's
    `activations_checkpoint_granularity`/`_method`/`_num_layers`; layers come
    from `weft.layer`:
    - `none`: unchanged.
    - `full`: keep each layer's input, recompute the layer in the backward.
    - `block`: fully recompute the first `num-layers` layers.
    - `uniform`: checkpoint the input of every chunk of `num-layers` layers.
    - `selective`: recompute core attention only (QK^T, softmax, dropout,
      attention over V when unfused; flash attention recomputes inside
      attention_grad).
    - `budget`: choose what to save and recompute so that the planned peak of
      the whole step is at most `budget` bytes (suffixes KiB, MiB, GiB) at the
      least roofline recompute time; isomorphic layers share one decision. An
      infeasible budget is an error naming the smallest reachable peak.
    Recomputed ops are clones placed before their first backward use; they
    keep `weft.rng_id` and carry `weft.recompute`. With a `budget` and a
    fixed policy, a planned peak over the budget is an error.

    `weight-copies` decides on the values computed from the parameters alone
    that the backward reads (the bf16 copies of f32 master weights): `keep`
    them from the forward to the backward, `recompute` each (convert again
    from its master) before its first backward reader, or `auto` (default):
    recompute under `full`, let `budget` choose (the fastest recompute that
    fits, a copy's cost its roofline time), keep otherwise.

    ```mlir
    // weft-opt --weft-autodiff --weft-remat="policy=selective": in the
    // backward of each layer, before softmax_grad reads the probabilities,
    %s = weft.matmul %q, %k {transpose_b, weft.layer = 0 : i64, weft.recompute} : ...
    %t = weft.scale %s {value = 0.35355339059327379 : f64, weft.layer = 0 : i64, weft.recompute} : ...
    %m = weft.causal_mask %t {weft.layer = 0 : i64, weft.recompute} : ...
    %p = weft.softmax %m {weft.layer = 0 : i64, weft.recompute} : ...
    %d = weft.dropout %p, %seed {p = 1.000000e-01 : f64, weft.layer = 0 : i64, weft.recompute, weft.rng_id = 1 : i64} : ...
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"\"", "Step function (default: every *_step)">,
    Option<"policy", "policy", "std::string", "\"none\"",
           "none | full | selective | block | uniform | budget">,
    Option<"numLayers", "num-layers", "int64_t", "1", "Layers for block/uniform">,
    Option<"budget", "budget", "std::string", "\"\"", "Memory budget, e.g. 512MiB">,
    Option<"alignment", "alignment", "int64_t", "256",
           "Byte alignment of every buffer when planning (as weft-plan-memory)">,
    Option<"report", "report", "std::string", "\"\"",
           "Write what was recomputed and the planned peaks as JSON here">,
    Option<"weightCopies", "weight-copies", "std::string", "\"auto\"",
           "keep | recompute | auto: the parameters' converted copies the backward reads">,
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

def PlanMemoryPass : Pass<"weft-plan-memory", "mlir::ModuleOp"> {
  let summary = "Assign every tensor of a scheduled step an offset in one arena";
  let description = [{
    On the op order of each function (the schedule), assigns arena offsets to
    every tensor: arguments (parameters, optimizer state, batch), results,
    saved activations, temporaries and op workspaces. Results tied with
    `weft.alias` reuse their argument's bytes. Attaches `weft.offsets` (one
    offset per result, then `weft.workspace_offset`) to ops, `weft.offset` to
    arguments, and `weft.memory_plan` (peak, lower bound, fragmentation, bytes
    by category) to the function; `report=FILE` also writes it as JSON.

    Lifetimes and categories come from the shared schedule/liveness analysis
    (include/weft/Analysis/Liveness.h, which states the rules); offsets from
    the arena planner (ArenaPlanner.h): greedy best fit and first fit over
    four orders (size, lifetime, size x lifetime, start), a local search over
    placement orders, and an exact search for at most 8 buffers. The lower
    bound is the max-live (the most aligned bytes live at one step);
    fragmentation is (peak - lower bound) / peak.

    ```mlir
    func.func @chain(%x: tensor<16xf32>) -> tensor<16xf32> {
      %a = weft.gelu %x : (tensor<16xf32>) -> tensor<16xf32>
      %b = weft.silu %a : (tensor<16xf32>) -> tensor<16xf32>
      return %b : tensor<16xf32>
    }
    // weft-opt --weft-plan-memory="alignment=64": %x and %b share bytes.
    func.func @chain(%arg0: tensor<16xf32> {weft.offset = 64 : i64}) -> tensor<16xf32>
        attributes {weft.memory_plan = {alignment = 64 : i64, ..., lower_bound_bytes = 128 : i64, peak_bytes = 128 : i64, ...}} {
      %0 = weft.gelu %arg0 {weft.offsets = array<i64: 0>} : (tensor<16xf32>) -> tensor<16xf32>
      %1 = weft.silu %0 {weft.offsets = array<i64: 64>} : (tensor<16xf32>) -> tensor<16xf32>
      return %1 : tensor<16xf32>
    }
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"\"", "Function to plan (default: all)">,
    Option<"report", "report", "std::string", "\"\"", "Write the plan report as JSON here">,
    Option<"alignment", "alignment", "int64_t", "256", "Byte alignment of every buffer">,
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

def ChunkLossPass : Pass<"weft-chunk-loss", "mlir::func::FuncOp"> {
  let summary = "Split the lm_head linear and its cross_entropy into row chunks";
  let description = [{
    A `cross_entropy` whose logits are (through reshapes) the only use of a
    `linear` becomes `chunks` linears and losses over row chunks of the
    linear's input and of the labels (`split` views), each loss its share of
    the mean over all the labels (`all_labels`), summed: the same loss, and
    after weft-autodiff the same gradients. The shares are summed as [1]
    tensors (a 0-d add has no GPU kernel domain) and the sum reshaped back to
    the loss's 0-d type. No op then holds the whole `[rows, vocab]` logits or
    their gradient, only one chunk's; after weft-autodiff,
    weft-sink-loss-logits moves each chunk's linear and loss next to its
    gradient, so the backward computes one chunk's logits at a time instead
    of saving them (Liger's fused linear cross-entropy, Apple's Cut
    Cross-Entropy).

    `chunks=0` picks the count from `budget`: the fewest chunks (rows split
    in halves) whose logits take at most 1/16 of the budget, so that one
    chunk's logits, their gradient and the recompute of the next fit beside
    the rest of the step, and no chunk under 64 rows (thinner GEMMs run far
    from the roofline); no budget leaves the loss whole. The count is
    recorded on the function as `weft.loss_chunks` (the memory report prints
    it). The training pipeline runs it before weft-autodiff.

    ```mlir
    %l = weft.linear %x, %w : (tensor<16x8xbf16>, tensor<100x8xbf16>) -> tensor<16x100xbf16>
    %c = weft.cross_entropy %l, %y : (tensor<16x100xbf16>, tensor<16xi64>) -> tensor<f32>
    // weft-opt --weft-chunk-loss="chunks=2" gives
    %x0, %x1 = weft.split %x {dim = 0 : i64, sizes = array<i64: 8, 8>} : ...
    %y0, %y1 = weft.split %y {dim = 0 : i64, sizes = array<i64: 8, 8>} : ...
    %l0 = weft.linear %x0, %w : (tensor<8x8xbf16>, tensor<100x8xbf16>) -> tensor<8x100xbf16>
    %c0 = weft.cross_entropy %l0, %y0, %y : (tensor<8x100xbf16>, tensor<8xi64>, tensor<16xi64>) -> tensor<f32>
    ... %c1 likewise; %c0, %c1 reshaped to tensor<1xf32>, added, and the sum
    reshaped to the tensor<f32> %c
    ```
  }];
  let options = [
    Option<"chunks", "chunks", "int64_t", "1",
           "row chunks of the loss: 1 leaves it whole, 0 picks from budget">,
    Option<"budget", "budget", "std::string", "\"\"",
           "the memory budget (a size) that chunks=0 picks the count from">,
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

def SinkLossLogitsPass : Pass<"weft-sink-loss-logits", "mlir::func::FuncOp"> {
  let summary = "Compute each loss's logits next to their gradient in the backward";
  let description = [{
    After weft-autodiff: the `linear` that makes a `cross_entropy_grad`'s
    logits, the forward `cross_entropy` reading them and the 0-d ops that sum
    the loss move right before the `cross_entropy_grad`, their order kept.
    The backward's seed is a constant, so nothing in it waits for the loss;
    the logits are then a temporary of the backward instead of a saved
    activation. With the loss in row chunks (weft-chunk-loss) one chunk's
    logits and their gradient live at a time, with no recompute: the
    forward's linear runs once, where the backward needs it. A chunk whose
    logits another non-scalar op reads before the gradient stays where it
    is. The training pipeline runs it after weft-autodiff when the loss is
    chunked.

    ```mlir
    %l0 = weft.linear %x0, %w ...
    %c0 = weft.cross_entropy %l0, %y0, %y ...
    %c = weft.add %c0, %c1 ...
    ... (the backward of the layers is later)
    %d0 = weft.cross_entropy_grad %one, %l0, %y0, %y ...
    // weft-opt --weft-sink-loss-logits gives
    ...
    %l0 = weft.linear %x0, %w ...
    %c0 = weft.cross_entropy %l0, %y0, %y ...
    %c = weft.add %c0, %c1 ...
    %d0 = weft.cross_entropy_grad %one, %l0, %y0, %y ...
    ```
  }];
  let dependentDialects = ["::weft::WeftDialect"];
}

def FoldLossConvertPass : Pass<"weft-fold-loss-convert", "mlir::func::FuncOp"> {
  let summary = "Let cross_entropy read bf16/f16 logits that were converted to f32 for it";
  let description = [{
    Under autocast a model's loss is `cross_entropy(convert(logits) : f32)`
    with bf16 logits (often through reshapes: `logits.view(-1, V).float()`).
    The loss reads the narrow logits instead, with an f32 result: the op
    computes in f32 and rounds once, so the result is the same, and neither
    the forward's f32 copy of the logits nor (after weft-autodiff, whose
    `cross_entropy_grad` then writes bf16 dlogits) the backward's f32
    gradient of `[rows, vocab]` and its convert exist. Reshapes between the
    convert and the loss are rebuilt on the narrow value. A convert with
    other users stays for them. The training pipeline runs it before
    weft-autodiff.

    ```mlir
    %f = weft.convert %lb : (tensor<8x100xbf16>) -> tensor<8x100xf32>
    %l = weft.cross_entropy %f, %y : (tensor<8x100xf32>, tensor<8xi64>) -> tensor<f32>
    // becomes
    %l = weft.cross_entropy %lb, %y : (tensor<8x100xbf16>, tensor<8xi64>) -> tensor<f32>
    ```
  }];
  let dependentDialects = ["::weft::WeftDialect"];
}

def NarrowPointwisePass : Pass<"weft-narrow-pointwise", "mlir::func::FuncOp"> {
  let summary = "Run a unary pointwise op between a widening and a narrowing convert on the narrow value";
  let description = [{
    Under autocast HF GPT-2 computes its GELU in f32: the bf16 output of a
    linear is converted to f32, the GELU runs, and the result is converted
    back to bf16 for the next GEMM (through views). Weft's pointwise ops
    compute in f32 and round once to their result type, so
    `convert(reshape*(op(reshape*(convert(x)))))` with `x` bf16 or f16, the
    middle f32, `op` unary pointwise (`isUnaryPointwise`, not a convert) and
    every value of the chain read once becomes `reshape(op(x))`: the same
    values, no f32 tensor between the converts (nor, after weft-autodiff, in
    the gradient), and `op` on its producer's shape, where
    weft-fuse-gemm-epilogue can take a GELU into the linear's epilogue. The
    training pipeline runs it before weft-autodiff.

    ```mlir
    %v = weft.reshape %u : (tensor<8192x3072xbf16>) -> tensor<8x1024x3072xbf16>
    %w = weft.convert %v : (tensor<8x1024x3072xbf16>) -> tensor<8x1024x3072xf32>
    %g = weft.gelu %w {approximate = "tanh"} : (tensor<8x1024x3072xf32>) -> tensor<8x1024x3072xf32>
    %r = weft.reshape %g : (tensor<8x1024x3072xf32>) -> tensor<8192x3072xf32>
    %b = weft.convert %r : (tensor<8192x3072xf32>) -> tensor<8192x3072xbf16>
    // becomes
    %b = weft.gelu %u {approximate = "tanh"} : (tensor<8192x3072xbf16>) -> tensor<8192x3072xbf16>
    ```
  }];
  let dependentDialects = ["::weft::WeftDialect"];
}

def BindArgumentsPass : Pass<"weft-bind-arguments", "mlir::ModuleOp"> {
  let summary = "Mark step arguments whose bytes the caller binds outside the arena";
  let description = [{
    Marks arguments of function `entry` with `weft.bound`: `which=params`
    the parameters (`weft.param`), `which=all` every tensor argument.
    Carried weight copies (`weft.copy_of`) stay in the arena: the runtime
    fills them from their master. Liveness then gives a bound argument no
    arena bytes, so weft-remat's budget and weft-plan-memory's arena count
    only what the step allocates; the package records the buffer as bound
    and the runtime reads the caller's memory in place
    (weft_step_bind_device). A framework that owns its parameters (the
    torch backend) so keeps no copy of them.

    ```mlir
    func.func @f_step(%w: tensor<8x8xf32> {weft.param}, %x: tensor<4x8xf32>) -> ...
    // weft-opt --weft-bind-arguments="entry=f_step which=params"
    func.func @f_step(%w: tensor<8x8xf32> {weft.bound, weft.param}, %x: tensor<4x8xf32>) -> ...
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"\"", "The step function">,
    Option<"which", "which", "std::string", "\"params\"",
           "params (weft.param arguments) | all (every tensor argument)">,
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

def AlignReshapesPass : Pass<"weft-align-reshapes", "mlir::func::FuncOp"> {
  let summary = "Move reshapes across pointwise ops into the shape of their kernel";
  let description = [{
    weft-fuse-elementwise groups ops of one iteration domain, so a row-major
    reshape between a fused producer and a pointwise consumer keeps them in
    two kernels, and the value between them (often f32) goes through memory:
    HF GPT-2 under autocast computes its GELU in f32, views it as
    [tokens, 3072] and converts it to bf16 for the next GEMM. A fusible op of
    one operand and one result of the same shape, without row statistics or
    random draws, computes the same values on any view of its operand, so:
    `op(reshape(x))` with x from a fusible op and no fusible reader of op on
    its own shape becomes `reshape(op(x))` (op joins x's kernel), and `reshape(op(x))` with x from a GEMM, attention or
    an argument, op's only reader the reshape and a fusible reader of the
    reshape becomes `op(reshape(x))` (op joins the reader's kernel). Values
    are unchanged; reshapes left unread are erased.

    ```mlir
    %g = weft.gelu %u : (tensor<8x1024x3072xf32>) -> tensor<8x1024x3072xf32>
    %v = weft.reshape %g : (tensor<8x1024x3072xf32>) -> tensor<8192x3072xf32>
    %b = weft.convert %v : (tensor<8192x3072xf32>) -> tensor<8192x3072xbf16>
    // becomes
    %g = weft.gelu %u : (tensor<8x1024x3072xf32>) -> tensor<8x1024x3072xf32>
    %c = weft.convert %g : (tensor<8x1024x3072xf32>) -> tensor<8x1024x3072xbf16>
    %b = weft.reshape %c : (tensor<8x1024x3072xbf16>) -> tensor<8192x3072xbf16>
    ```
  }];
  let dependentDialects = ["::weft::WeftDialect"];
}

def RecomputeWideningPass : Pass<"weft-recompute-widening", "mlir::func::FuncOp"> {
  let summary = "Backward kernels widen a saved narrow value themselves";
  let description = [{
    Under autocast a bf16 value is often converted to f32 in the forward and
    read by a backward op too (GPT-2's GELU reads its bf16 pre-activation
    widened to f32, and so does its gradient). Saved as read, the f32 copy
    is written by the forward and read by the backward: twice the bytes of
    the bf16 value it came from, both times. For each forward unary
    pointwise op whose result takes more bytes than its operand
    (`isUnaryPointwise`), the backward readers that fuse
    (`getFusionDomain`) read a clone of it placed before the first of them,
    which weft-fuse-elementwise takes into their kernel: the backward reads
    the narrow value and the wide one never leaves the forward's kernel.
    Values are unchanged (the clone computes the same thing).

    ```mlir
    %w = weft.convert %u : (tensor<8x1024x3072xbf16>) -> tensor<8x1024x3072xf32>
    %g = weft.gelu %w {approximate = "tanh"} : ...
    ...
    %du = weft.gelu_grad %dy, %w {approximate = "tanh"} : ...
    // becomes
    %w = weft.convert %u : (tensor<8x1024x3072xbf16>) -> tensor<8x1024x3072xf32>
    %g = weft.gelu %w {approximate = "tanh"} : ...
    ...
    %w2 = weft.convert %u : (tensor<8x1024x3072xbf16>) -> tensor<8x1024x3072xf32>
    %du = weft.gelu_grad %dy, %w2 {approximate = "tanh"} : ...
    ```
  }];
  let dependentDialects = ["::weft::WeftDialect"];
}

def FuseElementwisePass : Pass<"weft-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Group pointwise, normalization and row-reduction ops into weft.fused kernels";
  let description = [{
    Every op that `getFusionDomain` accepts (pointwise ops, layer_norm,
    rms_norm, last-dim softmax, cross_entropy, AdamW and their gradients,
    with operands a row-wise kernel can index) joins a group; a consumer
    joins its producer's group when they share the iteration domain, the
    value between them is domain-shaped (not broadcast), they carry the same
    `weft.layer` and both are forward or both backward (the liveness rule's
    backward start), and the merged group has no path out of it and back in
    through an op outside it (which would make the group a cycle). A
    pointwise op (no row statistics, no random draws) also joins a group of
    such ops that reads one of its domain-shaped operands (siblings: SwiGLU's
    backward reads dh in two), under the same rules. GEMMs,
    attention and shape ops never join, so no group spans them. A group's
    inputs are the values its ops read from outside, its results the values
    used outside it; the block is then re-sorted topologically (each op at
    the position of its last member, ties in the old order), which succeeds
    because the groups are acyclic. The typical groups: bias + GELU,
    dropout + residual add + LayerNorm, RMSNorm (+ residual), cross-entropy
    and its gradient, LayerNorm/RMSNorm/GELU gradients with the gradient
    accumulation around them, and each AdamW update.
    Unless `bias-grad=false`, it then runs weft-fuse-bias-grad's rewrite:
    each linear's weight-gradient matmul and bias-gradient reduce_sum become
    one GEMM group (the bias-gradient epilogue of cuBLASLt).

    ```mlir
    %d = weft.dropout %x, %seed {p = 0.1 : f64, weft.rng_id = 2 : i64} : ...
    %r = weft.add %res, %d : ...
    %y = weft.layer_norm %r, %g, %b : ...
    // becomes
    %r, %y = weft.fused %x, %seed, %res, %g, %b {kind = "dropout+add+layer_norm"} : ... {
    ^bb0(...):
      ...
      weft.yield %r1, %y1 : ...
    }
    ```
  }];
  let options = [
    Option<"biasGrad", "bias-grad", "bool", "true",
           "Also group each linear's dW matmul with its db reduce_sum "
           "(weft-fuse-bias-grad)">,
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

def FuseBiasGradPass : Pass<"weft-fuse-bias-grad", "mlir::func::FuncOp"> {
  let summary = "Fold linear bias gradients into their weight-gradient GEMM";
  let description = [{
    A linear layer's backward computes dW = dY^T X (`weft.matmul
    {transpose_a}` of dY flattened to [tokens, n]) and db = dY summed over
    its leading dims (`weft.reduce_sum`). cuBLASLt's bias-gradient epilogue
    (CUBLASLT_EPILOGUE_BGRADB on the column-major problem; our `bgrad_a`)
    produces db while the GEMM streams dY, so this pass groups each such
    pair (`isBiasGradPair`: bf16 or f16, 2-d operands, the exact tensor or its
    flattening) into one `weft.fused` of kind `matmul+reduce_sum` yielding
    (dW, db), placed where the earlier of the two ran. Before memory
    planning, so liveness sees db written with dW. The group runs its body,
    so the reference interpreter's values are unchanged; weft-build-plan
    lowers it to one `weft_plan.gemm` with epilogue `bgrad_a`.

    ```mlir
    %a = weft.reshape %dy : (tensor<1x256x1024xbf16>) -> tensor<256x1024xbf16>
    %dw = weft.matmul %a, %x {transpose_a} : (tensor<256x1024xbf16>, tensor<256x256xbf16>) -> tensor<1024x256xbf16>
    %db = weft.reduce_sum %dy {dims = array<i64: 0, 1>} : (tensor<1x256x1024xbf16>) -> tensor<1024xbf16>
    // becomes
    %dw, %db = weft.fused %dy, %x {kind = "matmul+reduce_sum"} : ... {
    ^bb0(%g: tensor<1x256x1024xbf16>, %i: tensor<256x256xbf16>):
      %a2 = weft.reshape %g : ...
      %w = weft.matmul %a2, %i {transpose_a} : ...
      %s = weft.reduce_sum %g {dims = array<i64: 0, 1>} : ...
      weft.yield %w, %s : ...
    }
    ```
  }];
  let dependentDialects = ["::weft::WeftDialect"];
}

def FuseGemmEpiloguePass : Pass<"weft-fuse-gemm-epilogue", "mlir::func::FuncOp"> {
  let summary = "Fold tanh GELU and its gradient into their GEMMs (cuBLASLt epilogues)";
  let description = [{
    Forward: `u = weft.linear x, w[, b]` read by `weft.gelu {approximate =
    "tanh"}` becomes one `weft.fused` of kind `linear+gelu`, one cuBLASLt
    GEMM with D = gelu(x w^T + b): GELU_BIAS (GELU without a bias), or,
    when anything else reads u (the backward's gelu_grad), GELU_AUX_BIAS
    (GELU_AUX) writing u as the aux matrix, so the group yields (gelu(u), u).
    Backward: `dg = weft.matmul dy, w` whose only reader is `weft.gelu_grad
    dg, u {approximate = "tanh"}` becomes one group of kind
    `matmul+gelu_grad` taking (dy, w, u), cuBLASLt's DGELU epilogue reading
    u: du is written from the accumulator and dg is never a tensor.

    A pair is left alone, with a debug note (`-debug-only=weft-fuse-gemm-epilogue`)
    saying why, when it does not fit the epilogue (`isLinearGeluPair`,
    `isDGeluPair`): an exact (erf) GELU, element types other than bf16 or
    f16 or mixed, an aux matrix whose row length is not a multiple of 8
    (cuBLASLt's aux leading dimension), a batched or transposed-a matmul,
    or a dg that something else reads. Run before weft-fuse-elementwise
    (which would take the gelu into a kernel) and before remat and memory
    planning, which then see each group as one op with the GEMM's workspace.
    The group runs its body, so the reference interpreter's values are those
    of the unfused ops.

    ```mlir
    %u = weft.linear %x, %w, %b : (tensor<256x256xbf16>, tensor<1024x256xbf16>, tensor<1024xbf16>) -> tensor<256x1024xbf16>
    %g = weft.gelu %u {approximate = "tanh"} : (tensor<256x1024xbf16>) -> tensor<256x1024xbf16>
    // (u also read by the backward) becomes
    %g, %u = weft.fused %x, %w, %b {kind = "linear+gelu"} : ... {
    ^bb0(%a: tensor<256x256xbf16>, %c: tensor<1024x256xbf16>, %d: tensor<1024xbf16>):
      %0 = weft.linear %a, %c, %d : ...
      %1 = weft.gelu %0 {approximate = "tanh"} : ...
      weft.yield %1, %0 : tensor<256x1024xbf16>, tensor<256x1024xbf16>
    }
    ```
  }];
  let dependentDialects = ["::weft::WeftDialect"];
}

def AttentionDqPass : Pass<"weft-attention-dq", "mlir::func::FuncOp"> {
  let summary = "Chooses how the GPU attention backward forms dQ";
  let description = [{
    Sets (`mode=atomic`) or clears (`mode=deterministic`) `atomic_dq` on every
    `weft.attention_grad`: with it the Hopper backward's dK/dV kernel also
    forms dQ and adds it with f32 atomics into the op's workspace
    (FlashAttention-3's non-deterministic dQ; the workspace grows by the f32
    accumulator), without it a dQ kernel recomputes S and dP per query block
    and writes dQ once (bitwise reproducible). Values are unchanged.
  }];
  let options = [
    Option<"mode", "mode", "std::string", "\"deterministic\"",
           "deterministic | atomic">,
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

def FoldAttentionLayoutPass : Pass<"weft-fold-attention-layout", "mlir::func::FuncOp"> {
  let summary = "Attention reads [b, s, h, d] operands in place of transposes";
  let description = [{
    A linear's output reshaped to heads is `[b, s, h, d]`; SDPA's convention
    transposes it to `[b, h, s, d]` for attention and transposes the result
    back, and the gradient does the same in reverse: on the GPU each is a copy.
    For each `weft.attention` / `weft.attention_grad` whose q, k and v are all
    `weft.transpose {perm = [0, 2, 1, 3]}`, this pass reads the transposes'
    sources and sets `seq_major`; out, dout and the gradients are transposed
    at the op's boundary, where the transposes then cancel (the transpose
    folder) and the unused ones go. Values are unchanged (the reference
    interpreter runs both layouts).

    ```mlir
    %q = weft.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x128x8x64xbf16>) -> tensor<1x8x128x64xbf16>
    // ... %k, %v likewise
    %o = weft.attention %q, %k, %v {causal} : ...
    %y = weft.transpose %o {perm = array<i64: 0, 2, 1, 3>} : ...
    // becomes
    %y = weft.attention %x, %xk, %xv {causal, seq_major} : (tensor<1x128x8x64xbf16>, ...) -> tensor<1x128x8x64xbf16>
    ```
  }];
  let dependentDialects = ["::weft::WeftDialect"];
}

def FuseAttentionPass : Pass<"weft-fuse-attention", "mlir::func::FuncOp"> {
  let summary = "Replace the unfused attention chain with weft.attention";
  let description = [{
    Recognises matmul(Q, K^T) -> scale -> optional causal_mask -> softmax(last
    dim) -> optional dropout -> matmul(P, V) on [b, h, s, d] operands, GQA by
    repeated kv heads included, and replaces it with `weft.attention` carrying
    the dropout's `weft.rng_id`. Chains that differ in scale, mask, softmax
    dimension or order, or whose intermediate values have other users, stay.

    K^T is `transpose_b` or a `weft.transpose` of K's last two dims. K and V
    built by reshape/concat from `[b, hkv, s, d]` so that q head `i` reads kv
    head `i / (hq / hkv)` (torch's repeat_interleave) become GQA/MQA operands;
    a repetition in another order stays unfused. The mask must fill with
    -inf. The scale keeps results equal (FuseAttention.h): a factor exact in
    f32 becomes `scale`; one within an f64 ulp of 1/sqrt(head_dim) becomes
    the op's default (no attribute); in f32/f16/bf16 IR another factor is
    rounded to f32; in f64 IR such a chain stays.

    ```mlir
    // head_dim 8: the factor is 1/sqrt(8), the op's default scale
    %s = weft.matmul %q, %k {transpose_b} : (...) -> tensor<1x4x16x16xf32>
    %t = weft.scale %s {value = 0.35355339059327373 : f64} : ...
    %m = weft.causal_mask %t : ...
    %p = weft.softmax %m {dim = -1 : i64} : ...
    %o = weft.matmul %p, %v : ...
    // becomes
    %o = weft.attention %q, %k, %v {causal} : ...
    ```
  }];
  let dependentDialects = ["::weft::WeftDialect"];
}

def TileAttentionPass : Pass<"weft-tile-attention", "mlir::ModuleOp"> {
  let summary = "Rewrite attention and attention_grad into the FlashAttention-2 tiled nest";
  let description = [{
    Target-neutral: `weft.attention` and `weft.attention_grad` become loop
    nests (scf, tensor, linalg, arith, math) over query and key blocks with an
    online softmax (running max and sum in f32), causal block skipping and
    diagonal masking, GQA/MQA by mapping each q head to its kv head, Philox
    dropout by the rule, the forward saving the row log-sum-exp and the
    backward recomputing P and producing dQ, dK, dV. Any sequence length; the
    tile sizes are options and are recorded on the outer loops as
    `weft.tile = {block_q, block_k, kind}`, the configuration GPU kernel
    builders read.
  }];
  let options = [
    Option<"blockQ", "block-q", "int64_t", "64", "Query rows per tile">,
    Option<"blockK", "block-k", "int64_t", "64", "Key rows per tile">,
  ];
  let dependentDialects = ["::weft::WeftDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect"];
}

#endif // WEFT_TRANSFORMS_PASSES_TD
