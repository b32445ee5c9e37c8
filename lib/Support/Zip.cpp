// ZIP reading and writing for .npz: only what np.savez and
// np.savez_compressed produce (stored/deflated members, zip64 records), with
// every offset and size checked against the buffer before use.
#include "Zip.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <optional>

using namespace weft;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
using llvm::Twine;
using zip::ByteReader;
using zip::fileError;
using zip::Member;

Error zip::fileError(StringRef file, StringRef key, const Twine &what) {
  if (key.empty())
    return llvm::createStringError(file + ": " + what);
  return llvm::createStringError(file + ": '" + key + "': " + what);
}

namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndOfCentralDirSig = 0x06054b50;
constexpr uint32_t kZip64EndOfCentralDirSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr size_t kLocalHeaderSize = 30;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kEndOfCentralDirSize = 22;
constexpr size_t kZip64EndOfCentralDirSize = 56;
constexpr size_t kZip64LocatorSize = 20;
constexpr uint32_t kMax32 = 0xffffffffu;
constexpr uint16_t kMax16 = 0xffffu;
/// Deflate cannot compress better than about 1032:1; a larger claimed ratio
/// means a corrupt (or hostile) size field, which must not drive allocation.
constexpr uint64_t kMaxDeflateRatio = 1032;
/// 1980-01-01, the earliest DOS date: a fixed timestamp keeps written files
/// byte-for-byte reproducible.
constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;

uint32_t crc32Of(StringRef bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const char *data = bytes.data();
  size_t left = bytes.size();
  // zlib takes uInt lengths; feed large entries in pieces.
  while (left > 0) {
    uInt chunk = static_cast<uInt>(std::min<size_t>(left, UINT_MAX));
    crc = crc32(crc, reinterpret_cast<const Bytef *>(data), chunk);
    data += chunk;
    left -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

struct CentralDirectory {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t entries = 0;
};

Expected<CentralDirectory> findCentralDirectory(const ByteReader &in,
                                                StringRef file) {
  if (in.size() < kEndOfCentralDirSize)
    return fileError(file, "", "not a zip archive (" + Twine(in.size()) +
                                   " bytes, too short for an end record)");
  // The end record sits before a comment of at most 64 KiB; scan back for it.
  uint64_t last = in.size() - kEndOfCentralDirSize;
  uint64_t first = last > kMax16 ? last - kMax16 : 0;
  std::optional<uint64_t> eocd;
  for (uint64_t pos = last + 1; pos-- > first;) {
    if (in.u32(pos) == kEndOfCentralDirSig &&
        pos + kEndOfCentralDirSize + in.u16(pos + 20) <= in.size()) {
      eocd = pos;
      break;
    }
  }
  if (!eocd)
    return fileError(file, "",
                     "not a zip archive (no end of central directory record; "
                     "truncated or not an .npz file)");
  CentralDirectory dir;
  uint16_t disk = in.u16(*eocd + 4), cdDisk = in.u16(*eocd + 6);
  dir.entries = in.u16(*eocd + 10);
  dir.size = in.u32(*eocd + 12);
  dir.offset = in.u32(*eocd + 16);
  if ((disk != 0 && disk != kMax16) || (cdDisk != 0 && cdDisk != kMax16))
    return fileError(file, "", "multi-disk zip archives are not supported");

  // A zip64 locator right before the end record points at the zip64 end
  // record, whose 64-bit fields replace the saturated 16/32-bit ones.
  if (*eocd >= kZip64LocatorSize &&
      in.u32(*eocd - kZip64LocatorSize) == kZip64LocatorSig) {
    uint64_t recordOffset = in.u64(*eocd - kZip64LocatorSize + 8);
    if (!in.has(recordOffset, kZip64EndOfCentralDirSize) ||
        in.u32(recordOffset) != kZip64EndOfCentralDirSig)
      return fileError(file, "",
                       "corrupt zip64 end of central directory (locator "
                       "points at offset " +
                           Twine(recordOffset) + " of " + Twine(in.size()) +
                           " bytes)");
    dir.entries = in.u64(recordOffset + 32);
    dir.size = in.u64(recordOffset + 40);
    dir.offset = in.u64(recordOffset + 48);
  }
  if (!in.has(dir.offset, dir.size))
    return fileError(file, "",
                     "corrupt zip archive (central directory at offset " +
                         Twine(dir.offset) + " size " + Twine(dir.size) +
                         " lies outside the " + Twine(in.size()) +
                         "-byte file; truncated?)");
  // Each entry takes at least 46 bytes, which bounds a corrupt count.
  if (dir.entries > dir.size / kCentralHeaderSize)
    return fileError(file, "",
                     "corrupt zip archive (" + Twine(dir.entries) +
                         " entries cannot fit in a " + Twine(dir.size) +
                         "-byte central directory)");
  return dir;
}

Error inflateRaw(StringRef compressed, uint64_t size, std::string &out,
                 StringRef file, StringRef name) {
  if (size > compressed.size() * kMaxDeflateRatio + 1024)
    return fileError(file, name,
                     "corrupt zip entry (claims " + Twine(size) +
                         " bytes inflated from " + Twine(compressed.size()) +
                         " compressed bytes)");
  out.resize(size);
  z_stream stream{};
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK)
    return fileError(file, name, "cannot initialize zlib");
  llvm::scope_exit cleanup([&] { inflateEnd(&stream); });
  const char *nextIn = compressed.data();
  size_t inLeft = compressed.size();
  char *nextOut = out.data();
  size_t outLeft = out.size();
  int status = Z_OK;
  unsigned char scratch;
  // avail_in/avail_out are 32-bit; refill them until the stream ends.
  while (status == Z_OK) {
    if (stream.avail_in == 0 && inLeft > 0) {
      uInt chunk = static_cast<uInt>(std::min<size_t>(inLeft, UINT_MAX));
      stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(nextIn));
      stream.avail_in = chunk;
      nextIn += chunk;
      inLeft -= chunk;
    }
    if (stream.avail_out == 0 && outLeft > 0) {
      uInt chunk = static_cast<uInt>(std::min<size_t>(outLeft, UINT_MAX));
      stream.next_out = reinterpret_cast<Bytef *>(nextOut);
      stream.avail_out = chunk;
      nextOut += chunk;
      outLeft -= chunk;
    }
    // A member of 0 bytes still holds an end-of-stream block; give zlib a
    // scratch byte so it can make progress when there is no output room.
    bool usedScratch = false;
    if (stream.avail_out == 0) {
      stream.next_out = &scratch;
      stream.avail_out = 1;
      usedScratch = true;
    }
    status = inflate(&stream, Z_NO_FLUSH);
    if (usedScratch && stream.avail_out == 0)
      return fileError(file, name,
                       "corrupt zip entry (inflates to more than the " +
                           Twine(size) + " bytes its header states)");
    if (usedScratch)
      stream.avail_out = 0;
    if (status == Z_BUF_ERROR && stream.avail_in == 0 && inLeft == 0)
      break;
  }
  if (status != Z_STREAM_END)
    return fileError(file, name,
                     "corrupt deflate data (" +
                         Twine(stream.msg ? stream.msg : "unexpected end") +
                         ")");
  if (stream.total_out != size)
    return fileError(file, name,
                     "corrupt zip entry (inflates to " +
                         Twine(uint64_t(stream.total_out)) + " bytes, header states " +
                         Twine(size) + ")");
  return Error::success();
}

/// Fills the 64-bit values a zip64 extra field carries for the fields that
/// the fixed header saturated, in the order the spec lists them.
Error applyZip64Extra(StringRef extra, uint64_t &uncompressed,
                      uint64_t &compressed, uint64_t *localOffset,
                      StringRef file, StringRef name) {
  ByteReader in(extra);
  uint64_t pos = 0;
  while (in.has(pos, 4)) {
    uint16_t id = in.u16(pos), size = in.u16(pos + 2);
    if (!in.has(pos + 4, size))
      return fileError(file, name, "corrupt zip extra field (truncated)");
    if (id == kZip64ExtraId) {
      ByteReader field(in.slice(pos + 4, size));
      uint64_t at = 0;
      for (uint64_t *value : {&uncompressed, &compressed, localOffset}) {
        if (!value || *value != kMax32)
          continue;
        if (!field.has(at, 8))
          return fileError(file, name,
                           "corrupt zip64 extra field (" + Twine(size) +
                               " bytes, too short for the saturated sizes)");
        *value = field.u64(at);
        at += 8;
      }
      return Error::success();
    }
    pos += 4 + size;
  }
  return Error::success();
}

} // namespace

Expected<std::vector<Member>> zip::readArchive(StringRef bytes,
                                               StringRef file) {
  ByteReader in(bytes);
  Expected<CentralDirectory> dir = findCentralDirectory(in, file);
  if (!dir)
    return dir.takeError();

  std::vector<Member> members;
  uint64_t pos = dir->offset, end = dir->offset + dir->size;
  for (uint64_t i = 0; i < dir->entries; ++i) {
    if (!in.has(pos, kCentralHeaderSize) || pos + kCentralHeaderSize > end ||
        in.u32(pos) != kCentralHeaderSig)
      return fileError(file, "",
                       "corrupt zip central directory (entry " + Twine(i) +
                           " at offset " + Twine(pos) + ")");
    uint16_t flags = in.u16(pos + 8), method = in.u16(pos + 10);
    uint32_t crc = in.u32(pos + 16);
    uint64_t compressed = in.u32(pos + 20), uncompressed = in.u32(pos + 24);
    uint16_t nameLen = in.u16(pos + 28), extraLen = in.u16(pos + 30),
             commentLen = in.u16(pos + 32);
    uint64_t localOffset = in.u32(pos + 42);
    uint64_t varLen = uint64_t(nameLen) + extraLen + commentLen;
    if (!in.has(pos + kCentralHeaderSize, varLen) ||
        pos + kCentralHeaderSize + varLen > end)
      return fileError(file, "",
                       "corrupt zip central directory (entry " + Twine(i) +
                           " runs past its end)");
    std::string name = in.slice(pos + kCentralHeaderSize, nameLen).str();
    if (Error err = applyZip64Extra(
            in.slice(pos + kCentralHeaderSize + nameLen, extraLen),
            uncompressed, compressed, &localOffset, file, name))
      return std::move(err);
    pos += kCentralHeaderSize + varLen;

    if (flags & 1)
      return fileError(file, name, "encrypted zip entries are not supported");
    if (method != 0 && method != 8)
      return fileError(file, name,
                       "zip compression method " + Twine(method) +
                           " is not supported (only stored and deflate, as "
                           "np.savez and np.savez_compressed write)");
    if (!in.has(localOffset, kLocalHeaderSize) ||
        in.u32(localOffset) != kLocalHeaderSig)
      return fileError(file, name,
                       "corrupt zip archive (no local header at offset " +
                           Twine(localOffset) + ")");
    uint16_t localNameLen = in.u16(localOffset + 26),
             localExtraLen = in.u16(localOffset + 28);
    uint64_t dataOffset =
        localOffset + kLocalHeaderSize + localNameLen + localExtraLen;
    if (!in.has(localOffset + kLocalHeaderSize, localNameLen) ||
        in.slice(localOffset + kLocalHeaderSize, localNameLen) != name)
      return fileError(file, name,
                       "corrupt zip archive (local header names a different "
                       "file than the central directory)");
    if (!in.has(dataOffset, compressed))
      return fileError(file, name,
                       "truncated zip entry (" + Twine(compressed) +
                           " bytes at offset " + Twine(dataOffset) +
                           " but the file has " + Twine(in.size()) + ")");

    Member member;
    member.name = std::move(name);
    StringRef raw = in.slice(dataOffset, compressed);
    member.deflated = method == 8;
    if (!member.deflated) {
      if (compressed != uncompressed)
        return fileError(file, member.name,
                         "corrupt zip entry (stored entry with compressed size " +
                             Twine(compressed) + " != size " +
                             Twine(uncompressed) + ")");
      member.stored = raw;
    } else if (Error err = inflateRaw(raw, uncompressed, member.inflated, file,
                                      member.name)) {
      return std::move(err);
    }
    uint32_t actualCrc = crc32Of(member.bytes());
    if (actualCrc != crc)
      return fileError(file, member.name,
                       "corrupt zip entry (CRC-32 " + llvm::utohexstr(actualCrc) +
                           " but the directory records " +
                           llvm::utohexstr(crc) + ")");
    members.push_back(std::move(member));
  }
  return members;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

void zip::Writer::add(StringRef name, StringRef data) {
  CentralRecord record{name.str(), crc32Of(data), data.size(), offset};
  bool zip64 = forceZip64 || data.size() >= kMax32;
  std::string header;
  appendLE<uint32_t>(header, kLocalHeaderSig);
  appendLE<uint16_t>(header, zip64 ? 45 : 20); // version needed
  appendLE<uint16_t>(header, 0);               // flags
  appendLE<uint16_t>(header, 0);               // method: stored
  appendLE<uint16_t>(header, 0);               // time 00:00:00
  appendLE<uint16_t>(header, kDosDate);
  appendLE<uint32_t>(header, record.crc);
  appendLE<uint32_t>(header, zip64 ? kMax32 : uint32_t(data.size()));
  appendLE<uint32_t>(header, zip64 ? kMax32 : uint32_t(data.size()));
  appendLE<uint16_t>(header, static_cast<uint16_t>(name.size()));
  appendLE<uint16_t>(header, zip64 ? 20 : 0);
  header += name;
  if (zip64) {
    appendLE<uint16_t>(header, kZip64ExtraId);
    appendLE<uint16_t>(header, 16);
    appendLE<uint64_t>(header, data.size());
    appendLE<uint64_t>(header, data.size());
  }
  write(header);
  write(data);
  records.push_back(std::move(record));
}

void zip::Writer::finish() {
  uint64_t directoryOffset = offset;
  for (const CentralRecord &record : records) {
    bool bigSize = forceZip64 || record.size >= kMax32;
    bool bigOffset = forceZip64 || record.offset >= kMax32;
    std::string extra;
    if (bigSize || bigOffset) {
      std::string fields;
      if (bigSize) {
        appendLE<uint64_t>(fields, record.size);
        appendLE<uint64_t>(fields, record.size);
      }
      if (bigOffset)
        appendLE<uint64_t>(fields, record.offset);
      appendLE<uint16_t>(extra, kZip64ExtraId);
      appendLE<uint16_t>(extra, static_cast<uint16_t>(fields.size()));
      extra += fields;
    }
    uint16_t version = extra.empty() ? 20 : 45;
    std::string header;
    appendLE<uint32_t>(header, kCentralHeaderSig);
    appendLE<uint16_t>(header, (3 << 8) | version); // made by: Unix
    appendLE<uint16_t>(header, version);
    appendLE<uint16_t>(header, 0);
    appendLE<uint16_t>(header, 0);
    appendLE<uint16_t>(header, 0);
    appendLE<uint16_t>(header, kDosDate);
    appendLE<uint32_t>(header, record.crc);
    appendLE<uint32_t>(header, bigSize ? kMax32 : uint32_t(record.size));
    appendLE<uint32_t>(header, bigSize ? kMax32 : uint32_t(record.size));
    appendLE<uint16_t>(header, static_cast<uint16_t>(record.name.size()));
    appendLE<uint16_t>(header, static_cast<uint16_t>(extra.size()));
    appendLE<uint16_t>(header, 0);                // comment
    appendLE<uint16_t>(header, 0);                // disk
    appendLE<uint16_t>(header, 0);                // internal attributes
    appendLE<uint32_t>(header, 0644u << 16);      // rw-r--r--
    appendLE<uint32_t>(header, bigOffset ? kMax32 : uint32_t(record.offset));
    header += record.name;
    header += extra;
    write(header);
  }
  uint64_t directorySize = offset - directoryOffset;
  bool zip64End = forceZip64 || records.size() >= kMax16 ||
                  directoryOffset >= kMax32 || directorySize >= kMax32;
  std::string tail;
  if (zip64End) {
    uint64_t recordOffset = offset;
    appendLE<uint32_t>(tail, kZip64EndOfCentralDirSig);
    appendLE<uint64_t>(tail, kZip64EndOfCentralDirSize - 12);
    appendLE<uint16_t>(tail, (3 << 8) | 45);
    appendLE<uint16_t>(tail, 45);
    appendLE<uint32_t>(tail, 0);
    appendLE<uint32_t>(tail, 0);
    appendLE<uint64_t>(tail, records.size());
    appendLE<uint64_t>(tail, records.size());
    appendLE<uint64_t>(tail, directorySize);
    appendLE<uint64_t>(tail, directoryOffset);
    appendLE<uint32_t>(tail, kZip64LocatorSig);
    appendLE<uint32_t>(tail, 0);
    appendLE<uint64_t>(tail, recordOffset);
    appendLE<uint32_t>(tail, 1);
  }
  uint16_t count = zip64End ? kMax16 : uint16_t(records.size());
  appendLE<uint32_t>(tail, kEndOfCentralDirSig);
  appendLE<uint16_t>(tail, 0);
  appendLE<uint16_t>(tail, 0);
  appendLE<uint16_t>(tail, count);
  appendLE<uint16_t>(tail, count);
  appendLE<uint32_t>(tail, zip64End ? kMax32 : uint32_t(directorySize));
  appendLE<uint32_t>(tail, zip64End ? kMax32 : uint32_t(directoryOffset));
  appendLE<uint16_t>(tail, 0);
  write(tail);
}
