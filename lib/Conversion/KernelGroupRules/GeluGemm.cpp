// The rule for a GEMM and its tanh GELU (forward) or GELU gradient (backward)
// as one cuBLASLt GEMM with a GELU epilogue (weft-fuse-gemm-epilogue forms
// the groups, the plan builder lowers them, the verifier reads the rule).
#include "GemmGroupRules.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace weft;
using weft::gemm_rules::fail;
using weft::gemm_rules::staticTensor;

namespace {

/// bf16 everywhere or f16 everywhere: cuBLASLt's GELU epilogues write D and
/// the aux matrix in D's type, and the bias has D's type too.
bool sameHalfType(ArrayRef<RankedTensorType> types, std::string *why) {
  Type element = types.front().getElementType();
  if (!element.isBF16() && !element.isF16())
    return fail(why, llvm::formatv("the element type is {0}; the cuBLASLt GELU "
                                   "epilogues take bf16 or f16",
                                   element));
  for (RankedTensorType type : types)
    if (type.getElementType() != element)
      return fail(why, llvm::formatv("mixed element types ({0} and {1}): the "
                                     "epilogue reads and writes one type",
                                     element, type.getElementType()));
  return true;
}

/// cuBLASLt's EPILOGUE_AUX_LD: a multiple of 8 elements, at least the rows
/// of its column-major D (our n).
bool auxFits(int64_t n, std::string *why) {
  if (n % kGeluAuxLdMultiple == 0)
    return true;
  return fail(why, llvm::formatv("the pre-activation has {0} columns; cuBLASLt's "
                                 "GELU aux leading dimension must be a multiple "
                                 "of {1}",
                                 n, kGeluAuxLdMultiple));
}

} // namespace

bool weft::isLinearGeluPair(Operation *linearOp, Operation *geluOp, bool withAux,
                            std::string *why) {
  auto linear = dyn_cast_or_null<LinearOp>(linearOp);
  auto gelu = dyn_cast_or_null<GeluOp>(geluOp);
  // Safe on unverified IR: check the counts before the named accessors.
  if (!linear || !gelu || linear->getNumOperands() < 2 ||
      linear->getNumOperands() > 3 || linear->getNumResults() != 1 ||
      gelu->getNumOperands() != 1 || gelu->getNumResults() != 1)
    return fail(why, "not a weft.linear and a weft.gelu");
  if (gelu.getX() != linear.getY())
    return fail(why, "the gelu does not read the linear's result");
  if (gelu.getApproximate() != "tanh")
    return fail(why, "the gelu is exact (approximate = \"" + gelu.getApproximate() +
                         "\"); cuBLASLt's GELU epilogue is the tanh approximation");
  RankedTensorType x = staticTensor(linear.getX()), w = staticTensor(linear.getW()),
                   y = staticTensor(linear.getY()), g = staticTensor(gelu.getY());
  RankedTensorType b = linear.getBias() ? staticTensor(linear.getBias()) : w;
  if (!x || !w || !y || !g || !b || w.getRank() != 2)
    return fail(why, "the operands are not static tensors with a 2-d weight");
  if (!sameHalfType({x, w, b, y, g}, why))
    return false;
  return !withAux || auxFits(w.getShape()[0], why);
}

bool weft::isDGeluPair(Operation *matmulOp, Operation *geluGradOp, std::string *why) {
  auto matmul = dyn_cast_or_null<MatmulOp>(matmulOp);
  auto grad = dyn_cast_or_null<GeluGradOp>(geluGradOp);
  if (!matmul || !grad || matmul->getNumOperands() != 2 ||
      matmul->getNumResults() != 1 || grad->getNumOperands() != 2 ||
      grad->getNumResults() != 1)
    return fail(why, "not a weft.matmul and a weft.gelu_grad");
  if (grad.getDy() != matmul.getC() || grad.getX() == matmul.getC())
    return fail(why, "the gelu_grad's dy is not the matmul's result (or its x "
                     "is too)");
  if (grad.getApproximate() != "tanh")
    return fail(why, "the gelu_grad is exact (approximate = \"" +
                         grad.getApproximate() +
                         "\"); cuBLASLt's DGELU epilogue is the tanh approximation");
  // One GEMM of batch 1: a 2-d b shared by every row of a (rows folded).
  if (matmul.getTransposeA())
    return fail(why, "the matmul transposes a (a DGELU GEMM is dY W: the rows "
                     "of D are the rows of a)");
  RankedTensorType a = staticTensor(matmul.getA()), bt = staticTensor(matmul.getB()),
                   c = staticTensor(matmul.getC()), u = staticTensor(grad.getX()),
                   du = staticTensor(grad.getDx());
  if (!a || !bt || !c || !u || !du || a.getRank() < 2 || bt.getRank() != 2)
    return fail(why, "the matmul is not a static tensor of rank >= 2 times a "
                     "static 2-d matrix (a batched GEMM has no DGELU epilogue here)");
  if (u.getShape() != c.getShape() || du.getShape() != c.getShape())
    return fail(why, llvm::formatv("the pre-activation {0} and the gradient {1} "
                                   "do not have the matmul's shape {2}",
                                   u, du, c));
  if (!sameHalfType({a, bt, c, u, du}, why))
    return false;
  return auxFits(c.getShape().back(), why);
}

std::optional<GeluGemm> weft::getGeluGemm(Operation *op, std::string *why) {
  auto nothing = [&](const Twine &reason) -> std::optional<GeluGemm> {
    fail(why, reason);
    return std::nullopt;
  };
  std::optional<gemm_rules::GroupBody> group = gemm_rules::groupBody(op, why);
  if (!group)
    return std::nullopt;
  Block &body = *group->block;
  YieldOp yield = group->yield;
  ArrayRef<Operation *> ops = group->ops;
  if (ops.size() != 2)
    return nothing("the body is not two ops (weft.linear, weft.gelu or "
                   "weft.matmul, weft.gelu_grad)");
  auto isInput = [&](Value value) {
    auto arg = dyn_cast<BlockArgument>(value);
    return arg && arg.getOwner() == &body;
  };
  auto inputIndex = [](Value value) { return cast<BlockArgument>(value).getArgNumber(); };
  std::string reason;
  GeluGemm gemm{ops[0], ops[1]};
  if (isa<LinearOp>(ops[0])) {
    // Yields gelu(u), and u itself when read outside (the aux output).
    bool withAux = yield->getNumOperands() == 2;
    if (!isLinearGeluPair(ops[0], ops[1], withAux, &reason))
      return nothing(reason);
    if (yield->getNumOperands() < 1 || yield->getNumOperands() > 2 ||
        yield->getOperand(0) != ops[1]->getResult(0) ||
        (withAux && yield->getOperand(1) != ops[0]->getResult(0)))
      return nothing("the body does not yield (gelu(u)[, u]): the gelu's result, "
                     "then optionally the linear's");
    if (!llvm::all_of(ops[0]->getOperands(), isInput))
      return nothing("the linear's operands must be inputs of the group");
    gemm.auxResult = withAux ? 1 : -1;
    return gemm;
  }
  if (!isDGeluPair(ops[0], ops[1], &reason))
    return nothing(reason);
  if (yield->getNumOperands() != 1 || yield->getOperand(0) != ops[1]->getResult(0))
    return nothing("the body does not yield the gelu_grad's result alone (the "
                   "matmul's result never leaves the GEMM)");
  Value u = cast<GeluGradOp>(ops[1]).getX();
  if (!llvm::all_of(ops[0]->getOperands(), isInput) || !isInput(u))
    return nothing("the matmul's operands and the pre-activation must be inputs "
                   "of the group");
  gemm.backward = true;
  gemm.auxInput = inputIndex(u);
  return gemm;
}
