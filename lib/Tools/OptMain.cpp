// weft-opt's driver: MlirOptMain with --weft-diff-each-pass added to the pass
// pipeline it builds from the command line.
#include "weft/Pipelines.h"
#include "weft/Tools/Drivers.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;

LogicalResult weft::weftOptMain(int argc, char **argv, StringRef toolName,
                                DialectRegistry &registry) {
  llvm::InitLLVM initLLVM(argc, argv);
  auto [inputFilename, outputFilename] =
      registerAndParseCLIOptions(argc, argv, toolName, registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();

  auto status = std::make_shared<DiffEachPassStatus>();
  std::string errorMessage;
  if (failed(getDiffEachPassCLOptions(errorMessage))) {
    llvm::WithColor::error(llvm::errs(), toolName.trim())
        << errorMessage << "\n";
    return failure();
  }
  if (isDiffEachPassRequested()) {
    // The command line's pipeline first, then the instrumentation on it.
    MlirOptMainConfig commandLine = config;
    config.setPassPipelineSetupFn(
        [commandLine, status](PassManager &pm) -> LogicalResult {
          if (failed(commandLine.setupPassPipeline(pm)))
            return failure();
          return applyDiffEachPassCLOptions(pm, status);
        });
  }

  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &errorMessage);
  if (!input) {
    llvm::errs() << errorMessage << "\n";
    return failure();
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::errs() << errorMessage << "\n";
    return failure();
  }
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return failure();
  // With --verify-diagnostics, the expected-error lines judge the run.
  if (!config.shouldVerifyDiagnostics() && !finishDiffEachPass(*status))
    return failure();
  output->keep();
  return success();
}
