// weft-fuzz-package: a libFuzzer target over the package reader that the
// runtime loads packages with (package/lib/Reader.cpp) and the plan checks.
// Each input is read as a package file; one the reader accepts is checked,
// written back, read again and given GEMM algorithms in place. A crash, a
// sanitizer report or a broken invariant (the writer's output is refused, or
// reading and writing it again changes its bytes) is a finding. Mutants are
// mostly re-signed (checksums and file size fixed up) so mutations reach the
// record parsers behind the checksums.
#include "weft/Package/GemmAlgorithms.h"
#include "weft/Package/Package.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {

// The header fields the re-signing touches (package/lib/PackageFormat.h).
constexpr size_t kHeaderBytes = 80, kEntryBytes = 32;
constexpr size_t kFileBytesAt = 16, kCountAt = 24, kTableAt = 32,
                 kChecksumAt = 72;

uint64_t load(const uint8_t *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

void store(uint8_t *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    p[i] = uint8_t(v >> (8 * i));
}

/// Makes a mutant's checksums (and its file size field) right again, where
/// the header and section table it states lie inside the file, as
/// test/Tools/weft-run/Inputs/edit_package.py does for the lit tests.
void resign(uint8_t *file, size_t size) {
  if (size < kHeaderBytes)
    return;
  store(file + kFileBytesAt, size, 8);
  uint64_t count = load(file + kCountAt, 4), table = load(file + kTableAt, 8);
  if (table < kHeaderBytes || table > size || count > (size - table) / kEntryBytes)
    return;
  for (uint64_t i = 0; i < count; ++i) {
    uint8_t *entry = file + table + i * kEntryBytes;
    uint64_t offset = load(entry + 8, 8), length = load(entry + 16, 8);
    if (offset <= size && length <= size - offset)
      store(entry + 24, weft::pkg::fnv1a64(file + offset, length), 8);
  }
  uint64_t checksum = weft::pkg::fnv1a64(file, kChecksumAt);
  checksum = weft::pkg::fnv1a64(file + table, count * kEntryBytes, checksum);
  store(file + kChecksumAt, checksum, 8);
}

[[noreturn]] void finding(const char *what, const std::string &detail) {
  fprintf(stderr, "weft-fuzz-package: %s: %s\n", what, detail.c_str());
  abort();
}

/// What must hold for a package the reader accepted.
void checkAccepted(const weft::pkg::Package &package) {
  // The checks never read out of bounds, whatever the indices say.
  weft::pkg::CheckOptions lenient;
  lenient.requireImages = false;
  (void)weft::pkg::checkPackage(package, lenient);
  (void)weft::pkg::checkPackage(package);

  // The writer's output is canonical: reading it and writing again gives the
  // same bytes.
  std::string written = weft::pkg::writePackage(package);
  weft::pkg::Package reread;
  std::string error;
  if (!weft::pkg::readPackage(written.data(), written.size(), reread, error))
    finding("the reader refuses what the writer wrote", error);
  if (weft::pkg::writePackage(reread) != written)
    finding("reading and writing a written package changed its bytes", "");

  // GEMM algorithms stored in place keep the file readable.
  if (reread.gemms.empty())
    return;
  weft::pkg::GemmAlgorithmUpdate update;
  update.gemm = uint32_t(reread.gemms.size() - 1);
  update.algo.fill(0xA5);
  std::vector<uint8_t> bytes(written.begin(), written.end());
  if (!weft::pkg::setGemmAlgorithms(bytes.data(), bytes.size(), {update}, error))
    finding("setGemmAlgorithms refused a package the reader accepts", error);
  if (!weft::pkg::readPackage(bytes.data(), bytes.size(), reread, error))
    finding("setGemmAlgorithms left a package the reader refuses", error);
  if (!reread.gemms.back().hasAlgo || reread.gemms.back().algo[63] != 0xA5)
    finding("setGemmAlgorithms' bytes do not read back", "");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  weft::pkg::Package package;
  std::string error;
  if (weft::pkg::readPackage(data, size, package, error))
    checkAccepted(package);
  else if (error.empty())
    finding("the reader refused a package without saying why", "");
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned int seed) {
  size = LLVMFuzzerMutate(data, size, maxSize);
  // One mutant in eight keeps its stale checksums: the checksum and
  // file-size checks are code under test too.
  if (seed % 8 != 0)
    resign(data, size);
  return size;
}
