// weft-compile's command line and the pieces of its driver: the flags, the
// --emit modes (each its own function, CompileModes.cpp); the training step
// and its package are built by weft/Pipelines/PackageCompiler.h, as in the
// C API.
#ifndef WEFT_LIB_TOOLS_COMPILEDRIVER_H
#define WEFT_LIB_TOOLS_COMPILEDRIVER_H

#include "weft/Pipelines.h"
#include "weft/Pipelines/PackageCompiler.h"
#include "weft/Target/GPU/AotKernels.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/CommandLine.h"

#include <optional>
#include <string>

namespace weft::compile {

namespace cl = llvm::cl;

// The committed table of the source tree (a CMake definition), read when
// neither --tuning-table nor $WEFT_TUNING_TABLE names one.
#ifndef WEFT_DEFAULT_TUNING_TABLE
#define WEFT_DEFAULT_TUNING_TABLE "bench/attention_tuning.json"
#endif

/// weft-compile's flags (parsed once per process: they register globally).
/// The flags that set the training pipeline's options take its defaults.
struct CompileOptions {
  const TrainingPipelineOptions defaults;
  const gpu::KernelEmitOptions kernelDefaults;
  cl::OptionCategory category{"weft-compile options"};
  cl::opt<std::string> input{cl::Positional, cl::desc("<input .mlir file>"),
                             cl::init("-"), cl::cat(category)};
  cl::opt<std::string> output{
      "o",
      cl::desc("Write the step IR here (with --emit=kernels / gpu-binary: "
               "the output directory)"),
      cl::value_desc("file.mlir | dir"), cl::init("-"), cl::cat(category)};
  cl::opt<std::string> emit{
      "emit",
      cl::desc("step (default): the step IR; kernels: the AOT attention units "
               "(.ptx, .cubin, .h, .c, .json) of every weft.attention / "
               "attention_grad; gpu-binary: PTX and cubin of hand-written "
               "gpu.modules, with ptxas's resources on stdout; package: "
               "the step's plan and kernel images (--train or --inference, "
               "-o FILE.weftpkg); "
               "elementwise-kernels: PTX, cubin and JSON of every non-GEMM, "
               "non-attention op of FILE (-o DIR), ptxas's resources on "
               "stdout; elementwise-ir: their gpu.modules before lowering"),
      cl::init("step"), cl::cat(category)};
  cl::opt<std::string> chip{"chip", cl::desc("GPU architecture of kernels"),
                            cl::init(kernelDefaults.chip), cl::cat(category)};
  cl::alias target{"target", cl::desc("Alias for --chip"),
                   cl::aliasopt(chip), cl::cat(category)};
  cl::opt<int64_t> blockQ{"block-q",
                          cl::desc("Query rows per kernel tile (default: "
                                   "the tuning table's, else 64)"),
                          cl::init(kernelDefaults.blockQ), cl::cat(category)};
  cl::opt<int64_t> blockK{"block-k",
                          cl::desc("Key rows per kernel tile (default: the "
                                   "tuning table's, else 64; decode kernels: "
                                   "16384 / head_dim, or half that)"),
                          cl::init(kernelDefaults.blockK), cl::cat(category)};
  cl::opt<std::string> attentionMma{
      "attention-mma",
      cl::desc("Attention kernels (forward and backward) with warp-level mma.sync (warp) or "
               "Hopper warpgroup MMA (warpgroup); default: the tuning "
               "table's \"mma\", else warp"),
      cl::init("warp"), cl::cat(category)};
  cl::opt<int64_t> attentionStages{
      "attention-stages",
      cl::desc("Pipeline stages of the warpgroup attention kernels "
               "(2..4; default: the tuning table's, else 2) and key blocks "
               "in flight + 1 of the decode split kernel (2..4; default 3, or 2 "
               "where 3 do not fit)"),
      cl::init(2), cl::cat(category)};
  cl::opt<std::string> attentionSchedule{
      "attention-schedule",
      cl::desc("Schedule of the warpgroup attention forward (with dropout: serial, "
               "or overlap at head_dim 64): "
               "serial, overlap (FlashAttention-3's softmax under the previous "
               "block's P V) or pingpong (overlap, the two consumer warpgroups "
               "taking turns; block_q 128); default: the tuning table's, else serial"),
      cl::init("serial"), cl::cat(category)};
  cl::opt<std::string> attentionLayout{
      "attention-layout",
      cl::desc("Where the --emit=kernels attention units' tensors live: "
               "head_major (default; [b, h, s, d]), seq_major ([b, s, h, d]) "
               "or packed (seq_major with q, k, v in one [b, s, (hq + 2 hkv) "
               "* d] tensor, and dq, dk, dv in another) or packed_grouped "
               "(packed, heads per kv head: [b, s, hkv, hq / hkv + 2, d])"),
      cl::init("head_major"), cl::cat(category)};
  cl::opt<std::string> tuningTable{
      "tuning-table",
      cl::desc("The autotuner's tiles per configuration for --emit=kernels "
               "(none: no table). Default: $WEFT_TUNING_TABLE, else "
               WEFT_DEFAULT_TUNING_TABLE " when it exists"),
      cl::value_desc("file.json"), cl::cat(category)};
  cl::opt<std::string> entry{"entry",
                             cl::desc("Forward function returning the loss"),
                             cl::value_desc("name"), cl::cat(category)};
  cl::opt<bool> train{"train", cl::desc("Build the training step of --entry"),
                      cl::cat(category)};
  cl::opt<bool> inference{
      "inference",
      cl::desc("Build the inference step of --entry: the forward itself, no "
               "autodiff (its outputs, e.g. logits); optimizer and remat none"),
      cl::cat(category)};
  cl::opt<std::string> optimizer{"optimizer", cl::desc("none | adamw"),
                                 cl::init(std::string(defaults.optimizer)), cl::cat(category)};
  cl::opt<double> lr{"lr", cl::desc("AdamW learning rate"), cl::init(double(defaults.lr)),
                     cl::cat(category)};
  cl::opt<double> weightDecay{"weight-decay", cl::desc("AdamW weight decay"),
                              cl::init(double(defaults.weightDecay)), cl::cat(category)};
  cl::opt<std::string> memoryBudget{
      "memory-budget",
      cl::desc("Bytes the planned step may use (96MiB, 1.5GB, 4096...): met "
               "by --remat=budget, checked after planning otherwise"),
      cl::value_desc("size"), cl::cat(category)};
  cl::opt<int64_t> lossChunks{
      "loss-chunks",
      cl::desc("Row chunks of the lm_head linear + cross_entropy, so the whole "
               "[rows, vocab] logits and their gradient never exist: 1 (default) "
               "leaves the loss whole, 0 picks the count from --memory-budget"),
      cl::init(int64_t(1)), cl::cat(category)};
  cl::opt<std::string> bindArguments{
      "bind-arguments",
      cl::desc("none | params | all: step arguments the caller binds outside "
               "the arena, read in place by the runtime (weft_step_bind_device); "
               "the arena and --memory-budget leave them out"),
      cl::init(std::string(defaults.bindArguments)), cl::cat(category)};
  cl::opt<std::string> gemmWorkspace{
      "gemm-workspace",
      cl::desc("cuBLASLt workspace cap per GEMM, planned in the arena for "
               "the GEMM's schedule index (default with --emit=package: "
               "32MiB, PyTorch's on sm_90; otherwise none)"),
      cl::value_desc("size"), cl::cat(category)};
  cl::opt<bool> fuseElementwise{
      "fuse-elementwise",
      cl::desc("Group pointwise, norm and row-reduction ops into weft.fused "
               "kernels (weft-fuse-elementwise) before weft-remat"),
      cl::init(bool(defaults.fuseElementwise)), cl::cat(category)};
  cl::opt<bool> fuseGemmEpilogue{
      "fuse-gemm-epilogue",
      cl::desc("Run each linear's tanh GELU, and each data-gradient matmul's "
               "tanh GELU gradient, in the GEMM's cuBLASLt epilogue "
               "(weft-fuse-gemm-epilogue; default: on with --emit=package)"),
      cl::init(bool(defaults.fuseGemmEpilogue)), cl::cat(category)};
  cl::opt<bool> foldAttentionLayout{
      "fold-attention-layout",
      cl::desc("Attention reads q, k, v and writes its gradients as [b, s, h, "
               "d] (seq_major), so the transposes around it cancel and the "
               "packed qkv / dqkv are views (default: on with --emit=package)"),
      cl::init(bool(defaults.foldAttentionLayout)), cl::cat(category)};
  cl::opt<std::string> attentionDq{
      "attention-dq",
      cl::desc("How the GPU attention backward forms dQ: deterministic (default; a dQ "
               "kernel per query block, bitwise reproducible) or atomic (the dK/dV "
               "kernel adds dS K with f32 atomics, FlashAttention-3's non-deterministic "
               "dQ; head_dim 64 and 128, no dropout). With --emit=kernels it marks "
               "every weft.attention_grad of FILE"),
      cl::init(std::string(defaults.attentionDq)), cl::cat(category)};
  cl::opt<std::string> remat{
      "remat", cl::desc("none | full | selective | block | uniform | budget"),
      cl::init(std::string(defaults.remat)), cl::cat(category)};
  cl::opt<int64_t> rematLayers{"remat-layers",
                               cl::desc("Layers for --remat=block/uniform"),
                               cl::init(int64_t(defaults.rematLayers)), cl::cat(category)};
  cl::opt<std::string> rematWeightCopies{
      "remat-weight-copies",
      cl::desc("keep | recompute | auto (default): the bf16 copies of the f32 "
               "masters that the backward reads, kept from the forward or "
               "converted again before their first backward reader (auto: "
               "under --remat=full, and where --remat=budget finds it faster)"),
      cl::init(std::string(defaults.rematWeightCopies)), cl::cat(category)};
  cl::opt<std::string> weightCopies{
      "weight-copies",
      cl::desc("converted (default) | carried | split | auto: the bf16 copies "
               "of the f32 masters converted inside each step, or carried "
               "between steps and written by each AdamW update (no conversion "
               "in the forward and backward; the copies stay resident), or "
               "split: each master stored as its bf16 high half (the weight "
               "the GEMMs read) and an i16 low half (no copy, no conversion; "
               "bf16 parameters); auto: split when the step fits "
               "--memory-budget, else the fastest fit of carried, converted "
               "and the largest few converted among carried"),
      cl::init(stringifyWeightCopies(defaults.weightCopies).str()), cl::cat(category)};
  cl::opt<std::string> grid{
      "grid",
      cl::desc("Partition the step for tensor parallelism over a device grid: "
               "tp=N, or dp=M,tp=N (dp replicates); the step is then the "
               "per-rank SPMD step with shard collectives"),
      cl::value_desc("axes"), cl::cat(category)};
  cl::opt<bool> sequenceParallel{
      "sequence-parallel",
      cl::desc("With --grid: Megatron-LM sequence parallelism (norms, "
               "dropout and residual adds on sequence shards; reduce-scatter "
               "+ all-gather in place of all-reduce)"),
      cl::init(false), cl::cat(category)};
  cl::opt<bool> coalesceCollectives{
      "coalesce-collectives",
      cl::desc("With --grid: reduce the latency-bound all-reduces (norm and "
               "bias gradients under sequence parallelism) as one bucket"),
      cl::init(defaults.coalesceCollectives), cl::cat(category)};
  cl::opt<bool> fillCollectiveWaits{
      "fill-collective-waits",
      cl::desc("With --grid: move weight-gradient GEMMs behind the "
               "collectives nothing else hides (their operands live longer)"),
      cl::init(defaults.fillCollectiveWaits), cl::cat(category)};
  cl::opt<int64_t> collectiveChunks{
      "collective-chunks",
      cl::desc("With --grid: chunks of each collective matmul (the all-gather "
               "before a GEMM or the reduce-scatter after one, pipelined with "
               "partial GEMMs): -1 chooses by the cost model, 0 turns it off"),
      cl::init(-1), cl::cat(category)};
  cl::opt<std::string> collectiveMatmulSides{
      "collective-matmul-sides",
      cl::desc("With --grid: which collectives collective matmul chunks: both, "
               "gather (the all-gathers before GEMMs) or scatter (the "
               "reduce-scatters after them)"),
      cl::init("both"), cl::cat(category)};
  cl::opt<std::string> collectiveLocalFirst{
      "collective-local-first",
      cl::desc("With --grid: an all-gather before a GEMM that collective matmul "
               "leaves whole runs beside the GEMM's own rank block, computed from "
               "the local shard: off, auto (where the cost model gains by it) or "
               "on (wherever the rows allow); default auto"),
      cl::init("auto"), cl::cat(category)};
  cl::opt<std::string> collectiveEngine{
      "collective-engine",
      cl::desc("With --grid: what will run the all-gathers (weft-run "
               "--collectives), for collective matmul's cost model: nccl (50 us "
               "of SM time a chunk) or copy-engine (a few us a chunk, no SMs)"),
      cl::init("nccl"), cl::cat(category)};
  cl::opt<std::string> memoryReport{
      "memory-report", cl::desc("Write the memory and FLOP report as JSON, or (a path ending in .html) the memory plan drawn as a self-contained page"),
      cl::value_desc("file.json"), cl::cat(category)};
};

/// What --emit asks for.
enum class EmitMode {
  Step,               // the planned step IR
  Kernels,            // the AOT attention units (of FILE, or of its step)
  GpuBinary,          // PTX and cubin of hand-written gpu.modules
  Package,            // the step's plan and kernel images
  ElementwiseKernels, // PTX, cubin and JSON of FILE's non-GEMM ops
  ElementwiseIr,      // their gpu.modules before lowering
};

/// Prints `message` as weft-compile's error; returns kExitUsage.
int usageError(const llvm::Twine &message);

/// The exit code of a failed training compilation: bad options are usage
/// errors.
int failureCode(const TrainingCompiler &compiler);

/// The --emit modes after parsing; each returns an ExitCode.
int emitElementwise(mlir::ModuleOp module, const CompileOptions &cli, bool ir);
int emitGpuBinary(mlir::ModuleOp module, const CompileOptions &cli);
int emitKernelUnits(mlir::ModuleOp module, const gpu::KernelEmitOptions &kernels);
int emitStepKernels(mlir::OwningOpRef<mlir::ModuleOp> &module, const CompileOptions &cli,
                    TrainingCompiler &compiler, gpu::KernelEmitOptions kernels);
int emitPackage(mlir::OwningOpRef<mlir::ModuleOp> &module, const CompileOptions &cli,
                TrainingCompiler &compiler, const gpu::KernelEmitOptions &kernels);
int emitStep(mlir::OwningOpRef<mlir::ModuleOp> &module, const CompileOptions &cli,
             TrainingCompiler &compiler);

} // namespace weft::compile

#endif // WEFT_LIB_TOOLS_COMPILEDRIVER_H
