// weft-training-report: the last stage of weft-train-pipeline. Writes the
// step's memory and FLOP report and holds the planned peak to the budget.
#include "weft/Pipelines.h"
#include "weft/Pipelines/Passes.h"
#include "weft/Target/MemoryReport.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"

namespace weft {
#define GEN_PASS_DEF_TRAININGREPORTPASS
#include "weft/Pipelines/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct TrainingReportPass
    : weft::impl::TrainingReportPassBase<TrainingReportPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>(entry);
    if (!step || step.isExternal()) {
      emitError(module.getLoc(),
                "weft-training-report: no function with a body named @")
          << entry << " (weft-autodiff names the step of @NAME @NAME_step)";
      return signalPassFailure();
    }
    std::optional<int64_t> budgetBytes;
    if (budget >= 0)
      budgetBytes = int64_t(budget);
    FailureOr<TrainingStepReport> built =
        buildTrainingStepReport(step, budgetBytes, remat);
    if (failed(built))
      return signalPassFailure();

    // Written before the budget check: the report explains a failure.
    if (!report.empty()) {
      std::error_code error;
      llvm::ToolOutputFile file(report, error, llvm::sys::fs::OF_Text);
      if (error) {
        emitError(module.getLoc(), "weft-training-report cannot write '")
            << report << "': " << error.message();
        return signalPassFailure();
      }
      if (failed(writeMemoryReport(step, *built, report, file.os())))
        return signalPassFailure();
      file.keep();
    }

    if (budgetBytes && built->peakBytes > *budgetBytes) {
      InFlightDiagnostic diag = emitError(step.getLoc(), "planned peak ")
                                << formatBytes(built->peakBytes) << " of @"
                                << entry << " exceeds the memory budget of "
                                << formatBytes(*budgetBytes);
      // The max-live bound is what no placement can beat for this schedule.
      diag.attachNote() << "the lower bound for this schedule is "
                        << formatBytes(built->lowerBoundBytes)
                        << (remat == "budget"
                                ? "; weft-remat's choice does not fit once "
                                  "planned"
                                : "; weft-remat's budget policy "
                                  "(--remat=budget) chooses what to "
                                  "recompute to meet a budget");
      return signalPassFailure();
    }
    markAllAnalysesPreserved();
  }
};

} // namespace
