// Byte sizes as users write them ("96MiB", "1.5GB", "4096") and as messages
// print them ("100663296 bytes (96.00 MiB)"): one parser and one formatter for
// every option and diagnostic that takes or reports a size.
#ifndef WEFT_SUPPORT_BYTESIZE_H
#define WEFT_SUPPORT_BYTESIZE_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace weft {

/// "96MiB" -> 100663296. Accepts a non-negative decimal number with an
/// optional unit: B, KB/MB/GB/TB (powers of 1000), KiB/MiB/GiB/TiB (powers
/// of 1024), surrounding blanks ignored; the result is rounded down to whole
/// bytes. nullopt on anything else or on a value past 2^63 - 1.
std::optional<int64_t> parseByteSize(llvm::StringRef text);

/// "100663296 bytes (96.00 MiB)"; below 1 KiB just "N bytes".
std::string formatBytes(int64_t bytes);

} // namespace weft

#endif // WEFT_SUPPORT_BYTESIZE_H
