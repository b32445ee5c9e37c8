// Kernels of the data-movement ops of a step (transpose, split, concat,
// embedding and its gradient), leading-dim reductions (bias gradients) and
// the fill kernel of splat constants: index arithmetic, no row statistics.
#ifndef WEFT_LIB_CONVERSION_ELEMENTWISETONVVM_SHAPEKERNELS_H
#define WEFT_LIB_CONVERSION_ELEMENTWISETONVVM_SHAPEKERNELS_H

#include "KernelEmitter.h"

#include "weft/Dialect/WeftDialect.h"

namespace weft::gpu {

/// Whether `op` is one of these ops; if so `launch` gets its grid and block
/// (or `message` why it cannot run).
bool isShapeKernelOp(mlir::Operation *op);
mlir::LogicalResult planShapeKernel(mlir::Operation *op, int64_t &gridX,
                                    int64_t &threads, std::string &message);
/// Emits the body of the op's single kernel.
void emitShapeKernelBody(ElementMath &m, mlir::Operation *op);

/// Row reductions outside the fusion groups (RowReduceKernels.cpp):
/// reduce_max / sum / mean of the last dim and the vocabulary-parallel cross-entropy's
/// partial, combine and gradient ops; the shape kernels' entry points
/// delegate to these.
bool isRowReduceKernelOp(mlir::Operation *op);
mlir::LogicalResult planRowReduceKernel(mlir::Operation *op, int64_t &gridX,
                                        int64_t &threads, std::string &message);
void emitRowReduceKernel(ElementMath &m, mlir::Operation *op);

/// A rank's block of a global tensor (BlockKernels.cpp): weft.dropout with
/// offsets (params x, seed, an i64 per dim, y) and shard.all_slice (params
/// x, i64 first index along the slice axis, y).
bool isBlockKernelOp(mlir::Operation *op);
mlir::LogicalResult planBlockKernel(mlir::Operation *op, int64_t &gridX, int64_t &threads,
                                    std::string &message);
void emitBlockKernel(ElementMath &m, mlir::Operation *op);

/// A constant other than a float splat (ConstantKernels.cpp): its bytes in
/// the image (emitDenseConstantGlobal, at the gpu.module's top level) and a
/// kernel (param: the op's buffer) that copies them.
constexpr int64_t kMaxDenseConstantBytes = 1 << 20;
bool isDenseConstantOp(mlir::Operation *op);
mlir::LogicalResult planDenseConstant(mlir::Operation *op, int64_t &gridX, int64_t &threads,
                                      std::string &message);
void emitDenseConstantGlobal(mlir::ImplicitLocOpBuilder &b, mlir::Operation *op);
void emitDenseConstant(ElementMath &m, mlir::Operation *op);

/// embedding_grad (EmbeddingGradKernel.cpp): the vocabulary rows one CTA of
/// `threads` sums, and the kernel's body.
int64_t embeddingGradRows(int64_t hidden, int64_t threads);
void emitEmbeddingGrad(ElementMath &m, EmbeddingGradOp grad);

} // namespace weft::gpu

#endif // WEFT_LIB_CONVERSION_ELEMENTWISETONVVM_SHAPEKERNELS_H
