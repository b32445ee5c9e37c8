// weft-opt: mlir-opt with the weft dialect, shard and Weft's passes.
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "weft/RegisterWeftDialects.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  weft::registerWeftDialects(registry);
  weft::registerWeftPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Weft optimizer driver\n", registry));
}
