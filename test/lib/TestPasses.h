// Test-only passes (TestPasses.td), registered by weft-opt alone: they exist
// so lit tests can read the cost model and liveness and exercise the tooling.
#ifndef WEFT_TEST_LIB_TESTPASSES_H
#define WEFT_TEST_LIB_TESTPASSES_H

#include "mlir/Pass/Pass.h"

namespace weft {

#define GEN_PASS_DECL
#include "TestPasses.h.inc"

/// Registers weft-print-cost, weft-print-saved, weft-test-break-result and
/// weft-test-print-formulas.
#define GEN_PASS_REGISTRATION
#include "TestPasses.h.inc"

} // namespace weft

#endif // WEFT_TEST_LIB_TESTPASSES_H
