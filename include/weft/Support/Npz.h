// Reading and writing .npz archives of weft::Tensor, the format tools exchange
// tensors in (numpy's np.savez / np.load). Keys are `arg<i>` / `res<i>`
// (`rank<r>/arg<i>` for SPMD); bf16 is stored as uint16 bit patterns and the
// entry `__weft_dtypes__`, a 1-D unicode array of "key:dtype" strings, names
// every key's element type so bf16 (and i1, i64) survive a trip through numpy.
#ifndef WEFT_SUPPORT_NPZ_H
#define WEFT_SUPPORT_NPZ_H

#include "weft/Support/Tensor.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <utility>
#include <vector>

namespace weft {

/// The key of the entry that lists every other key's element type.
inline constexpr llvm::StringLiteral kNpzDTypesKey = "__weft_dtypes__";

/// Named tensors in archive order (writing keeps the order, so output files
/// are deterministic).
class NpzArchive {
public:
  using Entry = std::pair<std::string, Tensor>;

  /// The tensor stored under `key`, or null.
  const Tensor *lookup(llvm::StringRef key) const;
  /// Adds `key`, or replaces its tensor if present (keeping its position).
  void set(llvm::StringRef key, Tensor tensor);

  llvm::ArrayRef<Entry> entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

private:
  std::vector<Entry> entries_;
  llvm::StringMap<size_t> index_;
};

/// Reads an .npz file as np.savez / np.savez_compressed write it (stored or
/// deflated ZIP entries, zip64 records, .npy versions 1.0-3.0). Element types
/// come from `__weft_dtypes__` when it names a key, else from the .npy descr
/// (<f8 <f4 <f2 <i8 <i4 <i2 |b1 |u1; <u2 only when named bf16). Every malformed
/// input gives an error naming the file, the key and the problem.
llvm::Expected<NpzArchive> readNpz(llvm::StringRef path);

/// As readNpz, from bytes in memory; `name` stands for the file in messages.
llvm::Expected<NpzArchive> parseNpz(llvm::StringRef bytes,
                                    llvm::StringRef name);

struct NpzWriteOptions {
  /// Write zip64 size and offset records even when the archive is small, as
  /// np.savez does; otherwise zip64 is used only where a field overflows.
  bool forceZip64 = false;
};

/// Writes `archive` as an uncompressed .npz that numpy.load reads, with
/// `__weft_dtypes__` appended. The file is replaced atomically. Fails on a
/// tensor whose data size does not match its shape or a reserved/empty key.
llvm::Error writeNpz(llvm::StringRef path, const NpzArchive &archive,
                     NpzWriteOptions options = {});

/// As writeNpz, into a stream.
llvm::Error writeNpz(llvm::raw_ostream &os, const NpzArchive &archive,
                     NpzWriteOptions options = {});

} // namespace weft

#endif // WEFT_SUPPORT_NPZ_H
