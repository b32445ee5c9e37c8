// The gradient rule of an op: what weft-autodiff's reverse sweep asks each
// forward op. Models are attached to the weft ops from lib/Transforms
// (AutodiffRules*.cpp) with registry.addExtension, so the dialect itself does
// not depend on the autodiff machinery.
#ifndef WEFT_TRANSFORMS_GRADIENTOPINTERFACE_TD
#define WEFT_TRANSFORMS_GRADIENTOPINTERFACE_TD

include "mlir/IR/OpBase.td"

def Weft_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::weft";
  let description = [{
    Reverse-mode rule of a differentiable op. The reverse sweep calls
    `saveForBackward` on every forward op that depends on a parameter (before
    any gradient is built), then `buildGradient` in reverse program order on
    every op one of whose results has a gradient. A rule reads the gradients
    of the op's results from the `GradientState`, builds the vector-Jacobian
    products of the operands that need one, and accumulates them there. It
    references only the forward values its formula needs: those are the saved
    activations. Ops without a model (the `*_grad` ops, `adamw`) cannot be
    differentiated.
  }];
  let methods = [
    InterfaceMethod<[{
        Makes the op produce the values its gradient rule reads (attention:
        the row log-sum-exp result) and returns the op to differentiate: this
        op, or the one that replaced it (all uses redirected, this one erased).
      }], "::mlir::Operation *", "saveForBackward",
      (ins "::mlir::RewriterBase &":$rewriter), [{}], [{
        return $_op.getOperation();
      }]>,
    InterfaceMethod<[{
        Accumulates into `state` the gradients of the operands that need one,
        given the gradients of the op's results. Fails with a diagnostic at
        the op when the gradient does not exist.
      }], "::mlir::LogicalResult", "buildGradient",
      (ins "::weft::GradientState &":$state)>,
  ];
}

#endif // WEFT_TRANSFORMS_GRADIENTOPINTERFACE_TD
