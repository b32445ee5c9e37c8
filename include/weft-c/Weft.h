/* Weft's C API: parse a forward graph, build its training step and the
 * step's package in memory, with diagnostics as text (docs/c-api.md). C99;
 * no exception and no abort crosses it: every failure is a status and text.
 * A context is used by one thread at a time. */
#ifndef WEFT_C_WEFT_H
#define WEFT_C_WEFT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define WEFT_CAPI_EXPORTED __attribute__((visibility("default")))
#else
#define WEFT_CAPI_EXPORTED
#endif

/* Opaque handles. A module belongs to the context it was parsed in and must
 * be destroyed before it. */
typedef struct weft_context_impl *weft_context_t;
typedef struct weft_module_impl *weft_module_t;

typedef enum {
  WEFT_CAPI_OK = 0,
  /* A null handle or pointer, or a length without text. */
  WEFT_CAPI_ERROR_INVALID_ARGUMENT = 1,
  /* The IR did not parse or verify (diagnostics give file:line:col). */
  WEFT_CAPI_ERROR_PARSE = 2,
  /* An option outside its allowed values (the diagnostic names both). */
  WEFT_CAPI_ERROR_INVALID_OPTION = 3,
  /* The pipeline or the package failed (a pass, the budget, the plan). */
  WEFT_CAPI_ERROR_COMPILE = 4
} weft_capi_status_t;

/* Bytes owned by the caller, released with weftBufferFree. */
typedef struct {
  uint8_t *data;
  size_t size;
} weft_buffer_t;

/* Options of weftCompileTrainingStep; weftTrainingOptionsInit sets the
 * defaults (those of weft-compile --train --emit=package). Strings are
 * read during the call only; NULL means the default. */
typedef struct {
  const char *entry;           /* the forward function returning the loss */
  const char *optimizer;       /* "none" (default) | "adamw" */
  double lr;                   /* AdamW learning rate */
  double weight_decay;         /* AdamW weight decay */
  const char *memory_budget;   /* "20GiB", "1.5GB", "4096"; NULL: none */
  const char *remat;           /* none | full | selective | block | uniform | budget */
  int64_t remat_layers;        /* layers for remat block / uniform */
  const char *weight_copies;   /* converted (default) | carried | split | auto */
  int fuse_elementwise;        /* nonzero: weft-fuse-elementwise */
  const char *target;          /* GPU architecture: "sm_90a" (default) */
  const char *grid;            /* "tp=N" or "dp=M,tp=N"; NULL: one GPU */
  int sequence_parallel;       /* nonzero (with grid): Megatron-LM SP */
  /* The attention tuning table: a path, or "none"; NULL: $WEFT_TUNING_TABLE,
   * else the source tree's bench/attention_tuning.json when it exists. */
  const char *tuning_table;
  /* Step arguments the caller binds outside the arena (weft-compile
   * --bind-arguments): "none" (default, NULL too), "params" (the parameters)
   * or "all" (every tensor argument). The package records them as bound; the
   * runtime is given their device addresses (weft_step_bind_device) and
   * reads them in place, so the arena and the memory budget leave them out.
   * Appended last: a caller built against the earlier struct that fills it
   * with weftTrainingOptionsInit never reads past its own fields. */
  const char *bind_arguments;
  /* Row chunks of the lm_head linear + cross_entropy (weft-compile
   * --loss-chunks): 1 (default) leaves the loss whole, 0 picks the count
   * from memory_budget (whole without one). Appended last, as above. */
  int64_t loss_chunks;
} weft_training_options_t;

/* "0.5.0": the version packages record. */
WEFT_CAPI_EXPORTED const char *weftVersion(void);

/* A context with Weft's dialects and passes registered; NULL only when out
 * of memory. */
WEFT_CAPI_EXPORTED weft_context_t weftContextCreate(void);
WEFT_CAPI_EXPORTED void weftContextDestroy(weft_context_t context);

/* The diagnostics of the context's last call ("file:line:col: error: ..."
 * lines, notes after their error), "" when it had none. Owned by the
 * context, valid until its next call. */
WEFT_CAPI_EXPORTED const char *weftGetDiagnostics(weft_context_t context);

/* Parses and verifies `length` bytes of IR text, named "<input>" (or
 * `source_name`) in diagnostics. On success *module is set. */
WEFT_CAPI_EXPORTED weft_capi_status_t weftModuleParse(weft_context_t context,
                                                      const char *text, size_t length,
                                                      weft_module_t *module);
WEFT_CAPI_EXPORTED weft_capi_status_t weftModuleParseNamed(
    weft_context_t context, const char *text, size_t length, const char *source_name,
    weft_module_t *module);
WEFT_CAPI_EXPORTED void weftModuleDestroy(weft_module_t module);

/* The module's IR as text, into *text (free with weftBufferFree; the bytes
 * are followed by a NUL not counted in size). */
WEFT_CAPI_EXPORTED weft_capi_status_t weftModulePrint(weft_module_t module,
                                                      weft_buffer_t *text);

WEFT_CAPI_EXPORTED void weftTrainingOptionsInit(weft_training_options_t *options);

/* Builds the training step of options->entry on a copy of the module (the
 * module is unchanged, so it may be compiled again with other options) and
 * writes its package, as weft-compile --train --emit=package would, into
 * *package. On failure *package is empty and weftGetDiagnostics says why. */
WEFT_CAPI_EXPORTED weft_capi_status_t weftCompileTrainingStep(
    weft_module_t module, const weft_training_options_t *options,
    weft_buffer_t *package);

/* Packages the forward options->entry itself, with no autodiff (inference:
 * model.eval() / torch.no_grad()), as weft-compile --inference
 * --emit=package would: the step's argument i is the entry's argument i and
 * its result i the entry's result i (any tensors, e.g. logits). The same
 * options as weftCompileTrainingStep; optimizer must be "none", remat
 * "none" and grid NULL (an option error otherwise). On failure *package is
 * empty and weftGetDiagnostics says why. */
WEFT_CAPI_EXPORTED weft_capi_status_t weftCompileInferenceStep(
    weft_module_t module, const weft_training_options_t *options,
    weft_buffer_t *package);

WEFT_CAPI_EXPORTED void weftBufferFree(weft_buffer_t buffer);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_C_WEFT_H */
