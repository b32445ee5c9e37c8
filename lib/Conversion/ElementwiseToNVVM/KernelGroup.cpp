// analyzeGroup: a weft.fused op or one fusible weft op -> KernelGroup (the
// domain, each tensor's place in it, the kernel shape, parameters).
#include "KernelGroup.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace weft::gpu {

namespace {

std::string typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

/// bf16, f16, f32 tensors (the kernels' I/O), i64 ids and i1 masks.
bool isKernelElement(Type type) {
  Type element = cast<ShapedType>(type).getElementType();
  return element.isBF16() || element.isF16() || element.isF32() ||
         element.isInteger(64) || element.isInteger(1);
}

bool isRowOp(Operation *op) { return rowStatCount(op) > 0; }

/// The domain of a single op: getFusionDomain's, else (a pointwise op with a
/// broadcast operand such as [s, h] + [b, s, h]) its result's shape.
std::optional<SmallVector<int64_t>> singleOpDomain(Operation *op) {
  if (auto domain = getFusionDomain(op))
    return domain;
  if (isa<AddOp, SubOp, MulOp, WhereOp>(op))
    if (auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
        type && type.hasStaticShape() && type.getRank() > 0)
      return SmallVector<int64_t>(type.getShape());
  return std::nullopt;
}

} // namespace

int64_t rowStatCount(Operation *op) {
  return llvm::TypeSwitch<Operation *, int64_t>(op)
      .Case<LayerNormOp, SoftmaxOp, RmsNormGradOp>([](auto) { return 2; })
      .Case<RmsNormOp, SoftmaxGradOp, CrossEntropyOp, CrossEntropyGradOp>(
          [](auto) { return 1; })
      .Case<LayerNormGradOp>([](auto) { return 4; })
      .Default([](Operation *) { return 0; });
}

bool KernelGroup::isColumnSum(Value value) {
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return false;
  Operation *owner = result.getOwner();
  return (isa<LayerNormGradOp>(owner) && result.getResultNumber() > 0) ||
         (isa<RmsNormGradOp>(owner) && result.getResultNumber() == 1);
}

TensorPlace KernelGroup::place(Value value) const {
  auto shape = cast<ShapedType>(value.getType()).getShape();
  int64_t elements = 1;
  for (int64_t d : shape)
    elements *= d;
  if (ArrayRef<int64_t>(domain) == shape)
    return {Extent::Full, elements};
  if (shape.empty())
    return {Extent::Scalar, 1};
  if (ArrayRef<int64_t>(domain).drop_back() == shape)
    return {Extent::Row, elements};
  return {Extent::Suffix, elements};
}

FailureOr<KernelGroup> analyzeGroup(Operation *op, std::string &message) {
  KernelGroup group;
  group.op = op;
  auto fused = dyn_cast<FusedOp>(op);
  std::optional<SmallVector<int64_t>> domain;
  if (fused) {
    for (Operation &member : fused.getBodyBlock().without_terminator())
      group.body.push_back(&member);
    domain = getFusionDomain(group.body.front());
  } else {
    group.body.push_back(op);
    domain = singleOpDomain(op);
  }
  auto refuse = [&](const llvm::Twine &why) -> FailureOr<KernelGroup> {
    message = why.str();
    return failure();
  };
  if (!domain)
    return refuse("no row or pointwise kernel implements " +
                  op->getName().getStringRef());
  group.domain = *domain;
  group.cols = domain->back();
  for (int64_t d : ArrayRef<int64_t>(*domain).drop_back())
    group.rows *= d;
  if (group.rows * group.cols >= (int64_t(1) << 40))
    return refuse(llvm::formatv("the domain of {0} elements is too large",
                                group.rows * group.cols));

  for (Value operand : op->getOperands())
    group.paramTypes.push_back(operand.getType());
  for (Value result : op->getResults())
    group.paramTypes.push_back(result.getType());
  for (Type type : group.paramTypes)
    if (!isa<RankedTensorType>(type) || !isKernelElement(type))
      return refuse("the GPU kernels take bf16, f16 or f32 tensors (i64 ids, "
                    "i1 masks), got " + typeText(type));
  // Each suffix operand must be a real trailing suffix of the domain.
  for (Type type : group.paramTypes) {
    auto shape = cast<ShapedType>(type).getShape();
    if (shape.size() > domain->size() ||
        (shape != ArrayRef<int64_t>(*domain).drop_back() &&
         shape != ArrayRef<int64_t>(*domain).take_back(shape.size())))
      return refuse("tensor " + typeText(type) +
                    " is not a trailing suffix or the rows of the domain");
  }

  unsigned numOperands = op->getNumOperands();
  if (fused) {
    for (BlockArgument arg : fused.getBodyBlock().getArguments())
      group.leafParam[arg] = arg.getArgNumber();
    for (auto [i, value] : llvm::enumerate(fused.getYield().getValues()))
      group.outputs.push_back({value, numOperands + unsigned(i)});
  } else {
    for (auto [i, operand] : llvm::enumerate(op->getOperands()))
      group.leafParam[operand] = unsigned(i);
    for (auto [i, result] : llvm::enumerate(op->getResults()))
      group.outputs.push_back({result, numOperands + unsigned(i)});
  }

  bool rowOps = false, columnSums = false, loss = false;
  for (Operation *member : group.body) {
    if (auto dropout = dyn_cast<DropoutOp>(member);
        dropout && dropout.getP().convertToDouble() != 0.0)
      return refuse(llvm::formatv(
          "weft.dropout with p = {0}: the GPU kernels do not generate the "
          "Philox mask yet (only p = 0 runs on the GPU)",
          dropout.getP().convertToDouble()));
    rowOps |= isRowOp(member);
    loss |= isa<CrossEntropyOp>(member);
    for (Value result : member->getResults()) {
      if (KernelGroup::isColumnSum(result)) {
        columnSums = true;
        for (Operation *user : result.getUsers())
          if (!isa<YieldOp>(user) && user->getParentOp() == op)
            return refuse("a column sum (" + typeText(result.getType()) +
                          ") is used inside its group");
      }
      if (isa<CrossEntropyOp>(member))
        for (Operation *user : result.getUsers())
          if (!isa<YieldOp>(user) && user->getParentOp() == op)
            return refuse("the cross-entropy loss is used inside its group");
    }
  }
  if (loss && columnSums)
    return refuse("a group with both a loss and column sums");
  int64_t sums = 0;
  for (auto [value, param] : group.outputs)
    sums += KernelGroup::isColumnSum(value);
  if (sums > 2)
    return refuse(llvm::formatv("{0} column sums in one group; the column-sum "
                                "kernel takes at most 2", sums));
  for (auto [value, param] : group.outputs) {
    TensorPlace place = group.place(value);
    bool columnSum = KernelGroup::isColumnSum(value);
    bool isLoss = isa_and_nonnull<CrossEntropyOp>(value.getDefiningOp());
    if (place.extent != Extent::Full && !columnSum && !isLoss)
      return refuse("output " + typeText(value.getType()) +
                    " does not cover the domain");
  }
  group.shape = loss         ? KernelShape::SingleBlock
                : columnSums ? KernelShape::RowsWithColumnSums
                : rowOps     ? KernelShape::Rows
                             : KernelShape::Pointwise;
  if (group.shape == KernelShape::RowsWithColumnSums) {
    for (Operation *member : group.body)
      group.statCount += rowStatCount(member);
    // The stats kernel parks the row statistics in the first full output.
    bool found = false;
    for (auto [value, param] : group.outputs) {
      if (group.place(value).extent != Extent::Full)
        continue;
      Type type = group.paramTypes[param];
      int64_t bytes = tensorBytes(type);
      if (bytes >= group.statCount * group.rows * 4) {
        group.scratchParam = param;
        found = true;
        break;
      }
    }
    if (!found)
      return refuse(llvm::formatv(
          "no full output of at least {0} bytes to hold {1} f32 row "
          "statistics of {2} rows between the kernels",
          group.statCount * group.rows * 4, group.statCount, group.rows));
    // About 128 rows per chunk, at most 64 chunks, as many as the scratch
    // holds next to the statistics.
    int64_t available = tensorBytes(group.paramTypes[group.scratchParam]) / 4 -
                        group.statCount * group.rows;
    int64_t perChunk = sums * group.cols;
    group.columnChunks = std::clamp<int64_t>(
        std::min(group.rows / 128, available / perChunk), 1, 64);
  }
  return group;
}

} // namespace weft::gpu
