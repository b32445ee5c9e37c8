// weft-fuse-gemm-epilogue: groups a linear with the tanh GELU reading it, and
// the data-gradient matmul with the GELU gradient reading it, into weft.fused
// GEMM groups the plan builder runs as one cuBLASLt GEMM with a GELU epilogue
// (GELU_BIAS / GELU_AUX_BIAS forward, DGELU backward).
#include "weft/Conversion/KernelGroupRules.h"
#include "weft/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/Support/DebugLog.h"

#define DEBUG_TYPE "weft-fuse-gemm-epilogue"

namespace weft {
#define GEN_PASS_DEF_FUSEGEMMEPILOGUEPASS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// Replaces `gemm` and `gelu` by one group of `kind` at `at`, taking
/// `inputs` and yielding `yielded` (values of the two ops); the uses of
/// each yielded value outside move to the group's result.
void buildGroup(Operation *gemm, Operation *gelu, Operation *at, ValueRange inputs,
                ArrayRef<Value> yielded, StringRef kind) {
  OpBuilder builder(at);
  Location loc = builder.getFusedLoc({gemm->getLoc(), gelu->getLoc()});
  SmallVector<Type> resultTypes;
  for (Value value : yielded)
    resultTypes.push_back(value.getType());
  auto fused = FusedOp::create(builder, loc, resultTypes, inputs, kind);
  if (Attribute layer = gemm->getAttr(WeftDialect::kLayerAttr))
    fused->setAttr(WeftDialect::kLayerAttr, layer);

  OpBuilder body(builder.getContext());
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (Value input : inputs) {
    argTypes.push_back(input.getType());
    argLocs.push_back(input.getLoc());
  }
  Block *block = body.createBlock(&fused.getBody(), {}, argTypes, argLocs);
  IRMapping mapping;
  for (auto [input, arg] : llvm::zip(inputs, block->getArguments()))
    mapping.map(input, arg);
  body.clone(*gemm, mapping);
  body.clone(*gelu, mapping);
  SmallVector<Value> inner;
  for (Value value : yielded)
    inner.push_back(mapping.lookup(value));
  YieldOp::create(body, loc, inner);

  for (auto [value, result] : llvm::zip(yielded, fused.getResults()))
    Value(value).replaceAllUsesWith(result);
  gelu->erase();
  gemm->erase();
}

/// u = linear(x, w[, b]) read by gelu_tanh(u): one GEMM writing gelu(u),
/// and u as the aux output when anything else reads it.
bool fuseForward(GeluOp gelu, Block &block, llvm::DenseSet<Operation *> &taken) {
  auto linear = gelu.getX().getDefiningOp<LinearOp>();
  if (!linear || linear->getBlock() != &block || taken.contains(linear))
    return false;
  Value u = linear.getY();
  bool withAux = llvm::any_of(u.getUsers(), [&](Operation *user) { return user != gelu; });
  std::string why;
  if (!isLinearGeluPair(linear, gelu, withAux, &why)) {
    LDBG() << "not fusing " << linear << " with " << gelu << ": " << why;
    return false;
  }
  taken.insert(linear);
  SmallVector<Value> yielded = {gelu.getY()};
  if (withAux)
    yielded.push_back(u);
  // At the linear: its operands exist there, and every reader of u follows it.
  buildGroup(linear, gelu, linear, linear->getOperands(), yielded, kLinearGeluGemmKind);
  return true;
}

/// dg = matmul(dy, w) read only by gelu_grad_tanh(dg, u): one GEMM writing
/// du from the accumulator and u (the aux input); dg never exists.
bool fuseBackward(GeluGradOp grad, Block &block) {
  auto matmul = grad.getDy().getDefiningOp<MatmulOp>();
  if (!matmul || matmul->getBlock() != &block)
    return false;
  if (!matmul.getC().hasOneUse()) {
    LDBG() << "not fusing " << matmul << " with " << grad
           << ": the matmul's result has other readers, so it must exist";
    return false;
  }
  std::string why;
  if (!isDGeluPair(matmul, grad, &why)) {
    LDBG() << "not fusing " << matmul << " with " << grad << ": " << why;
    return false;
  }
  // At the matmul, so its operands are read when they were (a carried weight
  // copy is updated in place by AdamW after its last reader); u comes from
  // the forward, so it exists there, else the pair stays apart.
  Value u = grad.getX();
  if (Operation *def = u.getDefiningOp();
      def && (def->getBlock() != &block || !def->isBeforeInBlock(matmul))) {
    LDBG() << "not fusing " << matmul << " with " << grad
           << ": the pre-activation is defined after the matmul";
    return false;
  }
  SmallVector<Value> inputs(matmul->getOperands());
  inputs.push_back(u);
  buildGroup(matmul, grad, matmul, inputs, {grad.getDx()}, kDGeluGemmKind);
  return true;
}

} // namespace

int64_t weft::fuseGemmEpilogues(func::FuncOp func) {
  if (func.isExternal() || !llvm::hasSingleElement(func.getBody()))
    return 0;
  Block &block = func.getBody().front();
  // Collected first: forming a group erases ops of the block.
  SmallVector<GeluOp> gelus(block.getOps<GeluOp>());
  SmallVector<GeluGradOp> grads(block.getOps<GeluGradOp>());
  llvm::DenseSet<Operation *> taken;
  int64_t forward = 0, backward = 0;
  for (GeluOp gelu : gelus)
    forward += fuseForward(gelu, block, taken);
  for (GeluGradOp grad : grads)
    backward += fuseBackward(grad, block);
  LDBG() << "formed " << forward << " GELU and " << backward
         << " DGELU GEMM groups in @" << func.getSymName();
  return forward + backward;
}

namespace {
struct FuseGemmEpiloguePass
    : public weft::impl::FuseGemmEpiloguePassBase<FuseGemmEpiloguePass> {
  void runOnOperation() override { fuseGemmEpilogues(getOperation()); }
};
} // namespace
