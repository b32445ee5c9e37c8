// weft-run --check FILE.weftpkg (see CheckPackage.cpp).
#ifndef WEFT_TOOLS_WEFTRUN_CHECKPACKAGE_H
#define WEFT_TOOLS_WEFTRUN_CHECKPACKAGE_H

#include "llvm/ADT/StringRef.h"

namespace weft {
/// Reads and checks the package at `path`, prints its summary; returns the
/// exit code (0 valid, 1 invalid, 2 unreadable). Kernels without an image
/// are an error unless `allowMissingImages`, then a warning.
int checkPackageFile(llvm::StringRef path, bool allowMissingImages);
} // namespace weft

#endif // WEFT_TOOLS_WEFTRUN_CHECKPACKAGE_H
