// weft.fused: which ops may join a fused group (FusionOpInterface: one
// iteration domain [..., n] with operands that a row-wise kernel can index),
// the group's verifier and its cost as one kernel.
#include "weft/Dialect/WeftDialect.h"

#include "mlir/Support/TypeID.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace weft;

MLIR_DEFINE_EXPLICIT_TYPE_ID(weft::FusedGroupRulesInterface)

namespace {

std::optional<ArrayRef<int64_t>> staticShape(Value value) {
  auto tensor = dyn_cast<RankedTensorType>(value.getType());
  if (!tensor || !tensor.hasStaticShape())
    return std::nullopt;
  return tensor.getShape();
}

/// Whether a row-wise kernel over `domain` can index `shape`: one value per
/// row, or any NumPy broadcast onto the domain (the whole domain, a row
/// vector [n], a scalar, size-1 dims anywhere).
bool isDomainIndexable(ArrayRef<int64_t> shape, ArrayRef<int64_t> domain) {
  if (shape == domain.drop_back())
    return true;
  if (shape.size() > domain.size())
    return false;
  return llvm::all_of(llvm::zip(shape, domain.take_back(shape.size())),
                      [](auto dims) {
                        auto [s, d] = dims;
                        return s == d || s == 1;
                      });
}

} // namespace

std::optional<SmallVector<int64_t>> weft::getFusionDomain(Operation *op) {
  auto fusion = dyn_cast<FusionOpInterface>(op);
  if (!fusion)
    return std::nullopt;
  // The value whose shape is the op's iteration domain; null: not fusible.
  Value anchor = fusion.getFusionAnchor();
  if (!anchor)
    return std::nullopt;
  std::optional<ArrayRef<int64_t>> domain = staticShape(anchor);
  if (!domain || domain->empty() || llvm::is_contained(*domain, 0))
    return std::nullopt;
  for (OpOperand &operand : op->getOpOperands()) {
    std::optional<ArrayRef<int64_t>> shape = staticShape(operand.get());
    if (!shape || (!isDomainIndexable(*shape, *domain) &&
                   !fusion.isWholeOperand(operand.getOperandNumber())))
      return std::nullopt;
  }
  for (Value value : op->getResults()) {
    std::optional<ArrayRef<int64_t>> shape = staticShape(value);
    if (!shape || !isDomainIndexable(*shape, *domain))
      return std::nullopt;
  }
  return SmallVector<int64_t>(domain->begin(), domain->end());
}

const FusedGroupRulesInterface *weft::getFusedGroupRules(FusedOp op) {
  return op->getDialect()->getRegisteredInterface<FusedGroupRulesInterface>();
}

std::optional<unsigned> FusedOp::getGemmRowOperand() {
  const FusedGroupRulesInterface *rules = getFusedGroupRules(*this);
  return rules ? rules->getGemmRowOperand(*this) : std::nullopt;
}

int64_t FusedOp::getWorkspaceBytes() {
  const FusedGroupRulesInterface *rules = getFusedGroupRules(*this);
  return rules ? rules->getWorkspaceBytes(*this) : 0;
}

YieldOp FusedOp::getYield() {
  return cast<YieldOp>(getBodyBlock().getTerminator());
}

namespace {

/// A group whose body only yields its own arguments forwards its inputs.
struct ForwardInputsOfEmptyGroup : OpRewritePattern<FusedOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FusedOp op, PatternRewriter &rewriter) const override {
    Block &body = op.getBody().front();
    if (!llvm::hasSingleElement(body))
      return failure();
    SmallVector<Value> inputs;
    for (Value yielded : body.getTerminator()->getOperands()) {
      auto arg = dyn_cast<BlockArgument>(yielded);
      if (!arg || arg.getOwner() != &body)
        return failure();
      inputs.push_back(op->getOperand(arg.getArgNumber()));
    }
    rewriter.replaceOp(op, inputs);
    return success();
  }
};

} // namespace

void FusedOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                          MLIRContext *context) {
  patterns.add<ForwardInputsOfEmptyGroup>(context);
}

LogicalResult FusedOp::verify() {
  if (getKind().empty())
    return emitOpError("expects a non-empty 'kind'");
  return success();
}

LogicalResult FusedOp::verifyRegions() {
  Block &body = getBodyBlock();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("expects one body argument per input (")
           << getInputs().size() << "), got " << body.getNumArguments();
  for (auto [i, input, arg] : llvm::enumerate(getInputs(), body.getArguments()))
    if (input.getType() != arg.getType())
      return emitOpError("expects body argument #")
             << i << " to have the type of input #" << i << " ("
             << input.getType() << "), got " << arg.getType();
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("expects its body to end in weft.yield");
  if (yield.getValues().size() != getNumResults())
    return emitOpError("expects weft.yield to return one value per result (")
           << getNumResults() << "), got " << yield.getValues().size();
  for (auto [i, value, result] :
       llvm::enumerate(yield.getValues(), getResults()))
    if (value.getType() != result.getType())
      return emitOpError("expects yielded value #")
             << i << " to have the type of result #" << i << " ("
             << result.getType() << "), got " << value.getType();
  // A group the target runs as a library call (a GEMM with an epilogue):
  // the target's rules verify it (registerKernelGroupRules).
  if (const FusedGroupRulesInterface *rules = getFusedGroupRules(*this))
    if (rules->isLibraryGroup(*this))
      return rules->verifyLibraryGroup(*this);
  std::optional<SmallVector<int64_t>> domain;
  Operation *first = nullptr;
  for (Operation &op : body.without_terminator()) {
    std::optional<SmallVector<int64_t>> opDomain = getFusionDomain(&op);
    if (!opDomain)
      return op.emitOpError("cannot be fused: a weft.fused body holds only "
                            "pointwise, normalization, last-dim softmax, "
                            "cross-entropy, rope and AdamW ops whose operands "
                            "broadcast onto the domain or are per-row");
    if (!domain) {
      domain = opDomain;
      first = &op;
    } else if (*domain != *opDomain) {
      InFlightDiagnostic diag = op.emitOpError("iterates over ");
      diag << "[";
      llvm::interleaveComma(*opDomain, diag);
      diag << "], but '" << first->getName() << "' in the same weft.fused "
           << "group iterates over [";
      llvm::interleaveComma(*domain, diag);
      return diag << "]";
    }
  }
  if (!first)
    return emitOpError("expects at least one op in its body");
  return success();
}

int64_t FusedOp::getFlops() {
  int64_t flops = 0;
  for (Operation &op : getBodyBlock().without_terminator())
    if (auto cost = dyn_cast<CostOpInterface>(op)) {
      int64_t add = cost.getFlops();
      flops = add > std::numeric_limits<int64_t>::max() - flops
                  ? std::numeric_limits<int64_t>::max()
                  : flops + add;
    }
  return flops;
}
