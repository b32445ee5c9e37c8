// weft-align-reshapes: moves row-major reshapes across single-operand
// pointwise ops, so that each such op has the iteration domain of the kernel
// it belongs to (a reshape between two ops keeps them in separate kernels).
#include "weft/Transforms/Passes.h"

#include "llvm/Support/DebugLog.h"

#define DEBUG_TYPE "weft-align-reshapes"

namespace weft {
#define GEN_PASS_DEF_ALIGNRESHAPESPASS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// Whether `value` is computed by a fusible kernel (a group an op on its
/// shape may join).
bool isFusedValue(Value value) {
  Operation *def = value.getDefiningOp();
  return def && getFusionDomain(def);
}

/// The value under a chain of reshapes.
Value viewRoot(Value value) {
  while (auto reshape = value.getDefiningOp<ReshapeOp>())
    value = reshape.getX();
  return value;
}

/// `op` (unary pointwise) cloned at `at` to read `input`: its result has
/// `input`'s shape and `op`'s element type.
Value cloneOn(Operation *op, Value input, OpBuilder &builder) {
  Operation *clone = builder.clone(*op);
  clone->setOperand(0, input);
  auto type = cast<RankedTensorType>(input.getType());
  auto element = cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
  clone->getResult(0).setType(type.clone(element));
  return clone->getResult(0);
}

/// `value` viewed as `type` (itself when it has that type already).
Value reshapeTo(Value value, Type type, Operation *like, OpBuilder &builder) {
  if (value.getType() == type)
    return value;
  auto reshape = ReshapeOp::create(builder, like->getLoc(), type, value);
  for (NamedAttribute attr : like->getDiscardableAttrs())
    reshape->setAttr(attr.getName(), attr.getValue());
  return reshape.getY();
}

/// Whether a fusible reader of `op`'s result would take `op` into its
/// kernel where it is (the reader's domain is `op`'s shape).
bool joinsReader(Operation *op) {
  auto shape = cast<RankedTensorType>(op->getResult(0).getType()).getShape();
  return llvm::any_of(op->getResult(0).getUsers(), [&](Operation *user) {
    std::optional<SmallVector<int64_t>> domain = getFusionDomain(user);
    return domain && ArrayRef<int64_t>(*domain) == shape;
  });
}

/// op(reshape(x)) with x from a fused kernel and no fused reader of op on
/// its shape: reshape(op(x)), so op joins x's kernel (a LayerNorm's or
/// GELU's output converted to bf16 for a GEMM).
bool sinkReshape(Operation *op) {
  Value input = op->getOperand(0);
  Value root = viewRoot(input);
  if (root == input || !isFusedValue(root) || joinsReader(op))
    return false;
  OpBuilder builder(op);
  Value moved = cloneOn(op, root, builder);
  op->getResult(0).replaceAllUsesWith(
      reshapeTo(moved, op->getResult(0).getType(), op, builder));
  op->erase();
  return true;
}

/// reshape(op(x)) with x from a GEMM (or an argument) and the reshape read
/// by a fused kernel: op(reshape(x)), so op joins that kernel (a bf16
/// matmul result widened before a LayerNorm gradient).
bool hoistReshape(Operation *op) {
  Value input = op->getOperand(0);
  if (isFusedValue(input) || !op->getResult(0).hasOneUse())
    return false;
  auto reshape = dyn_cast<ReshapeOp>(*op->getResult(0).getUsers().begin());
  if (!reshape || llvm::none_of(reshape.getY().getUsers(),
                                [](Operation *user) { return getFusionDomain(user); }))
    return false;
  OpBuilder builder(reshape);
  auto shape = cast<RankedTensorType>(reshape.getY().getType());
  Value view = reshapeTo(input, shape.clone(cast<RankedTensorType>(input.getType())
                                                .getElementType()),
                         reshape, builder);
  reshape.getY().replaceAllUsesWith(cloneOn(op, view, builder));
  reshape->erase();
  op->erase();
  return true;
}

} // namespace

int64_t weft::alignReshapes(func::FuncOp func) {
  if (func.isExternal() || !llvm::hasSingleElement(func.getBody()))
    return 0;
  Block &block = func.getBody().front();
  int64_t moved = 0;
  // Each move takes a reshape one op away from the fused kernel it split, so
  // a chain of such ops settles in as many sweeps as it is long.
  for (bool changed = true; changed;) {
    changed = false;
    SmallVector<Operation *> candidates;
    for (Operation &op : block)
      if (isUnaryPointwise(&op))
        candidates.push_back(&op);
    for (Operation *op : candidates)
      if (sinkReshape(op) || hoistReshape(op)) {
        changed = true;
        ++moved;
      }
    // Reshapes nothing reads any more.
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
      if (isa<ReshapeOp>(op) && op.use_empty())
        op.erase();
  }
  LDBG() << "moved " << moved << " ops across reshapes in @" << func.getSymName();
  return moved;
}

namespace {
struct AlignReshapesPass
    : public weft::impl::AlignReshapesPassBase<AlignReshapesPass> {
  void runOnOperation() override { alignReshapes(getOperation()); }
};
} // namespace
