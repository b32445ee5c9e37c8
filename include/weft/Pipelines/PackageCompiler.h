// The training step and its package from a parsed module, with no command
// line: weft-compile's --train modes (lib/Tools) and the C API (lib/CAPI)
// both build through it, so the two give the same bytes for the same options.
#ifndef WEFT_PIPELINES_PACKAGECOMPILER_H
#define WEFT_PIPELINES_PACKAGECOMPILER_H

#include "weft/Pipelines.h"
#include "weft/Target/GPU/AotKernels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <optional>
#include <string>

namespace weft {

/// What a front end adds around each run of the pipeline (weft-compile:
/// MLIR's pass-manager flags and --weft-diff-each-pass) and where a bad
/// option is reported. Unset hooks do nothing.
struct PipelineHooks {
  /// Called on each pass manager before it runs; failure: a bad option.
  std::function<mlir::LogicalResult(mlir::PassManager &)> beforeRun;
  /// Called after a successful run; false fails the compilation.
  std::function<bool()> afterRun;
  /// A bad option, named as the pipeline names it ("remat must be ...").
  std::function<void(const llvm::Twine &)> reportBadOption;
};

/// The training pipeline on a module, and weight-copies=auto's search over
/// carried, converted and split copies (the module is replaced by the chosen
/// trial). Diagnostics go to the context's handler.
class TrainingCompiler {
public:
  TrainingCompiler(mlir::MLIRContext &context, TrainingPipelineOptions &options,
                   bool autoCopies, PipelineHooks hooks = {})
      : context(context), options(options), autoCopies(autoCopies),
        hooks(std::move(hooks)) {}

  /// Builds the step @<entry>_step in `module`.
  mlir::LogicalResult run(mlir::OwningOpRef<mlir::ModuleOp> &module);
  /// Whether the last failure was a bad option rather than the compilation.
  bool failedOnOption() const { return badOption; }

private:
  /// The pipeline on `target`; quiet: its diagnostics are dropped (the
  /// trials of weight-copies=auto, retried converted on failure).
  mlir::LogicalResult runPipeline(mlir::ModuleOp target, bool quiet);
  mlir::LogicalResult runAutoCopies(mlir::OwningOpRef<mlir::ModuleOp> &module);
  mlir::LogicalResult reportBadOption(const llvm::Twine &message);

  mlir::MLIRContext &context;
  TrainingPipelineOptions &options;
  bool autoCopies;
  PipelineHooks hooks;
  bool badOption = false;
};

/// Sets options.weightCopies from its name (converted, carried, split or
/// auto: carried with adamw, else converted, searched by TrainingCompiler).
/// Fails on another name; `autoCopies` says whether it was auto.
mlir::LogicalResult setWeightCopies(TrainingPipelineOptions &options,
                                    llvm::StringRef name, bool &autoCopies);

/// What a GPU package brings unless told otherwise: attention reads its
/// operands in place, tanh GELUs run in cuBLASLt epilogues, and each GEMM
/// owns a 32MiB workspace (PyTorch's on sm_90).
void setPackageDefaults(TrainingPipelineOptions &options);

/// The attention tuning table's path: `named` ("none" or empty: no table),
/// else $WEFT_TUNING_TABLE, else `sourceTreeTable` when it exists. Empty:
/// no table.
std::string resolveTuningTablePath(std::optional<std::string> named,
                                   llvm::StringRef sourceTreeTable);

/// The package of a built step: the host schedule with the attention tiles
/// of `kernels` (fixed, else the tuning table's, else its defaults) and the
/// kernel images for kernels.chip. Notes (kernels left without an image) go
/// to `notes`; errors are diagnostics.
mlir::FailureOr<std::string> buildPackageBytes(mlir::func::FuncOp step,
                                               const gpu::KernelEmitOptions &kernels,
                                               llvm::raw_ostream &notes);

/// "@a, @b" for the functions with a body in `module`, or "none".
std::string listDefinedFunctions(mlir::ModuleOp module);

} // namespace weft

#endif // WEFT_PIPELINES_PACKAGECOMPILER_H
