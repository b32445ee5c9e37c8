// weft-opt: mlir-opt with the weft dialect, shard, Weft's passes and named
// pipelines, the test passes, and --weft-diff-each-pass.
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "weft/Conversion/WeftToPlan/BuildPlan.h"
#include "weft/Pipelines.h"
#include "weft/RegisterWeftDialects.h"
#include "weft/Tools/Drivers.h"

#include "TestPasses.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  weft::registerWeftDialects(registry);
  weft::registerWeftPasses();
  // The plan dialect and weft-build-plan (the host schedule of a step).
  weft::registerPlanDialect(registry);
  weft::registerBuildPlanPass();
  weft::registerWeftPipelines();
  weft::registerWeftTestPasses();
  weft::registerDiffEachPassCLOptions();
  return mlir::asMainReturnCode(
      weft::weftOptMain(argc, argv, "Weft optimizer driver\n", registry));
}
