// weft-place and weft-partition (declarations and registration).
#ifndef WEFT_PARTITION_PASSES_H
#define WEFT_PARTITION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace weft {

#define GEN_PASS_DECL
#include "weft/Partition/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "weft/Partition/Passes.h.inc"

} // namespace weft

#endif // WEFT_PARTITION_PASSES_H
