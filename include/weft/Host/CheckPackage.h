// Checking a package without a GPU (weft-run --check FILE.weftpkg).
#ifndef WEFT_HOST_CHECKPACKAGE_H
#define WEFT_HOST_CHECKPACKAGE_H

#include "llvm/ADT/StringRef.h"

namespace weft {
/// Reads and checks the package at `path`, prints its summary; returns the
/// ExitCode (0 valid, 1 invalid, 2 unreadable). Kernels without an image
/// are an error unless `allowMissingImages`, then a warning.
int checkPackageFile(llvm::StringRef path, bool allowMissingImages);
} // namespace weft

#endif // WEFT_HOST_CHECKPACKAGE_H
