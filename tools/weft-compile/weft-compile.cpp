// weft-compile: builds the training step of a forward graph and its memory
// plan (weft-train-pipeline; the driver is lib/Tools/CompileMain.cpp).
#include "weft/RegisterWeftDialects.h"
#include "weft/Tools/Drivers.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  weft::registerWeftDialects(registry);
  weft::registerWeftPasses();
  return weft::weftCompileMain(argc, argv, registry);
}
