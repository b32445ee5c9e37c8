// Host-only checks of cubin (CUDA ELF) and PTX images, shared by
// weft_image_check and weft_module_load.
#ifndef WEFT_RUNTIME_IMAGE_H
#define WEFT_RUNTIME_IMAGE_H

#include "weft_runtime.h"

namespace weft::runtime {

// Fills `info` or records why the bytes are not a loadable image.
weft_status inspectImage(const void *image, size_t size, weft_image_info &info);
// WEFT_ERROR_ARCH_MISMATCH naming both sms when `info` cannot run on `deviceSm`.
weft_status checkImageArch(const weft_image_info &info, int deviceSm);
// "cubin" or "PTX", for messages.
const char *imageKindName(weft_image_kind kind);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_IMAGE_H
