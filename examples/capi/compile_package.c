/* The C API's example: parse a forward graph, compile its training step
 * (or, with mode=inference, the forward alone) to a package in memory and
 * write it to a file, as weft-compile --train (--inference) --emit=package
 * would (test/CAPI checks both give the same bytes).
 *
 *   weft-capi-example FILE.mlir ENTRY OUT.weftpkg [key=value ...]
 *
 * keys: mode (training | inference), optimizer, memory_budget, remat,
 * weight_copies, target, grid, tuning_table, fuse_elementwise,
 * sequence_parallel. */
#include "weft-c/Weft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *statusName(weft_capi_status_t status) {
  switch (status) {
  case WEFT_CAPI_OK:
    return "ok";
  case WEFT_CAPI_ERROR_INVALID_ARGUMENT:
    return "invalid argument";
  case WEFT_CAPI_ERROR_PARSE:
    return "parse error";
  case WEFT_CAPI_ERROR_INVALID_OPTION:
    return "invalid option";
  case WEFT_CAPI_ERROR_COMPILE:
    return "compile error";
  }
  return "unknown status";
}

/* The whole file in a malloc'd buffer; NULL when it cannot be read. */
static char *readFile(const char *path, size_t *length) {
  FILE *file = fopen(path, "rb");
  if (!file)
    return NULL;
  char *text = NULL;
  size_t size = 0, capacity = 0, got;
  do {
    if (size == capacity) {
      capacity = capacity ? 2 * capacity : 65536;
      char *grown = realloc(text, capacity);
      if (!grown) {
        free(text);
        fclose(file);
        return NULL;
      }
      text = grown;
    }
    got = fread(text + size, 1, capacity - size, file);
    size += got;
  } while (got > 0);
  fclose(file);
  *length = size;
  return text;
}

/* Sets the option `key=value` names; 0 when the key is not one of them. */
static int setOption(weft_training_options_t *options, const char *key,
                     const char *value) {
  if (!strcmp(key, "optimizer"))
    options->optimizer = value;
  else if (!strcmp(key, "memory_budget"))
    options->memory_budget = value;
  else if (!strcmp(key, "remat"))
    options->remat = value;
  else if (!strcmp(key, "weight_copies"))
    options->weight_copies = value;
  else if (!strcmp(key, "target"))
    options->target = value;
  else if (!strcmp(key, "grid"))
    options->grid = value;
  else if (!strcmp(key, "tuning_table"))
    options->tuning_table = value;
  else if (!strcmp(key, "fuse_elementwise"))
    options->fuse_elementwise = atoi(value);
  else if (!strcmp(key, "sequence_parallel"))
    options->sequence_parallel = atoi(value);
  else
    return 0;
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s FILE.mlir ENTRY OUT.weftpkg [key=value ...]\n", argv[0]);
    return 2;
  }
  weft_training_options_t options;
  weftTrainingOptionsInit(&options);
  options.entry = argv[2];
  int inference = 0;
  for (int i = 4; i < argc; ++i) {
    char *equals = strchr(argv[i], '=');
    if (!equals) {
      fprintf(stderr, "expected key=value, got '%s'\n", argv[i]);
      return 2;
    }
    *equals = '\0';
    if (!strcmp(argv[i], "mode")) {
      if (strcmp(equals + 1, "training") && strcmp(equals + 1, "inference")) {
        fprintf(stderr, "mode must be training or inference, got '%s'\n", equals + 1);
        return 2;
      }
      inference = !strcmp(equals + 1, "inference");
      continue;
    }
    if (!setOption(&options, argv[i], equals + 1)) {
      fprintf(stderr, "unknown option '%s'\n", argv[i]);
      return 2;
    }
  }
  size_t length = 0;
  char *text = readFile(argv[1], &length);
  if (!text) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }
  printf("weft %s\n", weftVersion());

  weft_context_t context = weftContextCreate();
  weft_module_t module = NULL;
  weft_buffer_t package = {NULL, 0};
  weft_capi_status_t status = weftModuleParseNamed(context, text, length, argv[1], &module);
  free(text);
  if (status == WEFT_CAPI_OK) {
    printf("parsed %s\n", argv[1]);
    status = inference ? weftCompileInferenceStep(module, &options, &package)
                       : weftCompileTrainingStep(module, &options, &package);
  }
  int exitCode = 1;
  if (status != WEFT_CAPI_OK) {
    fprintf(stderr, "%s:\n%s", statusName(status), weftGetDiagnostics(context));
  } else {
    /* Notes (kernels without an image) come with a successful package. */
    fputs(weftGetDiagnostics(context), stderr);
    FILE *out = fopen(argv[3], "wb");
    if (out && fwrite(package.data, 1, package.size, out) == package.size &&
        fclose(out) == 0) {
      printf("package: %zu bytes\n", package.size);
      exitCode = 0;
    } else {
      fprintf(stderr, "cannot write %s\n", argv[3]);
    }
  }
  weftBufferFree(package);
  weftModuleDestroy(module);
  weftContextDestroy(context);
  return exitCode;
}
