/* ctest aot_metadata_mismatch: example_attention_0.c compiled against a copy
 * of its header whose Q_LEN was changed (see CMakeLists.txt) must refuse to
 * load, before touching the driver, naming both values. */
#include "example_attention_0.h"

#include <stdio.h>
#include <string.h>

int main(void) {
  example_attention_0_module *module = NULL;
  CUresult result = example_attention_0_load(&module);
  printf("example_attention_0_load: CUresult %d: %s\n", (int)result, weft_last_error());
  if (result == CUDA_SUCCESS || module != NULL) {
    printf("FAIL: a unit whose header disagrees with its image loaded\n");
    return 1;
  }
  if (result != CUDA_ERROR_INVALID_VALUE) {
    printf("FAIL: expected CUDA_ERROR_INVALID_VALUE (the version-mismatch status), got %d\n",
           (int)result);
    return 1;
  }
  return 0;
}
