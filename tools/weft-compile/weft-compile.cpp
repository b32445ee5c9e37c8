// weft-compile: builds the training step of a forward graph and its memory
// plan (weft-train-pipeline; see weft/Pipelines.h for the flags).
#include "weft/Pipelines.h"
#include "weft/RegisterWeftDialects.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  weft::registerWeftDialects(registry);
  weft::registerWeftPasses();
  return weft::weftCompileMain(argc, argv, registry);
}
