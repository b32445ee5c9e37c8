// The ZIP container under .npz, through libzip (internal to WeftSupport):
// members read one at a time from bytes in memory, stored members written.
#ifndef WEFT_LIB_SUPPORT_ZIPARCHIVE_H
#define WEFT_LIB_SUPPORT_ZIPARCHIVE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

typedef struct zip zip_t;

namespace weft::npz {

/// An error "<file>: <what>", or "<file>: '<key>': <what>" when `key` is set.
llvm::Error fileError(llvm::StringRef file, llvm::StringRef key,
                      const llvm::Twine &what);

/// An archive over bytes in memory, opened with libzip's consistency checks
/// (every local header must match the central directory).
class ArchiveReader {
public:
  /// `file` names the archive in errors; `bytes` must outlive the reader.
  static llvm::Expected<ArchiveReader> open(llvm::StringRef bytes,
                                            llvm::StringRef file);

  /// Member names in central-directory order.
  llvm::ArrayRef<std::string> names() const { return names_; }
  /// The bytes of member `index`, inflated, with size and CRC-32 checked.
  llvm::Expected<std::string> read(size_t index) const;

private:
  struct Close {
    void operator()(zip_t *archive) const;
  };
  ArchiveReader(std::unique_ptr<zip_t, Close> archive, std::string file)
      : archive(std::move(archive)), file(std::move(file)) {}

  std::unique_ptr<zip_t, Close> archive;
  std::string file;
  std::vector<std::string> names_;
};

/// A member to write, stored (not compressed): `encode` is called when the
/// writer reaches the member and must return exactly `size` bytes, so only
/// one member's bytes are in memory at a time.
struct PendingMember {
  std::string name;
  uint64_t size = 0;
  std::function<std::string()> encode;
};

struct WriteOptions {
  /// Write zip64 local headers for every member (as np.savez does), by not
  /// announcing sizes to libzip up front; otherwise zip64 only where a field
  /// would overflow.
  bool forceZip64 = false;
};

/// Writes the members to `path`, replaced atomically (libzip writes a
/// temporary file beside it and renames it).
llvm::Error writeArchive(llvm::StringRef path,
                         llvm::ArrayRef<PendingMember> members,
                         WriteOptions options);
/// As above, into a stream (the archive is assembled in memory first: ZIP
/// writers seek back to fill in local headers).
llvm::Error writeArchive(llvm::raw_ostream &os,
                         llvm::ArrayRef<PendingMember> members,
                         WriteOptions options);

} // namespace weft::npz

#endif // WEFT_LIB_SUPPORT_ZIPARCHIVE_H
