// Registration of the weft ops' gradient rules, one function per rule file.
#ifndef WEFT_LIB_TRANSFORMS_AUTODIFFRULES_H
#define WEFT_LIB_TRANSFORMS_AUTODIFFRULES_H

#include "mlir/IR/DialectRegistry.h"

namespace weft {
/// linear, matmul, attention (AutodiffRulesLinalg.cpp).
void registerLinalgGradientModels(mlir::DialectRegistry &registry);
/// Norms, activations, softmax, elementwise, dropout, masks, convert
/// (AutodiffRulesPointwise.cpp).
void registerPointwiseGradientModels(mlir::DialectRegistry &registry);
/// Reductions, shapes, embedding, cross_entropy, rope (AutodiffRulesShapes.cpp).
void registerShapeGradientModels(mlir::DialectRegistry &registry);
} // namespace weft

#endif // WEFT_LIB_TRANSFORMS_AUTODIFFRULES_H
