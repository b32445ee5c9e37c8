// The weft_plan dialect (the host schedule of a step) and its export to a
// package: PlanOps.td has the ops.
#ifndef WEFT_PLAN_PLANDIALECT_H
#define WEFT_PLAN_PLANDIALECT_H

#include "weft/Package/Package.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"

#include "weft/Plan/PlanDialect.h.inc"

#define GET_OP_CLASSES
#include "weft/Plan/PlanOps.h.inc"

namespace weft::plan {

/// The host schedule of `step` as the package holds it (no images, no
/// initial data): symbols resolved to indices, the body's launches, GEMMs and
/// events as the schedule. Emits a diagnostic at the op and fails when an op names a symbol
/// the step does not define as a buffer / kernel, or a value does not fit
/// the package's fields. With `diagnose` false, fails silently.
mlir::FailureOr<pkg::Package> exportStep(StepOp step, bool diagnose = true);

} // namespace weft::plan

#endif // WEFT_PLAN_PLANDIALECT_H
