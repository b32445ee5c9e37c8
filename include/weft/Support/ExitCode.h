// The exit status every Weft tool returns, so scripts and tests read one
// convention: 0 done, 1 the work failed, 2 bad usage or unreadable input.
#ifndef WEFT_SUPPORT_EXITCODE_H
#define WEFT_SUPPORT_EXITCODE_H

namespace weft {

/// Unscoped so a tool's `int main` returns it as it is.
enum ExitCode : int {
  /// Done (a check passed, the step ran, the files were written).
  kExitOk = 0,
  /// The work failed: a pass, a check, a run, a comparison, a write.
  kExitFailed = 1,
  /// Bad usage or unreadable input: a flag, a value, a file, malformed IR.
  kExitUsage = 2,
};

} // namespace weft

#endif // WEFT_SUPPORT_EXITCODE_H
