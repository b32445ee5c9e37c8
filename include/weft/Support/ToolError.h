// A tool's error line written whole: the ranks weft-run starts share one
// stderr, and a line written in pieces interleaves with another rank's.
#ifndef WEFT_SUPPORT_TOOLERROR_H
#define WEFT_SUPPORT_TOOLERROR_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

namespace weft {

/// Flushes stdout (so results and errors keep their order on one terminal),
/// then writes "TOOL: error: MESSAGE\n" to stderr in one write.
void printToolError(llvm::StringRef tool, const llvm::Twine &message);

} // namespace weft

#endif // WEFT_SUPPORT_TOOLERROR_H
