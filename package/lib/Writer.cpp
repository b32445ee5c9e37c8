// Serializes a Package into the container of PackageFormat.h: strings
// interned into one section, fixed-size records, one section per image.
#include "weft/Package/Package.h"

#include "PackageFormat.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace weft::pkg {

namespace {

using namespace format;

/// Little-endian appends, independent of the host's byte order.
class ByteWriter {
public:
  void u8(uint8_t v) { bytes.push_back(char(v)); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      u8(uint8_t(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i)
      u8(uint8_t(v >> (8 * i)));
  }
  void i32(int32_t v) { u32(uint32_t(v)); }
  void i64(int64_t v) { u64(uint64_t(v)); }
  void f32(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    u32(bits);
  }
  std::string bytes;
};

class StringTable {
public:
  /// Appends (offset, length) of `text` to `out`; equal strings share bytes.
  void ref(ByteWriter &out, const std::string &text) {
    auto [it, inserted] = offsets.try_emplace(text, uint32_t(data.size()));
    if (inserted)
      data += text;
    out.u32(it->second);
    out.u32(uint32_t(text.size()));
  }
  std::string data;

private:
  std::map<std::string, uint32_t> offsets;
};

struct Section {
  uint32_t kind, index;
  std::string bytes;
};

void putName(std::string &header, size_t at, const std::string &name) {
  std::memcpy(&header[at], name.data(), std::min(name.size(), kNameBytes - 1));
}

} // namespace

namespace {

/// The STEP record; strings interned in the writer's call order, which fixes
/// the STRINGS bytes.
std::string stepSection(const Package &package, StringTable &strings) {
  ByteWriter step;
  strings.ref(step, package.stepName);
  step.u64(package.arenaBytes);
  step.u64(package.alignment);
  step.u32(package.numSteps);
  step.u32(package.numStreams);
  return std::move(step.bytes);
}

std::string buffersSection(const Package &package, StringTable &strings) {
  ByteWriter buffers;
  for (const Buffer &buffer : package.buffers) {
    strings.ref(buffers, buffer.name);
    strings.ref(buffers, buffer.type);
    buffers.u64(buffer.offset);
    buffers.u64(buffer.size);
    buffers.u32(buffer.first);
    buffers.u32(buffer.last);
    buffers.u32(uint32_t(buffer.role));
    buffers.u32(uint32_t(buffer.copyOf + 1)); // 0: not a carried copy
    buffers.i32(buffer.arg);
    buffers.i32(buffer.result);
  }
  return std::move(buffers.bytes);
}

/// KERNELS and PARAM_KINDS: each kernel names its run of parameter kinds.
void kernelSections(const Package &package, StringTable &strings,
                    std::string &kernelBytes, std::string &paramBytes) {
  ByteWriter kernels, paramKinds;
  uint32_t paramCount = 0;
  for (const Kernel &kernel : package.kernels) {
    strings.ref(kernels, kernel.name);
    strings.ref(kernels, kernel.entry);
    strings.ref(kernels, kernel.imageName);
    kernels.u32(kernel.image);
    kernels.u32(paramCount);
    kernels.u32(uint32_t(kernel.params.size()));
    kernels.u32(0);
    for (ParamKind kind : kernel.params)
      paramKinds.u8(uint8_t(kind));
    paramCount += uint32_t(kernel.params.size());
  }
  kernelBytes = std::move(kernels.bytes);
  paramBytes = std::move(paramKinds.bytes);
}

/// LAUNCHES and ARGS: each launch names its run of arguments.
void launchSections(const Package &package, std::string &launchBytes,
                    std::string &argBytes) {
  ByteWriter launches, args;
  uint32_t argCount = 0;
  for (const Launch &launch : package.launches) {
    launches.u32(launch.kernel);
    for (uint32_t v : launch.grid)
      launches.u32(v);
    for (uint32_t v : launch.block)
      launches.u32(v);
    launches.u32(launch.smem);
    launches.u32(launch.stream);
    launches.u32(launch.index);
    launches.u32(argCount);
    launches.u32(uint32_t(launch.args.size()));
    for (const Arg &arg : launch.args) {
      args.u32(uint32_t(arg.kind));
      args.u32(0);
      args.u64(arg.value);
    }
    argCount += uint32_t(launch.args.size());
  }
  launchBytes = std::move(launches.bytes);
  argBytes = std::move(args.bytes);
}

std::string tensorMapsSection(const Package &package) {
  ByteWriter tensorMaps;
  for (const TensorMap &map : package.tensorMaps) {
    for (uint32_t v : {map.buffer, uint32_t(map.dtype), map.rank, map.swizzle})
      tensorMaps.u32(v);
    for (uint64_t v : map.dims)
      tensorMaps.u64(v);
    for (uint64_t v : map.strides)
      tensorMaps.u64(v);
    for (uint32_t v : map.box)
      tensorMaps.u32(v);
    tensorMaps.u32(0);
  }
  return std::move(tensorMaps.bytes);
}

std::string gemmsSection(const Package &package) {
  ByteWriter gemms;
  for (const Gemm &gemm : package.gemms) {
    for (uint32_t v : {gemm.a, gemm.b, gemm.c, gemm.d, gemm.bias, gemm.workspace})
      gemms.u32(v);
    gemms.u32(gemm.transA);
    gemms.u32(gemm.transB);
    gemms.u32(uint32_t(gemm.dtype));
    gemms.u32(uint32_t(gemm.epilogue));
    for (int64_t v : {gemm.m, gemm.n, gemm.k, gemm.batch})
      gemms.i64(v);
    for (int64_t v : gemm.strides)
      gemms.i64(v);
    gemms.f32(gemm.alpha);
    gemms.f32(gemm.beta);
    gemms.u32(gemm.stream);
    gemms.u32(gemm.index);
    gemms.u32(gemm.hasAlgo);
    gemms.u32(0);
    for (uint8_t byte : gemm.algo)
      gemms.u8(byte);
    gemms.u32(gemm.aux);
    gemms.u32(0);
    gemms.i64(gemm.auxLd);
  }
  return std::move(gemms.bytes);
}

std::string eventsSection(const Package &package) {
  ByteWriter events;
  for (const Event &event : package.events) {
    events.u32(event.record);
    events.u32(event.stream);
    events.u32(event.event);
    events.u32(event.index);
  }
  return std::move(events.bytes);
}

std::string gridSection(const Package &package) {
  ByteWriter grid;
  for (int64_t size : package.grid)
    grid.u64(uint64_t(size));
  return std::move(grid.bytes);
}

std::string splitsSection(const Package &package) {
  ByteWriter splits;
  splits.u32(uint32_t(package.splitAxis));
  splits.u32(0);
  for (const Split &split : package.splits) {
    splits.u32(split.buffer);
    splits.u32(uint32_t(split.dim));
  }
  return std::move(splits.bytes);
}

std::string collectivesSection(const Package &package) {
  ByteWriter collectives;
  for (const Collective &c : package.collectives) {
    // The reduction slot: send_recv's shift; an all-to-all reduces nothing.
    uint32_t reduction = uint32_t(c.reduction);
    if (c.kind == CollectiveKind::SendRecv)
      reduction = encodeShift(c.shift, c.rotate);
    else if (c.kind == CollectiveKind::AllToAll)
      reduction = 0;
    for (uint32_t v : {uint32_t(c.kind), c.input, c.output, uint32_t(c.dtype), reduction,
                       c.axes, c.stream, c.index})
      collectives.u32(v);
    collectives.u64(uint64_t(c.count));
  }
  return std::move(collectives.bytes);
}

/// OFFSETS: a record for each GEMM and collective with an operand that
/// does not start at its buffer's start; empty when there is none.
std::string offsetsSection(const Package &package) {
  ByteWriter offsets;
  auto record = [&](EntryKind kind, size_t item, const int64_t (&values)[5]) {
    if (std::all_of(std::begin(values), std::end(values), [](int64_t v) { return v == 0; }))
      return;
    offsets.u32(uint32_t(kind));
    offsets.u32(uint32_t(item));
    for (int64_t v : values)
      offsets.i64(v);
  };
  for (size_t i = 0; i < package.gemms.size(); ++i)
    record(EntryKind::Gemm, i, package.gemms[i].offsets);
  for (size_t i = 0; i < package.collectives.size(); ++i) {
    const Collective &c = package.collectives[i];
    record(EntryKind::Collective, i, {c.inputOffset, c.outputOffset, 0, 0, 0});
  }
  return std::move(offsets.bytes);
}

/// RANK_OFFSETS: a record for each GEMM with rank-relative row blocks; empty
/// when there is none.
std::string rankOffsetsSection(const Package &package) {
  ByteWriter out;
  for (size_t i = 0; i < package.gemms.size(); ++i) {
    const Gemm &g = package.gemms[i];
    if (!g.rankAxes)
      continue;
    out.u32(uint32_t(i));
    out.u32(g.rankAxes);
    out.i64(g.rankShift);
    for (int64_t v : g.rankStrides)
      out.i64(v);
  }
  return std::move(out.bytes);
}

/// RANK_ARGS: a record for each rank-relative launch immediate; empty when
/// there is none.
std::string rankArgsSection(const Package &package) {
  ByteWriter out;
  for (size_t l = 0; l < package.launches.size(); ++l)
    for (size_t a = 0; a < package.launches[l].args.size(); ++a) {
      const Arg &arg = package.launches[l].args[a];
      if (!arg.rankAxes)
        continue;
      out.u32(uint32_t(l));
      out.u32(uint32_t(a));
      out.u32(arg.rankAxes);
      out.u32(0);
      out.i64(arg.rankScale);
    }
  return std::move(out.bytes);
}

/// BOUND: the indices of the buffers the caller binds, ascending; empty
/// when there is none.
std::string boundSection(const Package &package) {
  ByteWriter bound;
  for (size_t i = 0; i < package.buffers.size(); ++i)
    if (package.buffers[i].bound)
      bound.u32(uint32_t(i));
  return std::move(bound.bytes);
}

std::string scheduleSection(const Package &package) {
  ByteWriter schedule;
  for (const Entry &entry : package.schedule) {
    schedule.u32(uint32_t(entry.kind));
    schedule.u32(entry.item);
  }
  return std::move(schedule.bytes);
}

std::string imagesSection(const Package &package, StringTable &strings) {
  ByteWriter images;
  for (const Image &image : package.images)
    strings.ref(images, image.name);
  return std::move(images.bytes);
}

/// The sections in file order: STRINGS, the required tables by kind, the
/// images' CUBIN/PTX, INIT_DATA, then TENSOR_MAPS when there are any.
std::vector<Section> packageSections(const Package &package) {
  StringTable strings;
  std::vector<Section> sections;
  sections.push_back({kStep, 0, stepSection(package, strings)});
  sections.push_back({kBuffers, 0, buffersSection(package, strings)});
  Section kernels{kKernels, 0, {}}, params{kParamKinds, 0, {}};
  kernelSections(package, strings, kernels.bytes, params.bytes);
  Section launches{kLaunches, 0, {}}, args{kArgs, 0, {}};
  launchSections(package, launches.bytes, args.bytes);
  std::string tensorMaps = tensorMapsSection(package);
  std::string gemms = gemmsSection(package);
  std::string events = eventsSection(package);
  std::string schedule = scheduleSection(package);
  std::string images = imagesSection(package, strings);
  sections.push_back(std::move(kernels));
  sections.push_back(std::move(params));
  sections.push_back(std::move(launches));
  sections.push_back(std::move(args));
  sections.push_back({kGemms, 0, std::move(gemms)});
  sections.push_back({kEvents, 0, std::move(events)});
  sections.push_back({kSchedule, 0, std::move(schedule)});
  sections.push_back({kImages, 0, std::move(images)});
  sections.insert(sections.begin(), {kStrings, 0, strings.data});
  for (size_t i = 0; i < package.images.size(); ++i) {
    if (package.images[i].cubin)
      sections.push_back({kCubin, uint32_t(i), *package.images[i].cubin});
    if (package.images[i].ptx)
      sections.push_back({kPtx, uint32_t(i), *package.images[i].ptx});
  }
  for (const InitData &data : package.initData)
    sections.push_back({kInitData, data.buffer, data.bytes});
  // Optional: packages without TMA kernels keep the layout they always had.
  if (!package.tensorMaps.empty())
    sections.push_back({kTensorMaps, 0, std::move(tensorMaps)});
  // Optional: only a partitioned step has a grid and collectives.
  if (!package.grid.empty())
    sections.push_back({kGrid, 0, gridSection(package)});
  if (!package.collectives.empty())
    sections.push_back({kCollectives, 0, collectivesSection(package)});
  if (package.splitAxis >= 0)
    sections.push_back({kSplits, 0, splitsSection(package)});
  // Optional: only the partial GEMMs and chunks of a collective matmul.
  if (std::string offsets = offsetsSection(package); !offsets.empty())
    sections.push_back({kOffsets, 0, std::move(offsets)});
  // Optional: only steps compiled with arguments bound by the caller.
  if (std::string bound = boundSection(package); !bound.empty())
    sections.push_back({kBound, 0, std::move(bound)});
  // Optional: only the rank-relative partial GEMMs of a local-first gather.
  if (std::string rankOffsets = rankOffsetsSection(package); !rankOffsets.empty())
    sections.push_back({kRankOffsets, 0, std::move(rankOffsets)});
  // Optional: only shards' offsets (vocabulary rows, dropout blocks).
  if (std::string rankArgs = rankArgsSection(package); !rankArgs.empty())
    sections.push_back({kRankArgs, 0, std::move(rankArgs)});
  return sections;
}

/// Header, section table, then each section at an 8-byte boundary.
std::string layOut(const Package &package, const std::vector<Section> &sections) {
  std::string file(kHeaderBytes + sections.size() * kTableEntryBytes, '\0');
  ByteWriter table;
  for (const Section &section : sections) {
    file.resize((file.size() + 7) & ~size_t(7), '\0');
    table.u32(section.kind);
    table.u32(section.index);
    table.u64(file.size());
    table.u64(section.bytes.size());
    table.u64(fnv1a64(section.bytes.data(), section.bytes.size()));
    file += section.bytes;
  }
  ByteWriter header;
  for (char c : kMagic)
    header.u8(uint8_t(c));
  header.u32(package.formatVersion);
  header.u32(kHeaderBytes);
  header.u64(file.size());
  header.u32(uint32_t(sections.size()));
  header.u32(0);
  header.u64(kHeaderBytes);
  header.bytes.resize(kChecksumOffset, '\0');
  putName(header.bytes, 40, package.arch);
  putName(header.bytes, 56, package.weftVersion);
  uint64_t checksum = fnv1a64(header.bytes.data(), header.bytes.size());
  checksum = fnv1a64(table.bytes.data(), table.bytes.size(), checksum);
  header.u64(checksum);
  std::memcpy(&file[0], header.bytes.data(), kHeaderBytes);
  std::memcpy(&file[kHeaderBytes], table.bytes.data(), table.bytes.size());
  return file;
}

} // namespace

std::string writePackage(const Package &package) {
  return layOut(package, packageSections(package));
}

} // namespace weft::pkg
