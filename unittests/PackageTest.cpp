// The package container and plan checks: round trip, and every malformed
// package (truncated, corrupted, wrong version, bad indices, overlapping or
// out-of-arena buffers) refused with a message naming the values.
#include "weft/Package/Package.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace weft::pkg;

namespace {

/// A two-entry step: a GEMM d = a b^T and a launch over d, with one image.
Package makePackage() {
  Package p;
  p.arch = "sm_90a";
  p.weftVersion = "0.5.0";
  p.stepName = "step";
  p.arenaBytes = 4096;
  p.alignment = 256;
  p.numSteps = 3;
  auto buffer = [&](std::string name, uint64_t offset, uint64_t size,
                    uint32_t first, uint32_t last, Role role) {
    Buffer b;
    b.name = std::move(name);
    b.type = "tensor<8x8xbf16>";
    b.offset = offset;
    b.size = size;
    b.first = first;
    b.last = last;
    b.role = role;
    p.buffers.push_back(b);
  };
  buffer("a", 0, 128, 0, 2, Role::Parameter);
  buffer("b", 256, 128, 0, 2, Role::Input);
  buffer("d", 512, 128, 0, 1, Role::Activation);
  buffer("e", 512, 128, 2, 2, Role::Output); // reuses d's bytes after it dies
  Kernel kernel;
  kernel.name = "relu";
  kernel.entry = "relu_entry";
  kernel.imageName = "relu_image";
  kernel.image = 0;
  kernel.params = {ParamKind::Pointer, ParamKind::Pointer, ParamKind::I32};
  p.kernels.push_back(kernel);
  p.images.push_back({"relu_image", std::string("\x7f" "ELF", 4), std::nullopt});
  Gemm gemm;
  gemm.a = 0;
  gemm.b = 1;
  gemm.d = 2;
  gemm.m = gemm.n = gemm.k = 8;
  gemm.transB = true;
  gemm.index = 0;
  p.gemms.push_back(gemm);
  Launch launch;
  launch.kernel = 0;
  launch.grid[0] = 1;
  launch.block[0] = 64;
  launch.index = 1;
  launch.args = {{ArgKind::Buffer, 2}, {ArgKind::Buffer, 3}, {ArgKind::I32, 64}};
  p.launches.push_back(launch);
  // e is written at index 1 in this toy; make it live there.
  p.buffers[3].first = 1;
  p.buffers[2].last = 1;
  p.buffers[3].offset = 768;
  p.schedule = {{EntryKind::Gemm, 0}, {EntryKind::Launch, 0}};
  return p;
}

std::string messages(const std::vector<Problem> &problems) {
  std::string all;
  for (const Problem &problem : problems)
    all += problem.message + "\n";
  return all;
}

TEST(Package, RoundTripAndClean) {
  Package p = makePackage();
  EXPECT_EQ(messages(checkPackage(p)), "");
  std::string bytes = writePackage(p);
  Package q;
  std::string error;
  ASSERT_TRUE(readPackage(bytes.data(), bytes.size(), q, error)) << error;
  EXPECT_EQ(q.arch, "sm_90a");
  EXPECT_EQ(q.weftVersion, "0.5.0");
  EXPECT_EQ(q.stepName, "step");
  EXPECT_EQ(q.arenaBytes, 4096u);
  ASSERT_EQ(q.buffers.size(), 4u);
  EXPECT_EQ(q.buffers[3].offset, 768u);
  EXPECT_EQ(q.buffers[3].role, Role::Output);
  ASSERT_EQ(q.kernels.size(), 1u);
  EXPECT_EQ(q.kernels[0].params.size(), 3u);
  EXPECT_EQ(q.kernels[0].imageName, "relu_image");
  ASSERT_EQ(q.launches.size(), 1u);
  EXPECT_EQ(q.launches[0].args[2].value, 64u);
  ASSERT_EQ(q.gemms.size(), 1u);
  EXPECT_TRUE(q.gemms[0].transB);
  ASSERT_TRUE(q.images[0].cubin.has_value());
  EXPECT_EQ(*q.images[0].cubin, std::string("\x7f" "ELF", 4));
  EXPECT_EQ(messages(checkPackage(q)), "");
  // Writing what was read gives the same bytes.
  EXPECT_EQ(writePackage(q), bytes);
}

TEST(Package, OverlapWhileLive) {
  Package p = makePackage();
  p.buffers[3].offset = 512; // d and e overlap, both live at index 1
  std::string all = messages(checkPackage(p));
  EXPECT_NE(all.find("buffer 'e' [512, 640) overlaps buffer 'd' [512, 640) "
                     "while both are live (schedule indices 1 to 1)"),
            std::string::npos)
      << all;
  // Not live together: no problem.
  p.buffers[3].first = 2;
  p.launches[0].args[1].value = 2;
  EXPECT_EQ(checkPackage(p).size(), 0u) << messages(checkPackage(p));
}

TEST(Package, PastTheArena) {
  Package p = makePackage();
  p.buffers[1].offset = 4096 - 128 + 256; // 4224: past the end
  std::string all = messages(checkPackage(p));
  EXPECT_NE(all.find("buffer 'b' at offset 4224 with size 128 ends past the "
                     "arena of 4096 bytes"),
            std::string::npos)
      << all;
  // Sizes near 2^64 must not wrap around.
  p = makePackage();
  p.buffers[0].size = ~uint64_t(0) - 10;
  EXPECT_NE(messages(checkPackage(p)).find("ends past the arena"), std::string::npos);
}

TEST(Package, UndefinedAndDeadArguments) {
  Package p = makePackage();
  p.launches[0].args[0].value = 9;
  std::string all = messages(checkPackage(p));
  EXPECT_NE(all.find("launch 0 argument 0 names buffer 9, undefined: the step "
                     "has 4 buffers"),
            std::string::npos)
      << all;
  // The reader refuses the same index before anything uses it.
  std::string bytes = writePackage(p), error;
  Package q;
  EXPECT_FALSE(readPackage(bytes.data(), bytes.size(), q, error));
  EXPECT_NE(error.find("argument 0 names buffer 9, undefined: the package has 4 "
                       "buffers"),
            std::string::npos)
      << error;

  p = makePackage();
  p.launches[0].index = 2; // d died at index 1
  all = messages(checkPackage(p));
  EXPECT_NE(all.find("argument 0 uses buffer 'd' at schedule index 2, outside "
                     "its live range [0, 1]"),
            std::string::npos)
      << all;
}

TEST(Package, LaunchLimitsAndKinds) {
  Package p = makePackage();
  p.launches[0].block[0] = 2048;
  p.launches[0].grid[1] = 0;
  p.launches[0].args[2].kind = ArgKind::F32;
  std::string all = messages(checkPackage(p));
  EXPECT_NE(all.find("block.x = 2048 is outside [1, 1024]"), std::string::npos) << all;
  EXPECT_NE(all.find("grid.y = 0 is outside [1, 65535]"), std::string::npos) << all;
  EXPECT_NE(all.find("argument 2 is f32, the kernel's parameter 2 is i32"),
            std::string::npos)
      << all;
}

TEST(Package, GemmOperandTooSmall) {
  Package p = makePackage();
  p.gemms[0].k = 64; // a is 128 bytes, 8x64 bf16 needs 1024
  std::string all = messages(checkPackage(p));
  EXPECT_NE(all.find("operand a: buffer 'a' has 128 bytes, the GEMM reads or "
                     "writes 1024"),
            std::string::npos)
      << all;
}


// Dims read from a file may make an operand's span exceed 64 bits: the
// message gives it in scientific notation instead of an undefined cast
// (weft-fuzz-package found the cast). 2^40 x 2^40 bf16 = 2^81 bytes.
TEST(Package, GemmSpanBeyondSixtyFourBits) {
  Package p = makePackage();
  p.gemms[0].m = p.gemms[0].k = int64_t(1) << 40;
  std::string all = messages(checkPackage(p));
  EXPECT_NE(all.find("operand a: buffer 'a' has 128 bytes, the GEMM reads or "
                     "writes 2.41785e+24"),
            std::string::npos)
      << all;
}
// A weight gradient with its bias gradient: d = a^T b, bias[m] written. The
// check accepts it with an m-element bias buffer and names what is wrong.
TEST(Package, BiasGradientGemm) {
  Package p = makePackage();
  Buffer db = p.buffers[1];
  db.name = "db";
  db.type = "tensor<8xbf16>";
  db.offset = 1024;
  db.size = 16;
  db.role = Role::Gradient;
  p.buffers.push_back(db);
  Gemm &g = p.gemms[0];
  g.transA = true;
  g.transB = false;
  g.epilogue = Epilogue::BGradA;
  g.bias = 4;
  EXPECT_EQ(messages(checkPackage(p)), "");
  std::string bytes = writePackage(p);
  Package q;
  std::string error;
  ASSERT_TRUE(readPackage(bytes.data(), bytes.size(), q, error)) << error;
  EXPECT_EQ(q.gemms[0].epilogue, Epilogue::BGradA);
  EXPECT_STREQ(epilogueName(q.gemms[0].epilogue), "bgrad_a");
  EXPECT_EQ(parseEpilogue("bgrad_a"), Epilogue::BGradA);

  // bias[m]: m = 16 rows need 32 bytes of db (n stays 8).
  g.m = 16;
  p.buffers[0].size = 256; // a is [k, m] = 8 x 16
  p.buffers[2].size = 256; // d is [m, n] = 16 x 8
  std::string all = messages(checkPackage(p));
  EXPECT_NE(all.find("gemm 0 operand bias: buffer 'db' has 16 bytes, the GEMM "
                     "reads or writes 32"),
            std::string::npos)
      << all;
  g.m = 8;
  p.buffers[0].size = p.buffers[2].size = 128;

  g.bias = kNone;
  all = messages(checkPackage(p));
  EXPECT_NE(all.find("gemm 0: epilogue bgrad_a needs a bias buffer"), std::string::npos)
      << all;
  g.bias = 4;
  g.batch = 2;
  g.strides[0] = g.strides[1] = g.strides[2] = g.strides[3] = 0;
  all = messages(checkPackage(p));
  EXPECT_NE(all.find("gemm 0: epilogue bgrad_a needs batch 1, got batch 2"), std::string::npos)
      << all;
}

TEST(Package, MissingImageAndEvents) {
  Package p = makePackage();
  p.kernels[0].image = kNone;
  std::string all = messages(checkPackage(p));
  EXPECT_NE(all.find("kernel 'relu' has no image in the package (wants "
                     "'relu_image')"),
            std::string::npos)
      << all;
  CheckOptions lenient;
  lenient.requireImages = false;
  EXPECT_EQ(checkPackage(p, lenient).size(), 0u);

  p = makePackage();
  p.numStreams = 2;
  p.events.push_back({false, 1, 7, 1});
  p.schedule.push_back({EntryKind::Event, 0});
  all = messages(checkPackage(p));
  EXPECT_NE(all.find("wait on event 7 that no earlier entry records"),
            std::string::npos)
      << all;
}

TEST(Package, WrongVersionIsRefusedNamingBoth) {
  Package p = makePackage();
  p.formatVersion = kFormatVersion + 1;
  std::string bytes = writePackage(p), error;
  Package q;
  EXPECT_FALSE(readPackage(bytes.data(), bytes.size(), q, error));
  EXPECT_EQ(error, "package format version " + std::to_string(kFormatVersion + 1) +
                       " is not supported: this reader reads format version " +
                       std::to_string(kFormatVersion));
}

TEST(Package, EveryTruncationIsRefused) {
  std::string bytes = writePackage(makePackage());
  for (size_t size = 0; size < bytes.size(); ++size) {
    Package q;
    std::string error;
    EXPECT_FALSE(readPackage(bytes.data(), size, q, error)) << size;
    EXPECT_FALSE(error.empty()) << size;
  }
  Package q;
  std::string error;
  readPackage(bytes.data(), bytes.size() - 1, q, error);
  EXPECT_NE(error.find("but the file has " + std::to_string(bytes.size() - 1) +
                       " (truncated)"),
            std::string::npos)
      << error;
}

TEST(Package, EveryFlippedByteIsRefusedOrHarmless) {
  // A flipped bit anywhere: refused (checksums cover header, table and every
  // section) -- except padding between sections, which nothing reads.
  std::string bytes = writePackage(makePackage());
  size_t refused = 0;
  for (size_t at = 0; at < bytes.size(); ++at) {
    std::string copy = bytes;
    copy[at] ^= 0x10;
    Package q;
    std::string error;
    if (!readPackage(copy.data(), copy.size(), q, error))
      ++refused;
    else
      EXPECT_EQ(writePackage(q), bytes) << "byte " << at << " changed the plan";
  }
  EXPECT_GT(refused, bytes.size() * 9 / 10);
}

TEST(Package, CorruptedSectionNamesIt) {
  std::string bytes = writePackage(makePackage());
  // The BUFFERS section: the table's third entry (kind 3).
  uint64_t offset;
  std::memcpy(&offset, &bytes[80 + 2 * 32 + 8], 8);
  bytes[offset + 20] ^= 1;
  Package q;
  std::string error;
  EXPECT_FALSE(readPackage(bytes.data(), bytes.size(), q, error));
  EXPECT_NE(error.find("(kind 3 BUFFERS): checksum mismatch"), std::string::npos)
      << error;
}

TEST(Package, NotAPackage) {
  Package q;
  std::string error;
  EXPECT_FALSE(readPackage("hello", 5, q, error));
  EXPECT_NE(error.find("not a Weft package"), std::string::npos);
}

} // namespace

// The SPLITS section of a partitioned package: written only with a split
// axis, read back exactly, and refused when it names a buffer twice, an axis
// past the grid or a buffer that holds no argument or result.
TEST(Package, SplitsRoundTripAndChecks) {
  Package p = makePackage();
  p.grid = {2};
  p.splitAxis = 0;
  p.buffers[0].arg = 0;
  p.splits = {{0, 1}};
  std::string bytes = writePackage(p), error;
  Package q;
  ASSERT_TRUE(readPackage(bytes.data(), bytes.size(), q, error)) << error;
  EXPECT_EQ(q.splitAxis, 0);
  ASSERT_EQ(q.splits.size(), 1u);
  EXPECT_EQ(q.splits[0].buffer, 0u);
  EXPECT_EQ(q.splits[0].dim, 1);
  EXPECT_EQ(writePackage(q), bytes);

  Package twice = p;
  twice.splits.push_back({0, 0});
  std::string twiceBytes = writePackage(twice);
  EXPECT_FALSE(readPackage(twiceBytes.data(), twiceBytes.size(), q, error));
  EXPECT_NE(error.find("buffer 'a' is split twice"), std::string::npos) << error;

  Package axis = p;
  axis.splitAxis = 1;
  std::string axisBytes = writePackage(axis);
  EXPECT_FALSE(readPackage(axisBytes.data(), axisBytes.size(), q, error));
  EXPECT_NE(error.find("split axis 1 is outside the grid's 1 axes"), std::string::npos) << error;

  Package notArg = p;
  notArg.splits = {{2, 0}};
  std::string all = messages(checkPackage(notArg));
  EXPECT_NE(all.find("buffer 'd' is split along dimension 0 but holds no argument or result"),
            std::string::npos)
      << all;
}

TEST(Package, OperandOffsetsRoundTripAndChecks) {
  Package p = makePackage();
  // Without offsets the package has no OFFSETS section (as before it existed).
  std::string plain = writePackage(p);
  p.buffers[0].offset = 1024;
  p.buffers[0].size = 512;
  p.gemms[0].offsets[0] = 128; // 256 bytes into a: rows 16..23 of a [24, 8]
  std::string bytes = writePackage(p), error;
  EXPECT_GT(bytes.size(), plain.size());
  Package q;
  ASSERT_TRUE(readPackage(bytes.data(), bytes.size(), q, error)) << error;
  EXPECT_EQ(q.gemms[0].offsets[0], 128);
  EXPECT_EQ(q.gemms[0].offsets[3], 0);
  EXPECT_EQ(writePackage(q), bytes);
  EXPECT_EQ(messages(checkPackage(q)), "");

  Package misaligned = p;
  misaligned.gemms[0].offsets[0] = 8;
  std::string all = messages(checkPackage(misaligned));
  EXPECT_NE(all.find("operand a: offset 8 elements is not a multiple of 256 bytes"),
            std::string::npos)
      << all;

  Package past = p;
  past.gemms[0].offsets[0] = 256;
  all = messages(checkPackage(past));
  EXPECT_NE(all.find("buffer 'a' has 512 bytes, the GEMM reads or writes 128 from byte 512"),
            std::string::npos)
      << all;

  Package none = p;
  none.gemms[0].offsets[4] = 128; // aux, which this GEMM does not have
  all = messages(checkPackage(none));
  EXPECT_NE(all.find("has offset 128 for operand aux, which it does not have"),
            std::string::npos)
      << all;
}

// A local-first gather's partial GEMMs: offsets relative to the rank's
// position in its group (RANK_OFFSETS), checked for the farthest rank.
TEST(Package, RankOffsetsRoundTripAndChecks) {
  Package p = makePackage();
  p.grid = {2};
  std::string plain = writePackage(p);
  p.buffers[0].offset = 1024;
  p.buffers[0].size = 512;
  p.gemms[0].rankAxes = 1;
  p.gemms[0].rankShift = 1;
  p.gemms[0].rankStrides[0] = 128; // rank r's block: 256 bytes x ((r + 1) mod 2)
  std::string bytes = writePackage(p), error;
  EXPECT_GT(bytes.size(), plain.size());
  Package q;
  ASSERT_TRUE(readPackage(bytes.data(), bytes.size(), q, error)) << error;
  EXPECT_EQ(q.gemms[0].rankAxes, 1u);
  EXPECT_EQ(q.gemms[0].rankShift, 1);
  EXPECT_EQ(q.gemms[0].rankStrides[0], 128);
  EXPECT_EQ(q.gemms[0].rankStrides[3], 0);
  EXPECT_EQ(writePackage(q), bytes);
  EXPECT_EQ(messages(checkPackage(q)), "");

  Package past = p;
  past.gemms[0].rankStrides[0] = 256;
  std::string all = messages(checkPackage(past));
  EXPECT_NE(all.find("buffer 'a' has 512 bytes, the GEMM reads or writes 128 from byte 512 on "
                     "rank 1 of its group"),
            std::string::npos)
      << all;

  Package misaligned = p;
  misaligned.gemms[0].rankStrides[0] = 8;
  all = messages(checkPackage(misaligned));
  EXPECT_NE(all.find("operand a's rank stride: offset 8 elements is not a multiple of 256"),
            std::string::npos)
      << all;

  Package noGrid = p;
  noGrid.grid.clear();
  std::string noGridBytes = writePackage(noGrid);
  EXPECT_FALSE(readPackage(noGridBytes.data(), noGridBytes.size(), q, error));
  EXPECT_NE(error.find("section RANK_OFFSETS needs a GRID section"), std::string::npos) << error;

  Package axis = p;
  axis.gemms[0].rankAxes = 2; // grid axis 1 of a one-axis grid
  std::string axisBytes = writePackage(axis);
  EXPECT_FALSE(readPackage(axisBytes.data(), axisBytes.size(), q, error));
  EXPECT_NE(error.find("grid axes mask 2 is empty or names an axis the 1-axis grid lacks"),
            std::string::npos)
      << error;
}

// Rank-relative launch immediates (RANK_ARGS): round trip, byte for byte,
// and what the reader refuses.
TEST(Package, RankArgsRoundTripAndChecks) {
  Package p = makePackage();
  p.grid = {2};
  std::string plain = writePackage(p);
  p.launches[0].args[2].rankAxes = 1;
  p.launches[0].args[2].rankScale = 32;
  std::string bytes = writePackage(p), error;
  EXPECT_EQ(bytes.size(), plain.size() + 24 + 32); // a record and its table entry
  Package q;
  ASSERT_TRUE(readPackage(bytes.data(), bytes.size(), q, error)) << error;
  EXPECT_EQ(q.launches[0].args[2].rankAxes, 1u);
  EXPECT_EQ(q.launches[0].args[2].rankScale, 32);
  EXPECT_EQ(q.launches[0].args[1].rankAxes, 0u);
  EXPECT_EQ(writePackage(q), bytes);

  Package noGrid = p;
  noGrid.grid.clear();
  std::string noGridBytes = writePackage(noGrid);
  EXPECT_FALSE(readPackage(noGridBytes.data(), noGridBytes.size(), q, error));
  EXPECT_NE(error.find("section RANK_ARGS needs a GRID section"), std::string::npos) << error;

  Package pointer = p;
  pointer.launches[0].args[2].rankAxes = 0;
  pointer.launches[0].args[0].rankAxes = 1; // a buffer argument
  std::string pointerBytes = writePackage(pointer);
  EXPECT_FALSE(readPackage(pointerBytes.data(), pointerBytes.size(), q, error));
  EXPECT_NE(error.find("argument 0 of launch 0 is not an i32 or i64 immediate"),
            std::string::npos)
      << error;

  Package axis = p;
  axis.launches[0].args[2].rankAxes = 2; // grid axis 1 of a one-axis grid
  std::string axisBytes = writePackage(axis);
  EXPECT_FALSE(readPackage(axisBytes.data(), axisBytes.size(), q, error));
  EXPECT_NE(error.find("grid axes mask 2 is empty or names an axis the 1-axis grid lacks"),
            std::string::npos)
      << error;
}

// The COLLECTIVES section's all_to_all and send_recv records on a 2 x 4 grid
// (axis 1: 4 ranks): both buffers hold the whole count; send_recv's shift
// and rotate travel in the reduction slot (PackageFormat.h), a negative
// shift as 24-bit two's complement. An all-reduce's record keeps its
// layout, byte for byte.
namespace {

Package withCollectives() {
  Package p = makePackage();
  p.grid = {2, 4};
  Collective allToAll;
  allToAll.kind = CollectiveKind::AllToAll;
  allToAll.input = 0; // a, 128 bytes: 64 bf16, 16 per rank
  allToAll.output = 1;
  allToAll.count = 64;
  allToAll.axes = 0b10;
  allToAll.index = 2;
  Collective shift = allToAll;
  shift.kind = CollectiveKind::SendRecv;
  shift.output = 3;
  shift.count = 63; // whole buffers: no multiple of the ranks needed
  shift.shift = -3;
  shift.rotate = true;
  Collective reduce = allToAll;
  reduce.kind = CollectiveKind::AllReduce;
  reduce.output = 0;
  reduce.reduction = Reduction::Avg;
  p.collectives = {allToAll, shift, reduce};
  p.schedule.push_back({EntryKind::Collective, 0});
  p.schedule.push_back({EntryKind::Collective, 1});
  p.schedule.push_back({EntryKind::Collective, 2});
  return p;
}

/// Where the COLLECTIVES section (kind 17) starts in `bytes`.
size_t collectivesAt(const std::string &bytes) {
  uint32_t count;
  uint64_t table;
  std::memcpy(&count, &bytes[24], 4);
  std::memcpy(&table, &bytes[32], 8);
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t kind;
    uint64_t offset;
    std::memcpy(&kind, &bytes[table + i * 32], 4);
    std::memcpy(&offset, &bytes[table + i * 32 + 8], 8);
    if (kind == 17)
      return offset;
  }
  return 0;
}

/// Sets u32 `field` of collective `record` and re-signs the section and the
/// header (their FNV-1a checksums), as a writer with that value would.
void patchCollective(std::string &bytes, size_t record, size_t field, uint32_t value) {
  size_t at = collectivesAt(bytes);
  std::memcpy(&bytes[at + record * 40 + field * 4], &value, 4);
  uint32_t count;
  uint64_t table;
  std::memcpy(&count, &bytes[24], 4);
  std::memcpy(&table, &bytes[32], 8);
  for (uint32_t i = 0; i < count; ++i) {
    uint64_t offset, length;
    std::memcpy(&offset, &bytes[table + i * 32 + 8], 8);
    std::memcpy(&length, &bytes[table + i * 32 + 16], 8);
    uint64_t sum = fnv1a64(bytes.data() + offset, length);
    std::memcpy(&bytes[table + i * 32 + 24], &sum, 8);
  }
  uint64_t header = fnv1a64(bytes.data() + table, count * 32, fnv1a64(bytes.data(), 72));
  std::memcpy(&bytes[72], &header, 8);
}

uint32_t collectiveField(const std::string &bytes, size_t record, size_t field) {
  uint32_t value;
  std::memcpy(&value, &bytes[collectivesAt(bytes) + record * 40 + field * 4], 4);
  return value;
}

} // namespace

TEST(Package, AllToAllAndSendRecvRoundTrip) {
  Package p = withCollectives();
  EXPECT_EQ(messages(checkPackage(p)), "");
  std::string bytes = writePackage(p), error;
  ASSERT_NE(collectivesAt(bytes), 0u);
  // Kinds 3 and 4; the reduction slot: 0, then -3 (0xFFFFFD) with bit 24.
  EXPECT_EQ(collectiveField(bytes, 0, 0), 3u);
  EXPECT_EQ(collectiveField(bytes, 0, 4), 0u);
  EXPECT_EQ(collectiveField(bytes, 1, 0), 4u);
  EXPECT_EQ(collectiveField(bytes, 1, 4), 0x01FFFFFDu);
  // The all-reduce: kind 0, input, output, dtype bf16 (0), avg (3), axes,
  // stream, index, then the count.
  uint32_t words[8];
  for (size_t f = 0; f < 8; ++f)
    words[f] = collectiveField(bytes, 2, f);
  EXPECT_EQ(std::vector<uint32_t>(words, words + 8),
            (std::vector<uint32_t>{0, 0, 0, 0, 3, 0b10, 0, 2}));
  Package q;
  ASSERT_TRUE(readPackage(bytes.data(), bytes.size(), q, error)) << error;
  ASSERT_EQ(q.collectives.size(), 3u);
  EXPECT_EQ(q.collectives[0].kind, CollectiveKind::AllToAll);
  EXPECT_EQ(q.collectives[0].shift, 0);
  EXPECT_EQ(q.collectives[1].kind, CollectiveKind::SendRecv);
  EXPECT_EQ(q.collectives[1].shift, -3);
  EXPECT_TRUE(q.collectives[1].rotate);
  EXPECT_EQ(q.collectives[1].count, 63);
  EXPECT_EQ(q.collectives[2].reduction, Reduction::Avg);
  EXPECT_STREQ(collectiveKindName(q.collectives[0].kind), "all_to_all");
  EXPECT_STREQ(collectiveKindName(q.collectives[1].kind), "send_recv");
  EXPECT_EQ(parseCollectiveKind("send_recv"), CollectiveKind::SendRecv);
  EXPECT_EQ(messages(checkPackage(q)), "");
  EXPECT_EQ(writePackage(q), bytes);
}

TEST(Package, AllToAllAndSendRecvRefusals) {
  std::string bytes = writePackage(withCollectives()), error;
  Package q;
  // The reader: a reduction on an all-to-all, a reserved bit or no shift in
  // a send/recv's slot, a kind past send_recv.
  std::string reduced = bytes;
  patchCollective(reduced, 0, 4, 1);
  EXPECT_FALSE(readPackage(reduced.data(), reduced.size(), q, error));
  EXPECT_EQ(error, "collective 0 (all_to_all): reduction field 1 is not 0 (an all-to-all "
                   "reduces nothing)");
  std::string reserved = bytes;
  patchCollective(reserved, 1, 4, 0x03000001);
  EXPECT_FALSE(readPackage(reserved.data(), reserved.size(), q, error));
  EXPECT_EQ(error, "collective 1 (send_recv): shift field 0x03000001 is not a shift: bits 0-23 "
                   "a nonzero signed shift, bit 24 rotate, bits 25-31 0");
  std::string still = bytes;
  patchCollective(still, 1, 4, 0x01000000);
  EXPECT_FALSE(readPackage(still.data(), still.size(), q, error));
  EXPECT_NE(error.find("shift field 0x01000000 is not a shift"), std::string::npos) << error;
  std::string kind = bytes;
  patchCollective(kind, 1, 0, 5);
  EXPECT_FALSE(readPackage(kind.data(), kind.size(), q, error));
  EXPECT_NE(error.find("kind 5 is not all_reduce (0), all_gather (1), reduce_scatter (2), "
                       "all_to_all (3) or send_recv (4)"),
            std::string::npos)
      << error;

  // The checker: a shift outside the group of 4, an all-to-all's count not
  // split in 4, buffers too small, an all-to-all in place.
  Package far = withCollectives();
  far.collectives[1].shift = 4;
  std::string all = messages(checkPackage(far));
  EXPECT_NE(all.find("collective 1 (send_recv) shifts by 4 positions, not a nonzero shift of "
                     "magnitude below its 4 ranks"),
            std::string::npos)
      << all;
  Package zero = withCollectives();
  zero.collectives[1].shift = 0;
  all = messages(checkPackage(zero));
  EXPECT_NE(all.find("shifts by 0 positions"), std::string::npos) << all;
  Package odd = withCollectives();
  odd.collectives[0].count = 62;
  all = messages(checkPackage(odd));
  EXPECT_NE(all.find("collective 0 (all_to_all) has count 62, not a positive multiple of its 4 "
                     "ranks"),
            std::string::npos)
      << all;
  Package large = withCollectives();
  large.collectives[1].count = 65;
  all = messages(checkPackage(large));
  EXPECT_NE(all.find("collective 1 (send_recv) input: buffer 'a' has 128 bytes, the collective "
                     "moves 130"),
            std::string::npos)
      << all;
  Package inPlace = withCollectives();
  inPlace.collectives[0].output = 0;
  all = messages(checkPackage(inPlace));
  EXPECT_NE(all.find("collective 0 (all_to_all) cannot run in place: its input and output (128 "
                     "bytes each, from arena bytes 0 and 0) overlap"),
            std::string::npos)
      << all;
  // The overlap test counts operand offsets: the output 256 bytes into 'a'
  // does not overlap the input at its start (it runs past 'a' instead).
  Package shifted = withCollectives();
  shifted.collectives[1].output = 0;
  shifted.collectives[1].outputOffset = 128; // 256 bytes: past 'a'
  all = messages(checkPackage(shifted));
  EXPECT_NE(all.find("collective 1 (send_recv) output: buffer 'a' has 128 bytes, the collective "
                     "moves 126 from byte 256"),
            std::string::npos)
      << all;
  EXPECT_EQ(all.find("in place"), std::string::npos) << all;
}
