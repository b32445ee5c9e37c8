// Conversion passes of Weft (declarations and registration from Passes.td).
#ifndef WEFT_CONVERSION_PASSES_H
#define WEFT_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace weft {

#define GEN_PASS_DECL
#include "weft/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "weft/Conversion/Passes.h.inc"

} // namespace weft

#endif // WEFT_CONVERSION_PASSES_H
