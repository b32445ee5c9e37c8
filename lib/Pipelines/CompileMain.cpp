// weft-compile: a forward graph in, the planned training step and its memory
// report out (weft-train-pipeline, as weft-opt offers it), or --emit=kernels:
// the AOT attention units of a module (or of the step it builds).
#include "weft/Pipelines.h"
#include "weft/Dialect/WeftDialect.h"
#include "weft/Conversion/ElementwiseKernels.h"
#include "weft/Target/GPU/AotKernels.h"
#include "weft/Target/GPU/Serialize.h"
#include "weft/Target/MemoryReport.h"
#include "weft/Target/Package/PlanPackage.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <cstdlib>
#include <optional>

using namespace mlir;
namespace cl = llvm::cl;

namespace {

enum ExitCode { kExitOk = 0, kExitFailed = 1, kExitUsage = 2 };

// The committed table of the source tree (a CMake definition), read when
// neither --tuning-table nor $WEFT_TUNING_TABLE names one.
#ifndef WEFT_DEFAULT_TUNING_TABLE
#define WEFT_DEFAULT_TUNING_TABLE "bench/attention_tuning.json"
#endif
constexpr const char *kDefaultTuningTable = WEFT_DEFAULT_TUNING_TABLE;

struct CompileOptions {
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
               "the step's plan and kernel images (--train, -o FILE.weftpkg); "
               "elementwise-kernels: PTX, cubin and JSON of every non-GEMM, "
               "non-attention op of FILE (-o DIR), ptxas's resources on "
               "stdout; elementwise-ir: their gpu.modules before lowering"),
      cl::init("step"), cl::cat(category)};
  cl::opt<std::string> chip{"chip", cl::desc("GPU architecture of kernels"),
                            cl::init("sm_90a"), cl::cat(category)};
  cl::alias target{"target", cl::desc("Alias for --chip"),
                   cl::aliasopt(chip), cl::cat(category)};
  cl::opt<int64_t> blockQ{"block-q",
                          cl::desc("Query rows per kernel tile (default: "
                                   "the tuning table's, else 64)"),
                          cl::init(64), cl::cat(category)};
  cl::opt<int64_t> blockK{"block-k",
                          cl::desc("Key rows per kernel tile (default: the "
                                   "tuning table's, else 64)"),
                          cl::init(64), cl::cat(category)};
  cl::opt<std::string> attentionMma{
      "attention-mma",
      cl::desc("Attention kernels (forward and backward) with warp-level mma.sync (warp) or "
               "Hopper warpgroup MMA (warpgroup); default: the tuning "
               "table's \"mma\", else warp"),
      cl::init("warp"), cl::cat(category)};
  cl::opt<int64_t> attentionStages{
      "attention-stages",
      cl::desc("Pipeline stages of the warpgroup attention kernels "
               "(2..4; default: the tuning table's, else 2)"),
      cl::init(2), cl::cat(category)};
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
  cl::opt<std::string> optimizer{"optimizer", cl::desc("none | adamw"),
                                 cl::init("none"), cl::cat(category)};
  cl::opt<double> lr{"lr", cl::desc("AdamW learning rate"), cl::init(1.0e-3),
                     cl::cat(category)};
  cl::opt<double> weightDecay{"weight-decay", cl::desc("AdamW weight decay"),
                              cl::init(0.01), cl::cat(category)};
  cl::opt<std::string> memoryBudget{
      "memory-budget",
      cl::desc("Bytes the planned step may use (96MiB, 1.5GB, 4096...): met "
               "by --remat=budget, checked after planning otherwise"),
      cl::value_desc("size"), cl::cat(category)};
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
      cl::init(false), cl::cat(category)};
  cl::opt<bool> fuseGemmEpilogue{
      "fuse-gemm-epilogue",
      cl::desc("Run each linear's tanh GELU, and each data-gradient matmul's "
               "tanh GELU gradient, in the GEMM's cuBLASLt epilogue "
               "(weft-fuse-gemm-epilogue; default: on with --emit=package)"),
      cl::init(false), cl::cat(category)};
  cl::opt<bool> foldAttentionLayout{
      "fold-attention-layout",
      cl::desc("Attention reads q, k, v and writes its gradients as [b, s, h, "
               "d] (seq_major), so the transposes around it cancel and the "
               "packed qkv / dqkv are views (default: on with --emit=package)"),
      cl::init(false), cl::cat(category)};
  cl::opt<std::string> remat{
      "remat", cl::desc("none | full | selective | block | uniform | budget"),
      cl::init("none"), cl::cat(category)};
  cl::opt<int64_t> rematLayers{"remat-layers",
                               cl::desc("Layers for --remat=block/uniform"),
                               cl::init(1), cl::cat(category)};
  cl::opt<std::string> rematWeightCopies{
      "remat-weight-copies",
      cl::desc("keep | recompute | auto (default): the bf16 copies of the f32 "
               "masters that the backward reads, kept from the forward or "
               "converted again before their first backward reader (auto: "
               "under --remat=full, and where --remat=budget finds it faster)"),
      cl::init("auto"), cl::cat(category)};
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
      cl::init("converted"), cl::cat(category)};
  cl::opt<std::string> memoryReport{
      "memory-report", cl::desc("Write the memory and FLOP report as JSON"),
      cl::value_desc("file.json"), cl::cat(category)};
};

int usageError(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "weft-compile") << message << "\n";
  return kExitUsage;
}

std::string functionList(ModuleOp module) {
  llvm::SmallVector<std::string> names;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      names.push_back(("@" + func.getSymName()).str());
  return names.empty() ? std::string("none") : llvm::join(names, ", ");
}

/// The tuning table's path: --tuning-table, else $WEFT_TUNING_TABLE (both
/// must exist; "none" or empty turns the table off), else the source tree's
/// table when it exists. Empty: no table.
/// The entry's parameters (weft.param arguments, numbered from 0 as
/// weft-autodiff numbers them) narrower than their f32 masters, largest
/// first: the copies --weight-copies=auto may keep converted.
SmallVector<int64_t> copyCandidatesBySize(ModuleOp module, StringRef entry) {
  SmallVector<std::pair<int64_t, int64_t>> sized; // (bytes, parameter)
  auto func = module.lookupSymbol<func::FuncOp>(entry);
  if (!func)
    return {};
  int64_t k = 0;
  for (BlockArgument arg : func.getArguments()) {
    if (!func.getArgAttr(arg.getArgNumber(), weft::WeftDialect::kParamAttr))
      continue;
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (type && type.hasStaticShape() && type.getElementType().isIntOrFloat() &&
        type.getElementTypeBitWidth() < 32 && isa<FloatType>(type.getElementType()))
      sized.push_back({weft::tensorBytes(type), k});
    ++k;
  }
  llvm::stable_sort(sized, [](auto a, auto b) { return a.first > b.first; });
  SmallVector<int64_t> order;
  for (auto [bytes, index] : sized)
    order.push_back(index);
  return order;
}

std::string tuningTablePath(const cl::opt<std::string> &option) {
  std::optional<std::string> named;
  if (option.getNumOccurrences())
    named = option.getValue();
  else if (const char *env = std::getenv("WEFT_TUNING_TABLE"))
    named = env;
  if (named)
    return *named == "none" ? std::string() : *named;
  return llvm::sys::fs::exists(kDefaultTuningTable) ? kDefaultTuningTable
                                                    : std::string();
}

} // namespace

int weft::weftCompileMain(int argc, char **argv, DialectRegistry &registry) {
  llvm::InitLLVM initLLVM(argc, argv);
  CompileOptions cli;
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDiffEachPassCLOptions();
  // --help lists weft-compile's own options (--help-hidden: MLIR's too).
  cl::HideUnrelatedOptions({&cli.category, &getDiffEachPassCategory()});
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "weft-compile: build the training step of a forward graph\n\n"
          "  weft-compile FILE --entry NAME --train [--optimizer=adamw]\n"
          "    [--memory-budget=SIZE] [--remat=POLICY [--remat-layers=N]]\n"
          "    [--memory-report=OUT.json] [-o OUT.mlir]\n"
          "  weft-compile FILE --emit=kernels -o DIR [--block-q=N --block-k=N]\n"
          "    [--tuning-table=FILE|none]\n"
          "    [--chip=sm_90a] [--train --entry NAME ...]\n"
          "  weft-compile FILE --emit=gpu-binary -o DIR [--chip=sm_90a]\n"
          "  weft-compile FILE --entry NAME --train [--optimizer=adamw]\n"
          "    [--memory-budget=SIZE] --target=sm_90a --emit=package "
          "-o STEP.weftpkg\n",
          &llvm::errs()))
    return kExitUsage;

  bool emitKernels = cli.emit == "kernels";
  bool emitGpuBinary = cli.emit == "gpu-binary";
  // The elementwise kernels of the module's ops as they are (no --train).
  bool emitElementwise = cli.emit == "elementwise-kernels";
  bool emitElementwiseIr = cli.emit == "elementwise-ir";
  if ((emitElementwise || emitElementwiseIr) && cli.train)
    return usageError("--emit=" + cli.emit + " builds the kernels of the ops "
                      "in FILE as they are; drop --train");
  if (emitElementwise && cli.output == "-")
    return usageError("--emit=elementwise-kernels needs -o DIR");
  bool emitPackage = cli.emit == "package";
  if (!emitKernels && !emitGpuBinary && !emitPackage && !emitElementwise &&
      !emitElementwiseIr && cli.emit != "step")
    return usageError("--emit=" + cli.emit +
                      " is not one of step, kernels, gpu-binary, package, "
                      "elementwise-kernels, elementwise-ir");
  if (emitPackage && (!cli.train || cli.output == "-"))
    return usageError("--emit=package packages a training step: give --train "
                      "--entry NAME and -o FILE.weftpkg");
  if ((emitKernels || emitGpuBinary) && cli.output == "-")
    return usageError("--emit=" + cli.emit +
                      " writes several files: give the directory with -o DIR");
  if (emitGpuBinary && cli.train)
    return usageError("--emit=gpu-binary lowers gpu.modules as they are; "
                      "--train does not apply");
  if (!cli.train && !emitKernels && !emitGpuBinary && !emitElementwise &&
      !emitElementwiseIr)
    return usageError("give --train (build a training step) or "
                      "--emit=kernels / --emit=gpu-binary");
  if (cli.train && cli.entry.empty())
    return usageError("--entry NAME is required: the forward function that "
                      "returns the loss");
  std::string diffError;
  if (failed(getDiffEachPassCLOptions(diffError)))
    return usageError(diffError);

  TrainingPipelineOptions options;
  options.entry = cli.entry;
  options.optimizer = cli.optimizer;
  options.lr = cli.lr;
  options.weightDecay = cli.weightDecay;
  options.memoryBudget = cli.memoryBudget;
  options.remat = cli.remat;
  options.fuseElementwise = cli.fuseElementwise;
  // GPU packages read attention's operands in place unless told otherwise.
  options.foldAttentionLayout = cli.foldAttentionLayout.getNumOccurrences()
                                    ? bool(cli.foldAttentionLayout)
                                    : emitPackage;
  // cuBLASLt runs a package's GEMMs, so their GELU epilogues come with them.
  options.fuseGemmEpilogue = cli.fuseGemmEpilogue.getNumOccurrences()
                                 ? bool(cli.fuseGemmEpilogue)
                                 : emitPackage;
  options.rematLayers = cli.rematLayers;
  options.rematWeightCopies = cli.rematWeightCopies;
  options.memoryReport = cli.memoryReport;
  bool autoCopies = cli.weightCopies == "auto";
  if (!autoCopies && cli.weightCopies != "converted" && cli.weightCopies != "carried" &&
      cli.weightCopies != "split")
    return usageError("--weight-copies must be converted, carried, split or auto, got '" +
                      cli.weightCopies + "'");
  options.weightCopies = autoCopies ? std::string("carried") : std::string(cli.weightCopies);
  if (autoCopies && cli.optimizer != "adamw")
    options.weightCopies = "converted"; // nothing to carry without AdamW
  // A package's GEMMs run in cuBLASLt, whose workspaces are planned tensors.
  options.gemmWorkspace = cli.gemmWorkspace.getNumOccurrences()
                              ? std::string(cli.gemmWorkspace)
                              : std::string(emitPackage ? "32MiB" : "");

  weft::gpu::registerGpuTargetDialects(registry);
  weft::registerPlanDialect(registry);
  MLIRContext context(registry);
  // A diagnostic names the function and the values; a dump of the whole step
  // after it (MLIR's default for errors on ops) buries it.
  context.printOpOnDiagnostic(false);
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(cli.input, &errorMessage);
  if (!file)
    return usageError(errorMessage);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  // Parsing verifies; the handler has printed why when it fails.
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return kExitUsage;
  if (emitElementwise || emitElementwiseIr) {
    if (failed(weft::gpu::emitElementwiseKernelUnits(
            *module, cli.output, cli.chip, emitElementwiseIr, llvm::outs())))
      return kExitFailed;
    return kExitOk;
  }
  if (emitGpuBinary) {
    if (failed(weft::gpu::emitGpuModuleBinaries(*module, cli.output, cli.chip,
                                                llvm::outs())))
      return kExitFailed;
    return kExitOk;
  }
  weft::gpu::KernelEmitOptions kernelOptions;
  kernelOptions.outputDir = cli.output;
  kernelOptions.chip = cli.chip;
  if (cli.blockQ.getNumOccurrences())
    kernelOptions.fixedBlockQ = cli.blockQ;
  if (cli.blockK.getNumOccurrences())
    kernelOptions.fixedBlockK = cli.blockK;
  if (cli.attentionMma != "warp" && cli.attentionMma != "warpgroup")
    return usageError("--attention-mma must be warp or warpgroup, got '" +
                      cli.attentionMma + "'");
  // Given on the command line it wins over the table's "mma", as --block-q.
  if (cli.attentionMma.getNumOccurrences())
    kernelOptions.warpgroupMma = cli.attentionMma == "warpgroup";
  if (cli.attentionStages.getNumOccurrences())
    kernelOptions.fixedStages = cli.attentionStages;
  if (cli.attentionLayout != "head_major" && cli.attentionLayout != "seq_major" &&
      cli.attentionLayout != "packed" && cli.attentionLayout != "packed_grouped")
    return usageError("--attention-layout must be head_major, seq_major, packed or "
                      "packed_grouped, got '" + cli.attentionLayout + "'");
  if (cli.attentionLayout != "head_major" && !emitKernels)
    return usageError("--attention-layout=" + cli.attentionLayout +
                      " applies to --emit=kernels only (a package's layouts come from "
                      "its IR)");
  if (cli.attentionLayout != "head_major")
    kernelOptions.layout = weft::gpu::AttentionKernelConfig::Layout::SeqMajor;
  kernelOptions.packed = StringRef(cli.attentionLayout).starts_with("packed");
  kernelOptions.grouped = cli.attentionLayout == "packed_grouped";
  std::optional<weft::gpu::AttentionTuningTable> table;
  if (emitKernels || emitPackage) {
    std::string path = tuningTablePath(cli.tuningTable);
    if (!path.empty()) {
      std::string message;
      FailureOr<weft::gpu::AttentionTuningTable> loaded =
          weft::gpu::AttentionTuningTable::load(path, message);
      if (failed(loaded))
        return usageError(message);
      table = std::move(*loaded);
      kernelOptions.tuningTable = &*table;
    }
  }
  if (!cli.train) {
    if (failed(weft::gpu::emitAttentionKernelUnits(*module, kernelOptions)))
      return kExitFailed;
    return kExitOk;
  }

  auto entry = module->lookupSymbol<func::FuncOp>(cli.entry);
  if (!entry || entry.isExternal())
    return usageError("no function @" + cli.entry + " with a body in " +
                      cli.input + "; functions: " + functionList(*module));

  // The pipeline on `module`; quiet: its diagnostics are dropped (the
  // carried try of --weight-copies=auto, retried converted on failure).
  bool badOption = false;
  auto runPipeline = [&](ModuleOp target, bool quiet) -> LogicalResult {
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)) ||
        failed(buildTrainingPipeline(pm, options, [&](const llvm::Twine &msg) {
          usageError("--" + msg);
          badOption = true;
          return failure();
        })))
      return badOption = true, failure();
    auto status = std::make_shared<DiffEachPassStatus>();
    if (failed(applyDiffEachPassCLOptions(pm, status)))
      return badOption = true, failure();
    std::optional<ScopedDiagnosticHandler> silence;
    if (quiet)
      silence.emplace(&context, [](Diagnostic &) { return success(); });
    if (failed(pm.run(target)) || !finishDiffEachPass(*status))
      return failure();
    return success();
  };
  // --weight-copies=auto: split masters when they fit (no copy and no
  // conversion: the memory of converted copies and less work than carried
  // ones). Else all carried, all converted and (below) some of each,
  // quietly; of those that fit, the one with the smallest roofline step
  // estimate (carried on a tie: the same work, its conversion fused into
  // the update). None: converted again, with its diagnostics.
  auto runTraining = [&]() -> LogicalResult {
    if (!autoCopies || options.weightCopies != "carried")
      return runPipeline(*module, /*quiet=*/false);
    // Each trial would write --memory-report: only the chosen one's is,
    // the report its estimate came from.
    std::string reportPath = options.memoryReport;
    options.memoryReport = "";
    std::optional<int64_t> budget;
    if (!cli.memoryBudget.empty())
      budget = parseByteSize(cli.memoryBudget);
    // One variant: the pipeline on a clone and its report (none: it does not
    // fit or does not compile).
    struct Trial {
      OwningOpRef<ModuleOp> module;
      std::optional<weft::TrainingStepReport> report;
      std::optional<double> seconds() const {
        return report ? std::optional<double>(report->stepSeconds) : std::nullopt;
      }
    };
    auto attempt = [&](StringRef copies, ArrayRef<int64_t> convertedParams) {
      options.weightCopies = copies.str();
      options.convertedParams = convertedParams;
      Trial trial{OwningOpRef<ModuleOp>(cast<ModuleOp>((*module)->clone())), std::nullopt};
      if (failed(runPipeline(*trial.module, /*quiet=*/true)))
        return trial;
      if (auto step = trial.module->lookupSymbol<func::FuncOp>(cli.entry + "_step"))
        if (FailureOr<weft::TrainingStepReport> report =
                weft::buildTrainingStepReport(step, budget, cli.remat);
            succeeded(report))
          trial.report = std::move(*report);
      return trial;
    };
    auto choose = [&](Trial &chosen) -> LogicalResult {
      module = std::move(chosen.module);
      if (reportPath.empty())
        return success();
      std::string message;
      std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(reportPath, &message);
      if (!file) {
        usageError("--memory-report: " + message);
        return failure();
      }
      weft::writeTrainingStepReport(*chosen.report, file->os());
      file->keep();
      return success();
    };
    // Split masters need bf16 parameters: f16 ones refuse, quietly here.
    Trial split = attempt("split", {});
    if (badOption)
      return failure();
    if (split.report)
      return choose(split);
    Trial best = attempt("carried", {});
    Trial converted = attempt("converted", {});
    // Carried copies are resident: when they do not fit, or fit only with a
    // slower recompute, keep the largest copies converted (they are resident
    // only around their uses) and carry the rest: 1, 2, 4, ... of them, while
    // the estimate improves once one fits.
    if (!best.report || (converted.report && *best.seconds() > *converted.seconds())) {
      SmallVector<int64_t> largest = copyCandidatesBySize(*module, cli.entry);
      for (size_t n = 1; n < largest.size(); n *= 2) {
        Trial partial = attempt("carried", ArrayRef<int64_t>(largest).take_front(n));
        if (!partial.report) {
          if (best.report)
            break;
          continue;
        }
        if (best.report && *partial.seconds() >= *best.seconds())
          break;
        best = std::move(partial);
      }
    }
    if (converted.report && (!best.report || *converted.seconds() < *best.seconds()))
      best = std::move(converted);
    if (best.report)
      return choose(best);
    options.weightCopies = "converted";
    options.convertedParams = ArrayRef<int64_t>();
    options.memoryReport = reportPath;
    return runPipeline(*module, /*quiet=*/false);
  };

  if (emitKernels) {
    // The step's attention and attention_grad ops become the units (the
    // forward function stays in the module beside @<entry>_step).
    kernelOptions.function = cli.entry + "_step";
    if (failed(runTraining()))
      return badOption ? kExitUsage : kExitFailed;
    if (failed(weft::gpu::emitAttentionKernelUnits(*module, kernelOptions)))
      return kExitFailed;
    return kExitOk;
  }

  if (emitPackage) {
    // Opened first, as below; the package is written only when it is whole.
    std::unique_ptr<llvm::ToolOutputFile> out =
        openOutputFile(cli.output, &errorMessage);
    if (!out)
      return usageError(errorMessage);
    if (failed(runTraining()))
      return badOption ? kExitUsage : kExitFailed;
    auto step = module->lookupSymbol<func::FuncOp>(cli.entry + "_step");
    if (!step)
      return usageError("the pipeline built no @" + cli.entry + "_step");
    // The same tiles --emit=kernels would use: fixed, else the table's.
    weft::BuildPlanOptions planOptions;
    planOptions.arch = cli.chip;
    planOptions.chooseTiles = [&](weft::gpu::AttentionKernelConfig &config,
                                  bool backward) {
      weft::gpu::AttentionTiles tiles{kernelOptions.blockQ, kernelOptions.blockK};
      if (kernelOptions.tuningTable)
        if (auto tuned = kernelOptions.tuningTable->lookup(
                cli.chip, config.bf16, config.headDim, config.causal, backward))
          tiles = *tuned;
      config.blockQ = kernelOptions.fixedBlockQ.value_or(tiles.blockQ);
      config.blockK = kernelOptions.fixedBlockK.value_or(tiles.blockK);
      config.warpgroupMma = kernelOptions.warpgroupMma.value_or(tiles.warpgroupMma);
      config.stages = kernelOptions.fixedStages.value_or(tiles.stages);
    };
    FailureOr<weft::HostSchedule> built =
        weft::buildHostSchedule(step, planOptions);
    if (failed(built))
      return kExitFailed;
    FailureOr<weft::pkg::Package> package = weft::makePackage(
        *built, cli.chip, weft::gpu::kWeftVersion, llvm::errs());
    if (failed(package))
      return kExitFailed;
    out->os() << weft::pkg::writePackage(*package);
    out->keep();
    return kExitOk;
  }

  // Opened first, so an unwritable path fails before the compilation; the
  // file is removed again unless the compilation succeeds.
  std::unique_ptr<llvm::ToolOutputFile> out =
      openOutputFile(cli.output, &errorMessage);
  if (!out)
    return usageError(errorMessage);
  if (failed(runTraining()))
    return badOption ? kExitUsage : kExitFailed;
  module->print(out->os());
  out->os() << "\n";
  out->keep();
  return kExitOk;
}
