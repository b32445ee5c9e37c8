// Registration of the weft ops' gradient rules, one function per rule file.
#ifndef WEFT_LIB_TRANSFORMS_AUTODIFFRULES_H
#define WEFT_LIB_TRANSFORMS_AUTODIFFRULES_H

#include "weft/Dialect/WeftDialect.h"
#include "weft/Transforms/GradientOpInterface.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"

namespace weft {

/// A GradientOpInterface model of `OpTy` whose rule is `Derived::build(op,
/// state)`.
template <typename Derived, typename OpTy>
struct GradientRule : GradientOpInterface::ExternalModel<Derived, OpTy> {
  using Op = OpTy;
  mlir::LogicalResult buildGradient(mlir::Operation *op,
                                    GradientState &state) const {
    return Derived::build(mlir::cast<OpTy>(op), state);
  }
};

/// Attaches each rule to its op (the OpTy of its GradientRule) when the weft
/// dialect loads.
template <typename... Rules>
void attachGradientRules(mlir::DialectRegistry &registry) {
  registry.addExtension(+[](mlir::MLIRContext *context, WeftDialect *) {
    (Rules::Op::template attachInterface<Rules>(*context), ...);
  });
}

inline mlir::RankedTensorType tensorType(mlir::Value value) {
  return mlir::cast<mlir::RankedTensorType>(value.getType());
}

/// linear, matmul, attention (AutodiffRulesLinalg.cpp).
void registerLinalgGradientModels(mlir::DialectRegistry &registry);
/// Norms, activations, softmax, elementwise, dropout, masks, convert
/// (AutodiffRulesPointwise.cpp).
void registerPointwiseGradientModels(mlir::DialectRegistry &registry);
/// Reductions, shapes, embedding, cross_entropy, rope (AutodiffRulesShapes.cpp).
void registerShapeGradientModels(mlir::DialectRegistry &registry);
} // namespace weft

#endif // WEFT_LIB_TRANSFORMS_AUTODIFFRULES_H
