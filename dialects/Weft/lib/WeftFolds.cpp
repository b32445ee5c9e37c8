// Folders and canonicalization patterns of the weft ops.
#include "weft/Dialect/WeftDialect.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace weft;

OpFoldResult ScaleOp::fold(FoldAdaptor) {
  if (getValue().convertToDouble() == 1.0)
    return getX();
  return {};
}

OpFoldResult ConvertOp::fold(FoldAdaptor) {
  if (getX().getType() == getY().getType())
    return getX();
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getX().getType() == getY().getType())
    return getX();
  // reshape(reshape(x)) -> reshape(x): only the final shape matters.
  if (auto inner = getX().getDefiningOp<ReshapeOp>()) {
    getXMutable().assign(inner.getX());
    return getResult();
  }
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPerm();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())) &&
      getX().getType() == getType())
    return getX();
  // transpose(transpose(x, p1), p2) -> transpose(x, p1 o p2).
  if (auto inner = getX().getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> innerPerm = inner.getPerm();
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(innerPerm[p]);
    getXMutable().assign(inner.getX());
    setPerm(composed);
    if (llvm::equal(composed, llvm::seq<int64_t>(0, composed.size())) &&
        inner.getX().getType() == getType())
      return inner.getX();
    return getResult();
  }
  return {};
}

