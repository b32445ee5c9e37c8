// weft-compile --emit=package: a host schedule (weft_plan.step) and the kernel
// images it needs, as a pkg::Package ready for writePackage.
#ifndef WEFT_TARGET_PACKAGE_PLANPACKAGE_H
#define WEFT_TARGET_PACKAGE_PLANPACKAGE_H

#include "weft/Conversion/WeftToPlan/BuildPlan.h"
#include "weft/Package/Package.h"

#include "llvm/Support/raw_ostream.h"

namespace weft {

/// Exports `built.step` and compiles its attention images (gpu.module ->
/// PTX -> cubin with ptxas) for `chip`. Kernels whose image is not made here
/// (every non-attention kernel, and attention when ptxas is missing) are
/// recorded without one; `notes` gets a line saying how many and why.
mlir::FailureOr<pkg::Package> makePackage(const HostSchedule &built,
                                          llvm::StringRef chip,
                                          llvm::StringRef weftVersion,
                                          llvm::raw_ostream &notes);

} // namespace weft

#endif // WEFT_TARGET_PACKAGE_PLANPACKAGE_H
