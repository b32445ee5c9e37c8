// The ZIP container under .npz (internal to WeftSupport): reading stored and
// deflated members with zip64 records, and writing stored members.
#ifndef WEFT_LIB_SUPPORT_ZIP_H
#define WEFT_LIB_SUPPORT_ZIP_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft::zip {

/// An error "<file>: <what>", or "<file>: '<key>': <what>" when `key` is set.
llvm::Error fileError(llvm::StringRef file, llvm::StringRef key,
                      const llvm::Twine &what);

/// Bounds-checked little-endian reads from a byte range.
class ByteReader {
public:
  explicit ByteReader(llvm::StringRef bytes) : bytes(bytes) {}

  bool has(uint64_t offset, uint64_t size) const {
    return offset <= bytes.size() && size <= bytes.size() - offset;
  }
  template <typename T> T read(uint64_t offset) const {
    return llvm::support::endian::read<T, llvm::endianness::little>(
        bytes.data() + offset);
  }
  uint16_t u16(uint64_t offset) const { return read<uint16_t>(offset); }
  uint32_t u32(uint64_t offset) const { return read<uint32_t>(offset); }
  uint64_t u64(uint64_t offset) const { return read<uint64_t>(offset); }
  llvm::StringRef slice(uint64_t offset, uint64_t size) const {
    return bytes.substr(offset, size);
  }
  uint64_t size() const { return bytes.size(); }

private:
  llvm::StringRef bytes;
};

template <typename T> void appendLE(std::string &out, T value) {
  char bytes[sizeof(T)];
  llvm::support::endian::write<T, llvm::endianness::little>(bytes, value);
  out.append(bytes, sizeof(T));
}

struct Member {
  std::string name;
  llvm::StringRef stored; // the bytes of a stored member, in the archive
  std::string inflated;   // the bytes of a deflated member
  bool deflated = false;

  llvm::StringRef bytes() const {
    return deflated ? llvm::StringRef(inflated) : stored;
  }
};

/// The members of the archive in `bytes` in central-directory order, CRC
/// checked; `file` names the archive in errors. Stored members point into
/// `bytes`.
llvm::Expected<std::vector<Member>> readArchive(llvm::StringRef bytes,
                                                llvm::StringRef file);

/// Streams stored members and then the central directory.
class Writer {
public:
  /// `forceZip64` writes zip64 records for every member, as np.savez does;
  /// otherwise only where a 32-bit field would overflow.
  Writer(llvm::raw_ostream &os, bool forceZip64)
      : os(os), forceZip64(forceZip64) {}

  void add(llvm::StringRef name, llvm::StringRef data);
  /// Writes the central directory and end records.
  void finish();

private:
  struct CentralRecord {
    std::string name;
    uint32_t crc;
    uint64_t size;
    uint64_t offset;
  };

  void write(llvm::StringRef bytes) {
    os << bytes;
    offset += bytes.size();
  }

  llvm::raw_ostream &os;
  bool forceZip64;
  uint64_t offset = 0;
  std::vector<CentralRecord> records;
};

} // namespace weft::zip

#endif // WEFT_LIB_SUPPORT_ZIP_H
