// Weft's graph passes (declarations and registration from Passes.td).
#ifndef WEFT_TRANSFORMS_PASSES_H
#define WEFT_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "weft/Dialect/WeftDialect.h"
#include "weft/Transforms/PassOptions.h"

namespace weft {

#define GEN_PASS_DECL
#include "weft/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "weft/Transforms/Passes.h.inc"

/// weft-fuse-bias-grad's rewrite (also run by weft-fuse-elementwise unless
/// bias-grad=false): groups each dW matmul with its db reduce_sum; returns
/// how many groups it formed.
int64_t fuseBiasGradients(mlir::func::FuncOp func);

/// weft-align-reshapes' rewrite: moves reshapes across single-operand
/// pointwise ops toward the fused kernels they split; returns how many ops
/// moved.
int64_t alignReshapes(mlir::func::FuncOp func);

/// weft-recompute-widening's rewrite: the backward's fused readers of a
/// forward value widened from a narrower one widen it again; returns how
/// many values.
int64_t recomputeWidening(mlir::func::FuncOp func);

/// weft-fuse-gemm-epilogue's rewrite: groups each linear with its tanh gelu
/// and each dY W matmul with its tanh gelu_grad; returns how many groups it
/// formed.
int64_t fuseGemmEpilogues(mlir::func::FuncOp func);

} // namespace weft

#endif // WEFT_TRANSFORMS_PASSES_H
