// analyzeGroup: a weft.fused op or one fusible weft op -> KernelGroup (the
// domain, each tensor's place in it, the kernel shape, parameters).
#include "KernelGroup.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace mlir;

namespace weft::gpu {

namespace {

std::string typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

/// bf16, f16, f32 tensors (the kernels' I/O), i64 ids, i1 masks and the i16
/// low halves of split masters.
bool isKernelElement(Type type) {
  Type element = cast<ShapedType>(type).getElementType();
  return element.isBF16() || element.isF16() || element.isF32() ||
         element.isInteger(64) || element.isInteger(1) || element.isInteger(16);
}

bool isRowOp(Operation *op) { return rowStatCount(op) > 0; }

/// The domain of a single op: getFusionDomain's, else (a pointwise op with a
/// broadcast operand such as [s, h] + [b, s, h]) its non-empty result's
/// shape.
std::optional<SmallVector<int64_t>> singleOpDomain(Operation *op) {
  if (auto domain = getFusionDomain(op))
    return domain;
  if (isa<ScalarFormulaOpInterface>(op))
    if (auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
        type && type.hasStaticShape() && type.getRank() > 0 &&
        !llvm::is_contained(type.getShape(), 0))
      return SmallVector<int64_t>(type.getShape());
  return std::nullopt;
}

/// A dropout's mask is drawn at the row-major index of its own tensor, which
/// the kernels take to be the domain element: x must cover the domain (a
/// broadcast x would need its own index), and the seed must be loaded. The
/// reason when it cannot run.
std::optional<std::string> dropoutRefusal(const KernelGroup &group,
                                          DropoutOp dropout) {
  if (group.place(dropout.getX()).extent != Extent::Full)
    return std::string(llvm::formatv(
        "weft.dropout of {0} in a group over [{1}]: the GPU kernels draw the "
        "Philox mask at the domain's element index, so x must cover the domain",
        typeText(dropout.getX().getType()),
        llvm::make_range(group.domain.begin(), group.domain.end())));
  if (!group.leafParam.count(dropout.getSeed()))
    return std::string("weft.dropout's seed is computed inside its group; the "
                       "GPU kernels load it as an operand");
  if (!dropout->getAttrOfType<IntegerAttr>(WeftDialect::kRngIdAttr))
    return std::string("weft.dropout has no integer weft.rng_id");
  if (!dropout.getOffsets().empty())
    return std::string("weft.dropout on a block of a partitioned tensor (offsets, "
                       "global_shape): the GPU kernels draw the mask at the "
                       "block's own indices, not the global ones, yet");
  return std::nullopt;
}

} // namespace

bool KernelGroup::isIndexable(ArrayRef<int64_t> shape, ArrayRef<int64_t> domain) {
  if (shape == domain.drop_back())
    return true;
  if (shape.size() > domain.size())
    return false;
  ArrayRef<int64_t> aligned = domain.take_back(shape.size());
  for (auto [s, d] : llvm::zip(shape, aligned))
    if (s != d && s != 1)
      return false;
  return true;
}

TensorPlace KernelGroup::place(Value value) const {
  auto type = cast<ShapedType>(value.getType());
  ArrayRef<int64_t> shape = type.getShape();
  int64_t elements = 1;
  for (int64_t d : shape)
    elements *= d;
  ArrayRef<int64_t> dom(domain);
  // Leading 1s index nothing: [1, 1, n] is the suffix [n], [1, 1, 1] a scalar.
  ArrayRef<int64_t> kept = shape.drop_while([](int64_t d) { return d == 1; });
  ArrayRef<int64_t> keptDomain = dom.drop_while([](int64_t d) { return d == 1; });
  if (kept == keptDomain)
    return {Extent::Full, elements};
  if (kept.empty())
    return {Extent::Scalar, 1};
  bool suffix = kept == keptDomain.take_back(kept.size());
  // A per-row tensor is the labels of a loss (ids); a float that also reads
  // as a suffix broadcasts as NumPy does (an [n] onto [n, n]).
  if (shape == dom.drop_back() && (!suffix || type.getElementType().isInteger(64)))
    return {Extent::Row, elements};
  if (suffix)
    return {Extent::Suffix, elements};
  // Any other broadcast: runs of kept dims, aligned right on the domain.
  TensorPlace place{Extent::Strided, elements, {}, 1};
  int64_t inner = 1, stride = 1;
  bool trailingBroadcast = true;
  for (int64_t i = 0, n = int64_t(shape.size()); i < n; ++i) {
    int64_t s = shape[n - 1 - i], d = dom[dom.size() - 1 - i];
    if (s == 1 && d != 1) {
      if (trailingBroadcast)
        place.innerRepeat *= d;
    } else if (s != 1) {
      trailingBroadcast = false;
      // Extend the current run when the dim below was kept too.
      if (!place.runs.empty() &&
          place.runs.back().inner * place.runs.back().size == inner)
        place.runs.back().size *= s;
      else
        place.runs.push_back({inner, s, stride});
      stride *= s;
    }
    inner *= d;
  }
  return place;
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
                    "i1 masks, i16 low halves of split masters), got " +
                    typeText(type));
  unsigned numOperands = op->getNumOperands();
  // A chunked loss's all_labels (each use in the group one) is read whole.
  auto leafOf = [&](unsigned i) -> Value {
    return fused ? Value(fused.getBodyBlock().getArgument(i)) : op->getOperand(i);
  };
  llvm::SmallDenseSet<unsigned> counted;
  for (unsigned i = 0; i < numOperands; ++i) {
    bool used = false, onlyCounted = true;
    for (OpOperand &use : leafOf(i).getUses()) {
      if (!llvm::is_contained(group.body, use.getOwner()))
        continue;
      used = true;
      onlyCounted &= allLabelsOf(use.getOwner()) == use.get() &&
                     use.getOperandNumber() + 1 == use.getOwner()->getNumOperands();
    }
    if (used && onlyCounted)
      counted.insert(i);
  }
  // Each other operand must broadcast onto the domain (or be its rows).
  for (auto [i, type] : llvm::enumerate(group.paramTypes))
    if (!counted.contains(unsigned(i)) &&
        !KernelGroup::isIndexable(cast<ShapedType>(type).getShape(), *domain))
      return refuse("tensor " + typeText(type) +
                    " does not broadcast onto the domain or its rows");

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
  for (unsigned i : counted) {
    group.leafParam.erase(leafOf(i));
    group.countedLabels[leafOf(i)] = i;
  }

  bool rowOps = false, columnSums = false, loss = false, countedGradient = false;
  for (Operation *member : group.body) {
    if (auto dropout = dyn_cast<DropoutOp>(member);
        dropout && dropout.getP().convertToDouble() != 0.0)
      if (std::optional<std::string> why = dropoutRefusal(group, dropout))
        return refuse(*why);
    // A paired op (rope) reads the partner half a row away.
    if (isa<PairedFormulaOpInterface>(member) && group.cols % 2 != 0)
      return refuse(llvm::formatv("{0} pairs the halves of rows of {1} elements",
                                  member->getName().getStringRef(), group.cols));
    rowOps |= isRowOp(member);
    loss |= isa<CrossEntropyOp>(member);
    // Its kept-row count is not a per-row statistic the column-sum kernels park.
    countedGradient |= isa<CrossEntropyGradOp>(member) &&
                       (member->hasAttr("ignore_index") || allLabelsOf(member));
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
  if (countedGradient && columnSums)
    return refuse("a group with both cross_entropy_grad {ignore_index} and column sums");
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
    // The planner sized the op's workspace by the same layout.
    std::optional<ColumnSumScratch> scratch = getColumnSumScratch(op);
    if (!scratch)
      return refuse("no column-sum layout for " + op->getName().getStringRef());
    group.statCount = scratch->statCount;
    if (scratch->output >= 0) {
      group.scratchParam = numOperands + unsigned(scratch->output);
    } else if (isa<FusedOp>(op)) {
      group.hasWorkspace = true;
      group.scratchParam = group.paramTypes.size();
      group.paramTypes.push_back(RankedTensorType::get(
          {scratch->workspaceBytes / 4}, Float32Type::get(op->getContext())));
    } else {
      return refuse(llvm::formatv(
          "no full output of at least {0} bytes to hold {1} f32 row "
          "statistics of {2} rows between the kernels",
          group.statCount * group.rows * 4, group.statCount, group.rows));
    }
    group.columnChunks = scratch->chunks;
  }
  return group;
}

} // namespace weft::gpu
