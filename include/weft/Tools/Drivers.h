// The drivers of Weft's tools: each tools/<name>/<name>.cpp registers what it
// needs and calls its driver here, so the mains stay a few lines and the
// logic is in libraries (lib/Tools) that tests and other front ends reuse.
// Every driver returns an ExitCode (weft/Support/ExitCode.h).
#ifndef WEFT_TOOLS_DRIVERS_H
#define WEFT_TOOLS_DRIVERS_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace weft {

/// weft-opt's main after registration (registerDiffEachPassCLOptions
/// included): MlirOptMain with --weft-diff-each-pass hooked into its pass
/// pipeline setup. Fails when a pass changed a result (unless
/// --verify-diagnostics judges the run).
mlir::LogicalResult weftOptMain(int argc, char **argv, llvm::StringRef toolName,
                                mlir::DialectRegistry &registry);

/// weft-compile's main after registration (see tools/weft-compile): parses
/// the command line, runs weft-train-pipeline, writes the step IR, its
/// package or kernel units. 0 done, 1 the compilation failed (a pass, the
/// budget, a --weft-diff-each-pass difference), 2 bad usage or unreadable
/// input.
int weftCompileMain(int argc, char **argv, mlir::DialectRegistry &registry);

/// weft-run's main: a function of an IR file on the reference interpreter
/// (arguments from .npz or drawn, results printed, written and compared), or
/// a package on the GPU through WeftHost, or --check of a package.
int weftRunMain(int argc, char **argv);

/// weft-cpu-run's main: a tiled function on the host CPU through LLVM's JIT.
int weftCpuRunMain(int argc, char **argv);

} // namespace weft

#endif // WEFT_TOOLS_DRIVERS_H
