// The training step and its package without a command line (weft-compile's
// --train modes and the C API): weft-train-pipeline, weight-copies=auto's
// search, and the host schedule and kernel images of a package.
#include "weft/Pipelines/PackageCompiler.h"

#include "weft/Conversion/WeftToPlan/BuildPlan.h"
#include "weft/Dialect/WeftDialect.h"
#include "weft/Target/MemoryReport.h"
#include "weft/Target/Package/PlanPackage.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cstdlib>
#include <memory>

using namespace mlir;

namespace weft {

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

} // namespace

LogicalResult TrainingCompiler::reportBadOption(const llvm::Twine &message) {
  badOption = true;
  if (hooks.reportBadOption)
    hooks.reportBadOption(message);
  return failure();
}

LogicalResult TrainingCompiler::runPipeline(ModuleOp target, bool quiet) {
  PassManager pm(&context);
  if (failed(buildTrainingPipeline(pm, options, [&](const llvm::Twine &msg) {
        return reportBadOption(msg);
      })))
    return badOption = true, failure();
  if (hooks.beforeRun && failed(hooks.beforeRun(pm)))
    return badOption = true, failure();
  std::optional<ScopedDiagnosticHandler> silence;
  if (quiet)
    silence.emplace(&context, [](Diagnostic &) { return success(); });
  if (failed(pm.run(target)) || (hooks.afterRun && !hooks.afterRun()))
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
  if (!options.memoryBudget.empty())
    budget = parseByteSize(options.memoryBudget);
  auto attempt = [&](WeightCopies copies, ArrayRef<int64_t> convertedParams) {
    options.weightCopies = copies;
    options.convertedParams = convertedParams;
    Trial trial{OwningOpRef<ModuleOp>(cast<ModuleOp>((*module)->clone())), std::nullopt};
    if (failed(runPipeline(*trial.module, /*quiet=*/true)))
      return trial;
    if (auto step = trial.module->lookupSymbol<func::FuncOp>(options.entry + "_step"))
      if (FailureOr<weft::TrainingStepReport> report =
              weft::buildTrainingStepReport(step, budget, options.remat);
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
      // Not a bad option: the path was checked when the compilation began.
      if (hooks.reportBadOption)
        hooks.reportBadOption("memory-report: " + message);
      return failure();
    }
    auto step = module->lookupSymbol<func::FuncOp>(options.entry + "_step");
    if (!step || failed(weft::writeMemoryReport(step, *chosen.report, reportPath, file->os())))
      return failure();
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
    SmallVector<int64_t> largest = copyCandidatesBySize(*module, options.entry);
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

LogicalResult setWeightCopies(TrainingPipelineOptions &options, StringRef name,
                              bool &autoCopies) {
  // auto: tried from carried (runAutoCopies); nothing to carry without AdamW.
  std::optional<WeightCopies> copies =
      llvm::StringSwitch<std::optional<WeightCopies>>(name)
          .Case("converted", WeightCopies::Converted)
          .Case("carried", WeightCopies::Carried)
          .Case("split", WeightCopies::Split)
          .Case("auto", options.optimizer == "adamw" ? WeightCopies::Carried
                                                     : WeightCopies::Converted)
          .Default(std::nullopt);
  if (!copies)
    return failure();
  autoCopies = name == "auto";
  options.weightCopies = *copies;
  return success();
}

void setPackageDefaults(TrainingPipelineOptions &options) {
  options.foldAttentionLayout = true;
  options.fuseGemmEpilogue = true;
  options.gemmWorkspace = "32MiB";
}

std::string resolveTuningTablePath(std::optional<std::string> named,
                                   StringRef sourceTreeTable) {
  if (!named)
    if (const char *env = std::getenv("WEFT_TUNING_TABLE"))
      named = env;
  if (named)
    return *named == "none" ? std::string() : *named;
  return llvm::sys::fs::exists(sourceTreeTable) ? sourceTreeTable.str() : std::string();
}

FailureOr<std::string> buildPackageBytes(func::FuncOp step,
                                         const gpu::KernelEmitOptions &kernels,
                                         llvm::raw_ostream &notes) {
  // The same tiles --emit=kernels would use: fixed, else the table's.
  BuildPlanOptions planOptions;
  planOptions.arch = kernels.chip;
  planOptions.chooseTiles = [&](gpu::AttentionKernelConfig &config, bool backward) {
    gpu::chooseAttentionTiles(kernels, config, backward);
  };
  FailureOr<HostSchedule> built = buildHostSchedule(step, planOptions);
  if (failed(built))
    return failure();
  FailureOr<pkg::Package> package =
      makePackage(*built, kernels.chip, gpu::kWeftVersion, notes);
  if (failed(package))
    return failure();
  return pkg::writePackage(*package);
}

std::string listDefinedFunctions(ModuleOp module) {
  SmallVector<std::string> names;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      names.push_back(("@" + func.getSymName()).str());
  return names.empty() ? std::string("none") : llvm::join(names, ", ");
}

} // namespace weft
