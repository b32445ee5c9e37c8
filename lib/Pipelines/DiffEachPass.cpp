// --weft-diff-each-pass: a PassInstrumentation that runs the reference
// interpreter on the compared functions before the first pass and after every
// pass, and reports the first pass that changed a result beyond tolerance.
#include "weft/Pipelines.h"

#include "weft/Reference/Interpreter.h"
#include "weft/Reference/NpzArguments.h"
#include "weft/Reference/Partitioned.h"
#include "weft/Reference/RandomInputs.h"
#include "weft/Support/Npz.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/ManagedStatic.h"
#include "llvm/Support/WithColor.h"

#include <cmath>

using namespace mlir;
using namespace weft;
namespace cl = llvm::cl;

//===----------------------------------------------------------------------===//
// Status
//===----------------------------------------------------------------------===//

void DiffEachPassStatus::markSeen(StringRef name) {
  std::lock_guard<std::mutex> lock(mutex);
  seen.insert(name.str());
}

std::vector<std::string> DiffEachPassStatus::getUnseenEntries(
    const std::vector<std::string> &entries) const {
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<std::string> unseen;
  for (const std::string &entry : entries)
    if (!seen.count(entry))
      unseen.push_back(entry);
  return unseen;
}

namespace {

//===----------------------------------------------------------------------===//
// Comparing results
//===----------------------------------------------------------------------===//

/// Unit roundoff (half an ulp at 1) of a float type; 0 for integers and i1,
/// which compare exactly.
double unitRoundoff(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return 0x1p-53;
  case DType::F32:
    return 0x1p-24;
  case DType::F16:
    return 0x1p-11;
  case DType::BF16:
    return 0x1p-8;
  case DType::I64:
  case DType::I1:
  case DType::I16:
    return 0;
  }
  return 0;
}

/// See DiffEachPassOptions::rtol.
double toleranceFor(DType dtype, double rtol) {
  if (dtype == DType::I64 || dtype == DType::I1 || dtype == DType::I16)
    return 0;
  if (dtype == DType::F64)
    return rtol;
  return std::max(rtol, 16 * unitRoundoff(dtype));
}

/// The largest normwise relative error of `got` against `expected`:
/// |got_i - expected_i| / max_j |expected_j| (absolute when the reference is
/// all zeros); a NaN or infinity on one side only is an infinite error.
struct ElementError {
  double error = 0;
  int64_t index = -1;
};

ElementError maxRelativeError(const Tensor &got, const Tensor &expected) {
  double scale = 0;
  for (double value : expected.data)
    if (std::isfinite(value))
      scale = std::max(scale, std::fabs(value));
  ElementError worst;
  for (size_t i = 0; i < got.data.size(); ++i) {
    double a = got.data[i], b = expected.data[i];
    if (a == b || (std::isnan(a) && std::isnan(b)))
      continue;
    double error = std::isfinite(a) && std::isfinite(b)
                       ? std::fabs(a - b) / (scale > 0 ? scale : 1.0)
                       : INFINITY;
    if (worst.index < 0 || error > worst.error) {
      worst.error = error;
      worst.index = int64_t(i);
    }
  }
  return worst;
}

std::string multiIndex(llvm::ArrayRef<int64_t> shape, int64_t flat) {
  llvm::SmallVector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return "[" +
         llvm::join(llvm::map_range(
                        index, [](int64_t i) { return std::to_string(i); }),
                    ", ") +
         "]";
}

std::string formatted(const char *format, double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format(format, value);
  return text;
}

//===----------------------------------------------------------------------===//
// The instrumentation
//===----------------------------------------------------------------------===//

using PerRank = std::vector<std::vector<Tensor>>;

struct TrackedFunction {
  std::string name;
  FunctionType type;
  PerRank args;
  PerRank expected;
  /// Where the reference results come from: "the input IR" or "the IR after
  /// pass 'X'" (for functions a pass created).
  std::string origin;
};

/// Functions with a body directly under `root` (or `root` itself).
llvm::SmallVector<func::FuncOp> functionsOf(Operation *root) {
  llvm::SmallVector<func::FuncOp> functions;
  if (auto func = dyn_cast<func::FuncOp>(root)) {
    if (!func.isExternal())
      functions.push_back(func);
    return functions;
  }
  for (Region &region : root->getRegions())
    for (Block &block : region)
      for (auto func : block.getOps<func::FuncOp>())
        if (!func.isExternal())
          functions.push_back(func);
  return functions;
}

func::FuncOp lookupFunction(Operation *root, StringRef name) {
  for (func::FuncOp func : functionsOf(root))
    if (func.getSymName() == name)
      return func;
  return {};
}

/// The interpreter holds every tensor as float64: a tensor past this many
/// elements (2 GiB) is refused up front rather than failing an allocation.
constexpr int64_t kMaxInterpretedElements = int64_t(1) << 28;

/// Fails, naming the tensor, when `func` holds one too large to interpret.
LogicalResult checkInterpretable(func::FuncOp func) {
  auto tooLarge = [&](Type type, Location loc) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape() ||
        tensor.getNumElements() <= kMaxInterpretedElements)
      return success();
    return emitError(loc, "--weft-diff-each-pass: @")
           << func.getSymName() << " holds " << type << " ("
           << tensor.getNumElements()
           << " elements), more than the reference interpreter takes here ("
           << kMaxInterpretedElements << ")";
  };
  for (Type type : func.getArgumentTypes())
    if (failed(tooLarge(type, func.getLoc())))
      return failure();
  WalkResult walk = func.walk([&](Operation *op) {
    for (Type type : op->getResultTypes())
      if (failed(tooLarge(type, op->getLoc())))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// The pass as users name it: its flag, or its class for flagless passes.
std::string passName(Pass *pass) {
  StringRef argument = pass->getArgument();
  return (argument.empty() ? pass->getName() : argument).str();
}

/// The pass manager's adaptors that run nested pipelines: their passes are
/// checked one by one, so the adaptor itself is not.
bool isPipelineAdaptor(Pass *pass) {
  return pass->getArgument().empty() &&
         pass->getName().contains("OpToOpPassAdaptor");
}

class DiffEachPassInstrumentation : public PassInstrumentation {
public:
  DiffEachPassInstrumentation(DiffEachPassOptions options,
                              std::shared_ptr<DiffEachPassStatus> status)
      : options(std::move(options)), status(std::move(status)) {}

  void runBeforePass(Pass *pass, Operation *op) override {
    // The first pass of a run: the IR as it came in is the reference. (A pass
    // manager run again on other IR starts over.)
    Operation *top = op;
    while (top->getParentOp())
      top = top->getParentOp();
    if (top == root)
      return;
    root = top;
    stopped = false;
    tracked.clear();
    known.clear();
    llvm::SmallVector<func::FuncOp> functions = functionsOf(root);
    for (func::FuncOp func : functions)
      known.insert(func.getSymName());
    if (options.entries.empty()) {
      if (functions.empty()) {
        emitError(root->getLoc(), "--weft-diff-each-pass: the input has no "
                                  "function with a body to compare");
        return fail();
      }
      firstEntry = functions.front().getSymName().str();
      (void)startTracking(functions.front(), "the input IR");
      return;
    }
    firstEntry = options.entries.front();
    for (const std::string &entry : options.entries)
      if (func::FuncOp func = lookupFunction(root, entry))
        if (failed(startTracking(func, "the input IR")))
          return;
  }

  void runAfterPass(Pass *pass, Operation *op) override {
    if (stopped || !root || isPipelineAdaptor(pass))
      return;
    std::string name = passName(pass);
    // A pass on a function (or inside one) changes that function only.
    auto scope = dyn_cast<func::FuncOp>(op);
    if (!scope)
      scope = op->getParentOfType<func::FuncOp>();
    for (size_t i = 0; i < tracked.size() && !stopped;) {
      TrackedFunction &entry = tracked[i];
      if (scope && scope.getSymName() != entry.name) {
        ++i;
        continue;
      }
      func::FuncOp func = lookupFunction(root, entry.name);
      if (!func) {
        emitWarning(root->getLoc())
            << "pass '" << name << "' removed @" << entry.name
            << "; --weft-diff-each-pass compares it no further";
        tracked.erase(tracked.begin() + i);
        continue;
      }
      (void)check(func, entry, name);
      ++i;
    }
    if (stopped || scope)
      return;
    // Functions this pass added (autodiff's @<entry>_step): their results
    // after this pass are the reference for the passes that follow.
    for (func::FuncOp func : functionsOf(root)) {
      if (!known.insert(func.getSymName()).second)
        continue;
      bool selected = options.entries.empty() ||
                      llvm::is_contained(options.entries, func.getSymName());
      if (selected &&
          failed(startTracking(func, "the IR after pass '" + name + "'")))
        return;
    }
  }

private:
  void fail() {
    status->setFailed();
    stopped = true;
  }

  /// The arguments of `func`: from --weft-diff-inputs for the first entry,
  /// else seeded random ones.
  FailureOr<std::vector<Tensor>> argumentsFor(func::FuncOp func) {
    if (options.inputsFile.empty() || func.getSymName() != firstEntry) {
      llvm::Expected<std::vector<Tensor>> drawn =
          reference::drawRandomArgs(func, options.seed);
      if (!drawn)
        return emitError(func.getLoc(),
                         "--weft-diff-each-pass cannot draw inputs: ")
               << llvm::toString(drawn.takeError());
      return std::move(*drawn);
    }
    llvm::Expected<NpzArchive> archive = readNpz(options.inputsFile);
    if (!archive)
      return emitError(func.getLoc(), "--weft-diff-inputs: ")
             << llvm::toString(archive.takeError());
    llvm::Expected<reference::PerRankTensors> args =
        reference::argumentsFromNpz(func, /*numRanks=*/1, *archive, options.inputsFile);
    if (!args)
      return emitError(func.getLoc(), "--weft-diff-inputs: ")
             << llvm::toString(args.takeError());
    return std::move(args->front());
  }

  /// Runs `func` on every rank; the interpreter's diagnostics say why not.
  FailureOr<PerRank> runReference(func::FuncOp func, const PerRank &args) {
    if (failed(checkInterpretable(func)))
      return failure();
    FailureOr<int64_t> ranks = reference::numRanks(func);
    if (failed(ranks))
      return failure();
    if (args.size() == 1 && *ranks > 1) {
      // Placed on a grid but not partitioned yet (weft-place's annotations):
      // every rank runs the whole step; rank 0 stands for them.
      FailureOr<PerRank> results = reference::runSpmd(func, PerRank(*ranks, args[0]));
      if (failed(results))
        return failure();
      return PerRank{std::move(results->front())};
    }
    if (int64_t(args.size()) != *ranks) {
      emitError(func.getLoc(), "--weft-diff-each-pass: @")
          << func.getSymName() << " now runs on " << *ranks
          << " ranks, its reference on " << args.size();
      return failure();
    }
    return reference::runSpmd(func, args);
  }

  LogicalResult startTracking(func::FuncOp func, const std::string &origin) {
    status->markSeen(func.getSymName());
    if (failed(checkInterpretable(func))) {
      fail();
      return failure();
    }
    FailureOr<std::vector<Tensor>> args = argumentsFor(func);
    FailureOr<int64_t> ranks = reference::numRanks(func);
    if (failed(args) || failed(ranks)) {
      fail();
      return failure();
    }
    TrackedFunction entry;
    entry.name = func.getSymName().str();
    entry.type = func.getFunctionType();
    entry.args.assign(*ranks, *args);
    entry.origin = origin;
    FailureOr<PerRank> results = runReference(func, entry.args);
    if (failed(results)) {
      emitError(func.getLoc(),
                "--weft-diff-each-pass: the reference interpreter "
                "cannot run @")
          << entry.name << " as " << origin << " has it";
      fail();
      return failure();
    }
    entry.expected = std::move(*results);
    tracked.push_back(std::move(entry));
    return success();
  }

  LogicalResult check(func::FuncOp func, const TrackedFunction &entry,
                      const std::string &pass) {
    if (reference::isPartitioned(func) && func.getFunctionType() != entry.type)
      return checkPartitioned(func, entry, pass);
    if (func.getFunctionType() != entry.type) {
      emitError(func.getLoc(), "pass '")
          << pass << "' changed the signature of @" << entry.name << " from "
          << entry.type << " to " << func.getFunctionType()
          << "; --weft-diff-each-pass cannot compare it across the change";
      fail();
      return failure();
    }
    FailureOr<PerRank> results = runReference(func, entry.args);
    if (failed(results)) {
      emitError(func.getLoc(), "after pass '")
          << pass << "', the reference interpreter cannot run @" << entry.name;
      fail();
      return failure();
    }
    return compareResults(func, entry, pass, *results);
  }

  LogicalResult compareResults(func::FuncOp func, const TrackedFunction &entry,
                               const std::string &pass, const PerRank &results) {
    for (size_t rank = 0; rank < results.size(); ++rank) {
      for (size_t r = 0; r < results[rank].size(); ++r) {
        const Tensor &got = results[rank][r];
        const Tensor &expected = entry.expected[rank][r];
        ElementError worst = maxRelativeError(got, expected);
        double tolerance = toleranceFor(expected.dtype, options.rtol);
        if (worst.index < 0 || worst.error <= tolerance)
          continue;
        InFlightDiagnostic diag = emitError(func.getLoc(), "pass '");
        diag << pass << "' changed result " << r << " of @" << entry.name;
        if (results.size() > 1)
          diag << " on rank " << rank;
        diag << ": max rel error " << formatted("%.1e", worst.error) << " at "
             << multiIndex(expected.shape, worst.index);
        diag.attachNote()
            << "got " << formatted("%.17g", got.data[worst.index]) << " where "
            << entry.origin << " gives "
            << formatted("%.17g", expected.data[worst.index])
            << "; the error is relative to the result's largest magnitude; "
               "tolerance "
            << formatted("%.1e", tolerance) << " for "
            << dtypeName(expected.dtype) << " results";
        fail();
        return failure();
      }
    }
    return success();
  }

  /// A pass partitioned the function: its ranks run on blocks of the
  /// arguments, and the gathered results must equal the global ones.
  LogicalResult checkPartitioned(func::FuncOp func, const TrackedFunction &entry,
                                 const std::string &pass) {
    if (failed(checkInterpretable(func))) {
      fail();
      return failure();
    }
    FailureOr<std::vector<Tensor>> gathered =
        reference::runPartitioned(func, entry.args.front());
    if (failed(gathered)) {
      emitError(func.getLoc(), "after pass '")
          << pass << "', the reference interpreter cannot run the ranks of @"
          << entry.name;
      fail();
      return failure();
    }
    return compareResults(func, entry, pass, {std::move(*gathered)});
  }

  DiffEachPassOptions options;
  std::shared_ptr<DiffEachPassStatus> status;
  Operation *root = nullptr;
  std::string firstEntry;
  bool stopped = false;
  std::vector<TrackedFunction> tracked;
  /// Functions seen so far, to tell which ones a pass added.
  llvm::StringSet<> known;
};

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

struct DiffEachPassCLOptions {
  cl::opt<bool> enabled{
      "weft-diff-each-pass",
      cl::desc("Run the reference interpreter before the first pass and "
               "after each pass; fail naming the first pass that changes a "
               "result"),
      cl::cat(getDiffEachPassCategory())};
  cl::list<std::string> entries{
      "weft-diff-entry", cl::CommaSeparated, cl::value_desc("name,..."),
      cl::desc("Functions to compare (default: the first function, and "
               "every function a pass adds, from that pass on)"),
      cl::cat(getDiffEachPassCategory())};
  cl::opt<std::string> inputs{
      "weft-diff-inputs", cl::value_desc("file.npz"),
      cl::desc("Arguments (arg<i>) of the first compared function; others "
               "get random ones from --weft-diff-seed"),
      cl::cat(getDiffEachPassCategory())};
  cl::opt<uint64_t> seed{"weft-diff-seed", cl::init(0),
                         cl::desc("Seed of the random arguments"),
                         cl::cat(getDiffEachPassCategory())};
  cl::opt<double> rtol{
      "weft-diff-rtol", cl::init(1e-12),
      cl::desc("Tolerance on max|got - ref| / max|ref| of f64 results; f32, "
               "f16 and bf16 results use max(rtol, 16 * their unit roundoff)"),
      cl::cat(getDiffEachPassCategory())};
};

llvm::ManagedStatic<DiffEachPassCLOptions> clOptions;

} // namespace

cl::OptionCategory &weft::getDiffEachPassCategory() {
  static cl::OptionCategory category("--weft-diff-each-pass options");
  return category;
}

std::unique_ptr<PassInstrumentation> weft::createDiffEachPassInstrumentation(
    DiffEachPassOptions options, std::shared_ptr<DiffEachPassStatus> status) {
  return std::make_unique<DiffEachPassInstrumentation>(std::move(options),
                                                       std::move(status));
}

void weft::registerDiffEachPassCLOptions() { (void)*clOptions; }

bool weft::isDiffEachPassRequested() {
  return clOptions.isConstructed() && clOptions->enabled;
}

FailureOr<DiffEachPassOptions>
weft::getDiffEachPassCLOptions(std::string &errorMessage) {
  if (!clOptions.isConstructed())
    return DiffEachPassOptions();
  DiffEachPassCLOptions &cli = *clOptions;
  bool detailGiven =
      cli.entries.getNumOccurrences() || cli.inputs.getNumOccurrences() ||
      cli.seed.getNumOccurrences() || cli.rtol.getNumOccurrences();
  if (detailGiven && !cli.enabled) {
    errorMessage = "--weft-diff-entry, --weft-diff-inputs, --weft-diff-seed "
                   "and --weft-diff-rtol need --weft-diff-each-pass";
    return failure();
  }
  if (!(cli.rtol >= 0) || !std::isfinite(cli.rtol)) {
    errorMessage = "--weft-diff-rtol must be a finite non-negative number, "
                   "got " +
                   formatted("%g", cli.rtol);
    return failure();
  }
  DiffEachPassOptions options;
  options.entries.assign(cli.entries.begin(), cli.entries.end());
  for (std::string &entry : options.entries)
    if (StringRef(entry).starts_with("@"))
      entry.erase(0, 1);
  options.inputsFile = cli.inputs;
  options.seed = cli.seed;
  options.rtol = cli.rtol;
  return options;
}

LogicalResult
weft::applyDiffEachPassCLOptions(PassManager &pm,
                                 std::shared_ptr<DiffEachPassStatus> status) {
  if (!isDiffEachPassRequested())
    return success();
  std::string errorMessage;
  FailureOr<DiffEachPassOptions> options =
      getDiffEachPassCLOptions(errorMessage);
  if (failed(options))
    return emitError(UnknownLoc::get(pm.getContext())) << errorMessage;
  // The interpreter runs between nested passes; they must not run on other
  // functions meanwhile.
  pm.getContext()->disableMultithreading();
  pm.addInstrumentation(createDiffEachPassInstrumentation(std::move(*options),
                                                          std::move(status)));
  return success();
}

bool weft::finishDiffEachPass(const DiffEachPassStatus &status) {
  if (!isDiffEachPassRequested())
    return true;
  std::vector<std::string> entries(clOptions->entries.begin(),
                                   clOptions->entries.end());
  for (std::string &entry : entries)
    if (StringRef(entry).starts_with("@"))
      entry.erase(0, 1);
  bool ok = !status.failed();
  for (const std::string &entry : status.getUnseenEntries(entries)) {
    llvm::WithColor::error(llvm::errs())
        << "--weft-diff-entry=" << entry << ": no function @" << entry
        << " appeared in the IR, so nothing was compared for it\n";
    ok = false;
  }
  return ok;
}
