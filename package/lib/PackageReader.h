// The package reader's internals, shared by Reader.cpp (the one-GPU
// sections) and ReadPartitioned.cpp (the sections of a partitioned step).
#ifndef WEFT_PACKAGE_LIB_PACKAGEREADER_H
#define WEFT_PACKAGE_LIB_PACKAGEREADER_H

#include "weft/Package/Package.h"

#include "PackageFormat.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace weft::pkg::detail {

using namespace format;

inline std::string str(uint64_t v) { return std::to_string(v); }

/// Little-endian reads from a bounded byte range; callers check the range
/// (record sizes) before reading, so reads never fail here.
class Cursor {
public:
  Cursor(const uint8_t *data, size_t size) : data(data), size(size) {}
  uint8_t u8() { return at < size ? data[at++] : 0; }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i)
      v |= uint32_t(u8()) << (8 * i);
    return v;
  }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v |= uint64_t(u8()) << (8 * i);
    return v;
  }
  int32_t i32() { return int32_t(u32()); }
  int64_t i64() { return int64_t(u64()); }
  float f32() {
    uint32_t bits = u32();
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }

private:
  const uint8_t *data;
  size_t size;
  size_t at = 0;
};

struct SectionRef {
  uint32_t kind = 0, index = 0;
  const uint8_t *data = nullptr;
  uint64_t length = 0;
};

class PackageReader {
public:
  PackageReader(const uint8_t *file, size_t size, std::string &error)
      : file(file), size(size), error(error) {}

  bool read(Package &package);

private:
  bool fail(const std::string &message) {
    error = message;
    return false;
  }
  bool readHeader(Package &package, uint64_t &tableOffset, uint32_t &count);
  bool readTable(uint64_t tableOffset, uint32_t count);
  /// The records of a required section: its length must be a multiple of
  /// `recordBytes`.
  bool records(uint32_t kind, size_t recordBytes, uint64_t &count,
               const uint8_t *&data);
  bool string(Cursor &cursor, const char *what, uint64_t record, std::string &out);
  bool readFixedName(size_t at, const char *field, std::string &out);
  bool readStep(Package &package);
  bool readBuffers(Package &package);
  bool readTensorMaps(Package &package);
  /// The optional section of `kind` (at most once), or null.
  bool optionalSection(uint32_t kind, const SectionRef *&found);
  bool readGrid(Package &package);
  bool readCollectives(Package &package);
  bool readSplits(Package &package);
  bool readOffsets(Package &package);
  bool readBound(Package &package);
  bool readRankOffsets(Package &package);
  bool readRankArgs(Package &package);
  bool rankRecords(const Package &package, uint32_t kind, size_t recordBytes,
                   const SectionRef *&found);
  bool readKernels(Package &package);
  bool readLaunches(Package &package);
  bool readArg(const Package &package, const uint8_t *record,
               const std::string &where, Launch &launch, uint64_t position);
  bool readGemms(Package &package);
  bool readGemm(const Package &package, const uint8_t *record, uint64_t i,
                Gemm &gemm);
  bool readEvents(Package &package);
  bool readSchedule(Package &package);
  bool readBlobs(Package &package);

  const uint8_t *file;
  size_t size;
  std::string &error;
  std::vector<SectionRef> sections;
  const SectionRef *required[kLastRequiredKind + 1] = {};
};

} // namespace weft::pkg::detail

#endif // WEFT_PACKAGE_LIB_PACKAGEREADER_H
