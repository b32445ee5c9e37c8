// weft-compile's driver: parses the command line, checks it, reads the input
// and hands it to the --emit mode (CompileModes.cpp): the planned training
// step (weft-train-pipeline), its package, or kernel units.
#include "CompileDriver.h"

#include "weft/Conversion/WeftToPlan/BuildPlan.h"
#include "weft/Dialect/WeftDialect.h"
#include "weft/Support/ExitCode.h"
#include "weft/Target/GPU/Serialize.h"
#include "weft/Tools/Drivers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"

#include <memory>

using namespace mlir;
using namespace weft::compile;

namespace {

constexpr const char *kDefaultTuningTable = WEFT_DEFAULT_TUNING_TABLE;

constexpr const char *kUsage =
    "weft-compile: build the training step of a forward graph\n\n"
    "  weft-compile FILE --entry NAME --train [--optimizer=adamw]\n"
    "    [--memory-budget=SIZE] [--remat=POLICY [--remat-layers=N]]\n"
    "    [--memory-report=OUT.json | PLAN.html] [-o OUT.mlir]\n"
    "  weft-compile FILE --emit=kernels -o DIR [--block-q=N --block-k=N]\n"
    "    [--tuning-table=FILE|none]\n"
    "    [--chip=sm_90a] [--train --entry NAME ...]\n"
    "  weft-compile FILE --emit=gpu-binary -o DIR [--chip=sm_90a]\n"
    "  weft-compile FILE --entry NAME --train [--optimizer=adamw]\n"
    "    [--memory-budget=SIZE] [--bind-arguments=params|all] --target=sm_90a\n"
    "    --emit=package -o STEP.weftpkg\n"
    "  weft-compile FILE --entry NAME --inference [--memory-budget=SIZE]\n"
    "    --target=sm_90a --emit=package -o STEP.weftpkg\n";

/// The tuning table's path: --tuning-table, else $WEFT_TUNING_TABLE (both
/// must exist; "none" or empty turns the table off), else the source tree's
/// table when it exists. Empty: no table.
std::string tuningTablePath(const cl::opt<std::string> &option) {
  std::optional<std::string> named;
  if (option.getNumOccurrences())
    named = option.getValue();
  return weft::resolveTuningTablePath(named, kDefaultTuningTable);
}

/// --emit and the flags it needs or excludes; a usage error is printed.
std::optional<EmitMode> checkEmitMode(const CompileOptions &cli) {
  std::optional<EmitMode> mode = llvm::StringSwitch<std::optional<EmitMode>>(cli.emit)
                                     .Case("step", EmitMode::Step)
                                     .Case("kernels", EmitMode::Kernels)
                                     .Case("gpu-binary", EmitMode::GpuBinary)
                                     .Case("package", EmitMode::Package)
                                     .Case("elementwise-kernels", EmitMode::ElementwiseKernels)
                                     .Case("elementwise-ir", EmitMode::ElementwiseIr)
                                     .Default(std::nullopt);
  // The elementwise kernels of the module's ops as they are (no --train).
  bool elementwise = mode == EmitMode::ElementwiseKernels || mode == EmitMode::ElementwiseIr;
  bool toDirectory = mode == EmitMode::Kernels || mode == EmitMode::GpuBinary;
  auto fail = [](const llvm::Twine &message) {
    usageError(message);
    return std::nullopt;
  };
  // --train and --inference both build a step of --entry.
  bool step = cli.train || cli.inference;
  if (cli.train && cli.inference)
    return fail("--train builds the training step and --inference the forward alone: "
                "give one of them");
  if (elementwise && step)
    return fail("--emit=" + cli.emit + " builds the kernels of the ops "
                "in FILE as they are; drop --train / --inference");
  if (mode == EmitMode::ElementwiseKernels && cli.output == "-")
    return fail("--emit=elementwise-kernels needs -o DIR");
  if (!mode)
    return fail("--emit=" + cli.emit +
                " is not one of step, kernels, gpu-binary, package, "
                "elementwise-kernels, elementwise-ir");
  if (mode == EmitMode::Package && (!step || cli.output == "-"))
    return fail("--emit=package packages a step: give --train (or --inference) "
                "--entry NAME and -o FILE.weftpkg");
  if (toDirectory && cli.output == "-")
    return fail("--emit=" + cli.emit + " writes several files: give the directory with -o DIR");
  if (mode == EmitMode::GpuBinary && step)
    return fail("--emit=gpu-binary lowers gpu.modules as they are; --train / --inference "
                "do not apply");
  if (!step && !toDirectory && !elementwise)
    return fail("give --train (build a training step), --inference (the forward alone) or "
                "--emit=kernels / --emit=gpu-binary");
  if (step && cli.entry.empty())
    return fail(cli.train ? "--entry NAME is required: the forward function that returns the loss"
                          : "--entry NAME is required: the forward function to package");
  return mode;
}

/// The pipeline's options from the flags of the same names, with the
/// defaults a package brings; autoCopies: --weight-copies=auto.
LogicalResult fillPipelineOptions(const CompileOptions &cli, EmitMode mode,
                                  weft::TrainingPipelineOptions &options, bool &autoCopies) {
  bool package = mode == EmitMode::Package;
  options.entry = cli.entry.getValue();
  options.optimizer = cli.optimizer.getValue();
  options.lr = cli.lr.getValue();
  options.weightDecay = cli.weightDecay.getValue();
  options.memoryBudget = cli.memoryBudget.getValue();
  options.bindArguments = cli.bindArguments.getValue();
  options.lossChunks = cli.lossChunks.getValue();
  options.remat = cli.remat.getValue();
  options.fuseElementwise = cli.fuseElementwise.getValue();
  options.rematLayers = cli.rematLayers.getValue();
  options.rematWeightCopies = cli.rematWeightCopies.getValue();
  options.memoryReport = cli.memoryReport.getValue();
  options.grid = cli.grid.getValue();
  options.sequenceParallel = cli.sequenceParallel.getValue();
  options.coalesceCollectives = cli.coalesceCollectives.getValue();
  options.fillCollectiveWaits = cli.fillCollectiveWaits.getValue();
  options.collectiveChunks = cli.collectiveChunks.getValue();
  options.collectiveMatmulSides = cli.collectiveMatmulSides.getValue();
  options.collectiveLocalFirst = cli.collectiveLocalFirst.getValue();
  options.collectiveEngine = cli.collectiveEngine.getValue();
  options.inference = cli.inference.getValue();
  if (failed(weft::setWeightCopies(options, cli.weightCopies, autoCopies))) {
    usageError("--weight-copies must be converted, carried, split or auto, got '" +
               cli.weightCopies + "'");
    return failure();
  }
  // A package's defaults (attention in place, GELU epilogues, cuBLASLt
  // workspaces), each overridden by its flag when given.
  if (package)
    weft::setPackageDefaults(options);
  if (cli.foldAttentionLayout.getNumOccurrences())
    options.foldAttentionLayout = bool(cli.foldAttentionLayout);
  options.attentionDq = std::string(cli.attentionDq);
  if (cli.fuseGemmEpilogue.getNumOccurrences())
    options.fuseGemmEpilogue = bool(cli.fuseGemmEpilogue);
  if (cli.gemmWorkspace.getNumOccurrences())
    options.gemmWorkspace = std::string(cli.gemmWorkspace);
  return success();
}

/// The attention kernels' tiles, MMA, stages and layout from the flags, and
/// the tuning table (loaded into `table`) for the modes that build kernels.
LogicalResult fillKernelOptions(const CompileOptions &cli, EmitMode mode,
                                weft::gpu::KernelEmitOptions &kernels,
                                std::optional<weft::gpu::AttentionTuningTable> &table) {
  kernels.outputDir = cli.output;
  kernels.chip = cli.chip;
  if (cli.blockQ.getNumOccurrences())
    kernels.fixedBlockQ = cli.blockQ;
  if (cli.blockK.getNumOccurrences())
    kernels.fixedBlockK = cli.blockK;
  if (cli.attentionMma != "warp" && cli.attentionMma != "warpgroup")
    return usageError("--attention-mma must be warp or warpgroup, got '" + cli.attentionMma +
                      "'"),
           failure();
  // Given on the command line it wins over the table's "mma", as --block-q.
  if (cli.attentionMma.getNumOccurrences())
    kernels.warpgroupMma = cli.attentionMma == "warpgroup";
  if (cli.attentionStages.getNumOccurrences())
    kernels.fixedStages = cli.attentionStages;
  if (cli.attentionSchedule.getNumOccurrences()) {
    kernels.fixedSchedule = weft::gpu::parseSchedule(cli.attentionSchedule);
    if (!kernels.fixedSchedule)
      return usageError("--attention-schedule must be serial, overlap or pingpong, got '" +
                        cli.attentionSchedule + "'"),
             failure();
  }
  StringRef layout = cli.attentionLayout;
  if (layout != "head_major" && layout != "seq_major" && layout != "packed" &&
      layout != "packed_grouped")
    return usageError("--attention-layout must be head_major, seq_major, packed or "
                      "packed_grouped, got '" + layout + "'"),
           failure();
  if (layout != "head_major" && mode != EmitMode::Kernels)
    return usageError("--attention-layout=" + layout +
                      " applies to --emit=kernels only (a package's layouts come from "
                      "its IR)"),
           failure();
  if (layout != "head_major")
    kernels.layout = weft::gpu::AttentionKernelConfig::Layout::SeqMajor;
  kernels.packed = layout.starts_with("packed");
  kernels.grouped = layout == "packed_grouped";
  if (mode != EmitMode::Kernels && mode != EmitMode::Package)
    return success();
  std::string path = tuningTablePath(cli.tuningTable);
  if (path.empty())
    return success();
  std::string message;
  FailureOr<weft::gpu::AttentionTuningTable> loaded =
      weft::gpu::AttentionTuningTable::load(path, message);
  if (failed(loaded))
    return usageError(message), failure();
  table = std::move(*loaded);
  kernels.tuningTable = &*table;
  return success();
}

/// The input module, verified; null with the diagnostics printed.
OwningOpRef<ModuleOp> readInput(const CompileOptions &cli, MLIRContext &context,
                                llvm::SourceMgr &sourceMgr) {
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(cli.input, &errorMessage);
  if (!file) {
    usageError(errorMessage);
    return nullptr;
  }
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  // Parsing verifies; the handler has printed why when it fails.
  return parseSourceFile<ModuleOp>(sourceMgr, &context);
}

/// The modes after reading the input: those of the ops as they are, then
/// those of the training step.
int emit(const CompileOptions &cli, EmitMode mode, OwningOpRef<ModuleOp> &module,
         weft::TrainingCompiler &compiler) {
  if (mode == EmitMode::ElementwiseKernels || mode == EmitMode::ElementwiseIr)
    return emitElementwise(*module, cli, mode == EmitMode::ElementwiseIr);
  if (mode == EmitMode::GpuBinary)
    return emitGpuBinary(*module, cli);
  weft::gpu::KernelEmitOptions kernels;
  std::optional<weft::gpu::AttentionTuningTable> table;
  if (failed(fillKernelOptions(cli, mode, kernels, table)))
    return weft::kExitUsage;
  if (cli.attentionDq != "deterministic" && cli.attentionDq != "atomic")
    return usageError("--attention-dq must be deterministic or atomic, got '" +
                      cli.attentionDq + "'");
  if (!cli.train && !cli.inference) {
    // The file's own weft.attention_grad ops take the flag (a step built
    // with --train gets it from weft-attention-dq).
    if (cli.attentionDq == "atomic")
      module->walk([&](weft::AttentionGradOp op) {
        op.setAtomicDqAttr(UnitAttr::get(module->getContext()));
      });
    return emitKernelUnits(*module, kernels);
  }
  auto entry = module->lookupSymbol<func::FuncOp>(cli.entry);
  if (!entry || entry.isExternal())
    return usageError("no function @" + cli.entry + " with a body in " + cli.input +
                      "; functions: " + weft::listDefinedFunctions(*module));
  if (mode == EmitMode::Kernels)
    return emitStepKernels(module, cli, compiler, kernels);
  if (mode == EmitMode::Package)
    return emitPackage(module, cli, compiler, kernels);
  return emitStep(module, cli, compiler);
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
  if (!cl::ParseCommandLineOptions(argc, argv, kUsage, &llvm::errs()))
    return kExitUsage;
  std::optional<EmitMode> mode = checkEmitMode(cli);
  if (!mode)
    return kExitUsage;
  std::string diffError;
  if (failed(getDiffEachPassCLOptions(diffError)))
    return usageError(diffError);
  TrainingPipelineOptions options;
  bool autoCopies = false;
  if (failed(fillPipelineOptions(cli, *mode, options, autoCopies)))
    return kExitUsage;

  weft::gpu::registerGpuTargetDialects(registry);
  weft::registerPlanDialect(registry);
  MLIRContext context(registry);
  // A diagnostic names the function and the values; a dump of the whole step
  // after it (MLIR's default for errors on ops) buries it.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = readInput(cli, context, sourceMgr);
  if (!module)
    return kExitUsage;
  // MLIR's pass-manager flags and --weft-diff-each-pass around each run.
  std::shared_ptr<DiffEachPassStatus> diffStatus;
  PipelineHooks hooks;
  hooks.beforeRun = [&](PassManager &pm) {
    diffStatus = std::make_shared<DiffEachPassStatus>();
    return success(succeeded(applyPassManagerCLOptions(pm)) &&
                   succeeded(applyDiffEachPassCLOptions(pm, diffStatus)));
  };
  hooks.afterRun = [&] { return finishDiffEachPass(*diffStatus); };
  hooks.reportBadOption = [](const llvm::Twine &message) { usageError("--" + message); };
  TrainingCompiler compiler(context, options, autoCopies, std::move(hooks));
  return emit(cli, *mode, module, compiler);
}
