// weft-run: a weft function on the reference interpreter, or a package on the
// GPU (see weft/Tools/Drivers.h; the driver is lib/Tools/RunMain.cpp).
#include "weft/Tools/Drivers.h"

int main(int argc, char **argv) { return weft::weftRunMain(argc, argv); }
