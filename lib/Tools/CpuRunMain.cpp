// weft-cpu-run's driver: runs a function whose body is tiled attention (the
// output of weft-opt --weft-tile-attention) on the host CPU through LLVM's
// JIT, on tensors from an .npz (keys arg<i>, read as weft-run reads them);
// prints a checksum line per result and writes them (res<i>) with --outputs.
#include "weft/Reference/NpzArguments.h"
#include "weft/RegisterWeftDialects.h"
#include "weft/Support/ExitCode.h"
#include "weft/Support/Npz.h"
#include "weft/Target/CPU/CpuRunner.h"
#include "weft/Tools/Drivers.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

#include <cmath>

using namespace mlir;
using weft::ExitCode;
using weft::kExitFailed;
using weft::kExitOk;
using weft::kExitUsage;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory category("weft-cpu-run options");
cl::opt<std::string> inputFilename(cl::Positional,
                                   cl::desc("<tiled .mlir file>"),
                                   cl::init("-"), cl::cat(category));
cl::opt<std::string> entryName("entry", cl::desc("Function to run"),
                               cl::value_desc("name"), cl::cat(category));
cl::opt<std::string> inputsFile("inputs",
                                cl::desc("Arguments from an .npz (keys arg<i>)"),
                                cl::value_desc("file.npz"), cl::cat(category));
cl::opt<std::string> outputsFile("outputs",
                                 cl::desc("Write the results (res<i>) to .npz"),
                                 cl::value_desc("file.npz"), cl::cat(category));
cl::opt<unsigned> optLevel("opt-level", cl::desc("LLVM optimisation level (0-3)"),
                           cl::init(2), cl::cat(category));

int fail(ExitCode code, const llvm::Twine &message) {
  llvm::outs().flush();
  llvm::WithColor::error(llvm::errs(), "weft-cpu-run") << message << "\n";
  return code;
}

/// The arguments of `func` from --inputs (none needed without arguments).
int readArguments(func::FuncOp func, std::vector<weft::Tensor> &args) {
  if (func.getNumArguments() == 0)
    return kExitOk;
  if (inputsFile.empty())
    return fail(kExitUsage, "@" + entryName + " takes " + llvm::Twine(func.getNumArguments()) +
                                " arguments: give --inputs");
  llvm::Expected<weft::NpzArchive> archive = weft::readNpz(inputsFile);
  if (!archive)
    return fail(kExitUsage, llvm::toString(archive.takeError()));
  llvm::Expected<weft::reference::PerRankTensors> perRank =
      weft::reference::argumentsFromNpz(func, /*numRanks=*/1, *archive, inputsFile);
  if (!perRank)
    return fail(kExitUsage, llvm::toString(perRank.takeError()));
  args = std::move(perRank->front());
  return kExitOk;
}

/// Prints a checksum line per result and writes them to --outputs.
int writeResults(func::FuncOp func, const std::vector<weft::Tensor> &results) {
  weft::NpzArchive archive;
  for (auto [index, tensor] : llvm::enumerate(results)) {
    double sum = 0, squares = 0;
    for (double value : tensor.data) {
      sum += value;
      squares += value * value;
    }
    llvm::outs() << "res" << index << ": " << func.getResultTypes()[index]
                 << llvm::format(" sum=%.17g l2=%.17g\n", sum, std::sqrt(squares));
    archive.set("res" + std::to_string(index), tensor);
  }
  if (!outputsFile.empty())
    if (llvm::Error error = weft::writeNpz(outputsFile, archive))
      return fail(kExitFailed, llvm::toString(std::move(error)));
  return kExitOk;
}

} // namespace

int weft::weftCpuRunMain(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(
          argc, argv, "weft-cpu-run: run tiled attention on the host CPU\n", &llvm::errs()))
    return kExitUsage;
  if (entryName.empty())
    return fail(kExitUsage, "--entry NAME is required");
  if (optLevel > 3)
    return fail(kExitUsage, "--opt-level must be 0-3, got " + llvm::Twine(optLevel.getValue()));

  DialectRegistry registry;
  weft::registerWeftDialects(registry);
  weft::cpu::registerCpuLoweringInterfaces(registry);
  MLIRContext context(registry);
  std::string errorMessage;
  auto file = openInputFile(inputFilename, &errorMessage);
  if (!file)
    return fail(kExitUsage, errorMessage);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return kExitUsage;
  auto func = module->lookupSymbol<func::FuncOp>(entryName);
  if (!func || func.isExternal())
    return fail(kExitUsage, "no function @" + entryName + " in " + inputFilename);
  // Before reading inputs: IR that still holds weft ops is the usage error.
  if (failed(weft::cpu::verifyNoWeftOps(*module)))
    return kExitUsage;
  std::vector<weft::Tensor> args;
  if (int code = readArguments(func, args))
    return code;
  FailureOr<std::vector<weft::Tensor>> results =
      weft::cpu::runOnCpu(*module, entryName, args, {optLevel});
  if (failed(results))
    return kExitFailed;
  return writeResults(func, *results);
}
