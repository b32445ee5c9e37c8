// Random arguments for weft-run and --weft-diff-each-pass. The transforms
// from mt19937_64's bits to normal and uniform values are written out here
// because the std:: distributions' outputs are implementation-defined, and a
// seed must give the same inputs with every standard library.
#include "weft/Reference/RandomInputs.h"

#include "weft/Dialect/WeftDialect.h"
#include "weft/Reference/Interpreter.h"
#include "weft/Support/FloatBits.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <optional>
#include <random>

using namespace mlir;
using weft::reference::IntRange;

namespace {

constexpr llvm::StringLiteral kRangeAttrName = "weft.range";
constexpr int64_t kSeedLimit = int64_t(1) << 31;
constexpr int64_t kMaxAdamWStep = 1000;

std::string typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

std::string attrString(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << attr;
  return text;
}

llvm::Error argError(func::FuncOp func, unsigned index, const llvm::Twine &what) {
  return llvm::createStringError("argument #" + llvm::Twine(index) + " (" +
                                 typeString(func.getArgumentTypes()[index]) +
                                 ") of @" + func.getSymName() + ": " + what);
}

/// The size of dimension `dim` (negative counts from the end) of a static
/// ranked tensor, or nullopt.
std::optional<int64_t> staticDim(Value value, int64_t dim) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || type.getRank() == 0)
    return std::nullopt;
  if (dim < 0)
    dim += type.getRank();
  if (dim < 0 || dim >= type.getRank() || type.isDynamicDim(dim))
    return std::nullopt;
  return type.getDimSize(dim);
}

/// What `user` accepts for its i64 operand, if it is one of the ops that
/// give integers a meaning.
std::optional<IntRange> rangeAcceptedBy(Operation *user) {
  auto fromDim = [](std::optional<int64_t> size) -> std::optional<IntRange> {
    if (!size)
      return std::nullopt;
    return IntRange{0, *size};
  };
  // Each of these ops has exactly one i64 operand, so the use is that one.
  if (auto op = dyn_cast<weft::EmbeddingOp>(user))
    return fromDim(staticDim(op.getTable(), 0));
  if (auto op = dyn_cast<weft::EmbeddingGradOp>(user))
    return fromDim(staticDim(op.getDtable(), 0));
  if (auto op = dyn_cast<weft::CrossEntropyOp>(user))
    return fromDim(staticDim(op.getLogits(), -1));
  if (auto op = dyn_cast<weft::CrossEntropyGradOp>(user))
    return fromDim(staticDim(op.getLogits(), -1));
  // Philox keys take the seed as a 32-bit word in the GPU kernels.
  if (isa<weft::DropoutOp, weft::AttentionOp, weft::AttentionGradOp>(user))
    return IntRange{0, kSeedLimit};
  // Bias correction divides by 1 - beta^step, so the step starts at 1.
  if (isa<weft::AdamWOp>(user))
    return IntRange{1, kMaxAdamWStep + 1};
  return std::nullopt;
}

bool isI64Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isInteger(64);
}

/// Whether float argument `arg` feeds, possibly through ops that only move
/// data, the second-moment operand of weft.adamw, whose sqrt needs v >= 0.
bool feedsSecondMoment(BlockArgument arg) {
  llvm::SmallVector<Value> worklist{arg};
  llvm::SmallPtrSet<Operation *, 8> visited;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (auto adamw = dyn_cast<weft::AdamWOp>(user))
        if (&use == &adamw.getVMutable())
          return true;
      bool movesData =
          isa<weft::ReshapeOp, weft::TransposeOp, weft::SplitOp,
              weft::ConcatOp>(user) ||
          isa<shard::ShardDialect>(user->getDialect());
      if (movesData && visited.insert(user).second)
        llvm::append_range(worklist, user->getResults());
      // Into a fused group: its body's argument for this operand.
      if (auto fused = dyn_cast<weft::FusedOp>(user))
        worklist.push_back(fused->getRegion(0).front().getArgument(use.getOperandNumber()));
    }
  }
  return false;
}

/// splitmix64: decorrelates the per-argument seeds derived from (seed, i).
uint64_t mixSeed(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Uniform in (0, 1]: never 0, so log() below is finite.
double uniformOpenZero(std::mt19937_64 &gen) {
  return static_cast<double>((gen() >> 11) + 1) * 0x1p-53;
}

/// Uniform over [range.lo, range.hi) without modulo bias (rejection).
int64_t uniformInt(std::mt19937_64 &gen, IntRange range) {
  uint64_t span = static_cast<uint64_t>(range.hi) - static_cast<uint64_t>(range.lo);
  uint64_t threshold = (0 - span) % span; // 2^64 mod span
  uint64_t draw;
  do
    draw = gen();
  while (draw < threshold);
  return static_cast<int64_t>(static_cast<uint64_t>(range.lo) + draw % span);
}

/// Standard normal values by Box-Muller, both outputs of each pair used.
void fillNormal(std::mt19937_64 &gen, weft::Tensor &tensor) {
  for (size_t i = 0; i < tensor.data.size(); i += 2) {
    double radius = std::sqrt(-2.0 * std::log(uniformOpenZero(gen)));
    double angle = 2.0 * M_PI * uniformOpenZero(gen);
    tensor.data[i] = weft::roundToDType(radius * std::cos(angle), tensor.dtype);
    if (i + 1 < tensor.data.size())
      tensor.data[i + 1] =
          weft::roundToDType(radius * std::sin(angle), tensor.dtype);
  }
}

} // namespace

llvm::Expected<IntRange> weft::reference::integerArgRange(func::FuncOp func,
                                                    unsigned index) {
  if (Attribute attr = func.getArgAttr(index, kRangeAttrName)) {
    auto bounds = dyn_cast<DenseI64ArrayAttr>(attr);
    if (!bounds || bounds.size() != 2 || bounds[0] >= bounds[1])
      return argError(func, index,
                      "weft.range must be array<i64: lo, hi> with lo < hi, "
                      "got " +
                          attrString(attr));
    return IntRange{bounds[0], bounds[1]};
  }

  // Nothing reads it (a training step's seed when the model has no dropout):
  // any value is valid; draw it as a seed would be.
  if (func.getArgument(index).use_empty())
    return IntRange{0, kSeedLimit};

  std::optional<IntRange> range;
  std::string consumers;
  llvm::SmallVector<Value> worklist{func.getArgument(index)};
  llvm::SmallPtrSet<Operation *, 8> visited;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (std::optional<IntRange> accepted = rangeAcceptedBy(user)) {
        if (!consumers.empty())
          consumers += ", ";
        consumers += (user->getName().getStringRef() + " [" +
                      llvm::Twine(accepted->lo) + ", " +
                      llvm::Twine(accepted->hi) + ")")
                         .str();
        if (!range)
          range = accepted;
        range->lo = std::max(range->lo, accepted->lo);
        range->hi = std::min(range->hi, accepted->hi);
        continue;
      }
      // Ops that move i64 data (reshape, transpose, split, concat, shard
      // collectives) hand the constraint on to their i64 results.
      if (!visited.insert(user).second)
        continue;
      for (Value result : user->getResults())
        if (isI64Tensor(result.getType()))
          worklist.push_back(result);
    }
  }
  if (!range)
    return argError(func, index,
                    "no use says which integers it may hold (none of "
                    "weft.embedding, cross_entropy, dropout, attention, adamw "
                    "consumes it); state them with {weft.range = array<i64: "
                    "lo, hi>}");
  if (range->lo >= range->hi)
    return argError(func, index,
                    "its uses accept no common value: " + consumers);
  return *range;
}

llvm::Expected<std::vector<weft::Tensor>>
weft::reference::drawRandomArgs(func::FuncOp func, uint64_t seed) {
  std::vector<Tensor> args;
  for (auto [index, type] : llvm::enumerate(func.getArgumentTypes())) {
    auto tensorType = dyn_cast<RankedTensorType>(type);
    std::optional<DType> dtype =
        tensorType ? reference::dtypeOf(tensorType.getElementType())
                   : std::nullopt;
    if (!dtype || !tensorType.hasStaticShape())
      return argError(func, index,
                      "random inputs fill only statically shaped tensors of f64, "
                      "f32, f16, bf16, i64, i16 or i1");
    Tensor tensor;
    tensor.shape.assign(tensorType.getShape().begin(),
                        tensorType.getShape().end());
    tensor.dtype = *dtype;
    tensor.data.resize(tensor.numElements());

    std::mt19937_64 gen(mixSeed(seed ^ mixSeed(index)));
    switch (*dtype) {
    case DType::F64:
    case DType::F32:
    case DType::F16:
    case DType::BF16:
      fillNormal(gen, tensor);
      // A second moment is a running mean of squares: |normal| keeps AdamW's
      // sqrt(v) real, as a training step's state would.
      if (feedsSecondMoment(func.getArgument(index)))
        for (double &value : tensor.data)
          value = std::fabs(value);
      break;
    case DType::I64: {
      llvm::Expected<IntRange> range = integerArgRange(func, index);
      if (!range)
        return range.takeError();
      for (double &value : tensor.data)
        value = static_cast<double>(uniformInt(gen, *range));
      break;
    }
    case DType::I1:
      for (double &value : tensor.data)
        value = static_cast<double>(gen() >> 63);
      break;
    case DType::I16:
      // The low half of a split master: every bit pattern is one.
      for (double &value : tensor.data)
        value = static_cast<double>(int16_t(uint16_t(gen() >> 48)));
      break;
    }
    args.push_back(std::move(tensor));
  }
  // A carried weight copy (weft.copy_of) is its master rounded, as a runtime
  // binds it: drawn apart, the two would disagree from the first step. The
  // high half of a split master (its master slot i16) is drawn on its own:
  // any bf16 with any low half is a master.
  for (unsigned index = 0; index < args.size(); ++index)
    if (auto master = func.getArgAttrOfType<IntegerAttr>(index, weft::WeftDialect::kCopyOfAttr)) {
      int64_t m = master.getInt();
      if (m < 0 || m >= int64_t(args.size()) ||
          args[m].data.size() != args[index].data.size())
        return argError(func, index, "weft.copy_of names no argument of its shape");
      if (args[m].dtype == DType::I16)
        continue;
      for (auto [copy, value] : llvm::zip(args[index].data, args[m].data))
        copy = roundToDType(value, args[index].dtype);
    }
  return args;
}
