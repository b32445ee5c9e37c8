// weft-compile's --emit modes, one function each, and the training step they
// build from the forward graph (weft-train-pipeline, with --weight-copies=auto
// choosing among carried, converted and split copies).
#include "CompileDriver.h"

#include "weft/Conversion/ElementwiseKernels.h"
#include "weft/Dialect/WeftDialect.h"
#include "weft/Support/ExitCode.h"
#include "weft/Target/GPU/Serialize.h"
#include "weft/Target/MemoryReport.h"
#include "weft/Target/Package/PlanPackage.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <memory>

using namespace mlir;

namespace weft::compile {

int usageError(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "weft-compile") << message << "\n";
  return kExitUsage;
}

namespace {

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

/// One variant of --weight-copies=auto: the pipeline on a clone and its
/// report (none: it does not fit or does not compile).
struct Trial {
  OwningOpRef<ModuleOp> module;
  std::optional<weft::TrainingStepReport> report;
  std::optional<double> seconds() const {
    return report ? std::optional<double>(report->stepSeconds) : std::nullopt;
  }
};

/// Opens `path` for writing before the compilation, so an unwritable path
/// fails first; the file is removed again unless kept.
std::unique_ptr<llvm::ToolOutputFile> openOutput(StringRef path) {
  std::string message;
  std::unique_ptr<llvm::ToolOutputFile> out = openOutputFile(path, &message);
  if (!out)
    usageError(message);
  return out;
}

} // namespace

int TrainingCompiler::failureCode() const {
  return badOption ? kExitUsage : kExitFailed;
}

LogicalResult TrainingCompiler::runPipeline(ModuleOp target, bool quiet) {
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
}

LogicalResult TrainingCompiler::run(OwningOpRef<ModuleOp> &module) {
  if (!autoCopies || options.weightCopies != WeightCopies::Carried)
    return runPipeline(*module, /*quiet=*/false);
  return runAutoCopies(module);
}

// --weight-copies=auto: split masters when they fit (no copy and no
// conversion: the memory of converted copies and less work than carried
// ones). Else all carried, all converted and (below) some of each, quietly;
// of those that fit, the one with the smallest roofline step estimate
// (carried on a tie: the same work, its conversion fused into the update).
// None: converted again, with its diagnostics.
LogicalResult TrainingCompiler::runAutoCopies(OwningOpRef<ModuleOp> &module) {
  // Each trial would write --memory-report: only the chosen one's is, the
  // report its estimate came from.
  std::string reportPath = options.memoryReport;
  options.memoryReport = "";
  std::optional<int64_t> budget;
  if (!cli.memoryBudget.empty())
    budget = parseByteSize(cli.memoryBudget);
  auto attempt = [&](WeightCopies copies, ArrayRef<int64_t> convertedParams) {
    options.weightCopies = copies;
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
  Trial split = attempt(WeightCopies::Split, {});
  if (badOption)
    return failure();
  if (split.report)
    return choose(split);
  Trial best = attempt(WeightCopies::Carried, {});
  Trial converted = attempt(WeightCopies::Converted, {});
  // Carried copies are resident: when they do not fit, or fit only with a
  // slower recompute, keep the largest copies converted (they are resident
  // only around their uses) and carry the rest: 1, 2, 4, ... of them, while
  // the estimate improves once one fits.
  if (!best.report || (converted.report && *best.seconds() > *converted.seconds())) {
    SmallVector<int64_t> largest = copyCandidatesBySize(*module, cli.entry);
    for (size_t n = 1; n < largest.size(); n *= 2) {
      Trial partial = attempt(WeightCopies::Carried, ArrayRef<int64_t>(largest).take_front(n));
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
  options.weightCopies = WeightCopies::Converted;
  options.convertedParams = ArrayRef<int64_t>();
  options.memoryReport = reportPath;
  return runPipeline(*module, /*quiet=*/false);
}

int emitElementwise(ModuleOp module, const CompileOptions &cli, bool ir) {
  if (failed(weft::gpu::emitElementwiseKernelUnits(module, cli.output, cli.chip, ir,
                                                   llvm::outs())))
    return kExitFailed;
  return kExitOk;
}

int emitGpuBinary(ModuleOp module, const CompileOptions &cli) {
  if (failed(weft::gpu::emitGpuModuleBinaries(module, cli.output, cli.chip, llvm::outs())))
    return kExitFailed;
  return kExitOk;
}

int emitKernelUnits(ModuleOp module, const gpu::KernelEmitOptions &kernels) {
  if (failed(weft::gpu::emitAttentionKernelUnits(module, kernels)))
    return kExitFailed;
  return kExitOk;
}

int emitStepKernels(OwningOpRef<ModuleOp> &module, const CompileOptions &cli,
                    TrainingCompiler &compiler, gpu::KernelEmitOptions kernels) {
  // The step's attention and attention_grad ops become the units (the
  // forward function stays in the module beside @<entry>_step).
  kernels.function = cli.entry + "_step";
  if (failed(compiler.run(module)))
    return compiler.failureCode();
  return emitKernelUnits(*module, kernels);
}

int emitPackage(OwningOpRef<ModuleOp> &module, const CompileOptions &cli,
                TrainingCompiler &compiler, const gpu::KernelEmitOptions &kernels) {
  // Opened first, as in emitStep; the package is written only when it is whole.
  std::unique_ptr<llvm::ToolOutputFile> out = openOutput(cli.output);
  if (!out)
    return kExitUsage;
  if (failed(compiler.run(module)))
    return compiler.failureCode();
  auto step = module->lookupSymbol<func::FuncOp>(cli.entry + "_step");
  if (!step)
    return usageError("the pipeline built no @" + cli.entry + "_step");
  // The same tiles --emit=kernels would use: fixed, else the table's.
  weft::BuildPlanOptions planOptions;
  planOptions.arch = cli.chip;
  planOptions.chooseTiles = [&](weft::gpu::AttentionKernelConfig &config, bool backward) {
    weft::gpu::AttentionTiles tiles{kernels.blockQ, kernels.blockK};
    if (kernels.tuningTable)
      if (auto tuned = kernels.tuningTable->lookup(cli.chip, config.bf16, config.headDim,
                                                   config.causal, backward))
        tiles = *tuned;
    config.blockQ = kernels.fixedBlockQ.value_or(tiles.blockQ);
    config.blockK = kernels.fixedBlockK.value_or(tiles.blockK);
    config.warpgroupMma = kernels.warpgroupMma.value_or(tiles.warpgroupMma);
    config.stages = kernels.fixedStages.value_or(tiles.stages);
  };
  FailureOr<weft::HostSchedule> built =
      weft::buildHostSchedule(step, planOptions);
  if (failed(built))
    return kExitFailed;
  FailureOr<weft::pkg::Package> package =
      weft::makePackage(*built, cli.chip, weft::gpu::kWeftVersion, llvm::errs());
  if (failed(package))
    return kExitFailed;
  out->os() << weft::pkg::writePackage(*package);
  out->keep();
  return kExitOk;
}

int emitStep(OwningOpRef<ModuleOp> &module, const CompileOptions &cli,
             TrainingCompiler &compiler) {
  std::unique_ptr<llvm::ToolOutputFile> out = openOutput(cli.output);
  if (!out)
    return kExitUsage;
  if (failed(compiler.run(module)))
    return compiler.failureCode();
  module->print(out->os());
  out->os() << "\n";
  out->keep();
  return kExitOk;
}

} // namespace weft::compile
