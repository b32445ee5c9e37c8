// Test-only passes (see TestPasses.h). Not in Passes.td: no tool but
// weft-opt may offer them.
#include "weft/Transforms/TestPasses.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {

/// Replaces the first weft.add of each function (or of `func` only) by
/// weft.sub on the same operands: a wrong result on purpose. Runs on a module
/// or, nested, on one function (to exercise per-function pipelines).
struct TestBreakResultPass : PassWrapper<TestBreakResultPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestBreakResultPass)

  TestBreakResultPass() = default;
  TestBreakResultPass(const TestBreakResultPass &other) : PassWrapper(other) {}

  StringRef getArgument() const final { return "weft-test-break-result"; }
  StringRef getDescription() const final {
    return "Test only: miscompile on purpose by turning the first weft.add "
           "of each function into weft.sub";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<weft::WeftDialect>();
  }

  Option<std::string> func{*this, "func",
                           llvm::cl::desc("Only this function (default: all)")};

  void runOnOperation() override {
    Operation *root = getOperation();
    SmallVector<func::FuncOp> functions;
    if (auto function = dyn_cast<func::FuncOp>(root))
      functions.push_back(function);
    else
      for (Region &region : root->getRegions())
        for (Block &block : region)
          llvm::append_range(functions, block.getOps<func::FuncOp>());
    unsigned broken = 0;
    for (func::FuncOp function : functions) {
      if (function.isExternal() ||
          (!func.empty() && function.getSymName() != func))
        continue;
      weft::AddOp add;
      function.walk([&](weft::AddOp op) {
        add = op;
        return WalkResult::interrupt();
      });
      if (!add)
        continue;
      OpBuilder builder(add);
      auto sub = weft::SubOp::create(builder, add.getLoc(), add.getType(),
                                     add.getLhs(), add.getRhs());
      sub->setDiscardableAttrs(add->getDiscardableAttrDictionary());
      add.replaceAllUsesWith(sub.getResult());
      add.erase();
      ++broken;
    }
    // A test pass that silently does nothing would make its tests vacuous;
    // nested on a function it may skip the functions `func` does not name.
    if (broken == 0 && (isa<ModuleOp>(root) || func.empty())) {
      emitError(root->getLoc(),
                "weft-test-break-result found no weft.add to break")
          << (func.empty() ? std::string() : " in @" + func);
      signalPassFailure();
    }
  }
};

} // namespace

void weft::registerWeftTestPasses() { PassRegistration<TestBreakResultPass>(); }
