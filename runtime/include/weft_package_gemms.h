/* weft_package_gemms.h: a package's cuBLASLt GEMMs for the package runtime
 * (library weft_package_gemms: weft_runtime + the package reader). Each GEMM
 * record becomes a weft_gemm_desc with its planned workspace size and its
 * 64-byte algorithm slot; at first load, weft_package_gemms_select fills the
 * empty slots with weft_gemm_select and writes them back into the package
 * (checksums updated), so later loads skip the selection.
 *
 * How the runtime uses it, at load:
 *   weft_package_gemms_select_file(path, 0, &n);  // once per package and GPU
 *   read the file, weft_package_gemms(bytes, size, gemms, count, &count);
 *   for each entry: weft_gemm_run(&g.desc, &g.algo, a, b, c, d, bias,
 *                                 arena + workspace offset, g.workspace_bytes,
 *                                 stream)
 * An algorithm is meaningful only to the cuBLASLt version and GPU that chose
 * it: a runtime that finds another library version (weft_gemm_library_version)
 * or device calls the selection again with reselect = 1. */
#ifndef WEFT_PACKAGE_GEMMS_H
#define WEFT_PACKAGE_GEMMS_H

#include "weft_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct weft_package_gemm {
  weft_gemm_desc desc;    /* checked with weft_gemm_check */
  size_t workspace_bytes; /* the planned workspace buffer's size; 0 if none */
  int algo_chosen;        /* 1 when the package's slot holds an algorithm */
  weft_gemm_algo algo;    /* the slot's bytes; algo.valid = algo_chosen */
} weft_package_gemm;

/* Reads the package (bounds, checksums, version: every check of the reader)
 * and fills out[0 .. min(capacity, n)) with its n GEMMs in record order;
 * *count = n (call with capacity 0 to learn n). WEFT_ERROR_INVALID_ARGUMENT
 * naming the GEMM and the value when a record is not a runnable descriptor
 * (a dim past INT_MAX, an f32/f64 dtype, ...: weft_gemm_check's message). */
WEFT_API weft_status weft_package_gemms(const void *package, size_t size, weft_package_gemm *out,
                                        unsigned capacity, unsigned *count);

/* Stores `algo`'s 64 bytes in GEMM `gemm`'s slot of the package bytes (in
 * place; the size does not change), marks it chosen and recomputes the
 * package's checksums. Host-only. The package must read as valid. */
WEFT_API weft_status weft_package_gemm_set_algo(void *package, size_t size, unsigned gemm,
                                                const weft_gemm_algo *algo);

/* First load: for every GEMM whose slot is empty (every GEMM with reselect),
 * weft_gemm_select on the current context's device with the planned
 * workspace size as the limit, then stores the bytes as above. *selected
 * (may be NULL) receives how many were chosen. Needs a current context. */
WEFT_API weft_status weft_package_gemms_select(void *package, size_t size, int reselect,
                                               unsigned *selected);

/* The same on a file: reads it, selects, and replaces it (a temporary file
 * beside it, then rename) only when a slot changed. */
WEFT_API weft_status weft_package_gemms_select_file(const char *path, int reselect,
                                                    unsigned *selected);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_PACKAGE_GEMMS_H */
