// Passes that exist for the named pipelines (declarations and registration
// from Passes.td).
#ifndef WEFT_PIPELINES_PASSES_H
#define WEFT_PIPELINES_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "weft/Dialect/WeftDialect.h"

namespace weft {

#define GEN_PASS_DECL
#include "weft/Pipelines/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "weft/Pipelines/Passes.h.inc"

} // namespace weft

#endif // WEFT_PIPELINES_PASSES_H
