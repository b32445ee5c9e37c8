// The optional sections of a partitioned step (GRID, COLLECTIVES, SPLITS,
// OFFSETS) and BOUND, read as untrusting as the rest (Reader.cpp).
#include "PackageReader.h"

#include <algorithm>
#include <iterator>

namespace weft::pkg::detail {

namespace {
std::string hex(uint32_t v) {
  static const char digits[] = "0123456789abcdef";
  std::string text = "0x";
  for (int shift = 28; shift >= 0; shift -= 4)
    text += digits[(v >> shift) & 0xF];
  return text;
}
} // namespace

bool PackageReader::optionalSection(uint32_t kind, const SectionRef *&found) {
  found = nullptr;
  for (const SectionRef &section : sections) {
    if (section.kind != kind)
      continue;
    if (found)
      return fail(std::string("section ") + sectionName(kind) + " appears twice");
    found = &section;
  }
  return true;
}

/// GRID (kind 16): 1 to 8 positive axis sizes of a partitioned step.
bool PackageReader::readGrid(Package &package) {
  const SectionRef *found;
  if (!optionalSection(kGrid, found))
    return false;
  if (!found)
    return true;
  if (found->length % 8 != 0 || found->length == 0 ||
      found->length / 8 > kMaxGridAxes)
    return fail("section GRID has " + str(found->length) + " bytes, not 1 to " +
                str(kMaxGridAxes) + " 8-byte axis sizes");
  Cursor c(found->data, found->length);
  for (uint64_t i = 0; i < found->length / 8; ++i) {
    uint64_t size = c.u64();
    if (size < 1 || size > (uint64_t(1) << 20))
      return fail("section GRID: axis " + str(i) + " has size " + str(size) +
                  ", outside [1, 2^20]");
    package.grid.push_back(int64_t(size));
  }
  return true;
}

/// COLLECTIVES (kind 17): records of known kinds, dtypes and reductions (or
/// send_recv's shift) over existing buffers and grid axes.
bool PackageReader::readCollectives(Package &package) {
  const SectionRef *found;
  if (!optionalSection(kCollectives, found))
    return false;
  if (!found)
    return true;
  if (package.grid.empty())
    return fail("section COLLECTIVES without a GRID section");
  if (found->length % kCollectiveBytes != 0)
    return fail("section COLLECTIVES has " + str(found->length) +
                " bytes, not a multiple of its " + str(kCollectiveBytes) +
                "-byte records");
  for (uint64_t i = 0; i < found->length / kCollectiveBytes; ++i) {
    Cursor c(found->data + i * kCollectiveBytes, kCollectiveBytes);
    uint32_t kind = c.u32();
    Collective collective;
    collective.input = c.u32();
    collective.output = c.u32();
    uint32_t dtype = c.u32(), reduction = c.u32();
    collective.axes = c.u32();
    collective.stream = c.u32();
    collective.index = c.u32();
    collective.count = int64_t(c.u64());
    std::string where = "collective " + str(i);
    if (kind >= kNumCollectiveKinds)
      return fail(where + ": kind " + str(kind) +
                  " is not all_reduce (0), all_gather (1), reduce_scatter (2), all_to_all "
                  "(3) or send_recv (4)");
    if (dtype >= kNumDTypes)
      return fail(where + ": dtype " + str(dtype) + " is not one of bf16, f16, f32, f64");
    if (kind == uint32_t(CollectiveKind::SendRecv)) {
      if (!decodeShift(reduction, collective.shift, collective.rotate))
        return fail(where + " (send_recv): shift field " + hex(reduction) +
                    " is not a shift: bits 0-23 a nonzero signed shift, bit 24 rotate, "
                    "bits 25-31 0");
      reduction = 0;
    } else if (kind == uint32_t(CollectiveKind::AllToAll) && reduction != 0) {
      return fail(where + " (all_to_all): reduction field " + str(reduction) +
                  " is not 0 (an all-to-all reduces nothing)");
    } else if (reduction >= kNumReductions) {
      return fail(where + ": reduction " + str(reduction) + " is not sum, max, min or avg");
    }
    for (uint32_t buffer : {collective.input, collective.output})
      if (buffer >= package.buffers.size())
        return fail(where + ": names buffer " + str(buffer) +
                    ", undefined: the package has " + str(package.buffers.size()) +
                    " buffers");
    if (collective.axes == 0 || collective.axes >> package.grid.size())
      return fail(where + ": grid axes mask " + str(collective.axes) +
                  " names no axis or one past the grid's " +
                  str(package.grid.size()));
    if (collective.count < 1)
      return fail(where + ": count " + str(uint64_t(collective.count)) +
                  " is not positive");
    collective.kind = CollectiveKind(kind);
    collective.dtype = DType(dtype);
    collective.reduction = Reduction(reduction);
    package.collectives.push_back(collective);
  }
  return true;
}

/// SPLITS (kind 18): the split axis of the grid, then (buffer, dimension)
/// records of existing buffers, each at most once.
bool PackageReader::readSplits(Package &package) {
  const SectionRef *found;
  if (!optionalSection(kSplits, found))
    return false;
  if (!found)
    return true;
  if (package.grid.empty())
    return fail("section SPLITS without a GRID section");
  if (found->length < 8 || found->length % 8 != 0)
    return fail("section SPLITS has " + str(found->length) +
                " bytes, not an 8-byte header and 8-byte records");
  Cursor header(found->data, 8);
  uint32_t axis = header.u32();
  if (axis >= package.grid.size())
    return fail("section SPLITS: split axis " + str(axis) + " is outside the grid's " +
                str(package.grid.size()) + " axes");
  package.splitAxis = int32_t(axis);
  std::vector<bool> seen(package.buffers.size(), false);
  for (uint64_t i = 1; i < found->length / 8; ++i) {
    Cursor c(found->data + i * 8, 8);
    Split split;
    split.buffer = c.u32();
    uint32_t dim = c.u32();
    std::string where = "section SPLITS: record " + str(i - 1);
    if (split.buffer >= package.buffers.size())
      return fail(where + " names buffer " + str(split.buffer) + ", but the package has " +
                  str(package.buffers.size()) + " buffers");
    if (dim >= kMaxGridAxes)
      return fail(where + ": dimension " + str(dim) + " of buffer '" +
                  package.buffers[split.buffer].name + "' is not below 8");
    if (seen[split.buffer])
      return fail(where + ": buffer '" + package.buffers[split.buffer].name +
                  "' is split twice");
    seen[split.buffer] = true;
    split.dim = int32_t(dim);
    package.splits.push_back(split);
  }
  return true;
}

/// OFFSETS (kind 19): element offsets of existing GEMMs' and collectives'
/// operands, each entry at most once, none negative.
bool PackageReader::readOffsets(Package &package) {
  const SectionRef *found;
  if (!optionalSection(kOffsets, found))
    return false;
  if (!found)
    return true;
  if (found->length % kOffsetsBytes != 0)
    return fail("section OFFSETS has " + str(found->length) +
                " bytes, not a multiple of its " + str(kOffsetsBytes) + "-byte records");
  std::vector<bool> gemmSeen(package.gemms.size()), collectiveSeen(package.collectives.size());
  for (uint64_t i = 0; i < found->length / kOffsetsBytes; ++i) {
    Cursor c(found->data + i * kOffsetsBytes, kOffsetsBytes);
    uint32_t kind = c.u32(), item = c.u32();
    int64_t values[5];
    for (int64_t &v : values)
      v = int64_t(c.u64());
    std::string where = "section OFFSETS: record " + str(i);
    bool gemm = kind == uint32_t(EntryKind::Gemm);
    if (!gemm && kind != uint32_t(EntryKind::Collective))
      return fail(where + ": entry kind " + str(kind) + " is not gemm (1) or collective (3)");
    size_t limit = gemm ? package.gemms.size() : package.collectives.size();
    std::vector<bool> &seen = gemm ? gemmSeen : collectiveSeen;
    const char *name = gemm ? "gemm " : "collective ";
    if (item >= limit)
      return fail(where + " names " + name + str(item) + ", but the package has " +
                  str(limit));
    if (seen[item])
      return fail(where + ": " + name + str(item) + " has two records");
    seen[item] = true;
    for (int v = 0; v < 5; ++v)
      if (values[v] < 0 || (!gemm && v >= 2 && values[v] != 0))
        return fail(where + ": offset " + str(v) + " of " + name + str(item) + " is " +
                    std::to_string(values[v]) +
                    (values[v] < 0 ? ", negative" : ", but a collective has 2"));
    if (gemm) {
      std::copy(std::begin(values), std::end(values), package.gemms[item].offsets);
    } else {
      package.collectives[item].inputOffset = values[0];
      package.collectives[item].outputOffset = values[1];
    }
  }
  return true;
}

/// The optional section `kind` of a partitioned step's rank-relative records
/// (`recordBytes` each): `found` null when absent; false with the error set
/// when it is there twice, without a grid or not whole records.
bool PackageReader::rankRecords(const Package &package, uint32_t kind, size_t recordBytes,
                                const SectionRef *&found) {
  if (!optionalSection(kind, found))
    return false;
  if (!found)
    return true;
  std::string name = sectionName(kind);
  if (package.grid.empty())
    return fail("section " + name + " needs a GRID section: only a partitioned step has ranks");
  if (found->length % recordBytes != 0)
    return fail("section " + name + " has " + str(found->length) +
                " bytes, not a multiple of its " + str(recordBytes) + "-byte records");
  return true;
}

/// RANK_OFFSETS (kind 21): rank-relative row blocks of existing GEMMs, each
/// GEMM at most once, over grid axes the grid has, strides not negative.
bool PackageReader::readRankOffsets(Package &package) {
  const SectionRef *found;
  if (!rankRecords(package, kRankOffsets, kRankOffsetsBytes, found))
    return false;
  if (!found)
    return true;
  std::vector<bool> seen(package.gemms.size());
  for (uint64_t i = 0; i < found->length / kRankOffsetsBytes; ++i) {
    Cursor c(found->data + i * kRankOffsetsBytes, kRankOffsetsBytes);
    uint32_t item = c.u32(), axes = c.u32();
    int64_t shift = int64_t(c.u64());
    int64_t strides[5];
    for (int64_t &v : strides)
      v = int64_t(c.u64());
    std::string where = "section RANK_OFFSETS: record " + str(i);
    if (item >= package.gemms.size())
      return fail(where + " names gemm " + str(item) + ", but the package has " +
                  str(package.gemms.size()));
    if (seen[item])
      return fail(where + ": gemm " + str(item) + " has two records");
    seen[item] = true;
    if (axes == 0 || axes >> package.grid.size())
      return fail(where + ": grid axes mask " + str(axes) + " is empty or names an axis the " +
                  str(package.grid.size()) + "-axis grid lacks");
    if (shift < 0)
      return fail(where + ": shift " + std::to_string(shift) + " is negative");
    for (int v = 0; v < 5; ++v)
      if (strides[v] < 0)
        return fail(where + ": stride " + str(v) + " of gemm " + str(item) + " is " +
                    std::to_string(strides[v]) + ", negative");
    Gemm &g = package.gemms[item];
    g.rankAxes = axes;
    g.rankShift = shift;
    std::copy(std::begin(strides), std::end(strides), g.rankStrides);
  }
  return true;
}

/// RANK_ARGS (kind 22): rank-relative i32 / i64 immediates of existing launches,
/// each argument at most once, over grid axes the grid has.
bool PackageReader::readRankArgs(Package &package) {
  const SectionRef *found;
  if (!rankRecords(package, kRankArgs, kRankArgsBytes, found))
    return false;
  if (!found)
    return true;
  for (uint64_t i = 0; i < found->length / kRankArgsBytes; ++i) {
    Cursor c(found->data + i * kRankArgsBytes, kRankArgsBytes);
    uint32_t item = c.u32(), position = c.u32(), axes = c.u32(), zero = c.u32();
    int64_t scale = int64_t(c.u64());
    std::string where = "section RANK_ARGS: record " + str(i);
    if (item >= package.launches.size())
      return fail(where + " names launch " + str(item) + ", but the package has " +
                  str(package.launches.size()));
    std::vector<Arg> &args = package.launches[item].args;
    if (position >= args.size())
      return fail(where + " names argument " + str(position) + " of launch " + str(item) +
                  ", which has " + str(args.size()));
    Arg &arg = args[position];
    if (arg.kind != ArgKind::I64 && arg.kind != ArgKind::I32)
      return fail(where + ": argument " + str(position) + " of launch " + str(item) +
                  " is not an i32 or i64 immediate");
    if (arg.rankAxes)
      return fail(where + ": argument " + str(position) + " of launch " + str(item) +
                  " has two records");
    if (zero != 0)
      return fail(where + ": reserved field is " + str(zero) + ", not 0");
    if (axes == 0 || axes >> package.grid.size())
      return fail(where + ": grid axes mask " + str(axes) + " is empty or names an axis the " +
                  str(package.grid.size()) + "-axis grid lacks");
    arg.rankAxes = axes;
    arg.rankScale = scale;
  }
  return true;
}

/// BOUND (kind 20): argument buffers the caller binds, ascending, each once.
bool PackageReader::readBound(Package &package) {
  const SectionRef *found;
  if (!optionalSection(kBound, found))
    return false;
  if (!found)
    return true;
  if (found->length == 0 || found->length % kBoundBytes != 0)
    return fail("section BOUND has " + str(found->length) +
                " bytes, not one or more " + str(kBoundBytes) + "-byte records");
  int64_t previous = -1;
  for (uint64_t i = 0; i < found->length / kBoundBytes; ++i) {
    Cursor c(found->data + i * kBoundBytes, kBoundBytes);
    uint32_t buffer = c.u32();
    std::string where = "section BOUND: record " + str(i);
    if (buffer >= package.buffers.size())
      return fail(where + " names buffer " + str(buffer) + ", but the package has " +
                  str(package.buffers.size()) + " buffers");
    if (int64_t(buffer) <= previous)
      return fail(where + ": buffer " + str(buffer) + " does not follow buffer " +
                  str(uint64_t(previous)) + " (records ascend, each buffer once)");
    previous = buffer;
    package.buffers[buffer].bound = true;
  }
  return true;
}

} // namespace weft::pkg::detail
