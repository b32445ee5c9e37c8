// State and outputs of a multi-GPU run as per-rank shards: each rank's block
// of a split tensor (one dimension, blocks in rank order along the grid's
// split axis), a small JSON index beside them, and the helpers that gather
// shards into one single-GPU file and split one back.
#ifndef WEFT_HOST_SHARDS_H
#define WEFT_HOST_SHARDS_H

#include "weft/Support/Npz.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace weft {

/// Where a rank sits in a partitioned step's grid.
struct RankLayout {
  std::vector<int64_t> grid; // empty: one GPU
  int splitAxis = -1;
  int rank = 0;
  /// Blocks along the split axis and this rank's block.
  int64_t parts() const;
  int64_t part() const;
  /// The rank at `part` along the split axis whose other coordinates are 0.
  int rankOfPart(int64_t part) const;
  int worldSize() const;
};

/// The shape of the whole tensor of a block `local` split along `dim`.
std::vector<int64_t> wholeShape(const std::vector<int64_t> &local, int dim, int64_t parts);

/// Block `part` of `parts` along `dim` of a row-major tensor of `shape`
/// whose elements are `width` bytes each.
std::string blockBytes(const char *whole, const std::vector<int64_t> &shape, int dim,
                       int64_t parts, int64_t part, size_t width);
std::vector<double> blockValues(const double *whole, const std::vector<int64_t> &shape, int dim,
                                int64_t parts, int64_t part);
/// Writes `block` as block `part` of `whole` (of `shape`) along `dim`.
void placeBlock(std::vector<double> &whole, const std::vector<int64_t> &shape,
                const std::vector<double> &block, int dim, int64_t parts, int64_t part);

/// "state.npz" -> "state.npz.rank3.npz": a rank's shard beside the index.
std::string shardPath(const std::string &index, int rank);

/// Writes the index of a sharded file: the grid, the split axis and, per
/// tensor, the dimension it is split along (absent: replicated).
bool writeShardIndex(const std::string &path, const RankLayout &layout,
                     const std::map<std::string, int> &splitDims, std::string &error);
/// Whether `path` is a shard index (JSON) rather than an .npz.
bool isShardIndex(const std::string &path);

/// Reads an index and its shards and writes the whole tensors to `out`.
bool gatherShards(const std::string &index, const std::string &out, std::string &error);
/// Splits the whole tensors of `archive` into shards for `layout` (tensors
/// named in `splitDims` split, the others replicated) and writes the index.
bool splitIntoShards(const NpzArchive &archive, const RankLayout &layout,
                     const std::map<std::string, int> &splitDims, const std::string &index,
                     std::string &error);

} // namespace weft

#endif // WEFT_HOST_SHARDS_H
