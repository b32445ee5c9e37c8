// weft-run's driver: runs a weft function in the reference interpreter on
// tensors from an .npz file (or reproducible random ones), prints a checksum
// line per result, and can write the results and compare them with a
// reference .npz; given a package (weft-compile --emit=package) it runs the
// step on the GPU or checks it (--check), both through WeftHost.
#include "weft/Host/CheckPackage.h"
#include "weft/Host/Rendezvous.h"
#include "weft/Host/Shards.h"
#include "weft/Host/RunPackage.h"
#include "weft/Reference/Interpreter.h"
#include "weft/Reference/NpzArguments.h"
#include "weft/Reference/Partitioned.h"
#include "weft/Reference/RandomInputs.h"
#include "weft/RegisterWeftDialects.h"
#include "weft/Support/ExitCode.h"
#include "weft/Support/ToolError.h"
#include "weft/Support/Npz.h"
#include "weft/Tools/Drivers.h"
#include "weft/Package/Package.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>

using namespace mlir;
using weft::DType;
using weft::ExitCode;
using weft::kExitFailed;
using weft::kExitOk;
using weft::kExitUsage;
using weft::NpzArchive;
using weft::Tensor;
using weft::reference::PerRankTensors;
using weft::reference::describeTensor;
using weft::reference::parseTensorKey;
using weft::reference::tensorKey;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory runCategory("weft-run options");

cl::opt<std::string> inputFilename(cl::Positional,
                                   cl::desc("<input .mlir file>"),
                                   cl::init("-"), cl::cat(runCategory));
cl::opt<std::string> entryName("entry", cl::desc("Function to run"),
                               cl::value_desc("name"), cl::cat(runCategory));
cl::opt<std::string>
    inputsFile("inputs",
               cl::desc("Arguments from an .npz (keys arg<i>; rank<r>/arg<i> "
                        "for SPMD functions, arg<i> meaning every rank)"),
               cl::value_desc("file.npz"), cl::cat(runCategory));
cl::opt<bool> randomInputs(
    "random-inputs",
    cl::desc("Draw arguments from --seed: floats standard normal, integers "
             "uniform over their valid range; every rank gets the same values"),
    cl::cat(runCategory));
cl::opt<uint64_t> seed("seed", cl::desc("Seed of --random-inputs"),
                       cl::init(0), cl::cat(runCategory));
cl::opt<std::string>
    saveInputsFile("save-inputs", cl::desc("Write the arguments used to .npz"),
                   cl::value_desc("file.npz"), cl::cat(runCategory));
cl::opt<std::string>
    outputsFile("outputs",
                cl::desc("Write the results (res<i>, rank<r>/res<i>) to .npz"),
                cl::value_desc("file.npz"), cl::cat(runCategory));
cl::opt<std::string> expectFile(
    "expect",
    cl::desc("Compare the results with res<i> of a reference .npz; pass when "
             "|got - expected| <= atol + rtol * |expected| everywhere"),
    cl::value_desc("file.npz"), cl::cat(runCategory));
cl::opt<double> relTolerance("rtol", cl::desc("Relative tolerance of --expect"),
                     cl::init(1e-5), cl::cat(runCategory));
cl::opt<double> absTolerance("atol", cl::desc("Absolute tolerance of --expect"),
                     cl::init(1e-8), cl::cat(runCategory));

cl::opt<bool> checkPackage(
    "check",
    cl::desc("Validate a package (weft-compile --emit=package) without a "
             "GPU: format, bounds, checksums, buffers inside the arena and "
             "not overlapping while live, arguments defined and live, "
             "kernel images"),
    cl::cat(runCategory));
cl::opt<bool> allowMissingImages(
    "allow-missing-images",
    cl::desc("With --check: kernels without an image are a warning"),
    cl::cat(runCategory));

cl::OptionCategory packageCategory(
    "weft-run options for packages (weft-compile --emit=package)");
cl::opt<int64_t> runSteps("steps", cl::desc("Steps to run (default 1)"),
                          cl::init(1), cl::cat(packageCategory));
cl::opt<std::string> dataFile(
    "data",
    cl::desc("Inputs by buffer name (arg<i>): shape [steps, ...] gives step s "
             "slice s mod steps, the buffer's own shape the same value every "
             "step; parameters may be given here too"),
    cl::value_desc("DATA.npz"), cl::cat(packageCategory));
cl::opt<std::string> loadState(
    "load-state",
    cl::desc("Parameters and optimizer state by buffer name (else --data, "
             "else the package's initial data)"),
    cl::value_desc("S.npz"), cl::cat(packageCategory));
cl::opt<std::string> saveState(
    "save-state", cl::desc("Write parameters and optimizer state after the run"),
    cl::value_desc("S.npz"), cl::cat(packageCategory));
cl::opt<bool> useGraph("graph",
                       cl::desc("Capture the step as a CUDA graph once, replay it"),
                       cl::cat(packageCategory));
cl::opt<bool> debugBuffers(
    "debug-buffers",
    cl::desc("Allocate each buffer on its own and fill it with 0xFF when its "
             "live range ends"),
    cl::cat(packageCategory));
cl::opt<bool> printMemory(
    "print-memory",
    cl::desc("Print the planned arena and the device memory cuMemGetInfo saw"),
    cl::cat(packageCategory));
cl::opt<bool> dryRun(
    "dry-run",
    cl::desc("Resolve the step and the per-step bindings and print them, "
             "without a GPU (the device is taken to be --sm)"),
    cl::cat(packageCategory));
cl::opt<int> deviceSm("sm",
                      cl::desc("--dry-run: the device's compute capability, "
                               "e.g. 90 (default: the package's)"),
                      cl::init(0), cl::cat(packageCategory));
cl::opt<int> deviceOrdinal("device", cl::desc("CUDA device ordinal"),
                           cl::init(0), cl::cat(packageCategory));
cl::opt<int64_t> initState(
    "init-state",
    cl::desc("Draw parameters and optimizer state that no file gives on the "
             "host from this seed (uniform, variance 1/fan_in; moments zero)"),
    cl::value_desc("SEED"), cl::init(-1), cl::cat(packageCategory));
cl::opt<int64_t> timeSegmentRuns(
    "time-segments",
    cl::desc("After the steps, N runs with a CUDA event after every schedule "
             "entry: forward/backward/optimizer milliseconds (medians)"),
    cl::value_desc("N"), cl::init(0), cl::cat(packageCategory));
cl::opt<int> nprocPerNode(
    "nproc-per-node",
    cl::desc("Run a partitioned package on N GPUs of this host: one process per GPU "
             "(as torchrun --nproc-per-node N would start weft-run)"),
    cl::value_desc("N"), cl::init(0), cl::cat(packageCategory));
cl::opt<double> collectiveTimeout(
    "collective-timeout",
    cl::desc("Seconds a rank waits for a collective, a peer or the rendezvous before it "
             "aborts the communicators and fails (default 300)"),
    cl::init(300), cl::cat(packageCategory));
cl::opt<std::string> collectiveEngine(
    "collectives",
    cl::desc("How a partitioned step moves its all-gathers and all-to-alls: nccl, "
             "copy-engine (CUDA IPC peer-mapped arenas, the GPUs' copy engines: every rank on "
             "this node with peer access) or auto (the copy engine when every rank can use "
             "it); default $WEFT_COLLECTIVES, else nccl"),
    cl::value_desc("ENGINE"), cl::cat(packageCategory));
cl::opt<std::string> commPriority(
    "comm-priority",
    cl::desc("The priority of a partitioned step's communication streams: normal or high "
             "(a collective's kernels get the SMs that free up before the compute's); "
             "default $WEFT_COMM_PRIORITY, else normal"),
    cl::value_desc("PRIORITY"), cl::cat(packageCategory));
cl::opt<int> gemmSmMargin(
    "gemm-sm-margin",
    cl::desc("SMs the GEMMs beside a collective leave to it (cuBLASLt's SM count target); "
             "default $WEFT_GEMM_SM_MARGIN, else 0"),
    cl::value_desc("N"), cl::init(-1), cl::cat(packageCategory));
cl::opt<std::string> gatherState(
    "gather-state",
    cl::desc("Gather the per-rank shards of INDEX (a multi-GPU --save-state or "
             "--outputs) into one single-GPU .npz, written to --to"),
    cl::value_desc("INDEX"), cl::cat(packageCategory));
cl::opt<std::string> splitState(
    "split-state",
    cl::desc("Split a single-GPU state .npz into per-rank shards for the package's grid, "
             "with the index written to --to"),
    cl::value_desc("S.npz"), cl::cat(packageCategory));
cl::opt<std::string> shardsTo("to", cl::desc("Output of --gather-state / --split-state"),
                              cl::value_desc("PATH"), cl::cat(packageCategory));
cl::opt<std::string> timingJson(
    "timing-json",
    cl::desc("With --time-segments: write per-entry and per-segment medians"),
    cl::value_desc("FILE.json"), cl::cat(packageCategory));

cl::opt<std::string> traceJson(
    "trace-json",
    cl::desc("After the steps, 5 runs with an event on each entry's own stream (overlap "
             "kept): write the median run's entries with their streams, starts and ends"),
    cl::value_desc("FILE.json"), cl::cat(packageCategory));

int fail(ExitCode code, const llvm::Twine &message) {
  weft::printToolError("weft-run", message);
  return code;
}

void printResults(const PerRankTensors &perRank) {
  int64_t numRanks = perRank.size();
  for (int64_t rank = 0; rank < numRanks; ++rank) {
    for (auto [index, tensor] : llvm::enumerate(perRank[rank])) {
      double sum = 0, squares = 0;
      for (double value : tensor.data) {
        sum += value;
        squares += value * value;
      }
      if (numRanks > 1)
        llvm::outs() << "rank" << rank << " ";
      llvm::outs() << "res" << index << ": "
                   << describeTensor(tensor.shape, tensor.dtype)
                   << llvm::format(" sum=%.17g l2=%.17g\n", sum,
                                   std::sqrt(squares));
    }
  }
}

std::string formatDouble(const char *format, double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format(format, value);
  return text;
}

std::string multiIndex(llvm::ArrayRef<int64_t> shape, int64_t flat) {
  llvm::SmallVector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return "[" + llvm::join(llvm::map_range(index, [](int64_t i) {
                            return std::to_string(i);
                          }),
                          ", ") +
         "]";
}

/// Compares every result with the reference; prints what differs. Returns
/// whether all passed.
bool compareResults(const PerRankTensors &perRank,
                    const NpzArchive &reference, llvm::StringRef file) {
  int64_t numRanks = perRank.size();
  size_t numResults = perRank.front().size();
  bool ok = true;
  for (const auto &entry : reference.entries()) {
    std::optional<uint64_t> rank;
    uint64_t index;
    if (parseTensorKey(entry.first, "res", rank, index) &&
        (index >= numResults ||
         (rank && *rank >= static_cast<uint64_t>(numRanks)))) {
      fail(kExitFailed, file + ": '" + entry.first +
                            "' has no counterpart: the function returns " +
                            llvm::Twine(numResults) + " result(s) on " +
                            llvm::Twine(numRanks) + " rank(s)");
      ok = false;
    }
  }

  double maxAbs = 0, maxRel = 0;
  for (int64_t rank = 0; rank < numRanks; ++rank) {
    for (auto [index, got] : llvm::enumerate(perRank[rank])) {
      std::string key = tensorKey("res", rank, numRanks, index);
      const Tensor *expected = reference.lookup(key);
      if (!expected && numRanks > 1)
        expected = reference.lookup("res" + std::to_string(index));
      if (!expected) {
        fail(kExitFailed, file + " has no '" + key + "'");
        ok = false;
        continue;
      }
      if (expected->shape != got.shape) {
        fail(kExitFailed, key + " is " + describeTensor(got.shape, got.dtype) +
                              " but " + file + " holds " +
                              describeTensor(expected->shape, expected->dtype));
        ok = false;
        continue;
      }
      // The worst element is the one furthest past its tolerance.
      int64_t failures = 0, worst = -1;
      double worstExcess = -1;
      for (size_t i = 0; i < got.data.size(); ++i) {
        double a = got.data[i], b = expected->data[i];
        if (a == b || (std::isnan(a) && std::isnan(b)))
          continue; // equal, including matching infinities and NaNs
        double err = std::fabs(a - b);
        double bound = absTolerance + relTolerance * std::fabs(b);
        if (std::isfinite(err)) {
          maxAbs = std::max(maxAbs, err);
          if (b != 0)
            maxRel = std::max(maxRel, err / std::fabs(b));
        }
        if (err <= bound)
          continue;
        ++failures;
        double excess = std::isnan(err) || std::isinf(err)
                            ? INFINITY
                            : (bound > 0 ? err / bound : INFINITY);
        if (worst < 0 || excess > worstExcess) {
          worst = static_cast<int64_t>(i);
          worstExcess = excess;
        }
      }
      if (failures == 0)
        continue;
      ok = false;
      double a = got.data[worst], b = expected->data[worst];
      double err = std::fabs(a - b);
      fail(kExitFailed,
           key + " differs from " + file + ": " + llvm::Twine(failures) +
               " of " + llvm::Twine(got.data.size()) +
               " elements exceed atol + rtol*|expected| (atol=" +
               formatDouble("%g", absTolerance.getValue()) +
               ", rtol=" + formatDouble("%g", relTolerance.getValue()) +
               "); worst at " + multiIndex(got.shape, worst) + ": got " +
               formatDouble("%.17g", a) + " expected " +
               formatDouble("%.17g", b) + " (abs err " +
               formatDouble("%.6g", err) + ", rel err " +
               formatDouble("%.6g", err / std::fabs(b)) + ")");
    }
  }
  if (ok)
    llvm::outs() << "expect: all results match " << file
                 << llvm::format(" (max abs err=%.6g, max rel err=%.6g)\n",
                                 maxAbs, maxRel);
  return ok;
}

/// A package: --check, or a run through WeftHost (--dry-run without a GPU).
int runPackageFile() {
  if (!entryName.empty() || !inputsFile.empty() || randomInputs || !expectFile.empty() ||
      !saveInputsFile.empty())
    return fail(kExitUsage, "--entry, --inputs, --random-inputs, --save-inputs "
                            "and --expect run IR; a package takes --data, "
                            "--load-state, --save-state and --outputs");
  if (deviceSm.getNumOccurrences() && !dryRun)
    return fail(kExitUsage, "--sm needs --dry-run (a run uses the device's)");
  if (initState.getNumOccurrences() && initState < 0)
    return fail(kExitUsage, "--init-state takes a seed >= 0, got " + llvm::Twine(initState));
  if (timeSegmentRuns < 0)
    return fail(kExitUsage, "--time-segments takes a run count >= 1, got " +
                                llvm::Twine(timeSegmentRuns));
  if (!timingJson.empty() && !timeSegmentRuns)
    return fail(kExitUsage, "--timing-json needs --time-segments");
  weft::RunPackageOptions options;
  options.path = inputFilename;
  options.steps = runSteps;
  options.data = dataFile;
  options.loadState = loadState;
  options.saveState = saveState;
  options.outputs = outputsFile;
  options.graph = useGraph;
  options.debugBuffers = debugBuffers;
  options.printMemory = printMemory;
  options.dryRun = dryRun;
  options.sm = deviceSm;
  options.device = deviceOrdinal;
  options.deviceGiven = deviceOrdinal.getNumOccurrences() > 0;
  options.collectiveTimeout = collectiveTimeout;
  options.collectives = collectiveEngine;
  options.commPriority = commPriority;
  options.gemmSmMargin = gemmSmMargin;
  options.initState = initState;
  options.timeSegments = timeSegmentRuns;
  options.timingJson = timingJson;
  options.traceJson = traceJson;
  return weft::runPackage(options);
}

/// --gather-state INDEX --to OUT.npz, or STEP.weftpkg --split-state S.npz
/// --to INDEX: between a multi-GPU run's shards and one single-GPU file.
int runShardTool() {
  if (shardsTo.empty() || (!gatherState.empty() && !splitState.empty()))
    return fail(kExitUsage, "--gather-state INDEX or --split-state S.npz (one of them) needs "
                            "--to PATH");
  std::string why;
  if (!gatherState.empty())
    return weft::gatherShards(gatherState, shardsTo, why) ? kExitOk : fail(kExitFailed, why);
  if (!weft::isPackageFile(inputFilename))
    return fail(kExitUsage, "--split-state needs the partitioned package (weft-compile "
                            "--grid=...) whose grid to split for");
  auto file = llvm::MemoryBuffer::getFile(inputFilename, false, false);
  if (!file)
    return fail(kExitUsage, inputFilename + ": cannot read");
  weft::pkg::Package package;
  if (!weft::pkg::readPackage((*file)->getBufferStart(), (*file)->getBufferSize(), package, why))
    return fail(kExitUsage, inputFilename + ": " + why);
  if (package.grid.empty())
    return fail(kExitUsage, inputFilename + " is a one-GPU package: there is nothing to split");
  weft::RankLayout layout;
  layout.grid = package.grid;
  layout.splitAxis = package.splitAxis;
  std::map<std::string, int> splitDims;
  for (const weft::pkg::Split &split : package.splits)
    splitDims[package.buffers[split.buffer].name] = split.dim;
  llvm::Expected<NpzArchive> archive = weft::readNpz(splitState);
  if (!archive)
    return fail(kExitUsage, llvm::toString(archive.takeError()));
  return weft::splitIntoShards(*archive, layout, splitDims, shardsTo, why)
             ? kExitOk
             : fail(kExitFailed, why);
}

/// The IR options that go together, checked before the file is read.
int checkModuleOptions() {
  bool packageOptionGiven = false;
  for (cl::Option *option : std::initializer_list<cl::Option *>{
           &runSteps, &dataFile, &loadState, &saveState, &useGraph, &debugBuffers,
           &printMemory, &dryRun, &deviceSm, &deviceOrdinal, &initState, &timeSegmentRuns,
           &timingJson})
    packageOptionGiven |= option->getNumOccurrences() > 0;
  if (packageOptionGiven)
    return fail(kExitUsage, inputFilename + " is not a package (weft-compile "
                                            "--emit=package): --steps, --data, "
                                            "--load-state, --save-state, --graph, "
                                            "--debug-buffers, --print-memory, "
                                            "--dry-run, --sm and --device run packages");
  if (!inputsFile.empty() && randomInputs)
    return fail(kExitUsage, "--inputs and --random-inputs exclude each other");
  if (seed.getNumOccurrences() && !randomInputs)
    return fail(kExitUsage, "--seed needs --random-inputs");
  if ((relTolerance.getNumOccurrences() || absTolerance.getNumOccurrences()) &&
      expectFile.empty())
    return fail(kExitUsage, "--rtol and --atol need --expect");
  if (!(relTolerance >= 0) || !(absTolerance >= 0))
    return fail(kExitUsage, "--rtol and --atol must be non-negative");
  return kExitOk;
}

/// The function to run (--entry), with the message naming the others.
int findEntry(ModuleOp module, func::FuncOp &func) {
  auto available = [&] {
    llvm::SmallVector<std::string> names;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isExternal())
        names.push_back(("@" + f.getSymName()).str());
    return names.empty() ? std::string("none") : llvm::join(names, ", ");
  };
  if (entryName.empty())
    return fail(kExitUsage, "--entry NAME is required; functions in " + inputFilename + ": " +
                                available());
  func = module.lookupSymbol<func::FuncOp>(entryName);
  if (!func || func.isExternal())
    return fail(kExitUsage, "no function @" + entryName + " in " + inputFilename +
                                "; available: " + available());
  return kExitOk;
}

/// The arguments of every rank: drawn, from --inputs, or none.
int readArguments(func::FuncOp func, int64_t numRanks, PerRankTensors &args) {
  if (randomInputs) {
    llvm::Expected<std::vector<Tensor>> drawn = weft::reference::drawRandomArgs(func, seed);
    if (!drawn)
      return fail(kExitUsage, llvm::toString(drawn.takeError()));
    args.assign(numRanks, *drawn);
  } else if (!inputsFile.empty()) {
    llvm::Expected<NpzArchive> archive = weft::readNpz(inputsFile);
    if (!archive)
      return fail(kExitUsage, llvm::toString(archive.takeError()));
    if (llvm::Error err =
            weft::reference::checkArgumentKeys(func, numRanks, *archive, inputsFile))
      return fail(kExitUsage, llvm::toString(std::move(err)));
    llvm::Expected<PerRankTensors> fromFile =
        weft::reference::argumentsFromNpz(func, numRanks, *archive, inputsFile);
    if (!fromFile)
      return fail(kExitUsage, llvm::toString(fromFile.takeError()));
    args = std::move(*fromFile);
  } else if (func.getNumArguments() != 0) {
    return fail(kExitUsage, "@" + entryName + " takes " +
                                llvm::Twine(func.getNumArguments()) +
                                " arguments: give --inputs or --random-inputs");
  } else {
    args.assign(numRanks, {});
  }
  return kExitOk;
}

/// Runs `func` on the interpreter (every rank for an SPMD function), prints
/// the results, writes and compares them.
int runFunction(func::FuncOp func) {
  // A partitioned step reads and returns global tensors: its ranks get their
  // blocks, and their results are gathered.
  bool partitioned = weft::reference::isPartitioned(func);
  OwningOpRef<func::FuncOp> global;
  if (partitioned)
    global = weft::reference::globalSignature(func);
  FailureOr<int64_t> numRanks =
      partitioned ? FailureOr<int64_t>(1) : weft::reference::numRanks(func);
  if (failed(numRanks))
    return kExitUsage;
  PerRankTensors args;
  if (int code = readArguments(partitioned ? *global : func, *numRanks, args))
    return code;
  // Saved before running, so a failing run can be reproduced from the file.
  if (!saveInputsFile.empty())
    if (llvm::Error err =
            weft::writeNpz(saveInputsFile, weft::reference::archiveOf(args, "arg")))
      return fail(kExitFailed, llvm::toString(std::move(err)));

  PerRankTensors results;
  if (partitioned) {
    FailureOr<std::vector<Tensor>> gathered =
        weft::reference::runPartitioned(func, args[0]);
    if (failed(gathered))
      return kExitFailed;
    results.push_back(std::move(*gathered));
  } else if (*numRanks == 1) {
    FailureOr<std::vector<Tensor>> single = weft::reference::run(func, args[0]);
    if (failed(single))
      return kExitFailed;
    results.push_back(std::move(*single));
  } else {
    FailureOr<PerRankTensors> spmd = weft::reference::runSpmd(func, args);
    if (failed(spmd))
      return kExitFailed;
    results = std::move(*spmd);
  }
  printResults(results);

  if (!outputsFile.empty())
    if (llvm::Error err =
            weft::writeNpz(outputsFile, weft::reference::archiveOf(results, "res")))
      return fail(kExitFailed, llvm::toString(std::move(err)));
  if (expectFile.empty())
    return kExitOk;
  llvm::Expected<NpzArchive> reference = weft::readNpz(expectFile);
  if (!reference)
    return fail(kExitUsage, llvm::toString(reference.takeError()));
  return compareResults(results, *reference, expectFile) ? kExitOk : kExitFailed;
}

/// An IR file: parse it and run --entry.
int runModuleFile() {
  if (int code = checkModuleOptions())
    return code;
  mlir::DialectRegistry registry;
  weft::registerWeftDialects(registry);
  MLIRContext context(registry);
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(inputFilename, &errorMessage);
  if (!file)
    return fail(kExitUsage, errorMessage);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  // Parsing verifies the module; the handler has printed why if it fails.
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return kExitUsage;
  func::FuncOp func;
  if (int code = findEntry(*module, func))
    return code;
  return runFunction(func);
}

} // namespace

int weft::weftRunMain(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions({&runCategory, &packageCategory});
  if (!cl::ParseCommandLineOptions(
          argc, argv, "weft-run: run a weft function in the reference interpreter\n",
          &llvm::errs()))
    return kExitUsage;
  if (allowMissingImages && !checkPackage)
    return fail(kExitUsage, "--allow-missing-images needs --check");
  if (!(collectiveTimeout > 0))
    return fail(kExitUsage, "--collective-timeout takes a positive number of seconds, got " +
                                std::to_string(double(collectiveTimeout)));
  if (!collectiveEngine.empty() && collectiveEngine != "nccl" &&
      collectiveEngine != "copy-engine" && collectiveEngine != "auto")
    return fail(kExitUsage, "--collectives takes nccl, copy-engine or auto, got '" +
                                collectiveEngine + "'");
  if (!commPriority.empty() && commPriority != "normal" && commPriority != "high")
    return fail(kExitUsage, "--comm-priority takes normal or high, got '" + commPriority + "'");
  if (gemmSmMargin.getNumOccurrences() && (gemmSmMargin < 0 || gemmSmMargin > 1024))
    return fail(kExitUsage, "--gemm-sm-margin takes a number of SMs from 0 to 1024, got " +
                                std::to_string(int(gemmSmMargin)));
  if (!gatherState.empty() || !splitState.empty())
    return runShardTool();
  if (checkPackage)
    return weft::checkPackageFile(inputFilename, allowMissingImages);
  if (nprocPerNode.getNumOccurrences()) {
    if (nprocPerNode < 1 || nprocPerNode > 1024)
      return fail(kExitUsage, "--nproc-per-node takes 1 to 1024 processes, got " +
                                  llvm::Twine(nprocPerNode));
    if (std::getenv("WORLD_SIZE"))
      return fail(kExitUsage, "--nproc-per-node starts the ranks itself; WORLD_SIZE is "
                              "already set (torchrun starts them: drop the option)");
    if (!weft::isPackageFile(inputFilename) || dryRun)
      return fail(kExitUsage, "--nproc-per-node runs a package (weft-compile --grid=... "
                              "--emit=package), without --dry-run");
    return weft::launchRanks(nprocPerNode, collectiveTimeout, argc, argv);
  }
  if (weft::isPackageFile(inputFilename))
    return runPackageFile();
  return runModuleFile();
}
