/* attention_example: runs the AOT units weft-compile --emit=kernels made from
 * attention.mlir (forward, then backward) on the GPU, from C.
 *
 *   attention_example INPUT OUTPUT     run; exit 0 on success, 1 on failure
 *   attention_example --print-sizes    the byte sizes INPUT and OUTPUT have
 *
 * INPUT is raw little-endian arrays, back to back, no header (the shapes are
 * the units' macros): q [B, HQ, S, D] bf16, k [B, HKV, S, D] bf16,
 * v [B, HKV, S, D] bf16, dout [B, HQ, S, D] bf16. OUTPUT is written the same
 * way: out [B, HQ, S, D] bf16, lse [B, HQ, S] f32, dq [B, HQ, S, D] bf16,
 * dk [B, HKV, S, D] bf16, dv [B, HKV, S, D] bf16.
 *
 * The units load kernels through weft_runtime, which dlopens libcuda; this
 * program resolves the few driver calls it makes itself (memory, copies,
 * a stream) the same way, so it starts and reports cleanly without a GPU. */
#include "example_attention_0.h"
#include "example_attention_grad_0.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FWD(x) example_attention_0_##x
#define BWD(x) example_attention_grad_0_##x

enum {
  kBf16Bytes = 2,
  kF32Bytes = 4,
  kQElements = FWD(BATCH) * FWD(Q_HEADS) * FWD(Q_LEN) * FWD(HEAD_DIM),
  kKvElements = FWD(BATCH) * FWD(KV_HEADS) * FWD(K_LEN) * FWD(HEAD_DIM),
  kLseElements = FWD(BATCH) * FWD(Q_HEADS) * FWD(Q_LEN),
};

/* The driver calls this program makes, resolved from libcuda.so.1. */
typedef struct driver_api {
  void *library;
  CUresult (*mem_alloc)(CUdeviceptr *, size_t);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*copy_to_device)(CUdeviceptr, const void *, size_t);
  CUresult (*copy_to_host)(void *, CUdeviceptr, size_t);
  CUresult (*stream_create)(CUstream *, unsigned);
  CUresult (*stream_synchronize)(CUstream);
  CUresult (*stream_destroy)(CUstream);
} driver_api;

static int resolve(driver_api *api, void **slot, const char *name) {
  *slot = dlsym(api->library, name);
  if (!*slot)
    fprintf(stderr, "attention_example: libcuda.so.1 lacks %s: %s\n", name, dlerror());
  return *slot != NULL;
}

/* Called after the units loaded, so libcuda is known to be there. */
static int open_driver(driver_api *api) {
  memset(api, 0, sizeof *api);
  api->library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!api->library) {
    fprintf(stderr, "attention_example: cannot open libcuda.so.1: %s\n", dlerror());
    return 0;
  }
  return resolve(api, (void **)&api->mem_alloc, "cuMemAlloc_v2") &&
         resolve(api, (void **)&api->mem_free, "cuMemFree_v2") &&
         resolve(api, (void **)&api->copy_to_device, "cuMemcpyHtoD_v2") &&
         resolve(api, (void **)&api->copy_to_host, "cuMemcpyDtoH_v2") &&
         resolve(api, (void **)&api->stream_create, "cuStreamCreate") &&
         resolve(api, (void **)&api->stream_synchronize, "cuStreamSynchronize") &&
         resolve(api, (void **)&api->stream_destroy, "cuStreamDestroy_v2");
}

/* Prints a failed call with the runtime's message; returns 0 on failure. */
static int check(CUresult result, const char *what) {
  if (result == CUDA_SUCCESS)
    return 1;
  const char *message = weft_last_error();
  fprintf(stderr, "attention_example: %s failed (CUresult %d): %s\n", what, (int)result,
          message && *message ? message : "(no message from the runtime)");
  return 0;
}

/* The arrays of INPUT and OUTPUT, in file order. */
typedef struct tensor {
  const char *name;
  size_t bytes;
  void *host;
  CUdeviceptr device;
} tensor;

enum { kQ, kK, kV, kDout, kOut, kLse, kDq, kDk, kDv, kDelta, kTensors };
enum { kFirstInput = kQ, kInputs = 4, kFirstOutput = kOut, kOutputs = 5 };

static void describe_tensors(tensor *t) {
  const size_t q = (size_t)kQElements * kBf16Bytes, kv = (size_t)kKvElements * kBf16Bytes;
  const tensor all[kTensors] = {
      {"q", q, NULL, 0},           {"k", kv, NULL, 0},
      {"v", kv, NULL, 0},          {"dout", q, NULL, 0},
      {"out", q, NULL, 0},         {"lse", (size_t)kLseElements * kF32Bytes, NULL, 0},
      {"dq", q, NULL, 0},          {"dk", kv, NULL, 0},
      {"dv", kv, NULL, 0},         {"delta", BWD(workspace_bytes)(), NULL, 0},
  };
  memcpy(t, all, sizeof all);
}

static size_t total_bytes(const tensor *t, int first, int count) {
  size_t total = 0;
  for (int i = first; i < first + count; ++i)
    total += t[i].bytes;
  return total;
}

static int read_input(const char *path, tensor *t) {
  FILE *file = fopen(path, "rb");
  if (!file) {
    fprintf(stderr, "attention_example: cannot open %s\n", path);
    return 0;
  }
  int ok = 1;
  for (int i = kFirstInput; ok && i < kFirstInput + kInputs; ++i) {
    t[i].host = malloc(t[i].bytes);
    if (!t[i].host || fread(t[i].host, 1, t[i].bytes, file) != t[i].bytes) {
      fprintf(stderr, "attention_example: %s is too short: %s needs %zu bytes (the whole "
                      "input %zu; see --print-sizes)\n",
              path, t[i].name, t[i].bytes, total_bytes(t, kFirstInput, kInputs));
      ok = 0;
    }
  }
  if (ok && fgetc(file) != EOF) {
    fprintf(stderr, "attention_example: %s is longer than the %zu bytes of q, k, v, dout\n",
            path, total_bytes(t, kFirstInput, kInputs));
    ok = 0;
  }
  fclose(file);
  return ok;
}

static int write_output(const char *path, const tensor *t) {
  FILE *file = fopen(path, "wb");
  if (!file) {
    fprintf(stderr, "attention_example: cannot create %s\n", path);
    return 0;
  }
  int ok = 1;
  for (int i = kFirstOutput; ok && i < kFirstOutput + kOutputs; ++i)
    ok = fwrite(t[i].host, 1, t[i].bytes, file) == t[i].bytes;
  if (fclose(file) != 0)
    ok = 0;
  if (!ok)
    fprintf(stderr, "attention_example: writing %s failed\n", path);
  return ok;
}

/* Device buffers, copies in, forward then backward on one stream, copies out. */
static int run(const driver_api *api, FWD(module) * forward, BWD(module) * backward,
               tensor *t) {
  CUstream stream = NULL;
  int ok = check(api->stream_create(&stream, 0), "cuStreamCreate");
  for (int i = 0; ok && i < kTensors; ++i) {
    char what[64];
    snprintf(what, sizeof what, "cuMemAlloc(%s, %zu bytes)", t[i].name, t[i].bytes);
    ok = check(api->mem_alloc(&t[i].device, t[i].bytes), what);
  }
  for (int i = kFirstInput; ok && i < kFirstInput + kInputs; ++i)
    ok = check(api->copy_to_device(t[i].device, t[i].host, t[i].bytes), "cuMemcpyHtoD");
  ok = ok && check(FWD(launch)(forward, stream, t[kQ].device, t[kK].device, t[kV].device,
                               t[kOut].device, t[kLse].device),
                   "example_attention_0_launch");
  ok = ok && check(BWD(launch)(backward, stream, t[kQ].device, t[kK].device, t[kV].device,
                               t[kOut].device, t[kDout].device, t[kLse].device,
                               t[kDelta].device, t[kDq].device, t[kDk].device,
                               t[kDv].device),
                   "example_attention_grad_0_launch");
  ok = ok && check(api->stream_synchronize(stream), "cuStreamSynchronize");
  for (int i = kFirstOutput; ok && i < kFirstOutput + kOutputs; ++i) {
    t[i].host = malloc(t[i].bytes);
    ok = t[i].host != NULL &&
         check(api->copy_to_host(t[i].host, t[i].device, t[i].bytes), "cuMemcpyDtoH");
  }
  for (int i = 0; i < kTensors; ++i)
    if (t[i].device)
      ok = check(api->mem_free(t[i].device), "cuMemFree") && ok;
  if (stream)
    ok = check(api->stream_destroy(stream), "cuStreamDestroy") && ok;
  return ok;
}

int main(int argc, char **argv) {
  tensor t[kTensors];
  describe_tensors(t);
  if (argc == 2 && strcmp(argv[1], "--print-sizes") == 0) {
    printf("input_bytes %zu\noutput_bytes %zu\n", total_bytes(t, kFirstInput, kInputs),
           total_bytes(t, kFirstOutput, kOutputs));
    return 0;
  }
  if (argc != 3) {
    fprintf(stderr, "usage: %s INPUT OUTPUT | --print-sizes\n", argv[0]);
    return 2;
  }
  FWD(module) *forward = NULL;
  BWD(module) *backward = NULL;
  driver_api api;
  memset(&api, 0, sizeof api);
  int ok = read_input(argv[1], t) &&
           check(FWD(load)(&forward), "example_attention_0_load") &&
           check(BWD(load)(&backward), "example_attention_grad_0_load") &&
           open_driver(&api) && run(&api, forward, backward, t) &&
           write_output(argv[2], t);
  ok = check(BWD(unload)(backward), "example_attention_grad_0_unload") && ok;
  ok = check(FWD(unload)(forward), "example_attention_0_unload") && ok;
  if (api.library)
    dlclose(api.library);
  for (int i = 0; i < kTensors; ++i)
    free(t[i].host);
  if (ok)
    printf("attention_example: wrote %s\n", argv[2]);
  return ok ? 0 : 1;
}
