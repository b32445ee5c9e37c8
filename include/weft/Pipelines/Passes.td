// Passes that exist for the named pipelines (include/weft/Pipelines.h).
#ifndef WEFT_PIPELINES_PASSES_TD
#define WEFT_PIPELINES_PASSES_TD

include "mlir/Pass/PassBase.td"

def TrainingReportPass : Pass<"weft-training-report", "mlir::ModuleOp"> {
  let summary = "Check a planned training step against the memory budget and report it";
  let description = [{
    The last stage of `weft-train-pipeline`. Reads the `weft.memory_plan`
    that `weft-plan-memory` attached to the step function and, with
    `report=FILE`, writes the step's memory and FLOP report as JSON (see
    include/weft/Target/MemoryReport.h). With `budget` (bytes), a planned
    peak above it is an error naming the peak; the report is written first,
    so the numbers that explain the error are on disk.

    ```mlir
    func.func @forward_step(...) attributes {weft.memory_plan = {peak_bytes = 301056 : i64, ...}}
    // weft-opt --weft-training-report="entry=forward_step budget=262144":
    // error: planned peak 301056 bytes (294.0 KiB) of @forward_step exceeds
    //        the memory budget of 262144 bytes (256.0 KiB)
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"forward_step\"", "The planned step function">,
    Option<"budget", "budget", "int64_t", "-1", "Memory budget in bytes (-1: none)">,
    Option<"report", "report", "std::string", "\"\"", "Write the JSON report here">,
    Option<"remat", "remat", "std::string", "\"none\"",
           "The remat policy that shaped the step (recorded in the report)">,
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

#endif // WEFT_PIPELINES_PASSES_TD
