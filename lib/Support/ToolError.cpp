// printToolError: one write per error line (see ToolError.h).
#include "weft/Support/ToolError.h"

#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

void weft::printToolError(llvm::StringRef tool, const llvm::Twine &message) {
  llvm::outs().flush();
  std::string line;
  llvm::raw_string_ostream os(line);
  llvm::WithColor::error(os, tool) << message << "\n";
  llvm::errs() << line;
  llvm::errs().flush();
}
