// Byte sizes: the parser of size options (--memory-budget, weft-remat's
// budget, --gemm-workspace) and the formatter of sizes in diagnostics.
#include "weft/Support/ByteSize.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <iterator>

using llvm::StringRef;

std::optional<int64_t> weft::parseByteSize(StringRef text) {
  text = text.trim();
  size_t numberEnd = 0;
  while (numberEnd < text.size() &&
         (llvm::isDigit(text[numberEnd]) || text[numberEnd] == '.'))
    ++numberEnd;
  StringRef number = text.take_front(numberEnd);
  StringRef unit = text.drop_front(numberEnd).trim();
  if (number.empty() || number.count('.') > 1 || number == ".")
    return std::nullopt;
  std::optional<double> scale = llvm::StringSwitch<std::optional<double>>(unit)
                                    .Case("", 1.0)
                                    .Case("B", 1.0)
                                    .Case("KB", 1e3)
                                    .Case("MB", 1e6)
                                    .Case("GB", 1e9)
                                    .Case("TB", 1e12)
                                    .Case("KiB", 0x1p10)
                                    .Case("MiB", 0x1p20)
                                    .Case("GiB", 0x1p30)
                                    .Case("TiB", 0x1p40)
                                    .Default(std::nullopt);
  if (!scale)
    return std::nullopt;
  // Integers are exact; only a fractional number goes through a double.
  if (!number.contains('.') && *scale == 1.0) {
    int64_t bytes;
    if (number.getAsInteger(10, bytes) || bytes < 0)
      return std::nullopt;
    return bytes;
  }
  double value;
  if (number.getAsDouble(value) || !(value >= 0))
    return std::nullopt;
  double bytes = std::floor(value * *scale);
  if (!(bytes < 0x1p63))
    return std::nullopt;
  return int64_t(bytes);
}

std::string weft::formatBytes(int64_t bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = double(bytes);
  unsigned unit = 0;
  while (std::fabs(value) >= 1024.0 && unit + 1 < std::size(units)) {
    value /= 1024.0;
    ++unit;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << bytes << " bytes";
  if (unit > 0)
    os << llvm::format(" (%.2f %s)", value, units[unit]);
  return text;
}
