// weft-test-print-formulas: the formula table as the compiler sees it, for
// tests: every registered op with a formula, each formula op's code and each
// paired op's (rope).
#include "TestPasses.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace weft {
#define GEN_PASS_DEF_TESTPRINTFORMULASPASS
#include "TestPasses.h.inc"
} // namespace weft

using namespace mlir;

namespace {

struct TestPrintFormulasPass
    : weft::impl::TestPrintFormulasPassBase<TestPrintFormulasPass> {
  using Base::Base;

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
    getOperation().walk([&](weft::PairedFormulaOpInterface op) {
      weft::ScalarFormula formula;
      formula.setResult(op.buildPairedFormula(formula));
      os << "paired formula of " << op->getName() << ": partner slots from "
         << op.getPartnerSlot(0) << ", first-half mask " << op.getFirstHalfSlot()
         << "\n";
      formula.print(os);
    });
  }
};

} // namespace
