// ZIP reading and writing for .npz through libzip: libzip parses the container
// (zip64, deflate, local/central consistency); this file bounds what a corrupt
// archive may make us allocate and words libzip's errors for .npz users.
#include "ZipArchive.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"

#include <zip.h>

#include <algorithm>
#include <cstring>
#include <ctime>

using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
using llvm::Twine;

namespace weft::npz {

Error fileError(StringRef file, StringRef key, const Twine &what) {
  if (key.empty())
    return llvm::createStringError(file + ": " + what);
  return llvm::createStringError(file + ": '" + key + "': " + what);
}

namespace {

/// The smallest archive: an end of central directory record of 22 bytes.
constexpr uint64_t kEndRecordBytes = 22;
/// Deflate cannot compress better than about 1032:1; a larger claimed ratio
/// means a corrupt (or hostile) size field, which must not drive allocation.
constexpr uint64_t kMaxDeflateRatio = 1032;

/// A libzip error code as text ("Zip archive inconsistent").
std::string libzipMessage(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string text = zip_error_strerror(&error);
  zip_error_fini(&error);
  return text;
}

/// Why libzip refused to open an archive, in the words of the .npz reader.
std::string openFailure(int code) {
  switch (code) {
  case ZIP_ER_NOZIP:
    return "not a zip archive (no valid end of central directory record, or "
           "entries outside the archive; truncated or not an .npz file)";
  case ZIP_ER_INCONS:
    return "corrupt zip archive (a local header disagrees with the central "
           "directory)";
  case ZIP_ER_EXISTS:
    return "corrupt zip archive (two entries have the same name)";
  case ZIP_ER_MULTIDISK:
    return "multi-disk zip archives are not supported";
  default:
    return "corrupt zip archive (libzip: " + libzipMessage(code) + ")";
  }
}

/// Why reading a member's data failed.
std::string readFailure(int code, const zip_stat_t &stat) {
  switch (code) {
  case ZIP_ER_CRC:
    return "corrupt zip entry (CRC-32 of the data does not match the " +
           llvm::utohexstr(stat.crc) + " the directory records)";
  case ZIP_ER_INCONS:
    return "corrupt zip entry (its data does not hold the " +
           std::to_string(stat.size) + " bytes the directory states)";
  case ZIP_ER_ZLIB:
  case ZIP_ER_COMPRESSED_DATA:
    return "corrupt deflate data (libzip: " + libzipMessage(code) + ")";
  default:
    return "cannot read zip entry (libzip: " + libzipMessage(code) + ")";
  }
}

struct CloseFile {
  void operator()(zip_file_t *member) const { zip_fclose(member); }
};

} // namespace

void ArchiveReader::Close::operator()(zip_t *archive) const {
  zip_discard(archive);
}

Expected<ArchiveReader> ArchiveReader::open(StringRef bytes, StringRef file) {
  // libzip opens an empty file as an empty archive; an .npz never is one.
  if (bytes.size() < kEndRecordBytes)
    return fileError(file, "", "not a zip archive (" + Twine(bytes.size()) +
                                   " bytes, too short for an end record)");
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t *source =
      zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  zip_t *archive = source ? zip_open_from_source(
                                source, ZIP_RDONLY | ZIP_CHECKCONS, &error)
                          : nullptr;
  if (!archive) {
    int code = zip_error_code_zip(&error);
    zip_error_fini(&error);
    if (source)
      zip_source_free(source);
    return fileError(file, "", openFailure(code));
  }
  zip_error_fini(&error);

  ArchiveReader reader(std::unique_ptr<zip_t, Close>(archive), file.str());
  zip_int64_t count = zip_get_num_entries(archive, 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    const char *name = zip_get_name(archive, i, ZIP_FL_ENC_RAW);
    if (!name)
      return fileError(file, "",
                       "corrupt zip central directory (entry " + Twine(i) +
                           " has no name)");
    reader.names_.emplace_back(name);
  }
  return std::move(reader);
}

Expected<std::string> ArchiveReader::read(size_t index) const {
  StringRef name = names_[index];
  zip_stat_t stat;
  zip_stat_init(&stat);
  if (zip_stat_index(archive.get(), index, ZIP_FL_ENC_RAW, &stat) != 0)
    return fileError(file, name, "cannot read the zip directory entry");
  if ((stat.valid & ZIP_STAT_ENCRYPTION_METHOD) &&
      stat.encryption_method != ZIP_EM_NONE)
    return fileError(file, name, "encrypted zip entries are not supported");
  if (stat.comp_method != ZIP_CM_STORE && stat.comp_method != ZIP_CM_DEFLATE)
    return fileError(file, name,
                     "zip compression method " + Twine(stat.comp_method) +
                         " is not supported (only stored and deflate, as "
                         "np.savez and np.savez_compressed write)");
  if (stat.comp_method == ZIP_CM_STORE && stat.comp_size != stat.size)
    return fileError(file, name,
                     "corrupt zip entry (stored entry with compressed size " +
                         Twine(stat.comp_size) + " != size " +
                         Twine(stat.size) + ")");
  if (stat.size > stat.comp_size * kMaxDeflateRatio + 1024)
    return fileError(file, name,
                     "corrupt zip entry (claims " + Twine(stat.size) +
                         " bytes inflated from " + Twine(stat.comp_size) +
                         " compressed bytes)");

  std::unique_ptr<zip_file_t, CloseFile> member(
      zip_fopen_index(archive.get(), index, 0));
  if (!member)
    return fileError(file, name,
                     readFailure(zip_error_code_zip(zip_get_error(archive.get())),
                                 stat));
  std::string bytes(stat.size, '\0');
  uint64_t done = 0;
  while (done < bytes.size()) {
    zip_int64_t got =
        zip_fread(member.get(), bytes.data() + done, bytes.size() - done);
    if (got < 0)
      return fileError(file, name,
                       readFailure(zip_error_code_zip(
                                       zip_file_get_error(member.get())),
                                   stat));
    if (got == 0)
      break;
    done += got;
  }
  // libzip checks the size and CRC-32 when the data ends: read once more.
  char extra;
  zip_int64_t got = zip_fread(member.get(), &extra, 1);
  if (got < 0)
    return fileError(
        file, name,
        readFailure(zip_error_code_zip(zip_file_get_error(member.get())), stat));
  if (got > 0 || done != bytes.size())
    return fileError(file, name, readFailure(ZIP_ER_INCONS, stat));
  return bytes;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {

/// A libzip source that encodes its member when libzip opens it and drops
/// the bytes when libzip closes it.
class MemberSource {
public:
  MemberSource(const PendingMember &member, bool announceSize)
      : member(member), announceSize(announceSize) {
    zip_error_init(&error);
  }
  ~MemberSource() { zip_error_fini(&error); }

  static zip_int64_t callback(void *self, void *data, zip_uint64_t length,
                              zip_source_cmd_t command) {
    return static_cast<MemberSource *>(self)->handle(data, length, command);
  }

private:
  zip_int64_t handle(void *data, zip_uint64_t length, zip_source_cmd_t command) {
    switch (command) {
    case ZIP_SOURCE_OPEN:
      bytes = member.encode();
      position = 0;
      if (bytes.size() != member.size) {
        zip_error_set(&error, ZIP_ER_INTERNAL, 0);
        return -1;
      }
      return 0;
    case ZIP_SOURCE_READ: {
      uint64_t count = std::min<uint64_t>(length, bytes.size() - position);
      std::memcpy(data, bytes.data() + position, count);
      position += count;
      return zip_int64_t(count);
    }
    case ZIP_SOURCE_CLOSE:
      std::string().swap(bytes);
      return 0;
    case ZIP_SOURCE_STAT: {
      zip_stat_t *stat = ZIP_SOURCE_GET_ARGS(zip_stat_t, data, length, &error);
      if (!stat)
        return -1;
      zip_stat_init(stat);
      if (announceSize) {
        stat->size = member.size;
        stat->valid |= ZIP_STAT_SIZE;
      }
      return sizeof(zip_stat_t);
    }
    case ZIP_SOURCE_ERROR:
      return zip_error_to_data(&error, data, length);
    case ZIP_SOURCE_FREE:
      delete this;
      return 0;
    case ZIP_SOURCE_SUPPORTS:
      return zip_source_make_command_bitmap(
          ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT,
          ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, -1);
    default:
      zip_error_set(&error, ZIP_ER_OPNOTSUPP, 0);
      return -1;
    }
  }

  const PendingMember &member;
  bool announceSize;
  std::string bytes;
  uint64_t position = 0;
  zip_error_t error;
};

/// 1980-01-01 00:00 local time, the earliest DOS date: a fixed timestamp
/// keeps written files byte-for-byte reproducible (libzip stores local time).
time_t fixedTimestamp() {
  std::tm date{};
  date.tm_year = 80;
  date.tm_mday = 1;
  date.tm_isdst = -1;
  return std::mktime(&date);
}

/// Adds the members to `archive` as stored entries, rw-r--r--, fixed time.
Error addMembers(zip_t *archive, llvm::ArrayRef<PendingMember> members,
                 WriteOptions options) {
  time_t timestamp = fixedTimestamp();
  for (const PendingMember &member : members) {
    auto *state = new MemberSource(member, !options.forceZip64);
    zip_source_t *source = zip_source_function(archive, MemberSource::callback,
                                               state);
    if (!source) {
      delete state;
      return llvm::createStringError("'" + member.name + "': " +
                                     zip_strerror(archive));
    }
    zip_int64_t index = zip_file_add(archive, member.name.c_str(), source, 0);
    if (index < 0) {
      zip_source_free(source);
      return llvm::createStringError("'" + member.name + "': " +
                                     zip_strerror(archive));
    }
    if (zip_set_file_compression(archive, index, ZIP_CM_STORE, 0) != 0 ||
        zip_file_set_mtime(archive, index, timestamp, 0) != 0 ||
        zip_file_set_external_attributes(archive, index, 0, ZIP_OPSYS_UNIX,
                                         0100644u << 16) != 0)
      return llvm::createStringError("'" + member.name + "': " +
                                     zip_strerror(archive));
  }
  return Error::success();
}

/// zip_close, or its error (the archive is discarded either way).
Error closeArchive(zip_t *archive) {
  if (zip_close(archive) == 0)
    return Error::success();
  Error err = llvm::createStringError(zip_strerror(archive));
  zip_discard(archive);
  return err;
}

} // namespace

Error writeArchive(StringRef path, llvm::ArrayRef<PendingMember> members,
                        WriteOptions options) {
  int code = 0;
  zip_t *archive = zip_open(path.str().c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  if (!archive)
    return llvm::createStringError(libzipMessage(code));
  if (Error err = addMembers(archive, members, options)) {
    zip_discard(archive);
    return err;
  }
  return closeArchive(archive);
}

Error writeArchive(llvm::raw_ostream &os,
                        llvm::ArrayRef<PendingMember> members,
                        WriteOptions options) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t *buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
  zip_t *archive =
      buffer ? zip_open_from_source(buffer, ZIP_TRUNCATE, &error) : nullptr;
  if (!archive) {
    std::string message = zip_error_strerror(&error);
    zip_error_fini(&error);
    if (buffer)
      zip_source_free(buffer);
    return llvm::createStringError(message);
  }
  zip_error_fini(&error);
  // Keep the buffer past zip_close, which would otherwise free it.
  zip_source_keep(buffer);
  llvm::scope_exit freeBuffer([&] { zip_source_free(buffer); });
  if (Error err = addMembers(archive, members, options)) {
    zip_discard(archive);
    return err;
  }
  if (Error err = closeArchive(archive))
    return err;

  if (zip_source_open(buffer) != 0)
    return llvm::createStringError(
        zip_error_strerror(zip_source_error(buffer)));
  char chunk[1 << 16];
  zip_int64_t got;
  while ((got = zip_source_read(buffer, chunk, sizeof(chunk))) > 0)
    os.write(chunk, size_t(got));
  zip_source_close(buffer);
  if (got < 0)
    return llvm::createStringError(
        zip_error_strerror(zip_source_error(buffer)));
  return Error::success();
}

} // namespace weft::npz
