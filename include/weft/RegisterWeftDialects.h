// The dialects and passes every Weft tool registers: weft, shard and the
// upstream dialects Weft's IR and pipelines use (not registerAllPasses).
#ifndef WEFT_REGISTERWEFTDIALECTS_H
#define WEFT_REGISTERWEFTDIALECTS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "weft/Conversion/KernelGroupRules.h"
#include "weft/Conversion/Passes.h"
#include "weft/Dialect/WeftDialect.h"
#include "weft/Partition/Passes.h"
#include "weft/Partition/Sharding.h"
#include "weft/Transforms/Passes.h"

namespace weft {

inline void registerWeftDialects(mlir::DialectRegistry &registry) {
  registry.insert<WeftDialect, mlir::func::FuncDialect, mlir::shard::ShardDialect,
                  mlir::arith::ArithDialect, mlir::tensor::TensorDialect>();
  // What weft-tile-attention's nests are made of.
  registry.insert<mlir::scf::SCFDialect, mlir::linalg::LinalgDialect,
                  mlir::math::MathDialect>();
  // The target's rules for fused groups (the verifier and the memory model
  // of weft.fused ask them).
  registerKernelGroupRules(registry);
  // ShardingInterface on the weft ops (weft-partition asks it).
  partition::registerShardingModels(registry);
}

/// Upstream passes weft-opt offers alongside Weft's own.
inline void registerWeftPasses() {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::registerInlinerPass();
  registerFuseAttentionPass();
  registerFoldLossConvertPass();
  registerNarrowPointwisePass();
  registerRecomputeWideningPass();
  registerAlignReshapesPass();
  registerChunkLossPass();
  registerSinkLossLogitsPass();
  registerFuseElementwisePass();
  registerFuseBiasGradPass();
  registerFuseGemmEpiloguePass();
  registerFoldAttentionLayoutPass();
  registerAttentionDqPass();
  registerPlanMemoryPass();
  registerBindArgumentsPass();
  registerAutodiffPass();
  registerInferenceStepPass();
  registerRematPass();
  registerTileAttentionPass();
  registerEmitAttentionKernelsPass();
  registerWeftPartitionPasses();
}

} // namespace weft

#endif // WEFT_REGISTERWEFTDIALECTS_H
