// setGemmAlgorithms: patches the fixed-size GEMM records of a package file
// (has_algo, algo[64]) and its checksums in place; see PackageFormat.h.
#include "weft/Package/GemmAlgorithms.h"
#include "weft/Package/Package.h"

#include "PackageFormat.h"

#include <cstring>

namespace weft::pkg {

using namespace format;

namespace {

// Byte offsets inside a GEMM record (PackageFormat.h): ten u32 operand and
// enum fields, eight i64 dims and strides, f32 alpha and beta, then u32
// stream, index, has_algo, 0, the algorithm's 64 bytes, then the aux matrix
// (u32 buffer, u32 0, i64 leading dimension).
constexpr size_t kHasAlgoOffset = 10 * 4 + 8 * 8 + 2 * 4 + 2 * 4;
constexpr size_t kAlgoOffset = kHasAlgoOffset + 2 * 4;
static_assert(kAlgoOffset + 64 + 16 == kGemmBytes, "GEMM record layout");

uint64_t loadU64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}
uint32_t loadU32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}
void storeU64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = uint8_t(v >> (8 * i));
}
void storeU32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = uint8_t(v >> (8 * i));
}

} // namespace

bool setGemmAlgorithms(uint8_t *file, size_t size,
                       const std::vector<GemmAlgorithmUpdate> &updates,
                       std::string &error) {
  // Validated in full first: after this every offset below is in bounds.
  Package package;
  if (!file || !readPackage(file, size, package, error)) {
    if (!file)
      error = "no package bytes";
    error = "cannot store GEMM algorithms: " + error;
    return false;
  }
  for (const GemmAlgorithmUpdate &update : updates)
    if (update.gemm >= package.gemms.size()) {
      error = "cannot store a GEMM algorithm for gemm " +
              std::to_string(update.gemm) + ": the package has " +
              std::to_string(package.gemms.size()) + " gemms";
      return false;
    }
  uint64_t tableOffset = loadU64(file + 32);
  uint32_t count = loadU32(file + 24);
  uint8_t *entry = nullptr;
  for (uint32_t i = 0; i < count && !entry; ++i) {
    uint8_t *candidate = file + tableOffset + i * kTableEntryBytes;
    if (loadU32(candidate) == kGemms)
      entry = candidate;
  }
  // readPackage found the section, so the table has it.
  uint8_t *section = file + loadU64(entry + 8);
  uint64_t length = loadU64(entry + 16);
  for (const GemmAlgorithmUpdate &update : updates) {
    uint8_t *record = section + size_t(update.gemm) * kGemmBytes;
    storeU32(record + kHasAlgoOffset, 1);
    std::memcpy(record + kAlgoOffset, update.algo.data(), update.algo.size());
  }
  storeU64(entry + 24, fnv1a64(section, length));
  uint64_t checksum = fnv1a64(file, kChecksumOffset);
  checksum = fnv1a64(file + tableOffset, size_t(count) * kTableEntryBytes, checksum);
  storeU64(file + kChecksumOffset, checksum);
  return true;
}

} // namespace weft::pkg
