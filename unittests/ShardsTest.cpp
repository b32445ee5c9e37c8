// Tests of the per-rank shards of a multi-GPU run (weft/Host/Shards.h): where
// a rank's block is along the grid's split axis, slicing and placing blocks,
// and gathering shard files back into the single-GPU file they came from.
#include "weft/Host/Shards.h"
#include "weft/Host/StepTiming.h"

#include "gtest/gtest.h"

#include "llvm/Support/FileSystem.h"

#include <numeric>

using namespace weft;

namespace {

TEST(Shards, RankLayoutAlongTheSplitAxis) {
  RankLayout layout;
  layout.grid = {2, 4}; // dp = 2, tp = 4, row-major ranks (tp fastest)
  layout.splitAxis = 1;
  EXPECT_EQ(layout.worldSize(), 8);
  EXPECT_EQ(layout.parts(), 4);
  for (int rank = 0; rank < 8; ++rank) {
    layout.rank = rank;
    EXPECT_EQ(layout.part(), rank % 4) << rank;
  }
  EXPECT_EQ(layout.rankOfPart(3), 3);
  layout.splitAxis = 0;
  layout.rank = 5;
  EXPECT_EQ(layout.parts(), 2);
  EXPECT_EQ(layout.part(), 1);
  EXPECT_EQ(layout.rankOfPart(1), 4);
  RankLayout one;
  EXPECT_EQ(one.parts(), 1);
  EXPECT_EQ(one.part(), 0);
}

TEST(Shards, BlocksSliceAndPlaceBack) {
  std::vector<int64_t> shape = {2, 6, 3};
  std::vector<double> whole(36);
  std::iota(whole.begin(), whole.end(), 0.0);
  std::vector<double> rebuilt(36, -1.0);
  for (int64_t part = 0; part < 3; ++part) {
    std::vector<double> block = blockValues(whole.data(), shape, 1, 3, part);
    ASSERT_EQ(block.size(), 12u);
    // Row o, block row r, column c of the block is whole[o][part*2 + r][c].
    EXPECT_EQ(block[0], whole[size_t((0 * 6 + part * 2) * 3)]);
    EXPECT_EQ(block[6], whole[size_t((1 * 6 + part * 2) * 3)]);
    placeBlock(rebuilt, shape, block, 1, 3, part);
  }
  EXPECT_EQ(rebuilt, whole);
  EXPECT_EQ(wholeShape({2, 2, 3}, 1, 3), shape);
  EXPECT_EQ(wholeShape({2, 2, 3}, -1, 3), (std::vector<int64_t>{2, 2, 3}));
}

TEST(Shards, SplitThenGatherIsTheSameFile) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("weft-shards", dir));
  std::string index = std::string(dir) + "/state.json";
  NpzArchive archive;
  Tensor split, replicated;
  split.shape = {4, 6};
  split.dtype = DType::F32;
  split.data.resize(24);
  std::iota(split.data.begin(), split.data.end(), 1.0);
  replicated.shape = {3};
  replicated.dtype = DType::F32;
  replicated.data = {7, 8, 9};
  archive.set("w", split);
  archive.set("b", replicated);
  RankLayout layout;
  layout.grid = {2};
  layout.splitAxis = 0;
  std::string error;
  ASSERT_TRUE(splitIntoShards(archive, layout, {{"w", 1}}, index, error)) << error;
  EXPECT_TRUE(isShardIndex(index));
  llvm::Expected<NpzArchive> rank1 = readNpz(shardPath(index, 1));
  ASSERT_TRUE(bool(rank1)) << llvm::toString(rank1.takeError());
  const Tensor *block = rank1->lookup("w");
  ASSERT_TRUE(block);
  EXPECT_EQ(block->shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(block->data[0], 4.0); // row 0, columns 3..5
  std::string gathered = std::string(dir) + "/whole.npz";
  ASSERT_TRUE(gatherShards(index, gathered, error)) << error;
  llvm::Expected<NpzArchive> back = readNpz(gathered);
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->lookup("w")->data, split.data);
  EXPECT_EQ(back->lookup("w")->shape, split.shape);
  EXPECT_EQ(back->lookup("b")->data, replicated.data);
  // A dimension the grid does not divide is refused by name.
  EXPECT_FALSE(splitIntoShards(archive, layout, {{"b", 0}}, index, error));
  EXPECT_NE(error.find("'b' cannot be split along dimension 0 into 2 blocks"), std::string::npos)
      << error;
  llvm::sys::fs::remove_directories(dir);
}

} // namespace

// --init-state on a rank draws only its block, with the values the whole
// tensor's draw holds there (so every grid starts from the same state).
TEST(ShardsTest, DrawnBlocksAreBlocksOfTheWholeDraw) {
  struct Case {
    const char *dtype;
    std::vector<int64_t> shape;
    int dim;
    int64_t parts;
  };
  for (const Case &c : {Case{"bf16", {12, 8}, 0, 4}, Case{"bf16", {12, 8}, 1, 2},
                        Case{"f32", {3, 8, 6}, 1, 4}, Case{"f16", {2, 3, 16}, 2, 8},
                        Case{"f32", {16}, 0, 2}}) {
    size_t width = std::string(c.dtype) == "f32" ? 4 : 2;
    weft_step_buffer info = {};
    info.name = "w";
    info.type = "t";
    info.dtype = c.dtype;
    info.role = WEFT_ROLE_PARAMETER;
    info.arg = 5;
    info.rank = int(c.shape.size());
    int64_t elements = 1;
    for (size_t d = 0; d < c.shape.size(); ++d) {
      info.shape[d] = c.shape[d];
      elements *= c.shape[d];
    }
    info.size = size_t(elements) * width;
    std::string whole, error;
    ASSERT_TRUE(drawStateBytes(info, 3, whole, error)) << error;
    for (int64_t part = 0; part < c.parts; ++part) {
      std::string block;
      ASSERT_TRUE(drawStateBytes(info, 3, block, error, c.dim, c.parts, part)) << error;
      EXPECT_EQ(block, blockBytes(whole.data(), c.shape, c.dim, c.parts, part, width))
          << c.dtype << " dim " << c.dim << " part " << part << " of " << c.parts;
    }
  }
}
