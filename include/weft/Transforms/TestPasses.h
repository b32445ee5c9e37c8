// Test-only passes, registered by weft-opt alone (never by weft-compile):
// they exist so lit tests can exercise the tooling around passes.
#ifndef WEFT_TRANSFORMS_TESTPASSES_H
#define WEFT_TRANSFORMS_TESTPASSES_H

namespace weft {

/// Registers weft-test-break-result, which deliberately miscompiles (turns
/// the first weft.add of each function into weft.sub) so the tests of
/// --weft-diff-each-pass have a pass to catch.
void registerWeftTestPasses();

/// Registers weft-test-print-formulas, which prints the ops with a formula
/// (ScalarFormulaOpInterface) and each formula op's code
/// (TestPrintFormulas.cpp).
void registerTestPrintFormulasPass();

} // namespace weft

#endif // WEFT_TRANSFORMS_TESTPASSES_H
