// weft-compile's --emit modes, one function each; the training step and the
// package come from weft/Pipelines/PackageCompiler.h (shared with the C API).
#include "CompileDriver.h"

#include "weft/Conversion/ElementwiseKernels.h"
#include "weft/Support/ExitCode.h"
#include "weft/Target/GPU/Serialize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
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

int failureCode(const TrainingCompiler &compiler) {
  return compiler.failedOnOption() ? kExitUsage : kExitFailed;
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
    return failureCode(compiler);
  return emitKernelUnits(*module, kernels);
}

int emitPackage(OwningOpRef<ModuleOp> &module, const CompileOptions &cli,
                TrainingCompiler &compiler, const gpu::KernelEmitOptions &kernels) {
  // Opened first, as in emitStep; the package is written only when it is whole.
  std::unique_ptr<llvm::ToolOutputFile> out = openOutput(cli.output);
  if (!out)
    return kExitUsage;
  if (failed(compiler.run(module)))
    return failureCode(compiler);
  auto step = module->lookupSymbol<func::FuncOp>(cli.entry + "_step");
  if (!step)
    return usageError("the pipeline built no @" + cli.entry + "_step");
  FailureOr<std::string> package = weft::buildPackageBytes(step, kernels, llvm::errs());
  if (failed(package))
    return kExitFailed;
  out->os() << *package;
  out->keep();
  return kExitOk;
}

int emitStep(OwningOpRef<ModuleOp> &module, const CompileOptions &cli,
             TrainingCompiler &compiler) {
  std::unique_ptr<llvm::ToolOutputFile> out = openOutput(cli.output);
  if (!out)
    return kExitUsage;
  if (failed(compiler.run(module)))
    return failureCode(compiler);
  module->print(out->os());
  out->os() << "\n";
  out->keep();
  return kExitOk;
}

} // namespace weft::compile
