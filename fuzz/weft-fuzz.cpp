// weft-fuzz: a libFuzzer target over Weft's IR front end. Each input is parsed
// as a module with the dialects weft-opt registers (weft, shard, func, arith,
// tensor, and what tiled attention uses: registerWeftDialects), verified,
// canonicalized, queried through the cost and memory interfaces, printed and
// re-parsed; only a crash, a sanitizer report or a broken invariant (valid IR
// that canonicalization makes invalid, printed IR that does not parse back)
// counts as a finding. Mutations are IR-aware (IRMutator.cpp).
#include "IRMutator.h"
#include "weft/RegisterWeftDialects.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

using namespace mlir;

//===----------------------------------------------------------------------===//
// The target
//===----------------------------------------------------------------------===//

namespace {

/// One context for many inputs (building one per input costs more than the
/// input), replaced now and then so uniqued types and attributes of mutants
/// do not accumulate without bound.
class FuzzContext {
public:
  MLIRContext &get() {
    if (!context || ++uses > kUsesPerContext) {
      context.reset();
      DialectRegistry registry;
      weft::registerWeftDialects(registry);
      context = std::make_unique<MLIRContext>(registry,
                                              MLIRContext::Threading::DISABLED);
      context->loadAllAvailableDialects();
      uses = 0;
    }
    return *context;
  }

private:
  static constexpr int kUsesPerContext = 5000;
  std::unique_ptr<MLIRContext> context;
  int uses = 0;
};

[[noreturn]] void finding(const char *what, llvm::StringRef ir) {
  llvm::errs() << "weft-fuzz: " << what << "\n--- IR ---\n" << ir << "\n";
  llvm::errs().flush();
  abort();
}

/// Calls every cost/memory interface method (Weft's code under the
/// sanitizers); results are discarded.
void queryInterfaces(ModuleOp module, llvm::StringRef text) {
  module->walk([&](Operation *op) {
    // The sharding models (lib/Partition): a nest whose maps, loops and
    // reduction kinds disagree would mislead the partitioner.
    if (auto sharding = dyn_cast<shard::ShardingInterface>(op)) {
      SmallVector<utils::IteratorType> loops = sharding.getLoopIteratorTypes();
      SmallVector<shard::ReductionKind> kinds = sharding.getReductionLoopIteratorKinds();
      SmallVector<AffineMap> maps = sharding.getIndexingMaps();
      size_t reductions = llvm::count(loops, utils::IteratorType::reduction);
      bool mapsFit = llvm::all_of(maps, [&](AffineMap map) {
        return map.getNumDims() == loops.size();
      });
      if (kinds.size() != reductions || !mapsFit ||
          (!maps.empty() && maps.size() != op->getNumOperands() + op->getNumResults()))
        finding("a ShardingInterface nest whose loops, reduction kinds and maps "
                "disagree",
                text);
    }
    if (auto cost = dyn_cast<weft::CostOpInterface>(op)) {
      volatile int64_t flops = cost.getFlops();
      volatile int64_t bytes = cost.getBytesMoved();
      volatile double seconds = cost.getRooflineSeconds(989e12, 3.35e12);
      (void)flops, (void)bytes, (void)seconds;
    }
    if (auto memory = dyn_cast<weft::MemoryOpInterface>(op)) {
      volatile int64_t results = memory.getResultBytes();
      volatile int64_t workspace = memory.getWorkspaceBytes();
      (void)results, (void)workspace;
    }
  });
}

/// With WEFT_FUZZ_STATS set, how far inputs got (verified: at least one
/// function did), by the kind of the last
/// mutation, printed at exit: a check that the mutator's output still
/// reaches the verifiers and folders.
struct Stage {
  struct Counts {
    uint64_t inputs = 0, parsed = 0, verified = 0;
  };
  static std::map<std::string, Counts> &byMutation() {
    // Never destroyed: report() runs from atexit, after static destructors
    // of objects constructed later than its registration.
    static auto *counts = new std::map<std::string, Counts>();
    return *counts;
  }
  static void report() {
    Counts total;
    for (auto &[kind, counts] : byMutation()) {
      llvm::errs() << llvm::format("weft-fuzz: %-16s %9llu inputs %9llu parsed %9llu verified\n",
                                   kind.c_str(), counts.inputs, counts.parsed,
                                   counts.verified);
      total.inputs += counts.inputs;
      total.parsed += counts.parsed;
      total.verified += counts.verified;
    }
    llvm::errs() << llvm::format("weft-fuzz: %-16s %9llu inputs %9llu parsed %9llu verified\n",
                                 "all", total.inputs, total.parsed, total.verified);
  }
  static Counts *current() {
    static bool enabled = [] {
      if (getenv("WEFT_FUZZ_STATS"))
        atexit(report);
      return getenv("WEFT_FUZZ_STATS") != nullptr;
    }();
    return enabled ? &byMutation()[weft::fuzz::lastMutation] : nullptr;
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static FuzzContext contexts;
  MLIRContext &context = contexts.get();
  // Diagnostics are expected for most inputs: swallow them.
  ScopedDiagnosticHandler silence(&context, [](Diagnostic &) { return success(); });

  // MLIR's lexer relies on the NUL that llvm::MemoryBuffer puts after every
  // buffer (it marks EOF); libFuzzer's data has none, and parsing it directly
  // reads past its end (ASan: heap-buffer-overflow in the parser). A
  // std::string supplies the terminator, as a file loaded by weft-opt would.
  std::string source(reinterpret_cast<const char *>(data), size);
  llvm::StringRef text(source.c_str(), source.size());
  ParserConfig config(&context, /*verifyAfterParse=*/false);
  Stage::Counts *counts = Stage::current();
  if (counts)
    ++counts->inputs;
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, config);
  if (!module)
    return 0;
  if (counts)
    ++counts->parsed;
  if (failed(verify(*module))) {
    // Keep the functions that verify: one bad op (most mutants have one) must
    // not keep the folders, interfaces and printer from the rest.
    for (Operation &op : llvm::make_early_inc_range(module->getBody()->getOperations()))
      if (failed(verify(&op)))
        op.erase();
    if (module->getBody()->empty() || failed(verify(*module)))
      return 0;
  }
  if (counts)
    ++counts->verified;

  // Folders and patterns run only on verified IR; they must keep it valid.
  PassManager pm(&context);
  pm.enableVerifier(true);
  pm.addPass(createCanonicalizerPass());
  if (failed(pm.run(*module)))
    finding("canonicalize turned valid IR into invalid IR (or failed)", text);

  queryInterfaces(*module, text);

  // What is printed must parse back and verify.
  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->print(os);
  OwningOpRef<ModuleOp> reparsed =
      parseSourceString<ModuleOp>(printed, ParserConfig(&context));
  if (!reparsed)
    finding("printed IR does not parse back", printed);
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned int seed) {
  return weft::fuzz::mutateIR(data, size, maxSize, seed);
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1,
                                            const uint8_t *data2, size_t size2,
                                            uint8_t *out, size_t maxOutSize,
                                            unsigned int seed) {
  return weft::fuzz::crossOverIR(data1, size1, data2, size2, out, maxOutSize,
                                 seed);
}
