// Function arguments from .npz archives and results into them, keyed arg<i> /
// res<i> (rank<r>/... for SPMD), checked against the function's signature.
#include "weft/Reference/NpzArguments.h"

#include "weft/Reference/Interpreter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace weft::reference {

std::string tensorKey(StringRef kind, int64_t rank, int64_t numRanks, size_t index) {
  std::string key = kind.str() + std::to_string(index);
  return numRanks > 1 ? "rank" + std::to_string(rank) + "/" + key : key;
}

bool parseTensorKey(StringRef key, StringRef kind, std::optional<uint64_t> &rank,
                    uint64_t &index) {
  rank.reset();
  if (key.consume_front("rank")) {
    auto [rankText, rest] = key.split('/');
    uint64_t value;
    if (rest.empty() || rankText.getAsInteger(10, value))
      return false;
    rank = value;
    key = rest;
  }
  return key.consume_front(kind) && !key.empty() && !key.getAsInteger(10, index);
}

std::string describeTensor(ArrayRef<int64_t> shape, DType dtype) {
  std::string text = "tensor<";
  for (int64_t dim : shape)
    text += std::to_string(dim) + "x";
  return text + dtypeName(dtype) + ">";
}

static std::string typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

llvm::Error checkArgumentKeys(func::FuncOp func, int64_t numRanks,
                                     const NpzArchive &archive, StringRef file) {
  size_t numArgs = func.getNumArguments();
  for (const auto &entry : archive.entries()) {
    std::optional<uint64_t> rank;
    uint64_t index;
    if (!parseTensorKey(entry.first, "arg", rank, index))
      continue; // results or other data kept next to the inputs
    if (index >= numArgs)
      return llvm::createStringError(file + ": '" + entry.first + "' names no argument: @" +
                                     func.getSymName() + " takes " + llvm::Twine(numArgs));
    if (rank && *rank >= static_cast<uint64_t>(numRanks))
      return llvm::createStringError(file + ": '" + entry.first + "' names no rank: @" +
                                     func.getSymName() + " runs on " + llvm::Twine(numRanks));
  }
  return llvm::Error::success();
}

llvm::Expected<PerRankTensors> argumentsFromNpz(func::FuncOp func, int64_t numRanks,
                                                const NpzArchive &archive, StringRef file) {
  auto error = [&](const llvm::Twine &what) {
    return llvm::createStringError(file + ": " + what);
  };
  PerRankTensors perRank(numRanks);
  for (int64_t rank = 0; rank < numRanks; ++rank) {
    for (auto [index, type] : llvm::enumerate(func.getArgumentTypes())) {
      std::string key = tensorKey("arg", rank, numRanks, index);
      const Tensor *tensor = archive.lookup(key);
      if (!tensor && numRanks > 1)
        tensor = archive.lookup("arg" + std::to_string(index));
      if (!tensor)
        return error("no '" + key + "' for argument #" + llvm::Twine(index) + " (" +
                     typeString(type) + ") of @" + func.getSymName());
      auto tensorType = dyn_cast<RankedTensorType>(type);
      std::optional<DType> dtype =
          tensorType ? dtypeOf(tensorType.getElementType()) : std::nullopt;
      if (!dtype || tensorType.getShape() != ArrayRef(tensor->shape) ||
          *dtype != tensor->dtype)
        return error("'" + key + "' is " + describeTensor(tensor->shape, tensor->dtype) +
                     " but argument #" + llvm::Twine(index) + " of @" + func.getSymName() +
                     " is " + typeString(type));
      perRank[rank].push_back(*tensor);
    }
  }
  return perRank;
}

NpzArchive archiveOf(const PerRankTensors &perRank, StringRef kind) {
  NpzArchive archive;
  int64_t numRanks = perRank.size();
  for (int64_t rank = 0; rank < numRanks; ++rank)
    for (auto [index, tensor] : llvm::enumerate(perRank[rank]))
      archive.set(tensorKey(kind, rank, numRanks, index), tensor);
  return archive;
}

} // namespace weft::reference
