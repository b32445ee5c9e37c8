// Analysis passes of Weft (declarations and registration from Passes.td).
#ifndef WEFT_ANALYSIS_PASSES_H
#define WEFT_ANALYSIS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace weft {

#define GEN_PASS_DECL
#include "weft/Analysis/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "weft/Analysis/Passes.h.inc"

} // namespace weft

#endif // WEFT_ANALYSIS_PASSES_H
