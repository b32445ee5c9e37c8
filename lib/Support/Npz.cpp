// .npz reading and writing on top of ZipArchive.h (libzip): the .npy parser
// for the dtypes Weft exchanges, the `__weft_dtypes__` convention, and an
// np.savez-compatible writer. Input is untrusted: sizes are checked before
// they drive allocation.
#include "weft/Support/Npz.h"

#include "ZipArchive.h"
#include "weft/Support/FloatBits.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <optional>

using namespace weft;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
using llvm::Twine;
using npz::fileError;

//===----------------------------------------------------------------------===//
// NpzArchive
//===----------------------------------------------------------------------===//

const Tensor *NpzArchive::lookup(StringRef key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

void NpzArchive::set(StringRef key, Tensor tensor) {
  auto [it, inserted] = index_.try_emplace(key, entries_.size());
  if (inserted)
    entries_.emplace_back(key.str(), std::move(tensor));
  else
    entries_[it->second].second = std::move(tensor);
}

namespace {

/// The largest .npy header a version 1.0 file can state.
constexpr uint64_t kMaxV1HeaderLen = 0xffff;

Error makeError(const Twine &message) {
  return llvm::createStringError(message);
}

/// Bounds-checked little-endian reads from a byte range.
class ByteReader {
public:
  explicit ByteReader(StringRef bytes) : bytes(bytes) {}

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
  StringRef slice(uint64_t offset, uint64_t size) const {
    return bytes.substr(offset, size);
  }
  uint64_t size() const { return bytes.size(); }

private:
  StringRef bytes;
};

template <typename T> void appendLE(std::string &out, T value) {
  char bytes[sizeof(T)];
  llvm::support::endian::write<T, llvm::endianness::little>(bytes, value);
  out.append(bytes, sizeof(T));
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

/// Parses the Python dict literal of a .npy header, e.g.
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`.
class NpyHeaderParser {
public:
  explicit NpyHeaderParser(StringRef text) : text(text) {}

  Expected<NpyHeader> parse() {
    NpyHeader header;
    bool haveDescr = false, haveOrder = false, haveShape = false;
    skipSpace();
    if (!consume('{'))
      return fail("expected '{'");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (Error err = parseString(key))
        return std::move(err);
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after '" + key + "'");
      skipSpace();
      if (key == "descr") {
        if (peek() == '[')
          return fail("structured dtypes are not supported");
        if (Error err = parseString(header.descr))
          return std::move(err);
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (text.consume_front("True"))
          header.fortranOrder = true;
        else if (text.consume_front("False"))
          header.fortranOrder = false;
        else
          return fail("fortran_order is not True or False");
        haveOrder = true;
      } else if (key == "shape") {
        if (Error err = parseShape(header.shape))
          return std::move(err);
        haveShape = true;
      } else {
        return fail("unexpected key '" + key + "'");
      }
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume('}'))
        break;
      return fail("expected ',' or '}'");
    }
    if (!text.trim().empty())
      return fail("unexpected text after the header dict");
    if (!haveDescr || !haveOrder || !haveShape)
      return fail("the header lacks 'descr', 'fortran_order' or 'shape'");
    return header;
  }

private:
  Error fail(const Twine &what) { return makeError("bad .npy header: " + what); }
  char peek() const { return text.empty() ? '\0' : text.front(); }
  bool consume(char c) { return text.consume_front(StringRef(&c, 1)); }
  void skipSpace() { text = text.ltrim(); }

  Error parseString(std::string &out) {
    char quote = peek();
    if (quote != '\'' && quote != '"')
      return fail("expected a quoted string");
    text = text.drop_front();
    size_t close = text.find(quote);
    if (close == StringRef::npos)
      return fail("unterminated string");
    out = text.take_front(close).str();
    text = text.drop_front(close + 1);
    return Error::success();
  }

  Error parseShape(std::vector<int64_t> &shape) {
    if (!consume('('))
      return fail("shape is not a tuple");
    while (true) {
      skipSpace();
      if (consume(')'))
        return Error::success();
      uint64_t dim;
      if (text.consumeInteger(10, dim) || dim > uint64_t(INT64_MAX))
        return fail("shape holds a non-integer or negative dimension");
      text.consume_front("L"); // Python 2 longs
      shape.push_back(static_cast<int64_t>(dim));
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume(')'))
        return Error::success();
      return fail("expected ',' or ')' in shape");
    }
  }

  StringRef text;
};

/// The .npy element encodings Weft reads.
enum class NpyKind { F8, F4, F2, U2, I8, I4, I2, B1, U1, Unicode, Bytes };

struct NpyArray {
  NpyKind kind;
  std::string descr;
  uint64_t itemSize;
  std::vector<int64_t> shape;
  StringRef data;
};

Expected<NpyArray> parseNpy(StringRef bytes, StringRef file, StringRef key) {
  ByteReader in(bytes);
  static constexpr StringRef kMagic("\x93NUMPY", 6);
  if (!bytes.starts_with(kMagic) || !in.has(0, 10))
    return fileError(file, key, "not a .npy array (bad magic)");
  unsigned major = static_cast<unsigned char>(bytes[6]),
           minor = static_cast<unsigned char>(bytes[7]);
  uint64_t headerStart, headerLen;
  if (major == 1) {
    headerLen = in.u16(8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (!in.has(0, 12))
      return fileError(file, key, "truncated .npy header");
    headerLen = in.u32(8);
    headerStart = 12;
  } else {
    return fileError(file, key,
                     "unsupported .npy format version " + Twine(major) + "." +
                         Twine(minor));
  }
  if (!in.has(headerStart, headerLen))
    return fileError(file, key,
                     "truncated .npy header (" + Twine(headerLen) +
                         " bytes stated, " + Twine(in.size() - headerStart) +
                         " present)");
  Expected<NpyHeader> header =
      NpyHeaderParser(in.slice(headerStart, headerLen)).parse();
  if (!header)
    return fileError(file, key, llvm::toString(header.takeError()));

  NpyArray array;
  array.descr = header->descr;
  array.shape = header->shape;
  StringRef descr = header->descr;
  if (descr.size() < 2)
    return fileError(file, key, "unsupported dtype '" + descr + "'");
  char order = descr.front();
  StringRef code = descr.drop_front();
  if (order == '>')
    return fileError(file, key,
                     "big-endian dtype '" + descr +
                         "' is not supported; save little-endian arrays "
                         "(arr.astype(arr.dtype.newbyteorder('<')))");
  if (order != '<' && order != '|' && order != '=')
    return fileError(file, key, "unsupported dtype '" + descr + "'");
  static const struct {
    StringRef code;
    NpyKind kind;
    uint64_t size;
  } kKinds[] = {{"f8", NpyKind::F8, 8}, {"f4", NpyKind::F4, 4},
                {"f2", NpyKind::F2, 2}, {"u2", NpyKind::U2, 2},
                {"i8", NpyKind::I8, 8}, {"i4", NpyKind::I4, 4},
                {"i2", NpyKind::I2, 2}, {"b1", NpyKind::B1, 1},
                {"u1", NpyKind::U1, 1}};
  bool known = false;
  for (const auto &k : kKinds) {
    if (code == k.code) {
      array.kind = k.kind;
      array.itemSize = k.size;
      known = true;
    }
  }
  uint64_t width;
  if (!known && (code.starts_with("U") || code.starts_with("S")) &&
      !code.drop_front().getAsInteger(10, width) && width > 0 &&
      width < (1u << 20)) {
    array.kind = code.front() == 'U' ? NpyKind::Unicode : NpyKind::Bytes;
    array.itemSize = code.front() == 'U' ? 4 * width : width;
    known = true;
  }
  if (!known)
    return fileError(file, key,
                     "unsupported dtype '" + descr +
                         "' (Weft reads <f8 <f4 <f2 <u2 <i8 <i4 <i2 |b1 |u1)");
  if (header->fortranOrder)
    return fileError(file, key,
                     "Fortran-order arrays are not supported; save a C-order "
                     "array (np.ascontiguousarray)");

  uint64_t bytesPresent = in.size() - headerStart - headerLen;
  uint64_t elements = 1;
  for (int64_t dim : array.shape) {
    // Check against the data present as we go, so a corrupt shape can neither
    // overflow nor drive a huge allocation.
    if (dim != 0 && elements > bytesPresent / uint64_t(dim))
      elements = UINT64_MAX;
    else
      elements *= uint64_t(dim);
  }
  bool tooMany = elements == UINT64_MAX ||
                 elements > bytesPresent / array.itemSize;
  if (tooMany || elements * array.itemSize != bytesPresent) {
    std::string shapeText = llvm::join(
        llvm::map_range(array.shape,
                        [](int64_t d) { return std::to_string(d); }),
        ", ");
    std::string needed =
        tooMany ? "more than " + std::to_string(bytesPresent)
                : std::to_string(elements * array.itemSize);
    return fileError(file, key,
                     "data size mismatch: shape (" + shapeText + ") of '" +
                         descr + "' needs " + needed +
                         " bytes of data, the array holds " +
                         Twine(bytesPresent) + (tooMany ? " (truncated?)" : ""));
  }
  array.data = in.slice(headerStart + headerLen, bytesPresent);
  return array;
}

/// The strings of a 1-D unicode (or bytes) array, trailing NULs dropped.
Expected<std::vector<std::string>> decodeStrings(const NpyArray &array,
                                                 StringRef file,
                                                 StringRef key) {
  std::vector<std::string> strings;
  ByteReader in(array.data);
  for (uint64_t offset = 0; offset < array.data.size();
       offset += array.itemSize) {
    std::string text;
    if (array.kind == NpyKind::Bytes) {
      text = array.data.substr(offset, array.itemSize).str();
    } else {
      for (uint64_t at = offset; at < offset + array.itemSize; at += 4) {
        uint32_t codePoint = in.u32(at);
        if (codePoint == 0)
          break;
        char utf8[UNI_MAX_UTF8_BYTES_PER_CODE_POINT];
        char *end = utf8;
        if (!llvm::ConvertCodePointToUTF8(codePoint, end))
          return fileError(file, key, "invalid unicode code point " +
                                          Twine(codePoint));
        text.append(utf8, end);
      }
    }
    while (!text.empty() && text.back() == '\0')
      text.pop_back();
    strings.push_back(std::move(text));
  }
  return strings;
}

/// The dtype an array holds without a `__weft_dtypes__` entry naming it.
Expected<DType> inferDType(const NpyArray &array, StringRef file,
                           StringRef key) {
  switch (array.kind) {
  case NpyKind::F8:
    return DType::F64;
  case NpyKind::F4:
    return DType::F32;
  case NpyKind::F2:
    return DType::F16;
  case NpyKind::I8:
  case NpyKind::I4:
    return DType::I64;
  case NpyKind::I2:
    return DType::I16;
  case NpyKind::B1:
  case NpyKind::U1:
    return DType::I1;
  case NpyKind::U2:
    return fileError(file, key,
                     "uint16 array ('" + array.descr +
                         "') without a __weft_dtypes__ entry; Weft reads "
                         "uint16 only as bf16 bit patterns named '" + key +
                         ":bf16'");
  case NpyKind::Unicode:
  case NpyKind::Bytes:
    break;
  }
  return fileError(file, key,
                   "string array ('" + array.descr + "') is not a tensor");
}

/// Converts the raw elements to float64 storage for `dtype`, checking that
/// the encoding can represent it (e.g. bf16 needs <u2 bits or a float array).
Expected<Tensor> decodeTensor(const NpyArray &array, DType dtype,
                              StringRef file, StringRef key) {
  bool floatTarget = dtype == DType::F64 || dtype == DType::F32 ||
                     dtype == DType::F16 || dtype == DType::BF16;
  bool floatSource = array.kind == NpyKind::F8 || array.kind == NpyKind::F4 ||
                     array.kind == NpyKind::F2;
  bool ok = false;
  switch (dtype) {
  case DType::BF16:
    ok = floatSource || array.kind == NpyKind::U2;
    break;
  case DType::F64:
  case DType::F32:
  case DType::F16:
    ok = floatSource;
    break;
  case DType::I64:
    ok = array.kind == NpyKind::I8 || array.kind == NpyKind::I4;
    break;
  case DType::I1:
    ok = array.kind == NpyKind::B1 || array.kind == NpyKind::U1;
    break;
  case DType::I16:
    ok = array.kind == NpyKind::I2;
    break;
  }
  if (!ok)
    return fileError(file, key,
                     "__weft_dtypes__ names it " + Twine(dtypeName(dtype)) +
                         " but the array is '" + array.descr + "'");

  Tensor tensor;
  tensor.shape = array.shape;
  tensor.dtype = dtype;
  uint64_t count = array.data.size() / array.itemSize;
  tensor.data.resize(count);
  ByteReader in(array.data);
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t at = i * array.itemSize;
    double value = 0;
    switch (array.kind) {
    case NpyKind::F8:
      value = llvm::bit_cast<double>(in.u64(at));
      break;
    case NpyKind::F4:
      value = llvm::bit_cast<float>(in.u32(at));
      break;
    case NpyKind::F2:
      value = f16Value(in.u16(at));
      break;
    case NpyKind::U2:
      value = bf16Value(in.u16(at));
      break;
    case NpyKind::I8: {
      int64_t integer = in.read<int64_t>(at);
      value = static_cast<double>(integer);
      // Storage is float64: refuse what it cannot hold exactly rather than
      // silently change an id or a seed.
      if (integer > (int64_t(1) << 53) || integer < -(int64_t(1) << 53))
        return fileError(file, key,
                         "i64 value " + Twine(integer) + " at index " +
                             Twine(i) +
                             " is beyond 2^53, which float64 storage cannot "
                             "hold exactly");
      break;
    }
    case NpyKind::I4:
      value = in.read<int32_t>(at);
      break;
    case NpyKind::I2:
      value = in.read<int16_t>(at);
      break;
    case NpyKind::B1:
    case NpyKind::U1: {
      uint8_t byte = static_cast<uint8_t>(array.data[at]);
      if (byte > 1)
        return fileError(file, key,
                         "boolean array holds " + Twine(unsigned(byte)) +
                             " at index " + Twine(i) + " (expected 0 or 1)");
      value = byte;
      break;
    }
    case NpyKind::Unicode:
    case NpyKind::Bytes:
      llvm_unreachable("string arrays are rejected before decoding");
    }
    // A float array named with a narrower float type (e.g. f32 values of a
    // bf16 tensor) is rounded to the named type.
    if (floatTarget && floatSource)
      value = roundToDType(value, dtype);
    tensor.data[i] = value;
  }
  return tensor;
}

//===----------------------------------------------------------------------===//
// .npy writing
//===----------------------------------------------------------------------===//

/// The .npy header numpy writes: the dict padded with spaces and a newline
/// so the data starts at a multiple of 64 bytes.
std::string npyHeader(StringRef descr, llvm::ArrayRef<int64_t> shape) {
  // Python's tuple repr: "()", "(3,)", "(2, 3)".
  std::string tuple = llvm::join(
      llvm::map_range(shape, [](int64_t d) { return std::to_string(d); }),
      ", ");
  if (shape.size() == 1)
    tuple += ",";
  std::string dict = "{'descr': '" + descr.str() +
                     "', 'fortran_order': False, 'shape': (" + tuple + "), }";
  bool wide = dict.size() + 1 + 10 > kMaxV1HeaderLen;
  size_t prefix = wide ? 12 : 10;
  size_t total = llvm::alignTo(prefix + dict.size() + 1, 64);
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';

  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(wide ? 2 : 1);
  out += '\0';
  if (wide)
    appendLE<uint32_t>(out, static_cast<uint32_t>(dict.size()));
  else
    appendLE<uint16_t>(out, static_cast<uint16_t>(dict.size()));
  return out + dict;
}

/// The .npy descr the convention fixes per dtype (bf16 as uint16 bits).
StringRef npyDescr(DType dtype) {
  static constexpr StringRef kDescr[] = {"<f8", "<f4", "<f2", "<u2",
                                         "<i8", "|b1", "<i2"};
  return kDescr[static_cast<int>(dtype)];
}

/// The size encodeNpy will return, without encoding.
uint64_t npyBytes(const Tensor &tensor) {
  return npyHeader(npyDescr(tensor.dtype), tensor.shape).size() +
         tensor.data.size() * elementBytes(tensor.dtype);
}

/// The .npy bytes of `tensor` in the encoding the convention fixes per dtype.
std::string encodeNpy(const Tensor &tensor) {
  std::string out = npyHeader(npyDescr(tensor.dtype), tensor.shape);
  out.reserve(npyBytes(tensor));
  for (double value : tensor.data) {
    switch (tensor.dtype) {
    case DType::F64:
      appendLE<uint64_t>(out, llvm::bit_cast<uint64_t>(value));
      break;
    case DType::F32:
      appendLE<uint32_t>(out, llvm::bit_cast<uint32_t>(static_cast<float>(value)));
      break;
    case DType::F16:
      appendLE<uint16_t>(out, f16Bits(value));
      break;
    case DType::BF16:
      appendLE<uint16_t>(out, bf16Bits(value));
      break;
    case DType::I64:
      appendLE<uint64_t>(out, static_cast<uint64_t>(static_cast<int64_t>(value)));
      break;
    case DType::I1:
      out += static_cast<char>(value != 0 ? 1 : 0);
      break;
    case DType::I16:
      appendLE<uint16_t>(out, static_cast<uint16_t>(static_cast<int16_t>(value)));
      break;
    }
  }
  return out;
}

/// `strings` as a 1-D '<U<n>' array (UTF-32LE, NUL-padded), as numpy writes
/// np.array([...]) of str.
std::string encodeStringArray(llvm::ArrayRef<std::string> strings) {
  size_t width = 1;
  for (const std::string &s : strings)
    width = std::max(width, s.size());
  std::string out =
      npyHeader("<U" + std::to_string(width), {int64_t(strings.size())});
  for (const std::string &s : strings) {
    for (char c : s)
      appendLE<uint32_t>(out, static_cast<unsigned char>(c));
    for (size_t i = s.size(); i < width; ++i)
      appendLE<uint32_t>(out, 0);
  }
  return out;
}

Error checkWritable(const NpzArchive &archive) {
  for (const auto &[key, tensor] : archive.entries()) {
    if (key.empty() || key == kNpzDTypesKey)
      return makeError("cannot write an .npz entry named '" + key + "'");
    if (key.size() + 4 > 0xffff)
      return makeError("cannot write an .npz entry with a " +
                       Twine(key.size()) + "-character name");
    // Printable ASCII keeps zip names and the '<U' dtype list one byte per
    // character, as every reader expects without the zip UTF-8 flag.
    if (!llvm::all_of(key, [](char c) { return c >= 0x20 && c < 0x7f; }))
      return makeError("cannot write an .npz entry named '" + key +
                       "': keys must be printable ASCII");
    for (int64_t dim : tensor.shape)
      if (dim < 0)
        return makeError("'" + key + "': negative dimension " + Twine(dim));
    if (tensor.numElements() != static_cast<int64_t>(tensor.data.size()))
      return makeError("'" + key + "': shape holds " +
                       Twine(tensor.numElements()) + " elements but data " +
                       Twine(tensor.data.size()));
    if (tensor.dtype == DType::I64)
      for (auto [i, value] : llvm::enumerate(tensor.data))
        if (!(std::trunc(value) == value && std::fabs(value) < 0x1p63)) {
          std::string text;
          llvm::raw_string_ostream(text) << llvm::format("%.17g", value);
          return makeError("'" + key + "': i64 element " + Twine(i) + " is " +
                           text + ", not an integer in range");
        }
    if (tensor.dtype == DType::I16)
      for (auto [i, value] : llvm::enumerate(tensor.data))
        if (!(std::trunc(value) == value && value >= -32768 && value <= 32767)) {
          std::string text;
          llvm::raw_string_ostream(text) << llvm::format("%.17g", value);
          return makeError("'" + key + "': i16 element " + Twine(i) + " is " +
                           text + ", not an integer in [-32768, 32767]");
        }
  }
  return Error::success();
}

/// The "key:dtype" strings of the `__weft_dtypes__` member at `index`.
Error readDTypeList(const npz::ArchiveReader &zipArchive, size_t index,
                    StringRef name, llvm::StringMap<DType> &namedTypes) {
  StringRef key = kNpzDTypesKey;
  Expected<std::string> member = zipArchive.read(index);
  if (!member)
    return member.takeError();
  Expected<NpyArray> array = parseNpy(*member, name, key);
  if (!array)
    return array.takeError();
  if (array->kind != NpyKind::Unicode && array->kind != NpyKind::Bytes)
    return fileError(name, key,
                     "must be a string array of \"key:dtype\", not '" +
                         array->descr + "'");
  Expected<std::vector<std::string>> strings = decodeStrings(*array, name, key);
  if (!strings)
    return strings.takeError();
  for (StringRef item : *strings) {
    auto [itemKey, typeName] = item.rsplit(':');
    std::optional<DType> dtype = parseDType(typeName.str());
    if (itemKey.empty() || !dtype)
      return fileError(name, key,
                       "entry \"" + item +
                           "\" is not \"key:dtype\" with dtype one of f64, "
                           "f32, f16, bf16, i64, i1, i16");
    namedTypes[itemKey] = *dtype;
  }
  return Error::success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

Expected<NpzArchive> weft::parseNpz(StringRef bytes, StringRef name) {
  Expected<npz::ArchiveReader> zipArchive =
      npz::ArchiveReader::open(bytes, name);
  if (!zipArchive)
    return zipArchive.takeError();

  // Check every member's name and read `__weft_dtypes__` first: it may come
  // anywhere, and then each array is decoded as soon as it is read, so only
  // one member's bytes are in memory at a time.
  std::vector<StringRef> keys;
  llvm::StringSet<> seen;
  llvm::StringMap<DType> namedTypes;
  for (auto [index, member] : llvm::enumerate(zipArchive->names())) {
    StringRef key = member;
    if (!key.consume_back(".npy"))
      return fileError(name, member,
                       "zip entry is not a .npy array (name lacks .npy)");
    if (!seen.insert(key).second)
      return fileError(name, key, "key appears twice in the archive");
    keys.push_back(key);
    if (key == kNpzDTypesKey)
      if (Error err = readDTypeList(*zipArchive, index, name, namedTypes))
        return std::move(err);
  }

  NpzArchive archive;
  for (auto [index, key] : llvm::enumerate(keys)) {
    if (key == kNpzDTypesKey)
      continue;
    Expected<std::string> member = zipArchive->read(index);
    if (!member)
      return member.takeError();
    Expected<NpyArray> array = parseNpy(*member, name, key);
    if (!array)
      return array.takeError();
    auto named = namedTypes.find(key);
    Expected<DType> dtype = named != namedTypes.end()
                                ? Expected<DType>(named->second)
                                : inferDType(*array, name, key);
    if (!dtype)
      return dtype.takeError();
    Expected<Tensor> tensor = decodeTensor(*array, *dtype, name, key);
    if (!tensor)
      return tensor.takeError();
    archive.set(key, std::move(*tensor));
  }
  return archive;
}

Expected<NpzArchive> weft::readNpz(StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fileError(path, "", "cannot open: " + buffer.getError().message());
  return parseNpz((*buffer)->getBuffer(), path);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

/// The archive's members for the zip writer: each tensor encoded when the
/// writer reaches it, then `__weft_dtypes__` naming every key's dtype.
static std::vector<npz::PendingMember> npzMembers(const NpzArchive &archive) {
  std::vector<npz::PendingMember> members;
  std::vector<std::string> dtypes;
  for (const auto &[key, tensor] : archive.entries()) {
    members.push_back({key + ".npy", npyBytes(tensor),
                       [&tensor = tensor] { return encodeNpy(tensor); }});
    dtypes.push_back(key + ":" + dtypeName(tensor.dtype));
  }
  std::string list = encodeStringArray(dtypes);
  uint64_t size = list.size();
  members.push_back({(kNpzDTypesKey + ".npy").str(), size,
                     [list = std::move(list)] { return list; }});
  return members;
}

Error weft::writeNpz(llvm::raw_ostream &os, const NpzArchive &archive,
                     NpzWriteOptions options) {
  if (Error err = checkWritable(archive))
    return err;
  return npz::writeArchive(os, npzMembers(archive), {options.forceZip64});
}

Error weft::writeNpz(StringRef path, const NpzArchive &archive,
                     NpzWriteOptions options) {
  if (Error err = checkWritable(archive))
    return makeError(path + ": " + llvm::toString(std::move(err)));
  if (Error err =
          npz::writeArchive(path, npzMembers(archive), {options.forceZip64}))
    return makeError(path + ": cannot write: " + llvm::toString(std::move(err)));
  return Error::success();
}
