// Reverse-mode differentiation of weft graphs: the GradientOpInterface that
// carries each op's rule, the GradientState a rule works on, and the reverse
// sweep weft-autodiff runs over a forward body.
#ifndef WEFT_TRANSFORMS_GRADIENTOPINTERFACE_H
#define WEFT_TRANSFORMS_GRADIENTOPINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace weft {
class GradientState;
} // namespace weft

#include "weft/Transforms/GradientOpInterface.h.inc"

namespace weft {

/// The reverse sweep's state as one op's rule sees it: the gradients
/// accumulated so far (one per forward value, summed over its uses) and the
/// builder that appends the backward after the forward.
class GradientState {
public:
  /// Inserts at the end of the backward; rules create ops at getLoc().
  mlir::OpBuilder &getBuilder() { return builder; }
  /// Location of the op being differentiated.
  mlir::Location getLoc() const { return loc; }

  /// The gradient accumulated for `value`, or null when the loss does not
  /// depend on it (through an op processed so far).
  mlir::Value getGradient(mlir::Value value) const {
    return gradients.lookup(value);
  }
  /// Whether `operand` gets a gradient: a floating-point tensor that depends
  /// on a value differentiated against. Integers, masks and seeds never do.
  bool needsGradient(mlir::Value operand) const {
    return varied.contains(operand);
  }
  /// Adds `gradient` (of `operand`'s type) to operand's gradient, with a
  /// weft.add when it already has one (a value with several uses).
  void accumulate(mlir::Value operand, mlir::Value gradient);

  /// A zero tensor of `type` (a splat constant).
  mlir::Value zeros(mlir::Type type);
  /// A 0-d tensor of `elementType` holding `value`.
  mlir::Value scalar(mlir::Type elementType, double value);
  /// `value` reshaped to `type` (itself when the types agree).
  mlir::Value reshape(mlir::Value value, mlir::Type type);
  /// The gradient of a broadcast operand: `gradient` (of the broadcast
  /// shape) summed over the dimensions NumPy broadcasting stretched or
  /// prepended, reshaped to `operandType`.
  mlir::Value unbroadcast(mlir::Value gradient, mlir::Type operandType);
  /// `value` broadcast to `type`, whose shape `value`'s broadcasts to
  /// (weft.add onto zeros); itself when the types agree.
  mlir::Value broadcastTo(mlir::Value value, mlir::Type type);

  /// Builds, at the end of `body` (before its terminator), the gradients of
  /// the 0-d `loss` with respect to each of `wrt` (zeros for one the loss
  /// does not depend on). Every forward op in `body` that depends on `wrt`
  /// and contributes to the loss needs a GradientOpInterface model; ops the
  /// backward creates carry their forward op's location and `weft.layer`.
  static mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  buildGradients(mlir::Block &body, mlir::Value loss,
                 llvm::ArrayRef<mlir::Value> wrt);

private:
  GradientState(mlir::OpBuilder &builder, mlir::Location loc)
      : builder(builder), loc(loc) {}

  mlir::OpBuilder &builder;
  mlir::Location loc;
  llvm::DenseMap<mlir::Value, mlir::Value> gradients;
  llvm::DenseSet<mlir::Value> varied;
};

/// Attaches the GradientOpInterface models of the weft ops.
void registerGradientOpModels(mlir::DialectRegistry &registry);

} // namespace weft

#endif // WEFT_TRANSFORMS_GRADIENTOPINTERFACE_H
