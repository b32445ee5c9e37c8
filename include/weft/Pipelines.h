// Named pipelines shared by weft-opt and weft-compile (their drivers:
// weft/Tools/Drivers.h), and
// --weft-diff-each-pass, the instrumentation that runs the reference
// interpreter after every pass of a pipeline and names the first pass that
// changed a result.
#ifndef WEFT_PIPELINES_H
#define WEFT_PIPELINES_H

#include "weft/Support/ByteSize.h"
#include "weft/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
class PassInstrumentation;
} // namespace mlir

namespace weft {

//===----------------------------------------------------------------------===//
// weft-train-pipeline
//===----------------------------------------------------------------------===//

/// Options of the training pipeline: weft-autodiff -> [weft-fuse-elementwise]
/// -> weft-remat -> weft-plan-memory -> weft-training-report. weft-compile's
/// flags of the same names fill the same struct and take their defaults from
/// it; an option that a pass also has takes the pass's default (Passes.td),
/// so each default is written once.
struct TrainingPipelineOptions
    : public mlir::PassPipelineOptions<TrainingPipelineOptions> {
  Option<std::string> entry{
      *this, "entry", llvm::cl::desc("Forward function returning the loss"),
      llvm::cl::init(AutodiffPassOptions().entry)};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("none | adamw"),
                                llvm::cl::init(AutodiffPassOptions().optimizer)};
  Option<double> lr{*this, "lr", llvm::cl::desc("AdamW learning rate"),
                    llvm::cl::init(AutodiffPassOptions().lr)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("AdamW weight decay"),
                             llvm::cl::init(AutodiffPassOptions().weightDecay)};
  Option<std::string> memoryBudget{
      *this, "memory-budget",
      llvm::cl::desc("Bytes the planned step may use (e.g. 96MiB, 1.5GB, "
                     "4096); with remat=budget weft-remat meets it, otherwise "
                     "a planned peak above it is an error")};
  Option<int64_t> lossChunks{
      *this, "loss-chunks",
      llvm::cl::desc("Row chunks of the lm_head linear + cross_entropy "
                     "(weft-chunk-loss): 1 leaves the loss whole, 0 picks "
                     "from memory-budget (whole without one)"),
      llvm::cl::init(ChunkLossPassOptions().chunks)};
  Option<std::string> bindArguments{
      *this, "bind-arguments",
      llvm::cl::desc("none | params | all: step arguments the caller binds "
                     "outside the arena (weft-bind-arguments), which the "
                     "runtime reads in place; budget and arena then leave "
                     "them out"),
      llvm::cl::init("none")};
  Option<std::string> remat{
      *this, "remat",
      llvm::cl::desc("none | full | selective | block | uniform | budget"),
      llvm::cl::init(RematPassOptions().policy)};
  Option<int64_t> rematLayers{*this, "remat-layers",
                              llvm::cl::desc("Layers for remat=block/uniform"),
                              llvm::cl::init(RematPassOptions().numLayers)};
  Option<std::string> rematWeightCopies{
      *this, "remat-weight-copies",
      llvm::cl::desc("keep | recompute | auto: the bf16 copies of the f32 "
                     "masters the backward reads (weft-remat weight-copies)"),
      llvm::cl::init(RematPassOptions().weightCopies)};
  Option<WeightCopies> weightCopies{
      *this, "weight-copies",
      llvm::cl::desc("converted | carried | split: the bf16 copies of the f32 "
                     "masters converted in each step, carried between steps and "
                     "written by the AdamW updates, or the masters' own bf16 "
                     "high halves (weft-autodiff weight-copies)"),
      llvm::cl::init(AutodiffPassOptions().weightCopies),
      llvm::cl::values(
          clEnumValN(WeightCopies::Converted, "converted",
                     "converted from the masters inside each step"),
          clEnumValN(WeightCopies::Carried, "carried",
                     "step arguments written by each AdamW update"),
          clEnumValN(WeightCopies::Split, "split",
                     "the masters' bf16 high halves, low halves in i16"))};
  Option<std::string> memoryReport{
      *this, "memory-report",
      llvm::cl::desc("Write the step's memory and FLOP report as JSON here, or, for "
                     "a path ending in .html, the memory plan drawn as a page")};
  Option<bool> fuseElementwise{
      *this, "fuse-elementwise",
      llvm::cl::desc("Group pointwise, norm and row-reduction ops into "
                     "weft.fused kernels (weft-fuse-elementwise) before "
                     "weft-remat, which then decides on groups"),
      llvm::cl::init(false)};
  Option<bool> fuseGemmEpilogue{
      *this, "fuse-gemm-epilogue",
      llvm::cl::desc("Fold each linear's tanh gelu and each data-gradient "
                     "matmul's tanh gelu_grad into the GEMM as cuBLASLt GELU "
                     "epilogues (weft-fuse-gemm-epilogue), before the "
                     "elementwise fusion and remat"),
      llvm::cl::init(false)};
  ListOption<int64_t> convertedParams{
      *this, "converted-params",
      llvm::cl::desc("With weight-copies=carried: parameters (weft.param "
                     "arguments, from 0) whose copies stay converted")};
  Option<bool> foldAttentionLayout{
      *this, "fold-attention-layout",
      llvm::cl::desc("Let attention read and write [b, s, h, d] tensors in "
                     "place of the transposes around it "
                     "(weft-fold-attention-layout), before fusion"),
      llvm::cl::init(false)};
  Option<std::string> attentionDq{
      *this, "attention-dq",
      llvm::cl::desc("How the GPU attention backward forms dQ (weft-attention-dq "
                     "after autodiff): deterministic (a dQ kernel per query block) "
                     "or atomic (the dK/dV kernel adds it with f32 atomics)"),
      llvm::cl::init("deterministic")};
  Option<std::string> grid{
      *this, "grid",
      llvm::cl::desc("Partition the step over a device grid (tp=N or "
                     "dp=M,tp=N: weft-place, then weft-partition) right after "
                     "weft-autodiff; empty: one GPU")};
  Option<bool> sequenceParallel{
      *this, "sequence-parallel",
      llvm::cl::desc("With grid: Megatron-LM sequence parallelism "
                     "(weft-place / weft-partition sequence-parallel)"),
      llvm::cl::init(false)};
  Option<bool> coalesceCollectives{
      *this, "coalesce-collectives",
      llvm::cl::desc("With grid: reduce the latency-bound all-reduces (norm "
                     "and bias gradients under sequence parallelism) as one "
                     "bucket (weft-coalesce-collectives)"),
      llvm::cl::init(true)};
  Option<bool> fillCollectiveWaits{
      *this, "fill-collective-waits",
      llvm::cl::desc("With grid: move weight-gradient GEMMs behind the "
                     "collectives nothing else hides "
                     "(weft-fill-collective-waits)"),
      llvm::cl::init(true)};
  Option<int64_t> collectiveChunks{
      *this, "collective-chunks",
      llvm::cl::desc("With grid: chunks of each collective matmul "
                     "(weft-collective-matmul): -1 chooses by the cost model, "
                     "0 turns it off"),
      llvm::cl::init(-1)};
  Option<std::string> collectiveMatmulSides{
      *this, "collective-matmul-sides",
      llvm::cl::desc("With grid: which collectives weft-collective-matmul "
                     "chunks: both, gather or scatter"),
      llvm::cl::init("both")};
  Option<std::string> collectiveLocalFirst{
      *this, "collective-local-first",
      llvm::cl::desc("With grid: all-gathers before GEMMs run beside the "
                     "GEMM's own rank block (weft-collective-matmul "
                     "local-first): off, auto or on"),
      llvm::cl::init("auto")};
  Option<std::string> collectiveEngine{
      *this, "collective-engine",
      llvm::cl::desc("With grid: what will run the all-gathers (weft-run "
                     "--collectives), for weft-collective-matmul's cost "
                     "model: nccl or copy-engine"),
      llvm::cl::init("nccl")};
  Option<std::string> gemmWorkspace{
      *this, "gemm-workspace",
      llvm::cl::desc("cuBLASLt workspace cap (e.g. 32MiB): every linear / "
                     "matmul of the step owns a workspace of at most this "
                     "size, planned in the arena for its schedule index "
                     "(weft-compile --emit=package: 32MiB by default)")};
  Option<bool> inference{
      *this, "inference",
      llvm::cl::desc("Package the forward itself (weft-inference-step in "
                     "place of weft-autodiff): the step returns the entry's "
                     "outputs; optimizer none, remat none, one GPU"),
      llvm::cl::init(false)};
};

/// The name of the step function the pipeline builds from `entry`.
std::string getStepFunctionName(llvm::StringRef entry);

/// Appends the pipeline to `pm` (anchored on builtin.module). Checks every
/// option first and reports a bad one through `emitError`, adding nothing.
mlir::LogicalResult buildTrainingPipeline(
    mlir::OpPassManager &pm, const TrainingPipelineOptions &options,
    llvm::function_ref<mlir::LogicalResult(const llvm::Twine &)> emitError);

/// Registers "weft-train-pipeline" and the weft-training-report pass for
/// weft-opt's --pass-pipeline and --<name> flags.
void registerWeftPipelines();

//===----------------------------------------------------------------------===//
// --weft-diff-each-pass
//===----------------------------------------------------------------------===//

struct DiffEachPassOptions {
  /// Functions to compare. Empty: the first function with a body, and every
  /// function a pass adds later (compared from the pass that created it on).
  std::vector<std::string> entries;
  /// Arguments of the first compared function (keys arg<i>, as weft-run
  /// reads them); the other functions get seeded random arguments.
  std::string inputsFile;
  uint64_t seed = 0;
  /// Tolerance of f64 results on the normwise relative error
  /// max_i |got_i - ref_i| / max_i |ref_i|. Narrower float results use
  /// max(rtol, 16 * unit roundoff of their type): f32 9.5e-7, f16 7.8e-3,
  /// bf16 6.3e-2 (moving one rounding of an intermediate of that type moves
  /// a result by a few units). Integer and i1 results compare exactly.
  double rtol = 1e-12;
};

/// What the instrumentation found, shared with the tool that runs the pass
/// manager (instrumentation hooks cannot fail a pass).
class DiffEachPassStatus {
public:
  /// A pass changed a result, or a compared function could not be run.
  bool failed() const { return hasFailed.load(); }
  void setFailed() { hasFailed.store(true); }
  /// Names in `entries` that no IR in any run contained.
  std::vector<std::string>
  getUnseenEntries(const std::vector<std::string> &entries) const;
  void markSeen(llvm::StringRef name);

private:
  std::atomic<bool> hasFailed{false};
  mutable std::mutex mutex;
  std::set<std::string> seen;
};

/// The instrumentation itself. It disables the context's multithreading
/// (nested passes then run one function at a time, and it may run the
/// interpreter between them).
std::unique_ptr<mlir::PassInstrumentation>
createDiffEachPassInstrumentation(DiffEachPassOptions options,
                                  std::shared_ptr<DiffEachPassStatus> status);

/// Registers --weft-diff-each-pass, --weft-diff-entry, --weft-diff-inputs,
/// --weft-diff-seed and --weft-diff-rtol (call before parsing the command
/// line, as registerPassManagerCLOptions).
void registerDiffEachPassCLOptions();
/// The --help category of those options.
llvm::cl::OptionCategory &getDiffEachPassCategory();
/// Whether --weft-diff-each-pass was given.
bool isDiffEachPassRequested();
/// The options the command line gave; fails with a message on a bad value.
mlir::FailureOr<DiffEachPassOptions>
getDiffEachPassCLOptions(std::string &errorMessage);
/// Adds the instrumentation to `pm` when --weft-diff-each-pass was given.
mlir::LogicalResult
applyDiffEachPassCLOptions(mlir::PassManager &pm,
                           std::shared_ptr<DiffEachPassStatus> status);
/// After the pass manager ran: an error for each --weft-diff-entry that never
/// appeared; returns whether all went well.
bool finishDiffEachPass(const DiffEachPassStatus &status);

} // namespace weft

#endif // WEFT_PIPELINES_H
