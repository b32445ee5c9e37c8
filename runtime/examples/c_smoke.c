/* c_smoke.c: a C program using weft_runtime.h and the static runtime; checks
 * the host-only calls and that weft_init answers (without a GPU: with
 * WEFT_ERROR_DRIVER_MISSING). Exit status 0 when every answer is as expected. */
#include "weft_runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

static void expect(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "c_smoke: FAILED: %s (last error: %s)\n", what, weft_last_error());
    ++failures;
  }
}

int main(void) {
  static const char ptx[] = ".version 8.0\n.target sm_90a\n.address_size 64\n";
  weft_image_kind kind = 0;
  int sm = 0;
  expect(weft_image_check(ptx, sizeof(ptx), &kind, &sm) == WEFT_OK, "PTX image accepted");
  expect(kind == WEFT_IMAGE_PTX && sm == 90, "PTX kind and sm_90");
  expect(strcmp(weft_last_error(), "") == 0, "no message after success");

  expect(weft_image_check(ptx, sizeof(ptx) - 1, &kind, &sm) == WEFT_ERROR_INVALID_IMAGE,
         "PTX without its NUL rejected");
  expect(strstr(weft_last_error(), "NUL") != NULL, "message names the missing NUL");

  weft_status init = weft_init();
  expect(init == WEFT_OK || init == WEFT_ERROR_DRIVER_MISSING || init == WEFT_ERROR_CUDA,
         "weft_init answers with OK, DRIVER_MISSING or CUDA");
  if (init == WEFT_ERROR_DRIVER_MISSING) {
    const char *library = getenv("WEFT_LIBCUDA");
    expect(strstr(weft_last_error(), library && *library ? library : "libcuda.so.1") != NULL,
           "DRIVER_MISSING names the driver library");
  }
  printf("c_smoke: weft %s, weft_init: %s %s\n", weft_runtime_version(), weft_status_name(init),
         weft_last_error());
  return failures == 0 ? 0 : 1;
}
