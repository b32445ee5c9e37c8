// Gradient rules of the pointwise and row-wise ops: add/sub/mul/div with
// broadcasting, scale, dropout (same mask), causal_mask, where, convert,
// gelu, silu, softmax, layer_norm and rms_norm.
#include "AutodiffRules.h"

#include "weft/Dialect/WeftDialect.h"
#include "weft/Transforms/GradientOpInterface.h"

using namespace mlir;
using namespace weft;

namespace {

Value scaled(GradientState &state, Value value, double factor) {
  OpBuilder &builder = state.getBuilder();
  return ScaleOp::create(builder, state.getLoc(), value.getType(), value,
                         builder.getF64FloatAttr(factor));
}

/// z = x + y: each operand's gradient is dz summed over its broadcast dims.
struct AddGradient : GradientRule<AddGradient, AddOp> {
  static LogicalResult build(AddOp op, GradientState &state) {
    Value dz = state.getGradient(op.getResult());
    for (Value operand : {op.getLhs(), op.getRhs()})
      if (state.needsGradient(operand))
        state.accumulate(operand, state.unbroadcast(dz, operand.getType()));
    return success();
  }
};

struct SubGradient : GradientRule<SubGradient, SubOp> {
  static LogicalResult build(SubOp op, GradientState &state) {
    Value dz = state.getGradient(op.getResult());
    if (state.needsGradient(op.getLhs()))
      state.accumulate(op.getLhs(), state.unbroadcast(dz, op.getLhs().getType()));
    if (state.needsGradient(op.getRhs()))
      state.accumulate(op.getRhs(),
                       scaled(state, state.unbroadcast(dz, op.getRhs().getType()), -1.0));
    return success();
  }
};

/// z = x * y: dx = dz * y, dy = dz * x (each summed over its broadcast dims).
struct MulGradient : GradientRule<MulGradient, MulOp> {
  static LogicalResult build(MulOp op, GradientState &state) {
    Value dz = state.getGradient(op.getResult());
    auto product = [&](Value other) {
      return MulOp::create(state.getBuilder(), state.getLoc(), dz.getType(), dz, other);
    };
    if (state.needsGradient(op.getLhs()))
      state.accumulate(op.getLhs(),
                       state.unbroadcast(product(op.getRhs()), op.getLhs().getType()));
    if (state.needsGradient(op.getRhs()))
      state.accumulate(op.getRhs(),
                       state.unbroadcast(product(op.getLhs()), op.getRhs().getType()));
    return success();
  }
};

/// z = x / y: dx = dz / y, dy = -dz z / y (the forward's z), each summed
/// over its broadcast dims.
struct DivGradient : GradientRule<DivGradient, DivOp> {
  static LogicalResult build(DivOp op, GradientState &state) {
    OpBuilder &builder = state.getBuilder();
    Value dz = state.getGradient(op.getResult());
    Type type = dz.getType();
    if (state.needsGradient(op.getLhs()))
      state.accumulate(op.getLhs(),
                       state.unbroadcast(DivOp::create(builder, state.getLoc(), type, dz,
                                                       op.getRhs()),
                                         op.getLhs().getType()));
    if (state.needsGradient(op.getRhs())) {
      Value dzZ = MulOp::create(builder, state.getLoc(), type, dz, op.getResult());
      Value quotient = DivOp::create(builder, state.getLoc(), type, dzZ, op.getRhs());
      state.accumulate(op.getRhs(),
                       scaled(state, state.unbroadcast(quotient, op.getRhs().getType()),
                              -1.0));
    }
    return success();
  }
};

struct ScaleGradient : GradientRule<ScaleGradient, ScaleOp> {
  static LogicalResult build(ScaleOp op, GradientState &state) {
    Value dy = state.getGradient(op.getY());
    state.accumulate(op.getX(), ScaleOp::create(state.getBuilder(), state.getLoc(),
                                                dy.getType(), dy, op.getValueAttr()));
    return success();
  }
};

/// The gradient of dropout is dropout of dy with the same seed, p and
/// weft.rng_id: the same mask and the same 1/(1-p).
struct DropoutGradient : GradientRule<DropoutGradient, DropoutOp> {
  static LogicalResult build(DropoutOp op, GradientState &state) {
    Value dy = state.getGradient(op.getY());
    auto dx = DropoutOp::create(state.getBuilder(), state.getLoc(), dy.getType(),
                                dy, op.getSeed(), op.getOffsets(), op.getPAttr(),
                                op.getGlobalShapeAttr());
    dx->setAttr(WeftDialect::kRngIdAttr, op->getAttr(WeftDialect::kRngIdAttr));
    state.accumulate(op.getX(), dx);
    return success();
  }
};

/// Masked entries are constants: their gradient is zero (fill = 0.0).
struct CausalMaskGradient : GradientRule<CausalMaskGradient, CausalMaskOp> {
  static LogicalResult build(CausalMaskOp op, GradientState &state) {
    Value dy = state.getGradient(op.getY());
    OpBuilder &builder = state.getBuilder();
    state.accumulate(op.getX(),
                     CausalMaskOp::create(builder, state.getLoc(), dy.getType(), dy,
                                          builder.getF64FloatAttr(0.0)));
    return success();
  }
};

/// z = where(c, x, y): dx = where(c, dz, 0), dy = where(c, 0, dz), each
/// summed over its broadcast dims.
struct WhereGradient : GradientRule<WhereGradient, WhereOp> {
  static LogicalResult build(WhereOp op, GradientState &state) {
    Value dz = state.getGradient(op.getResult());
    Value zero = state.scalar(cast<RankedTensorType>(dz.getType()).getElementType(), 0.0);
    auto select = [&](Value onTrue, Value onFalse) {
      return WhereOp::create(state.getBuilder(), state.getLoc(), dz.getType(),
                             op.getCond(), onTrue, onFalse);
    };
    if (state.needsGradient(op.getLhs()))
      state.accumulate(op.getLhs(),
                       state.unbroadcast(select(dz, zero), op.getLhs().getType()));
    if (state.needsGradient(op.getRhs()))
      state.accumulate(op.getRhs(),
                       state.unbroadcast(select(zero, dz), op.getRhs().getType()));
    return success();
  }
};

struct ConvertGradient : GradientRule<ConvertGradient, ConvertOp> {
  static LogicalResult build(ConvertOp op, GradientState &state) {
    Value dy = state.getGradient(op.getY());
    state.accumulate(op.getX(), ConvertOp::create(state.getBuilder(), state.getLoc(),
                                                  op.getX().getType(), dy));
    return success();
  }
};

struct GeluGradient : GradientRule<GeluGradient, GeluOp> {
  static LogicalResult build(GeluOp op, GradientState &state) {
    Value dy = state.getGradient(op.getY());
    state.accumulate(op.getX(),
                     GeluGradOp::create(state.getBuilder(), state.getLoc(),
                                        op.getX().getType(), dy, op.getX(),
                                        op.getApproximateAttr()));
    return success();
  }
};

struct SiluGradient : GradientRule<SiluGradient, SiluOp> {
  static LogicalResult build(SiluOp op, GradientState &state) {
    Value dy = state.getGradient(op.getY());
    state.accumulate(op.getX(), SiluGradOp::create(state.getBuilder(), state.getLoc(),
                                                   op.getX().getType(), dy, op.getX()));
    return success();
  }
};

/// softmax_grad reads the forward's output, not its input.
struct SoftmaxGradient : GradientRule<SoftmaxGradient, SoftmaxOp> {
  static LogicalResult build(SoftmaxOp op, GradientState &state) {
    Value dy = state.getGradient(op.getY());
    state.accumulate(op.getX(),
                     SoftmaxGradOp::create(state.getBuilder(), state.getLoc(),
                                           op.getX().getType(), dy, op.getY(),
                                           op.getDimAttr()));
    return success();
  }
};

/// layer_norm_grad recomputes the row statistics from x.
struct LayerNormGradient : GradientRule<LayerNormGradient, LayerNormOp> {
  static LogicalResult build(LayerNormOp op, GradientState &state) {
    Value dy = state.getGradient(op.getY());
    auto grad = LayerNormGradOp::create(
        state.getBuilder(), state.getLoc(), op.getX().getType(),
        op.getGamma().getType(), op.getBeta().getType(), dy, op.getX(),
        op.getGamma(), op.getEpsAttr());
    state.accumulate(op.getX(), grad.getDx());
    state.accumulate(op.getGamma(), grad.getDgamma());
    state.accumulate(op.getBeta(), grad.getDbeta());
    return success();
  }
};

struct RmsNormGradient : GradientRule<RmsNormGradient, RmsNormOp> {
  static LogicalResult build(RmsNormOp op, GradientState &state) {
    Value dy = state.getGradient(op.getY());
    auto grad = RmsNormGradOp::create(state.getBuilder(), state.getLoc(),
                                      op.getX().getType(), op.getGamma().getType(),
                                      dy, op.getX(), op.getGamma(), op.getEpsAttr());
    state.accumulate(op.getX(), grad.getDx());
    state.accumulate(op.getGamma(), grad.getDgamma());
    return success();
  }
};

/// y = tanh(x): dx = dy (1 - y^2), as dy - dy y y (the forward's y).
struct TanhGradient : GradientRule<TanhGradient, TanhOp> {
  static LogicalResult build(TanhOp op, GradientState &state) {
    OpBuilder &builder = state.getBuilder();
    Value dy = state.getGradient(op.getY()), y = op.getY();
    Value dyY = MulOp::create(builder, state.getLoc(), dy.getType(), dy, y);
    Value dyYY = MulOp::create(builder, state.getLoc(), dy.getType(), dyY, y);
    state.accumulate(op.getX(),
                     SubOp::create(builder, state.getLoc(), dy.getType(), dy, dyYY));
    return success();
  }
};

/// y = e^x: dx = dy y (the forward's y).
struct ExpGradient : GradientRule<ExpGradient, ExpOp> {
  static LogicalResult build(ExpOp op, GradientState &state) {
    Value dy = state.getGradient(op.getY());
    state.accumulate(op.getX(), MulOp::create(state.getBuilder(), state.getLoc(),
                                              dy.getType(), dy, op.getY()));
    return success();
  }
};

/// y = x^(-1/2): dx = -dy y^3 / 2 (the forward's y).
struct RsqrtGradient : GradientRule<RsqrtGradient, RsqrtOp> {
  static LogicalResult build(RsqrtOp op, GradientState &state) {
    OpBuilder &builder = state.getBuilder();
    Value dy = state.getGradient(op.getY()), y = op.getY();
    Value cube = MulOp::create(builder, state.getLoc(), dy.getType(),
                               MulOp::create(builder, state.getLoc(), dy.getType(), y, y), y);
    Value product = MulOp::create(builder, state.getLoc(), dy.getType(), dy, cube);
    state.accumulate(op.getX(), scaled(state, product, -0.5));
    return success();
  }
};

/// y = -x: dx = -dy.
struct NegGradient : GradientRule<NegGradient, NegOp> {
  static LogicalResult build(NegOp op, GradientState &state) {
    Value dy = state.getGradient(op.getY());
    state.accumulate(op.getX(), NegOp::create(state.getBuilder(), state.getLoc(), dy));
    return success();
  }
};

/// y = ln x: dx = dy / x.
struct LogGradient : GradientRule<LogGradient, LogOp> {
  static LogicalResult build(LogOp op, GradientState &state) {
    Value dy = state.getGradient(op.getY());
    state.accumulate(op.getX(), DivOp::create(state.getBuilder(), state.getLoc(),
                                              dy.getType(), dy, op.getX()));
    return success();
  }
};

/// y = sqrt(x): dx = dy / (2 y) (the forward's y).
struct SqrtGradient : GradientRule<SqrtGradient, SqrtOp> {
  static LogicalResult build(SqrtOp op, GradientState &state) {
    Value dy = state.getGradient(op.getY());
    Value quotient = DivOp::create(state.getBuilder(), state.getLoc(), dy.getType(), dy,
                                   op.getY());
    state.accumulate(op.getX(), scaled(state, quotient, 0.5));
    return success();
  }
};

/// y = cos(x): dx = -dy sin(x).
struct CosGradient : GradientRule<CosGradient, CosOp> {
  static LogicalResult build(CosOp op, GradientState &state) {
    OpBuilder &builder = state.getBuilder();
    Value dy = state.getGradient(op.getY());
    Value sin = SinOp::create(builder, state.getLoc(), op.getX());
    Value product = MulOp::create(builder, state.getLoc(), dy.getType(), dy, sin);
    state.accumulate(op.getX(), NegOp::create(builder, state.getLoc(), product));
    return success();
  }
};

/// y = sin(x): dx = dy cos(x).
struct SinGradient : GradientRule<SinGradient, SinOp> {
  static LogicalResult build(SinOp op, GradientState &state) {
    OpBuilder &builder = state.getBuilder();
    Value dy = state.getGradient(op.getY());
    Value cos = CosOp::create(builder, state.getLoc(), op.getX());
    state.accumulate(op.getX(), MulOp::create(builder, state.getLoc(), dy.getType(), dy, cos));
    return success();
  }
};

/// y = sigmoid(x): dx = dy y (1 - y), as dy y - dy y y (the forward's y).
struct SigmoidGradient : GradientRule<SigmoidGradient, SigmoidOp> {
  static LogicalResult build(SigmoidOp op, GradientState &state) {
    OpBuilder &builder = state.getBuilder();
    Value dy = state.getGradient(op.getY()), y = op.getY();
    Value dyY = MulOp::create(builder, state.getLoc(), dy.getType(), dy, y);
    Value dyYY = MulOp::create(builder, state.getLoc(), dy.getType(), dyY, y);
    state.accumulate(op.getX(),
                     SubOp::create(builder, state.getLoc(), dy.getType(), dyY, dyYY));
    return success();
  }
};

/// y = x^c: dx = dy c x^(c-1); c = 0 gives zeros (as PyTorch), not
/// 0 * x^-1, which is NaN at x = 0.
struct PowGradient : GradientRule<PowGradient, PowOp> {
  static LogicalResult build(PowOp op, GradientState &state) {
    OpBuilder &builder = state.getBuilder();
    Value dy = state.getGradient(op.getY());
    double exponent = op.getExponent().convertToDouble();
    if (exponent == 0.0 || exponent == 1.0) {
      state.accumulate(op.getX(), exponent == 0.0 ? scaled(state, dy, 0.0) : dy);
      return success();
    }
    Value power = PowOp::create(builder, state.getLoc(), op.getX().getType(), op.getX(),
                                builder.getF64FloatAttr(exponent - 1.0));
    Value product = MulOp::create(builder, state.getLoc(), dy.getType(), dy, power);
    state.accumulate(op.getX(), scaled(state, product, exponent));
    return success();
  }
};

} // namespace

void weft::registerPointwiseGradientModels(DialectRegistry &registry) {
  attachGradientRules<
      AddGradient, SubGradient, MulGradient, DivGradient, ScaleGradient, DropoutGradient,
      CausalMaskGradient, WhereGradient, ConvertGradient, GeluGradient,
      SiluGradient, SoftmaxGradient, LayerNormGradient, RmsNormGradient,
      TanhGradient, ExpGradient, RsqrtGradient, NegGradient, LogGradient,
      SqrtGradient, CosGradient, SinGradient, SigmoidGradient, PowGradient>(registry);
}
