// weft-train-pipeline: weft-fold-loss-convert -> [weft-chunk-loss] ->
// weft-autodiff [-> weft-sink-loss-logits] (or, with
// inference, weft-inference-step) -> [weft-attention-dq] ->
// [weft-fold-attention-layout] ->
// [weft-fuse-gemm-epilogue] -> [weft-fuse-elementwise] ->
// [weft-bind-arguments] -> weft-remat -> weft-plan-memory ->
// weft-training-report, one definition for weft-opt's named pipeline and
// weft-compile --train / --inference.
#include "weft/Pipelines.h"

#include "weft/Pipelines/Passes.h"
#include "weft/Support/ByteSize.h"
#include "weft/Partition/Passes.h"
#include "weft/Partition/Sharding.h"
#include "weft/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace weft;

std::string weft::getStepFunctionName(StringRef entry) {
  return (entry + "_step").str();
}

/// weft-autodiff and, with a grid, the partition of its step.
static LogicalResult addAutodiffAndPartition(
    OpPassManager &pm, const TrainingPipelineOptions &options, StringRef step,
    std::optional<int64_t> gemmWorkspace,
    function_ref<LogicalResult(const Twine &)> emitError) {
  AutodiffPassOptions autodiff;
  autodiff.entry = options.entry;
  autodiff.optimizer = options.optimizer;
  autodiff.lr = options.lr;
  autodiff.weightDecay = options.weightDecay;
  autodiff.gemmWorkspace = gemmWorkspace.value_or(0);
  autodiff.weightCopies = options.weightCopies;
  autodiff.convertedParams.assign(options.convertedParams.begin(),
                                  options.convertedParams.end());
  if (!options.grid.empty()) {
    // GQA kv heads that tp exceeds are replicated in the forward, before
    // autodiff (its gradient then sums the replicas).
    std::string error;
    std::optional<partition::GridSpec> grid =
        partition::parseGridSpec(options.grid, error);
    if (!grid)
      return emitError(error);
    int64_t tp = grid->tensorParallelSize();
    if (tp > 1) {
      ExpandKvHeadsPassOptions expandOptions;
      expandOptions.tp = tp;
      pm.addNestedPass<func::FuncOp>(createExpandKvHeadsPass(expandOptions));
    }
  }
  // The loss reads bf16 logits itself, so autodiff gives it a bf16 gradient.
  pm.addNestedPass<func::FuncOp>(createFoldLossConvertPass());
  // A GELU computed in f32 between converts runs on the bf16 value itself.
  pm.addNestedPass<func::FuncOp>(createNarrowPointwisePass());
  // On one GPU, the lm_head and its loss over row chunks: autodiff then
  // writes each chunk's gradient apart (a grid splits the vocabulary instead).
  if (options.lossChunks != 1 && options.grid.empty()) {
    ChunkLossPassOptions chunk;
    chunk.chunks = options.lossChunks;
    chunk.budget = options.memoryBudget;
    pm.addNestedPass<func::FuncOp>(createChunkLossPass(chunk));
  }
  pm.addPass(createAutodiffPass(autodiff));
  // Each chunk's logits made where the backward reads them, not saved.
  if (options.lossChunks != 1 && options.grid.empty())
    pm.addNestedPass<func::FuncOp>(createSinkLossLogitsPass());
  if (!options.grid.empty()) {
    PlacePassOptions place;
    place.gridSpec = options.grid;
    place.sequenceParallel = options.sequenceParallel;
    place.funcName = step.str();
    pm.addPass(createPlacePass(place));
    PartitionPassOptions partition;
    partition.sequenceParallel = options.sequenceParallel;
    pm.addPass(createPartitionPass(partition));
    pm.addNestedPass<func::FuncOp>(createHoistCollectivesPass());
    if (options.coalesceCollectives)
      pm.addNestedPass<func::FuncOp>(createCoalesceCollectivesPass());
  } else if (options.sequenceParallel) {
    return emitError("sequence-parallel needs a grid (e.g. grid=tp=2)");
  }
  return success();
}

LogicalResult weft::buildTrainingPipeline(
    OpPassManager &pm, const TrainingPipelineOptions &options,
    function_ref<LogicalResult(const Twine &)> emitError) {
  if (options.entry.empty())
    return emitError("weft-train-pipeline needs entry=NAME, the forward "
                     "function returning the loss");
  // The passes' own parsers (PassOptions.h), so a typo is an option error
  // before anything runs.
  if (!parseOptimizer(options.optimizer))
    return emitError("optimizer must be none or adamw, got '" +
                     options.optimizer + "'");
  std::optional<RematPolicy> policy = parseRematPolicy(options.remat);
  if (!policy)
    return emitError("remat must be one of none, full, selective, block, "
                     "uniform, budget; got '" +
                     options.remat + "'");
  if (!parseRematWeightCopies(options.rematWeightCopies))
    return emitError("remat-weight-copies must be keep, recompute or auto; "
                     "got '" + options.rematWeightCopies + "'");
  // weight-copies is typed (PassOptions.h): its parser took only known words.
  if (options.weightCopies != WeightCopies::Converted && options.optimizer != "adamw")
    return emitError("weight-copies=" + stringifyWeightCopies(options.weightCopies) +
                     " needs optimizer=adamw (its updates write the copies); got optimizer '" +
                     options.optimizer + "'");
  if (options.bindArguments != "none" && options.bindArguments != "params" &&
      options.bindArguments != "all")
    return emitError("bind-arguments must be none, params or all; got '" +
                     options.bindArguments + "'");
  if (options.lossChunks < 0)
    return emitError("loss-chunks must be 0 (from the memory budget) or at least 1, got " +
                     Twine(options.lossChunks));
  if (options.lossChunks != 1 && options.inference)
    return emitError("loss-chunks=" + Twine(options.lossChunks) +
                     " chunks a training step's loss; inference has none to chunk");
  if (options.rematLayers < 1)
    return emitError("remat-layers must be at least 1, got " +
                     Twine(options.rematLayers));
  std::optional<int64_t> budget;
  if (!options.memoryBudget.empty()) {
    budget = parseByteSize(options.memoryBudget);
    if (!budget)
      return emitError("memory-budget '" + options.memoryBudget +
                       "' is not a size: a number with an optional unit B, "
                       "KB, MB, GB, TB, KiB, MiB, GiB or TiB");
  }
  if (*policy == RematPolicy::Budget && !budget)
    return emitError("remat=budget needs a memory-budget");
  std::optional<int64_t> gemmWorkspace;
  if (!options.gemmWorkspace.empty()) {
    gemmWorkspace = parseByteSize(options.gemmWorkspace);
    if (!gemmWorkspace)
      return emitError("gemm-workspace '" + options.gemmWorkspace +
                       "' is not a size: a number with an optional unit B, "
                       "KB, MB, GB, TB, KiB, MiB, GiB or TiB");
  }

  std::string step = getStepFunctionName(options.entry);
  if (options.inference) {
    // The forward is the step: nothing to differentiate, update or recompute.
    if (options.optimizer != "none")
      return emitError("inference packages the forward alone: optimizer must be none, got '" +
                       options.optimizer + "'");
    if (*policy != RematPolicy::None)
      return emitError("inference keeps no activations for a backward: remat must be none, "
                       "got '" + options.remat + "'");
    if (!options.grid.empty() || options.sequenceParallel)
      return emitError("inference packages run on one GPU: drop grid='" + options.grid +
                       "' and sequence-parallel");
    InferenceStepPassOptions inference;
    inference.entry = options.entry;
    inference.gemmWorkspace = gemmWorkspace.value_or(0);
    pm.addPass(createInferenceStepPass(inference));
  } else {
    if (failed(addAutodiffAndPartition(pm, options, step, gemmWorkspace, emitError)))
      return failure();
  }
  if (options.attentionDq != "deterministic") {
    AttentionDqPassOptions dq;
    dq.mode = options.attentionDq;
    pm.addNestedPass<func::FuncOp>(createAttentionDqPass(dq));
  }
  if (options.foldAttentionLayout)
    pm.addNestedPass<func::FuncOp>(createFoldAttentionLayoutPass());

  // GEMM epilogue groups first: weft-fuse-elementwise would take the gelu and
  // gelu_grad into its kernels. Like the others, they form before remat and
  // planning, which see one op with the GEMM's workspace (dg never a buffer).
  if (options.fuseGemmEpilogue)
    pm.addNestedPass<func::FuncOp>(createFuseGemmEpiloguePass());

  // Groups form on the whole step (forward and backward apart) so that remat
  // recomputes and the planner places groups, never their intermediates.
  if (options.fuseElementwise) {
    pm.addNestedPass<func::FuncOp>(createRecomputeWideningPass());
    pm.addNestedPass<func::FuncOp>(createAlignReshapesPass());
    pm.addNestedPass<func::FuncOp>(createFuseElementwisePass());
  }

  // Before remat and planning: both then count only the arena's bytes.
  if (options.bindArguments != "none") {
    BindArgumentsPassOptions bind;
    bind.entry = step;
    bind.which = options.bindArguments;
    pm.addPass(createBindArgumentsPass(bind));
  }

  // A fixed policy gets no budget: the planned peak is checked against it
  // after planning (weft-training-report), where the arena's peak is known.
  RematPassOptions remat;
  remat.entry = step;
  remat.policy = options.remat;
  remat.numLayers = options.rematLayers;
  remat.weightCopies = options.rematWeightCopies;
  if (*policy == RematPolicy::Budget)
    remat.budget = std::to_string(*budget);
  pm.addPass(createRematPass(remat));
  // On the final schedule: what remat recomputes is what the GEMMs read.
  if (!options.grid.empty()) {
    CollectiveMatmulPassOptions matmul;
    matmul.chunks = options.collectiveChunks;
    matmul.sides = options.collectiveMatmulSides;
    matmul.localFirst = options.collectiveLocalFirst;
    matmul.engine = options.collectiveEngine;
    pm.addNestedPass<func::FuncOp>(createCollectiveMatmulPass(matmul));
    if (options.fillCollectiveWaits) {
      FillCollectiveWaitsPassOptions fill;
      fill.budget = budget.value_or(-1);
      pm.addNestedPass<func::FuncOp>(createFillCollectiveWaitsPass(fill));
    }
  }

  PlanMemoryPassOptions plan;
  plan.entry = step;
  pm.addPass(createPlanMemoryPass(plan));

  TrainingReportPassOptions report;
  report.entry = step;
  report.budget = budget.value_or(-1);
  report.report = options.memoryReport;
  report.remat = options.remat;
  pm.addPass(createTrainingReportPass(report));
  return success();
}

void weft::registerWeftPipelines() {
  registerTrainingReportPass();
  mlir::registerPassPipeline(
      "weft-train-pipeline",
      "The training step of a forward function: weft-autodiff, weft-remat, "
      "weft-plan-memory, then the memory budget check and report "
      "(weft-training-report)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> emitError) {
        TrainingPipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        return buildTrainingPipeline(pm, options, [&](const Twine &message) {
          return emitError("weft-train-pipeline: " + message);
        });
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> printOptions) {
        printOptions(TrainingPipelineOptions());
      });
}
