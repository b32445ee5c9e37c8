// Reads a package without trusting it: every offset, length, count, string
// and index is checked against the file and its tables before it is used,
// and every failure names the field and the values. The sections of a
// partitioned step are read in ReadPartitioned.cpp.
#include "PackageReader.h"

namespace weft::pkg {

namespace detail {

bool PackageReader::readFixedName(size_t at, const char *field,
                                  std::string &out) {
  const char *text = reinterpret_cast<const char *>(file + at);
  size_t length = strnlen(text, kNameBytes);
  if (length == kNameBytes)
    return fail(std::string("header field ") + field + " is not NUL-terminated "
                "within its " + str(kNameBytes) + " bytes");
  for (size_t i = 0; i < length; ++i)
    if (text[i] < 0x20 || text[i] > 0x7e)
      return fail(std::string("header field ") + field + " has a non-printable "
                  "byte " + str(uint8_t(text[i])) + " at position " + str(i));
  out.assign(text, length);
  return true;
}

bool PackageReader::readHeader(Package &package, uint64_t &tableOffset,
                               uint32_t &count) {
  if (size < sizeof(kMagic) || std::memcmp(file, kMagic, sizeof(kMagic)) != 0)
    return fail("not a Weft package: the file does not start with the magic "
                "\"WEFTPKG\\0\" (" + str(size) + " bytes)");
  if (size < 12)
    return fail("truncated package: " + str(size) + " bytes, the header's "
                "format version needs 12");
  Cursor cursor(file + 8, size - 8);
  package.formatVersion = cursor.u32();
  if (package.formatVersion != kFormatVersion)
    return fail("package format version " + str(package.formatVersion) +
                " is not supported: this reader reads format version " +
                str(kFormatVersion));
  if (size < kHeaderBytes)
    return fail("truncated package: " + str(size) + " bytes, the header alone "
                "is " + str(kHeaderBytes));
  uint32_t headerBytes = cursor.u32();
  uint64_t fileBytes = cursor.u64();
  count = cursor.u32();
  cursor.u32();
  tableOffset = cursor.u64();
  if (headerBytes != kHeaderBytes)
    return fail("header bytes field is " + str(headerBytes) + ", format " +
                str(kFormatVersion) + " has " + str(kHeaderBytes));
  if (fileBytes != size)
    return fail("the header gives the file size as " + str(fileBytes) +
                " bytes but the file has " + str(size) +
                (fileBytes > size ? " (truncated)" : ""));
  if (!readFixedName(40, "arch", package.arch) ||
      !readFixedName(56, "weft_version", package.weftVersion))
    return false;
  if (package.arch.empty())
    return fail("header field arch is empty");
  return true;
}

bool PackageReader::readTable(uint64_t tableOffset, uint32_t count) {
  // Compare without overflow: table bytes = count * 32 <= 2^37.
  uint64_t tableBytes = uint64_t(count) * kTableEntryBytes;
  if (tableOffset < kHeaderBytes || tableOffset > size ||
      tableBytes > size - tableOffset)
    return fail("section table (offset " + str(tableOffset) + ", " + str(count) +
                " entries of " + str(kTableEntryBytes) + " bytes) lies outside "
                "the file of " + str(size) + " bytes");
  uint64_t checksum = fnv1a64(file, kChecksumOffset);
  checksum = fnv1a64(file + tableOffset, tableBytes, checksum);
  uint64_t stored = Cursor(file + kChecksumOffset, 8).u64();
  if (checksum != stored)
    return fail("header checksum mismatch: stored " + str(stored) +
                ", computed " + str(checksum) + " over the header and the "
                "section table (corrupted)");
  Cursor cursor(file + tableOffset, tableBytes);
  for (uint32_t i = 0; i < count; ++i) {
    SectionRef section;
    section.kind = cursor.u32();
    section.index = cursor.u32();
    uint64_t offset = cursor.u64();
    section.length = cursor.u64();
    uint64_t sum = cursor.u64();
    std::string where = "section table entry " + str(i) + " (kind " +
                        str(section.kind) + " " + sectionName(section.kind) + ")";
    if (section.kind < kFirstKind || section.kind > kLastKind)
      return fail(where + ": unknown section kind " + str(section.kind));
    if (offset > size || section.length > size - offset)
      return fail(where + ": offset " + str(offset) + " + length " +
                  str(section.length) + " runs past the end of the file (" +
                  str(size) + " bytes)");
    section.data = file + offset;
    uint64_t computed = fnv1a64(section.data, section.length);
    if (computed != sum)
      return fail(where + ": checksum mismatch, stored " + str(sum) +
                  ", computed " + str(computed) + " (corrupted section)");
    sections.push_back(section);
  }
  for (const SectionRef &section : sections) {
    if (section.kind > kLastRequiredKind)
      continue;
    if (required[section.kind])
      return fail(std::string("section ") + sectionName(section.kind) +
                  " appears twice");
    required[section.kind] = &section;
  }
  for (uint32_t kind = kFirstKind; kind <= kLastRequiredKind; ++kind)
    if (!required[kind])
      return fail(std::string("section ") + sectionName(kind) + " (kind " +
                  str(kind) + ") is missing");
  return true;
}

bool PackageReader::records(uint32_t kind, size_t recordBytes, uint64_t &count,
                            const uint8_t *&data) {
  const SectionRef &section = *required[kind];
  if (section.length % recordBytes != 0)
    return fail(std::string("section ") + sectionName(kind) + " has " +
                str(section.length) + " bytes, not a multiple of its " +
                str(recordBytes) + "-byte records");
  count = section.length / recordBytes;
  data = section.data;
  return true;
}

bool PackageReader::string(Cursor &cursor, const char *what, uint64_t record,
                           std::string &out) {
  uint64_t offset = cursor.u32(), length = cursor.u32();
  const SectionRef &strings = *required[kStrings];
  if (offset > strings.length || length > strings.length - offset)
    return fail(std::string(what) + " of record " + str(record) +
                ": string at offset " + str(offset) + " length " + str(length) +
                " runs past the STRINGS section (" + str(strings.length) +
                " bytes)");
  out.assign(reinterpret_cast<const char *>(strings.data + offset), length);
  return true;
}

/// The optional TENSOR_MAPS section (kind 15, at most once): records checked
/// for a known buffer and dtype, rank 1..5, a known swizzle span.
bool PackageReader::readTensorMaps(Package &package) {
  const SectionRef *found = nullptr;
  for (const SectionRef &section : sections) {
    if (section.kind != kTensorMaps)
      continue;
    if (found)
      return fail("section TENSOR_MAPS appears twice");
    found = &section;
  }
  if (!found)
    return true;
  if (found->length % kTensorMapBytes != 0)
    return fail("section TENSOR_MAPS has " + str(found->length) +
                " bytes, not a multiple of its " + str(kTensorMapBytes) +
                "-byte records");
  for (uint64_t i = 0; i < found->length / kTensorMapBytes; ++i) {
    Cursor c(found->data + i * kTensorMapBytes, kTensorMapBytes);
    TensorMap map;
    map.buffer = c.u32();
    uint32_t dtype = c.u32();
    map.rank = c.u32();
    map.swizzle = c.u32();
    for (uint64_t &v : map.dims)
      v = c.u64();
    for (uint64_t &v : map.strides)
      v = c.u64();
    for (uint32_t &v : map.box)
      v = c.u32();
    std::string where = "tensor map " + str(i);
    if (map.buffer >= package.buffers.size())
      return fail(where + ": names buffer " + str(map.buffer) +
                  ", undefined: the package has " +
                  str(package.buffers.size()) + " buffers");
    if (dtype >= kNumDTypes)
      return fail(where + ": dtype " + str(dtype) +
                  " is not one of bf16, f16, f32, f64");
    map.dtype = DType(dtype);
    if (map.rank < 1 || map.rank > kMaxTensorMapRank)
      return fail(where + ": rank " + str(map.rank) + " is outside [1, " +
                  str(kMaxTensorMapRank) + "]");
    if (map.swizzle != 0 && map.swizzle != 32 && map.swizzle != 64 &&
        map.swizzle != 128)
      return fail(where + ": swizzle " + str(map.swizzle) +
                  " bytes is not one of 0, 32, 64, 128");
    package.tensorMaps.push_back(map);
  }
  return true;
}


bool PackageReader::readStep(Package &package) {
  uint64_t n;
  const uint8_t *data;
  if (!records(kStep, kStepBytes, n, data))
    return false;
  if (n != 1)
    return fail("section STEP holds " + str(n) + " records, expected 1");
  Cursor c(data, kStepBytes);
  if (!string(c, "STEP name", 0, package.stepName))
    return false;
  package.arenaBytes = c.u64();
  package.alignment = c.u64();
  package.numSteps = c.u32();
  package.numStreams = c.u32();
  return true;
}

bool PackageReader::readBuffers(Package &package) {
  uint64_t n;
  const uint8_t *data;
  if (!records(kBuffers, kBufferBytes, n, data))
    return false;
  for (uint64_t i = 0; i < n; ++i) {
    Cursor c(data + i * kBufferBytes, kBufferBytes);
    Buffer buffer;
    if (!string(c, "BUFFERS name", i, buffer.name) ||
        !string(c, "BUFFERS type", i, buffer.type))
      return false;
    buffer.offset = c.u64();
    buffer.size = c.u64();
    buffer.first = c.u32();
    buffer.last = c.u32();
    uint32_t role = c.u32();
    if (role >= kNumRoles)
      return fail("buffer " + str(i) + " '" + buffer.name + "': role " +
                  str(role) + " is not one of the " + str(kNumRoles) + " roles");
    buffer.role = Role(role);
    uint32_t copyOf = c.u32(); // the master's argument + 1; 0: none
    if (copyOf > uint32_t(INT32_MAX))
      return fail("buffer " + str(i) + " '" + buffer.name + "': copy-of field " +
                  str(copyOf) + " is not an argument index + 1");
    buffer.copyOf = int32_t(copyOf) - 1;
    buffer.arg = c.i32();
    buffer.result = c.i32();
    package.buffers.push_back(std::move(buffer));
  }
  return true;
}

bool PackageReader::readKernels(Package &package) {
  uint64_t numParams, n;
  const uint8_t *params, *data;
  if (!records(kParamKinds, 1, numParams, params))
    return false;
  if (!records(kKernels, kKernelBytes, n, data))
    return false;
  // Images first, so kernels' image indices can be checked.
  uint64_t numImages;
  const uint8_t *imageData;
  if (!records(kImages, kImageBytes, numImages, imageData))
    return false;
  for (uint64_t i = 0; i < numImages; ++i) {
    Cursor c(imageData + i * kImageBytes, kImageBytes);
    Image image;
    if (!string(c, "IMAGES name", i, image.name))
      return false;
    package.images.push_back(std::move(image));
  }
  for (uint64_t i = 0; i < n; ++i) {
    Cursor c(data + i * kKernelBytes, kKernelBytes);
    Kernel kernel;
    if (!string(c, "KERNELS name", i, kernel.name) ||
        !string(c, "KERNELS entry", i, kernel.entry) ||
        !string(c, "KERNELS image", i, kernel.imageName))
      return false;
    kernel.image = c.u32();
    uint64_t first = c.u32(), count = c.u32();
    std::string where = "kernel " + str(i) + " '" + kernel.name + "'";
    if (kernel.image != kNone && kernel.image >= numImages)
      return fail(where + ": image index " + str(kernel.image) +
                  " but the package has " + str(numImages) + " images");
    if (first > numParams || count > numParams - first)
      return fail(where + ": parameters [" + str(first) + ", " +
                  str(first + count) + ") lie outside PARAM_KINDS (" +
                  str(numParams) + " entries)");
    for (uint64_t p = first; p < first + count; ++p) {
      if (params[p] >= kNumParamKinds)
        return fail(where + ": parameter " + str(p - first) + " has kind " +
                    str(params[p]) + ", not one of ptr, i32, i64, f32, tensormap");
      kernel.params.push_back(ParamKind(params[p]));
    }
    package.kernels.push_back(std::move(kernel));
  }
  return true;
}

bool PackageReader::readLaunches(Package &package) {
  uint64_t numArgs, n;
  const uint8_t *argData, *data;
  if (!records(kArgs, kArgBytes, numArgs, argData))
    return false;
  if (!records(kLaunches, kLaunchBytes, n, data))
    return false;
  for (uint64_t i = 0; i < n; ++i) {
    Cursor c(data + i * kLaunchBytes, kLaunchBytes);
    Launch launch;
    launch.kernel = c.u32();
    for (uint32_t &v : launch.grid)
      v = c.u32();
    for (uint32_t &v : launch.block)
      v = c.u32();
    launch.smem = c.u32();
    launch.stream = c.u32();
    launch.index = c.u32();
    uint64_t first = c.u32(), count = c.u32();
    std::string where = "launch " + str(i);
    if (launch.kernel >= package.kernels.size())
      return fail(where + ": kernel index " + str(launch.kernel) +
                  " but the package has " + str(package.kernels.size()) +
                  " kernels");
    if (first > numArgs || count > numArgs - first)
      return fail(where + ": arguments [" + str(first) + ", " +
                  str(first + count) + ") lie outside ARGS (" + str(numArgs) +
                  " entries)");
    for (uint64_t a = first; a < first + count; ++a)
      if (!readArg(package, argData + a * kArgBytes, where, launch, a - first))
        return false;
    package.launches.push_back(std::move(launch));
  }
  return true;
}

bool PackageReader::readArg(const Package &package, const uint8_t *record,
                            const std::string &where, Launch &launch,
                            uint64_t position) {
  Cursor ac(record, kArgBytes);
  Arg arg;
  uint32_t kind = ac.u32();
  ac.u32();
  arg.value = ac.u64();
  if (kind >= kNumArgKinds)
    return fail(where + ": argument " + str(position) + " has kind " +
                str(kind) + ", not one of buffer, i32, i64, f32, tensormap");
  arg.kind = ArgKind(kind);
  if (arg.kind == ArgKind::Buffer && arg.value >= package.buffers.size())
    return fail(where + " (kernel '" + package.kernels[launch.kernel].name +
                "'): argument " + str(position) + " names buffer " +
                str(arg.value) + ", undefined: the package has " +
                str(package.buffers.size()) + " buffers");
  if (arg.kind == ArgKind::TensorMap && arg.value >= package.tensorMaps.size())
    return fail(where + " (kernel '" + package.kernels[launch.kernel].name +
                "'): argument " + str(position) + " names tensor map " +
                str(arg.value) + ", undefined: the package has " +
                str(package.tensorMaps.size()) + " tensor maps");
  launch.args.push_back(arg);
  return true;
}

bool PackageReader::readGemms(Package &package) {
  uint64_t n;
  const uint8_t *data;
  if (!records(kGemms, kGemmBytes, n, data))
    return false;
  for (uint64_t i = 0; i < n; ++i) {
    Gemm gemm;
    if (!readGemm(package, data + i * kGemmBytes, i, gemm))
      return false;
    package.gemms.push_back(gemm);
  }
  return true;
}

bool PackageReader::readGemm(const Package &package, const uint8_t *record,
                             uint64_t i, Gemm &gemm) {
  Cursor c(record, kGemmBytes);
  const char *names[] = {"a", "b", "c", "d", "bias", "workspace"};
  uint32_t *fields[] = {&gemm.a, &gemm.b, &gemm.c, &gemm.d, &gemm.bias,
                        &gemm.workspace};
  for (int f = 0; f < 6; ++f) {
    *fields[f] = c.u32();
    bool optional = f == 2 || f >= 4;
    if ((*fields[f] != kNone || !optional) &&
        *fields[f] >= package.buffers.size())
      return fail("gemm " + str(i) + ": operand " + names[f] + " names buffer " +
                  str(*fields[f]) + ", undefined: the package has " +
                  str(package.buffers.size()) + " buffers");
  }
  uint32_t transA = c.u32(), transB = c.u32(), dtype = c.u32(),
           epilogue = c.u32();
  if (transA > 1 || transB > 1)
    return fail("gemm " + str(i) + ": trans_a " + str(transA) + " / trans_b " +
                str(transB) + " must be 0 or 1");
  if (dtype >= kNumDTypes)
    return fail("gemm " + str(i) + ": dtype " + str(dtype) +
                " is not one of bf16, f16, f32, f64");
  if (epilogue >= kNumEpilogues)
    return fail("gemm " + str(i) + ": epilogue " + str(epilogue) +
                " is not one of none, bias, gelu, bias_gelu, bgrad_a, "
                "gelu_aux, gelu_aux_bias, dgelu");
  gemm.transA = transA;
  gemm.transB = transB;
  gemm.dtype = DType(dtype);
  gemm.epilogue = Epilogue(epilogue);
  gemm.m = c.i64();
  gemm.n = c.i64();
  gemm.k = c.i64();
  gemm.batch = c.i64();
  for (int64_t &stride : gemm.strides)
    stride = c.i64();
  gemm.alpha = c.f32();
  gemm.beta = c.f32();
  gemm.stream = c.u32();
  gemm.index = c.u32();
  uint32_t hasAlgo = c.u32();
  if (hasAlgo > 1)
    return fail("gemm " + str(i) + ": has_algo " + str(hasAlgo) +
                " must be 0 or 1");
  gemm.hasAlgo = hasAlgo;
  c.u32();
  for (uint8_t &byte : gemm.algo)
    byte = c.u8();
  gemm.aux = c.u32();
  if (gemm.aux != kNone && gemm.aux >= package.buffers.size())
    return fail("gemm " + str(i) + ": operand aux names buffer " + str(gemm.aux) +
                ", undefined: the package has " + str(package.buffers.size()) +
                " buffers");
  c.u32();
  gemm.auxLd = c.i64();
  return true;
}

bool PackageReader::readEvents(Package &package) {
  uint64_t n;
  const uint8_t *data;
  if (!records(kEvents, kEventBytes, n, data))
    return false;
  for (uint64_t i = 0; i < n; ++i) {
    Cursor c(data + i * kEventBytes, kEventBytes);
    Event event;
    uint32_t record = c.u32();
    if (record > 1)
      return fail("event " + str(i) + ": kind " + str(record) +
                  " is neither wait (0) nor record (1)");
    event.record = record;
    event.stream = c.u32();
    event.event = c.u32();
    event.index = c.u32();
    package.events.push_back(event);
  }
  return true;
}

bool PackageReader::readSchedule(Package &package) {
  uint64_t n;
  const uint8_t *data;
  if (!records(kSchedule, kEntryBytes, n, data))
    return false;
  for (uint64_t i = 0; i < n; ++i) {
    Cursor c(data + i * kEntryBytes, kEntryBytes);
    uint32_t kind = c.u32(), item = c.u32();
    const char *kinds[] = {"launch", "gemm", "event", "collective"};
    uint64_t limits[] = {package.launches.size(), package.gemms.size(),
                         package.events.size(), package.collectives.size()};
    if (kind >= kNumEntryKinds)
      return fail("schedule entry " + str(i) + ": kind " + str(kind) +
                  " is not launch (0), gemm (1), event (2) or collective (3)");
    if (item >= limits[kind])
      return fail("schedule entry " + str(i) + ": " + kinds[kind] + " " +
                  str(item) + " but the package has " + str(limits[kind]));
    package.schedule.push_back({EntryKind(kind), item});
  }
  return true;
}

/// INIT_DATA, CUBIN and PTX: raw bytes attached to a buffer or an image.
bool PackageReader::readBlobs(Package &package) {
  for (const SectionRef &section : sections) {
    if (section.kind <= kLastRequiredKind || section.kind == kTensorMaps ||
        section.kind == kGrid || section.kind == kCollectives || section.kind == kSplits ||
        section.kind == kOffsets || section.kind == kBound || section.kind == kRankOffsets ||
        section.kind == kRankArgs)
      continue;
    const char *name = sectionName(section.kind);
    const char *text = reinterpret_cast<const char *>(section.data);
    if (section.kind == kInitData) {
      if (section.index >= package.buffers.size())
        return fail(std::string("section ") + name + " names buffer " +
                    str(section.index) + " but the package has " +
                    str(package.buffers.size()) + " buffers");
      const Buffer &buffer = package.buffers[section.index];
      if (section.length != buffer.size)
        return fail(std::string("section ") + name + " of buffer '" +
                    buffer.name + "' has " + str(section.length) +
                    " bytes, the buffer " + str(buffer.size));
      package.initData.push_back(
          {section.index, std::string(text, section.length)});
      continue;
    }
    if (section.index >= package.images.size())
      return fail(std::string("section ") + name + " names image " +
                  str(section.index) + " but the package has " +
                  str(package.images.size()) + " images");
    Image &image = package.images[section.index];
    std::optional<std::string> &slot =
        section.kind == kCubin ? image.cubin : image.ptx;
    if (slot)
      return fail(std::string("image '") + image.name + "' has two " + name +
                  " sections");
    slot = std::string(text, section.length);
  }
  return true;
}

/// Sections in dependency order: a record is checked against the tables it
/// indexes, so those are read first.
bool PackageReader::read(Package &package) {
  uint64_t tableOffset;
  uint32_t count;
  return readHeader(package, tableOffset, count) &&
         readTable(tableOffset, count) && readStep(package) &&
         readBuffers(package) && readTensorMaps(package) &&
         readKernels(package) && readLaunches(package) && readGemms(package) &&
         readEvents(package) && readGrid(package) && readCollectives(package) &&
         readSplits(package) && readOffsets(package) && readBound(package) &&
         readRankOffsets(package) && readRankArgs(package) &&
         readSchedule(package) && readBlobs(package);
}

} // namespace detail

bool readPackage(const void *data, size_t size, Package &package,
                 std::string &error) {
  package = Package();
  detail::PackageReader reader(static_cast<const uint8_t *>(data), size, error);
  return reader.read(package);
}

} // namespace weft::pkg
