// The rule for a linear layer's weight and bias gradients as one GEMM with
// cuBLASLt's bias-gradient epilogue (weft-fuse-bias-grad forms the group,
// the plan builder lowers it, the verifier and workspace sizing read it).
#include "GemmGroupRules.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace weft;
using weft::gemm_rules::fail;
using weft::gemm_rules::staticTensor;

bool weft::isBiasGradPair(Operation *matmulOp, Operation *reduceOp,
                          std::string *why) {
  auto matmul = dyn_cast_or_null<MatmulOp>(matmulOp);
  auto reduce = dyn_cast_or_null<ReduceSumOp>(reduceOp);
  // Safe on unverified IR: the memory interface may ask first.
  if (!matmul || !reduce || matmul->getNumOperands() != 2 ||
      matmul->getNumResults() != 1 || reduce->getNumOperands() != 1 ||
      reduce->getNumResults() != 1)
    return fail(why, "not a weft.matmul and a weft.reduce_sum");
  // Row-major dW[m, n] = dY[k, m]^T X[k, n] is cuBLASLt's D^T = X^T' dY'
  // with opA = N, opB = T: the wgrad layout TransformerEngine and Apex run
  // with CUBLASLT_EPILOGUE_BGRADB, which sums cuBLASLt's B (our dY) over k.
  if (!matmul.getTransposeA() || matmul.getTransposeB())
    return fail(why, "the matmul is not dY^T X (transpose_a, no transpose_b)");
  RankedTensorType a = staticTensor(matmul.getA()), b = staticTensor(matmul.getB()),
                   c = staticTensor(matmul.getC());
  if (!a || !b || !c || a.getRank() != 2 || b.getRank() != 2 || c.getRank() != 2)
    return fail(why, "the matmul's operands are not static 2-d tensors "
                     "(a batched GEMM has no bias-gradient epilogue here)");
  RankedTensorType x = staticTensor(reduce.getX()), y = staticTensor(reduce.getY());
  if (!x || !y || x.getRank() < 2 || reduce.getKeepdim())
    return fail(why, "the reduce_sum's operand is not a static tensor of rank "
                     ">= 2 reduced without keepdim");
  int64_t n = x.getShape().back();
  if (!llvm::equal(reduce.getDims(), llvm::seq<int64_t>(0, x.getRank() - 1)) ||
      y.getShape() != ArrayRef<int64_t>{n})
    return fail(why, llvm::formatv("the reduce_sum does not sum every leading "
                                   "dim of {0} into [{1}]",
                                   x, n));
  // A reshape is a view of the same row-major bytes: a may flatten the
  // summed tensor or anything the summed tensor is itself a reshape of.
  auto viewRoot = [](Value value) {
    while (auto reshape = value.getDefiningOp<ReshapeOp>())
      value = reshape.getX();
    return value;
  };
  Value summed = matmul.getA();
  if (summed != reduce.getX() &&
      (!summed.getDefiningOp<ReshapeOp>() || viewRoot(summed) != viewRoot(reduce.getX())))
    return fail(why, "the matmul's a is neither the summed tensor nor a "
                     "reshape of its bytes");
  int64_t tokens = 1;
  for (int64_t d : x.getShape().drop_back())
    tokens *= d;
  if (a.getShape() != ArrayRef<int64_t>{tokens, n})
    return fail(why, llvm::formatv("the matmul's a {0} is not the summed "
                                   "tensor {1} flattened to [{2}, {3}]",
                                   a, x, tokens, n));
  // cuBLASLt writes the bias gradient in the output's type (Ctype).
  Type element = a.getElementType();
  if (!element.isBF16() && !element.isF16())
    return fail(why, llvm::formatv("the element type is {0}; the cuBLASLt "
                                   "bias-gradient GEMM takes bf16 or f16",
                                   element));
  if (b.getElementType() != element || c.getElementType() != element ||
      y.getElementType() != element)
    return fail(why, llvm::formatv("mixed element types: a {0}, b {1}, dW {2}, "
                                   "db {3} (the epilogue writes db in dW's type)",
                                   a.getElementType(), b.getElementType(),
                                   c.getElementType(), y.getElementType()));
  return true;
}

std::optional<BiasGradGemm> weft::getBiasGradGemm(Operation *op,
                                                  std::string *why) {
  auto nothing = [&](const Twine &reason) -> std::optional<BiasGradGemm> {
    fail(why, reason);
    return std::nullopt;
  };
  std::optional<gemm_rules::GroupBody> group = gemm_rules::groupBody(op, why);
  if (!group)
    return std::nullopt;
  Block &body = *group->block;
  YieldOp yield = group->yield;
  ArrayRef<Operation *> ops = group->ops;
  // [reshape,] matmul, reduce_sum: what weft-fuse-bias-grad clones.
  bool reshaped = ops.size() == 3 && isa<ReshapeOp>(ops[0]);
  if (ops.size() != (reshaped ? 3u : 2u))
    return nothing("the body is not [weft.reshape,] weft.matmul, weft.reduce_sum");
  Operation *matmul = ops[reshaped ? 1 : 0], *reduce = ops[reshaped ? 2 : 1];
  std::string reason;
  if (!isBiasGradPair(matmul, reduce, &reason))
    return nothing(reason);
  if (yield->getNumOperands() != 2 || yield->getOperand(0) != matmul->getResult(0) ||
      yield->getOperand(1) != reduce->getResult(0))
    return nothing("the body does not yield (dW, db): the matmul's result, "
                   "then the reduce_sum's");
  auto dy = dyn_cast<BlockArgument>(reduce->getOperand(0));
  auto x = dyn_cast<BlockArgument>(matmul->getOperand(1));
  if (!dy || !x || dy.getOwner() != &body || x.getOwner() != &body)
    return nothing("dY and the matmul's b must be inputs of the group");
  if (reshaped && matmul->getOperand(0) != ops[0]->getResult(0))
    return nothing("the reshape in the body is not the matmul's a");
  return BiasGradGemm{matmul, reduce, dy.getArgNumber(), x.getArgNumber()};
}
