// weft-fuse-bias-grad: groups each linear layer's weight-gradient matmul with
// its bias-gradient reduce_sum into one weft.fused GEMM group, which the plan
// builder runs as one cuBLASLt GEMM with the bias-gradient epilogue.
#include "weft/Conversion/KernelGroupRules.h"
#include "weft/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/Support/DebugLog.h"

#define DEBUG_TYPE "weft-fuse-bias-grad"

namespace weft {
#define GEN_PASS_DEF_FUSEBIASGRADPASS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// Whether `value` is available at `point` (an op of `block`).
bool availableAt(Value value, Operation *point, Block &block) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return arg.getOwner() == &block;
  Operation *def = value.getDefiningOp();
  return def->getBlock() == &block && def->isBeforeInBlock(point);
}

/// The matmul of `block` that computes dW from the tensor `reduce` sums, if
/// one matches the bias-gradient rule and is not taken yet.
MatmulOp findWeightGradient(ReduceSumOp reduce, Block &block,
                            const llvm::DenseSet<Operation *> &taken) {
  // Every reshape of dY's bytes: of dY, or of what dY is a reshape of.
  Value dy = reduce.getX(), root = dy;
  while (auto reshape = root.getDefiningOp<ReshapeOp>())
    root = reshape.getX();
  SmallVector<Value> views = {root};
  for (size_t i = 0; i < views.size(); ++i)
    for (Operation *user : views[i].getUsers())
      if (auto reshape = dyn_cast<ReshapeOp>(user))
        views.push_back(reshape.getY());
  for (Value view : views)
    for (Operation *user : view.getUsers()) {
      auto matmul = dyn_cast<MatmulOp>(user);
      if (!matmul || matmul->getBlock() != &block || taken.contains(matmul) ||
          matmul.getA() != view)
        continue;
      std::string why;
      if (isBiasGradPair(matmul, reduce, &why))
        return matmul;
      LDBG() << "not fusing " << matmul << " with " << reduce << ": " << why;
    }
  return nullptr;
}

void buildGroup(MatmulOp matmul, ReduceSumOp reduce) {
  Operation *first =
      matmul->isBeforeInBlock(reduce) ? matmul.getOperation() : reduce.getOperation();
  Value dy = reduce.getX(), x = matmul.getB();
  auto reshape = matmul.getA().getDefiningOp<ReshapeOp>();
  if (matmul.getA() == dy)
    reshape = nullptr;

  OpBuilder builder(first);
  Location loc = builder.getFusedLoc({matmul.getLoc(), reduce.getLoc()});
  auto fused = FusedOp::create(
      builder, loc, TypeRange{matmul.getC().getType(), reduce.getY().getType()},
      ValueRange{dy, x}, kBiasGradGemmKind);
  if (Attribute layer = matmul->getAttr(WeftDialect::kLayerAttr))
    fused->setAttr(WeftDialect::kLayerAttr, layer);

  OpBuilder body(builder.getContext());
  Block *block = body.createBlock(&fused.getBody(), {},
                                  {dy.getType(), x.getType()},
                                  {dy.getLoc(), x.getLoc()});
  IRMapping mapping;
  mapping.map(dy, block->getArgument(0));
  mapping.map(x, block->getArgument(1));
  // dY flattened inside the group (the outer view may reshape dY's source).
  if (reshape)
    mapping.map(matmul.getA(), ReshapeOp::create(body, reshape.getLoc(),
                                                 matmul.getA().getType(),
                                                 block->getArgument(0))
                                   .getResult());
  Operation *gemm = body.clone(*matmul, mapping);
  Operation *sum = body.clone(*reduce, mapping);
  YieldOp::create(body, loc, ValueRange{gemm->getResult(0), sum->getResult(0)});

  matmul.getC().replaceAllUsesWith(fused.getResult(0));
  reduce.getY().replaceAllUsesWith(fused.getResult(1));
  matmul->erase();
  reduce->erase();
  // The outer view stays while others read it (dY's data-gradient GEMM).
  if (reshape && reshape->use_empty())
    reshape->erase();
}

} // namespace

int64_t weft::fuseBiasGradients(func::FuncOp func) {
  if (func.isExternal() || !llvm::hasSingleElement(func.getBody()))
    return 0;
  Block &block = func.getBody().front();
  SmallVector<std::pair<MatmulOp, ReduceSumOp>> pairs;
  llvm::DenseSet<Operation *> taken;
  for (auto reduce : block.getOps<ReduceSumOp>()) {
    MatmulOp matmul = findWeightGradient(reduce, block, taken);
    if (!matmul)
      continue;
    // The group sits at the earlier op, so its inputs must exist there.
    Operation *first = matmul->isBeforeInBlock(reduce) ? matmul.getOperation()
                                                       : reduce.getOperation();
    if (!availableAt(reduce.getX(), first, block) ||
        !availableAt(matmul.getB(), first, block)) {
      LDBG() << "not fusing " << matmul << ": an input is defined after "
             << "the reduce_sum it would move to";
      continue;
    }
    taken.insert(matmul);
    pairs.push_back({matmul, reduce});
  }
  for (auto [matmul, reduce] : pairs)
    buildGroup(matmul, reduce);
  LDBG() << "formed " << pairs.size() << " bias-gradient GEMM groups in @"
         << func.getSymName();
  return pairs.size();
}

namespace {
struct FuseBiasGradPass
    : public weft::impl::FuseBiasGradPassBase<FuseBiasGradPass> {
  void runOnOperation() override { fuseBiasGradients(getOperation()); }
};
} // namespace
