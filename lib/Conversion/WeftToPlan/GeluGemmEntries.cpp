// weft-build-plan's entry for a GELU GEMM group (weft-fuse-gemm-epilogue):
// one cuBLASLt GEMM whose epilogue applies the tanh GELU (writing the
// pre-activation as the aux matrix when the group yields it) or its
// gradient (reading the pre-activation).
#include "ScheduleBuilder.h"

#include "weft/Conversion/KernelGroupRules.h"
#include "weft/Dialect/WeftDialect.h"

using namespace mlir;

namespace weft {

namespace {

int64_t rowsOf(ArrayRef<int64_t> shape) {
  int64_t rows = 1;
  for (int64_t d : shape.drop_back())
    rows *= d;
  return rows;
}

} // namespace

LogicalResult ScheduleBuilder::addGeluGemm(Operation *op, int64_t index) {
  std::string why;
  std::optional<GeluGemm> group = getGeluGemm(op, &why);
  if (!group)
    return op->emitError("cannot plan a GELU GEMM group: ") << why;
  // Body values -> the group's: its inputs are the body's arguments.
  auto outer = [&](Value inner) -> Value {
    return op->getOperand(cast<BlockArgument>(inner).getArgNumber());
  };
  GemmCall call;
  FailureOr<FlatSymbolRefAttr> a, b, d, bias = FlatSymbolRefAttr(), aux;
  FailureOr<std::string> dtype;
  if (!group->backward) {
    // D[m, n] = gelu(x[m, k] w[n, k]^T (+ bias[n])), u = the pre-activation.
    auto linear = cast<LinearOp>(group->gemm);
    ArrayRef<int64_t> x = linear.getX().getType().getShape();
    call.m = rowsOf(x);
    call.k = x.back();
    call.n = cast<RankedTensorType>(linear.getW().getType()).getShape()[0];
    call.transB = true;
    dtype = gemmDtype(op, linear.getX().getType());
    a = bufferOf(op, outer(linear.getX()));
    b = bufferOf(op, outer(linear.getW()));
    if (linear.getBias())
      bias = bufferOf(op, outer(linear.getBias()));
    d = bufferOf(op, op->getResult(0));
    aux = group->auxResult >= 0 ? bufferOf(op, op->getResult(group->auxResult))
                                : FailureOr<FlatSymbolRefAttr>(FlatSymbolRefAttr());
    bool withBias = linear.getBias() != nullptr, withAux = group->auxResult >= 0;
    call.epilogue = withAux ? (withBias ? "gelu_aux_bias" : "gelu_aux")
                            : (withBias ? "bias_gelu" : "gelu");
  } else {
    // du[m, n] = (dy[m, k] op(w)[k, n]) * gelu'(u[m, n]): the rows of every
    // leading dim of dy in one GEMM against the shared 2-d w (isDGeluPair).
    auto matmul = cast<MatmulOp>(group->gemm);
    ArrayRef<int64_t> dy = cast<RankedTensorType>(matmul.getA().getType()).getShape();
    ArrayRef<int64_t> w = cast<RankedTensorType>(matmul.getB().getType()).getShape();
    call.m = rowsOf(dy);
    call.k = dy.back();
    call.transB = matmul.getTransposeB();
    call.n = call.transB ? w[0] : w[1];
    dtype = gemmDtype(op, matmul.getA().getType());
    a = bufferOf(op, outer(matmul.getA()));
    b = bufferOf(op, outer(matmul.getB()));
    d = bufferOf(op, op->getResult(0));
    aux = bufferOf(op, op->getOperand(group->auxInput));
    call.epilogue = "dgelu";
  }
  if (failed(dtype) || failed(a) || failed(b) || failed(d) || failed(bias) || failed(aux))
    return failure();
  call.a = *a;
  call.b = *b;
  call.d = *d;
  call.bias = *bias;
  call.dtype = *dtype;
  // The aux matrix is a whole [m, n] tensor: rows of exactly n elements.
  if (*aux) {
    call.aux = *aux;
    call.auxLd = call.n;
  }
  return addGemm(op, call, index);
}

} // namespace weft
