// weft-test-print-formulas: the formula table as the compiler sees it, for
// tests: every registered op with a formula, and each formula op's code.
#include "weft/Transforms/TestPasses.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {

/// Prints `formula-op weft.<name>` for every registered op that implements
/// ScalarFormulaOpInterface, then, for each such op in the module, its
/// formula (ScalarFormula::print) after `formula of weft.<name>`. The IR is
/// left as it is.
struct TestPrintFormulasPass
    : PassWrapper<TestPrintFormulasPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestPrintFormulasPass)

  StringRef getArgument() const final { return "weft-test-print-formulas"; }
  StringRef getDescription() const final {
    return "Test only: print the pointwise ops with formulas and the "
           "formula of each such op in the module";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<weft::WeftDialect>();
  }

  void runOnOperation() override {
    llvm::raw_ostream &os = llvm::outs();
    for (RegisteredOperationName name : getContext().getRegisteredOperations())
      if (name.hasInterface<weft::ScalarFormulaOpInterface>())
        os << "formula-op " << name.getStringRef() << "\n";
    getOperation().walk([&](weft::ScalarFormulaOpInterface op) {
      weft::ScalarFormula formula;
      formula.setResult(op.buildFormula(formula));
      os << "formula of " << op->getName() << "\n";
      formula.print(os);
    });
  }
};

} // namespace

void weft::registerTestPrintFormulasPass() {
  PassRegistration<TestPrintFormulasPass>();
}
