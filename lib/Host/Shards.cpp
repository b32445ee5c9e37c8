// Per-rank shards of a multi-GPU run's state and outputs, their JSON index,
// and gathering / splitting them (Shards.h).
#include "weft/Host/Shards.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <fstream>

namespace weft {

namespace {

int64_t product(const std::vector<int64_t> &values, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i)
    p *= values[i];
  return p;
}

/// Outer and inner element counts around `dim`.
void around(const std::vector<int64_t> &shape, int dim, int64_t &outer, int64_t &inner) {
  outer = product(shape, 0, size_t(dim));
  inner = product(shape, size_t(dim) + 1, shape.size());
}

} // namespace

int64_t RankLayout::parts() const {
  return splitAxis < 0 || grid.empty() ? 1 : grid[size_t(splitAxis)];
}

int64_t RankLayout::part() const {
  if (splitAxis < 0 || grid.empty())
    return 0;
  int64_t stride = product(grid, size_t(splitAxis) + 1, grid.size());
  return (rank / stride) % grid[size_t(splitAxis)];
}

int RankLayout::rankOfPart(int64_t p) const {
  if (splitAxis < 0 || grid.empty())
    return 0;
  return int(p * product(grid, size_t(splitAxis) + 1, grid.size()));
}

int RankLayout::worldSize() const { return int(product(grid, 0, grid.size())); }

std::vector<int64_t> wholeShape(const std::vector<int64_t> &local, int dim, int64_t parts) {
  std::vector<int64_t> shape = local;
  if (dim >= 0 && size_t(dim) < shape.size())
    shape[size_t(dim)] *= parts;
  return shape;
}

std::string blockBytes(const char *whole, const std::vector<int64_t> &shape, int dim,
                       int64_t parts, int64_t part, size_t width) {
  int64_t outer, inner;
  around(shape, dim, outer, inner);
  int64_t size = shape[size_t(dim)] / parts;
  std::string block(size_t(outer * size * inner) * width, '\0');
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(block.data() + size_t(o * size * inner) * width,
                whole + size_t((o * shape[size_t(dim)] + part * size) * inner) * width,
                size_t(size * inner) * width);
  return block;
}

std::vector<double> blockValues(const double *whole, const std::vector<int64_t> &shape, int dim,
                                int64_t parts, int64_t part) {
  std::string bytes = blockBytes(reinterpret_cast<const char *>(whole), shape, dim, parts, part,
                                 sizeof(double));
  std::vector<double> values(bytes.size() / sizeof(double));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

void placeBlock(std::vector<double> &whole, const std::vector<int64_t> &shape,
                const std::vector<double> &block, int dim, int64_t parts, int64_t part) {
  int64_t outer, inner;
  around(shape, dim, outer, inner);
  int64_t size = shape[size_t(dim)] / parts;
  for (int64_t o = 0; o < outer; ++o)
    std::copy_n(block.begin() + o * size * inner, size * inner,
                whole.begin() + (o * shape[size_t(dim)] + part * size) * inner);
}

std::string shardPath(const std::string &index, int rank) {
  return index + ".rank" + std::to_string(rank) + ".npz";
}

bool writeShardIndex(const std::string &path, const RankLayout &layout,
                     const std::map<std::string, int> &splitDims, std::string &error) {
  llvm::json::Array grid, files;
  for (int64_t size : layout.grid)
    grid.push_back(size);
  for (int r = 0; r < layout.worldSize(); ++r)
    files.push_back(llvm::sys::path::filename(shardPath(path, r)).str());
  llvm::json::Object splits;
  for (const auto &[name, dim] : splitDims)
    splits[name] = dim;
  llvm::json::Object index{{"weft_shards", 1},
                           {"grid", std::move(grid)},
                           {"split_axis", layout.splitAxis},
                           {"files", std::move(files)},
                           {"split_dims", std::move(splits)}};
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    error = path + ": cannot write: " + ec.message();
    return false;
  }
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(index))) << "\n";
  return true;
}

bool isShardIndex(const std::string &path) {
  std::ifstream file(path);
  char first = 0;
  while (file.get(first) && std::isspace(static_cast<unsigned char>(first)))
    ;
  return first == '{';
}

namespace {

bool readIndex(const std::string &path, RankLayout &layout, std::vector<std::string> &files,
               std::map<std::string, int> &splitDims, std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    error = path + ": cannot read: " + buffer.getError().message();
    return false;
  }
  llvm::Expected<llvm::json::Value> value = llvm::json::parse((*buffer)->getBuffer());
  if (!value) {
    error = path + ": not a shard index: " + llvm::toString(value.takeError());
    return false;
  }
  const llvm::json::Object *object = value->getAsObject();
  const llvm::json::Array *grid = object ? object->getArray("grid") : nullptr;
  const llvm::json::Array *names = object ? object->getArray("files") : nullptr;
  const llvm::json::Object *splits = object ? object->getObject("split_dims") : nullptr;
  std::optional<int64_t> axis = object ? object->getInteger("split_axis") : std::nullopt;
  if (!object || !object->getInteger("weft_shards") || !grid || !names || !splits || !axis) {
    error = path + ": not a shard index (weft_shards, grid, split_axis, files, split_dims)";
    return false;
  }
  for (const llvm::json::Value &size : *grid)
    layout.grid.push_back(size.getAsInteger().value_or(0));
  layout.splitAxis = int(*axis);
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  for (const llvm::json::Value &name : *names) {
    llvm::SmallString<256> file(dir);
    llvm::sys::path::append(file, name.getAsString().value_or(""));
    files.push_back(std::string(file));
  }
  for (const auto &[name, dim] : *splits)
    splitDims[name.str()] = int(dim.getAsInteger().value_or(-1));
  if (int(files.size()) != layout.worldSize() || layout.worldSize() < 1) {
    error = path + ": lists " + std::to_string(files.size()) + " shard files for a grid of " +
            std::to_string(layout.worldSize()) + " ranks";
    return false;
  }
  return true;
}

} // namespace

bool gatherShards(const std::string &index, const std::string &out, std::string &error) {
  RankLayout layout;
  std::vector<std::string> files;
  std::map<std::string, int> splitDims;
  if (!readIndex(index, layout, files, splitDims, error))
    return false;
  std::vector<NpzArchive> shards;
  for (int64_t p = 0; p < layout.parts(); ++p) {
    llvm::Expected<NpzArchive> shard = readNpz(files[size_t(layout.rankOfPart(p))]);
    if (!shard) {
      error = llvm::toString(shard.takeError());
      return false;
    }
    shards.push_back(std::move(*shard));
  }
  NpzArchive whole;
  for (const auto &[name, first] : shards.front().entries()) {
    auto split = splitDims.find(name);
    if (split == splitDims.end() || split->second < 0) {
      whole.set(name, first);
      continue;
    }
    int dim = split->second;
    Tensor tensor = first;
    tensor.shape = wholeShape(first.shape, dim, layout.parts());
    tensor.data.assign(first.data.size() * size_t(layout.parts()), 0.0);
    for (int64_t p = 0; p < layout.parts(); ++p) {
      const Tensor *block = shards[size_t(p)].lookup(name);
      if (!block || block->shape != first.shape) {
        error = files[size_t(layout.rankOfPart(p))] + ": '" + name +
                "' is missing or has another shape than in " + files.front();
        return false;
      }
      placeBlock(tensor.data, tensor.shape, block->data, dim, layout.parts(), p);
    }
    whole.set(name, std::move(tensor));
  }
  if (llvm::Error err = writeNpz(out, whole)) {
    error = llvm::toString(std::move(err));
    return false;
  }
  return true;
}

bool splitIntoShards(const NpzArchive &archive, const RankLayout &layout,
                     const std::map<std::string, int> &splitDims, const std::string &index,
                     std::string &error) {
  for (int r = 0; r < layout.worldSize(); ++r) {
    RankLayout at = layout;
    at.rank = r;
    NpzArchive shard;
    for (const auto &[name, tensor] : archive.entries()) {
      auto split = splitDims.find(name);
      if (split == splitDims.end() || split->second < 0) {
        shard.set(name, tensor);
        continue;
      }
      int dim = split->second;
      if (size_t(dim) >= tensor.shape.size() || tensor.shape[size_t(dim)] % at.parts() != 0) {
        error = "'" + name + "' cannot be split along dimension " + std::to_string(dim) +
                " into " + std::to_string(at.parts()) + " blocks";
        return false;
      }
      Tensor block = tensor;
      block.data = blockValues(tensor.data.data(), tensor.shape, dim, at.parts(), at.part());
      block.shape[size_t(dim)] /= at.parts();
      shard.set(name, std::move(block));
    }
    if (llvm::Error err = writeNpz(shardPath(index, r), shard)) {
      error = llvm::toString(std::move(err));
      return false;
    }
  }
  return writeShardIndex(index, layout, splitDims, error);
}

} // namespace weft
