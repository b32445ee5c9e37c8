// The bodies of the attention kernels, one function per kernel role; each
// fills an empty gpu.func whose arguments follow KernelSpec::params.
#ifndef WEFT_LIB_CONVERSION_ATTENTIONTONVVM_KERNELBODIES_H
#define WEFT_LIB_CONVERSION_ATTENTIONTONVVM_KERNELBODIES_H

#include "weft/Conversion/AttentionKernels.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <algorithm>

namespace weft::gpu {

/// Shared-memory row pitch in bytes of a [rows, headDim] 16-bit tile: eight
/// elements of padding so ldmatrix's eight row addresses hit distinct banks.
/// Rows (one per thread) of the backward's delta kernel per CTA.
inline constexpr int64_t kPreprocessRows = 128;

inline int64_t tilePitch(int64_t headDim) { return (headDim + 8) * 2; }

/// Query rows per inner step of the dK/dV kernel and key rows per inner step
/// of the dQ kernel: the tile sizes, halved at head_dim 128 so the register
/// file holds the accumulators without spilling.
int64_t dkdvInnerRows(const AttentionKernelConfig &config);
int64_t dqInnerRows(const AttentionKernelConfig &config);

/// Dynamic shared memory of the warpgroup-MMA forward: two stages of K and
/// V core-matrix tiles; the padded Q tile, read once into registers before
/// stage 1 is first filled, lies at the start of stage 1.
inline int64_t wgmmaForwardSmemBytes(const AttentionKernelConfig &config) {
  int64_t stageBytes = 2 * config.blockK * config.headDim * 2;
  return stageBytes + std::max(stageBytes, config.blockQ * tilePitch(config.headDim));
}

void emitForwardBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config);
void emitPreprocessBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config);
void emitDkDvBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config);
void emitDqBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config);

} // namespace weft::gpu

#endif

#ifndef WEFT_LIB_CONVERSION_ATTENTIONTONVVM_KERNELSCALARS
#define WEFT_LIB_CONVERSION_ATTENTIONTONVVM_KERNELSCALARS
namespace weft::gpu {
/// The scalar tail every kernel takes (see attentionKernelSpecs).
struct KernelScalars {
  mlir::Value batch, qHeads, kvHeads, qLen, kLen, scale;
  static KernelScalars of(mlir::gpu::GPUFuncOp func, unsigned first) {
    return {func.getArgument(first), func.getArgument(first + 1),
            func.getArgument(first + 2), func.getArgument(first + 3),
            func.getArgument(first + 4), func.getArgument(first + 5)};
  }
};
} // namespace weft::gpu
#endif
