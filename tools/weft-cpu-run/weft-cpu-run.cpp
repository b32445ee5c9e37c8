// weft-cpu-run: tiled attention on the host CPU through LLVM's JIT (see
// weft/Tools/Drivers.h; the driver is lib/Tools/CpuRunMain.cpp).
#include "weft/Tools/Drivers.h"

int main(int argc, char **argv) { return weft::weftCpuRunMain(argc, argv); }
