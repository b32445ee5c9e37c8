/* weft_runtime.h: C API of Weft's CUDA runtime (driver API, no MLIR). It loads
 * libcuda.so.1 at run time, so programs linking it start on machines without a
 * GPU; every call returns a weft_status and leaves a message for
 * weft_last_error() on failure. */
#ifndef WEFT_RUNTIME_H
#define WEFT_RUNTIME_H

#include <stddef.h>

#include <cuda.h>

#define WEFT_RUNTIME_VERSION "0.5.0"

#if defined(_WIN32)
#define WEFT_API
#else
#define WEFT_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum weft_status {
  WEFT_OK = 0,
  WEFT_ERROR_DRIVER_MISSING = 1,   /* libcuda.so.1 could not be loaded / symbol missing */
  WEFT_ERROR_CUDA = 2,             /* a driver call failed; weft_last_cu_result() has the CUresult */
  WEFT_ERROR_INVALID_IMAGE = 3,    /* not a cubin (ELF, EM_CUDA=190) nor NUL-terminated PTX text */
  WEFT_ERROR_ARCH_MISMATCH = 4,    /* image built for another sm than the device */
  WEFT_ERROR_INVALID_ARGUMENT = 5,
  WEFT_ERROR_NOT_FOUND = 6,        /* kernel name not in module */
  WEFT_ERROR_VERSION_MISMATCH = 7, /* metadata of an AOT image does not match its header */
  WEFT_ERROR_LIBRARY_MISSING = 8,  /* a CUDA library (cuBLASLt) could not be loaded / symbol missing */
  WEFT_ERROR_CUBLAS = 9,           /* a cuBLASLt call failed; the message names the cublasStatus_t */
  WEFT_ERROR_NCCL = 10,            /* an NCCL call failed or a communicator reported an error */
  WEFT_ERROR_TIMEOUT = 11,         /* a collective or rendezvous did not finish in time */
  WEFT_ERROR_PEER_FAILED = 12,     /* another rank of the run failed or died */
} weft_status;

/* Thread-local message of the last failing call on this thread, "" after a
 * successful call. Valid until the next weft_* call on this thread. */
WEFT_API const char *weft_last_error(void);
/* CUresult of the last failing driver call on this thread, 0 otherwise. */
WEFT_API int weft_last_cu_result(void);
/* Records `message` (copied) as this thread's last error with status `s` and
 * returns `s`: for generated launchers (AOT units) that find an error
 * themselves, e.g. a metadata mismatch (WEFT_ERROR_VERSION_MISMATCH). */
WEFT_API weft_status weft_set_error(weft_status s, const char *message);
/* For launchers that must return CUresult: CUDA -> the driver's code (this
 * thread's weft_last_cu_result(), CUDA_ERROR_UNKNOWN if none was recorded);
 * DRIVER_MISSING -> CUDA_ERROR_NO_DEVICE; INVALID_IMAGE ->
 * CUDA_ERROR_INVALID_IMAGE; ARCH_MISMATCH -> CUDA_ERROR_NO_BINARY_FOR_GPU;
 * NOT_FOUND -> CUDA_ERROR_NOT_FOUND; OK -> CUDA_SUCCESS; others ->
 * CUDA_ERROR_INVALID_VALUE. */
WEFT_API CUresult weft_status_to_cu_result(weft_status s);
/* Name of a status, e.g. "WEFT_ERROR_CUDA"; "WEFT_STATUS_UNKNOWN" otherwise. */
WEFT_API const char *weft_status_name(weft_status s);
WEFT_API const char *weft_runtime_version(void); /* WEFT_RUNTIME_VERSION */

/* dlopen("libcuda.so.1") (or $WEFT_LIBCUDA when set), resolves the driver
 * entry points, then cuInit(0). Idempotent and thread-safe; every call below
 * that needs the driver calls it itself. */
WEFT_API weft_status weft_init(void);
/* Makes a context current on the calling thread: keeps the current one if any
 * (e.g. PyTorch's), else retains device `ordinal`'s primary context (once per
 * process) and sets it current. */
WEFT_API weft_status weft_context_ensure(int ordinal);
/* Compute capability of the current context's device, e.g. 90 for 9.0. */
WEFT_API weft_status weft_device_arch(int *sm);
/* cuMemGetInfo for the current context's device. */
WEFT_API weft_status weft_device_memory(size_t *free_bytes, size_t *total_bytes);

typedef enum weft_image_kind { WEFT_IMAGE_CUBIN = 1, WEFT_IMAGE_PTX = 2 } weft_image_kind;

/* Host-only (no driver): classifies and checks an image and reads its sm.
 * cubin: ELF64 little-endian, e_machine 190 (EM_CUDA), program and section
 * header tables inside `size`. PTX: NUL within `size`, a `.version` line and a
 * `.target sm_XX[a|f]` line. Anything else: WEFT_ERROR_INVALID_IMAGE. */
WEFT_API weft_status weft_image_check(const void *image, size_t size, weft_image_kind *kind,
                                      int *sm);

/* What weft_image_check reads, plus the arch variant, which decides where the
 * image may run. */
typedef struct weft_image_info {
  weft_image_kind kind;
  int sm;              /* e.g. 90 */
  int arch_specific;   /* 1 for sm_90a-style targets: runs only on exactly `sm` */
  int family_specific; /* 1 for sm_100f-style PTX: same major, minor >= */
  int elf_abi_version; /* cubin: e_ident[EI_ABIVERSION] (7: CUDA <= 12, 8: CUDA 13); PTX: 0 */
} weft_image_info;
WEFT_API weft_status weft_image_inspect(const void *image, size_t size, weft_image_info *info);
/* Host-only: WEFT_OK when an image described by `info` can run on a device of
 * compute capability `device_sm` (e.g. 90), else WEFT_ERROR_ARCH_MISMATCH
 * naming both. cubin: same major, device minor >= image minor (exact when arch
 * specific); PTX: device >= image (exact for 'a', same major for 'f'). */
WEFT_API weft_status weft_image_check_arch(const weft_image_info *info, int device_sm);

typedef struct weft_module weft_module;
/* Checks the image, compares its sm with the current context's device (an
 * sm_90a image needs exactly 9.0, else WEFT_ERROR_ARCH_MISMATCH naming both),
 * loads it with cuModuleLoadDataEx and, on failure, puts the JIT error log in
 * the message. Needs a current context (weft_context_ensure). */
WEFT_API weft_status weft_module_load(const void *image, size_t size, weft_module **out);
WEFT_API weft_status weft_module_unload(weft_module *module); /* NULL is fine */
WEFT_API weft_status weft_module_function(weft_module *module, const char *name, CUfunction *out);

/* cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES); checks `bytes` against the
 * device's MAX_SHARED_MEMORY_PER_BLOCK_OPTIN minus the kernel's static shared
 * memory and names the three numbers when too large. */
WEFT_API weft_status weft_function_set_dynamic_smem(CUfunction fn, size_t bytes);
/* Validates (grid/block dims > 0 and within the hardware limits, block threads
 * <= 1024 and <= the kernel's limit, dynamic_smem <= the kernel's dynamic
 * shared-memory limit, args != NULL when the kernel has parameters), then
 * cuLaunchKernel. */
WEFT_API weft_status weft_launch(CUfunction fn, const unsigned grid[3], const unsigned block[3],
                                 size_t dynamic_smem, CUstream stream, void **args);
/* weft_launch as a programmatic dependent of the kernel before it on `stream`
 * (cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION):
 * it may start once every CTA of that kernel ran griddepcontrol.launch_dependents
 * or exited, and must run griddepcontrol.wait before it reads that kernel's
 * results. For kernels built for it (a unit's "programmatic" kernels, such
 * as the decode combine kernel); a driver without cuLaunchKernelEx launches
 * plainly. */
WEFT_API weft_status weft_launch_dependent(CUfunction fn, const unsigned grid[3],
                                           const unsigned block[3], size_t dynamic_smem,
                                           CUstream stream, void **args);

/* cuTensorMapEncodeTiled for a row-major tensor: rank 1..5; dims[rank] and
 * box[rank] innermost first, as the driver wants; strides_bytes[rank - 1] the
 * byte strides of dims 1..rank-1 (may be NULL when rank is 1). Element strides
 * 1, no interleave, 128-byte L2 promotion, out-of-bounds elements read as zero.
 * Checks what the driver requires and names the value that broke it: `map`
 * 64-byte aligned, global address 16-byte aligned, dims 1..2^32, strides
 * multiples of 16, < 2^40 and not overlapping the previous dimension, box dims
 * 1..256 with inner bytes a multiple of 16 and <= the swizzle span
 * (32/64/128 bytes for SWIZZLE_32B/64B/128B), element type supported. The
 * driver library is needed; a context is not. */
WEFT_API weft_status weft_tensor_map_encode_tiled(CUtensorMap *map, CUtensorMapDataType dtype,
                                                  unsigned rank, void *global_address,
                                                  const unsigned long long *dims,
                                                  const unsigned long long *strides_bytes,
                                                  const unsigned *box,
                                                  CUtensorMapSwizzle swizzle);

/* ---- GEMMs through cuBLASLt ------------------------------------------------
 * libcublasLt is opened with dlopen at first use: $WEFT_CUBLASLT when set, else
 * libcublasLt.so.13, libcublasLt.so.12, libcublasLt.so. Semantics are
 * PyTorch's row-major ones; inside, the runtime asks cuBLASLt (column-major)
 * for D^T = op(B)^T op(A)^T, which has the same bytes as row-major D, so no
 * operand is copied or transposed. */

typedef enum weft_dtype {
  WEFT_DTYPE_F32 = 1,
  WEFT_DTYPE_BF16 = 2,
  WEFT_DTYPE_F16 = 3,
} weft_dtype;

typedef enum weft_gemm_epilogue {
  WEFT_GEMM_EPILOGUE_NONE = 0,
  WEFT_GEMM_EPILOGUE_BIAS = 1,      /* + bias[n], the same for every row (and batch) */
  WEFT_GEMM_EPILOGUE_GELU = 2,      /* gelu_tanh(x), as F.gelu(approximate='tanh') */
  WEFT_GEMM_EPILOGUE_BIAS_GELU = 3, /* gelu_tanh(x + bias[n]) */
  /* D unchanged; bias[m] = sum over k of op(A)[m, k] is written (a linear's
   * bias gradient next to its weight gradient dY^T X: trans_a, batch 1).
   * cuBLASLt's CUBLASLT_EPILOGUE_BGRADB on the column-major problem. */
  WEFT_GEMM_EPILOGUE_BGRAD_A = 4,
  /* The GELU epilogues with an aux matrix [m, n], row-major with row pitch
   * aux_ld (>= n, a multiple of 8 elements), of `dtype`, batch 1; given to
   * weft_gemm_run_aux. GELU_AUX: D = gelu_tanh(x) and aux = x, the
   * pre-activation the backward reads (cuBLASLt's GELU_AUX); GELU_AUX_BIAS
   * the same with x + bias[n] (GELU_AUX_BIAS). DGELU: D = x * gelu_tanh'(aux),
   * aux read (cuBLASLt's DGELU): the data gradient through the GELU. */
  WEFT_GEMM_EPILOGUE_GELU_AUX = 5,
  WEFT_GEMM_EPILOGUE_GELU_AUX_BIAS = 6,
  WEFT_GEMM_EPILOGUE_DGELU = 7,
} weft_gemm_epilogue;

/* D[m,n] = epilogue(alpha * op(A)[m,k] op(B)[k,n] + beta * C[m,n]), each
 * operand contiguous row-major: A is [m,k] ([k,m] when trans_a), B is [k,n]
 * ([n,k] when trans_b), C and D are [m,n]. A, B, C, D and the bias have
 * `dtype` (bf16 or f16); products accumulate in f32. C is read only when
 * beta != 0 (then c may be NULL and stride_c is ignored). Batches are strided:
 * batch i of A starts at a + i * stride_a elements, and so on. */
typedef struct weft_gemm_desc {
  int m, n, k;
  int batch; /* >= 1 */
  long long stride_a, stride_b, stride_c, stride_d; /* elements; checked when batch > 1 */
  int trans_a, trans_b;                             /* 0 or 1 */
  weft_dtype dtype;
  weft_gemm_epilogue epilogue;
  float alpha, beta;
} weft_gemm_desc;

/* A cublasLtMatmulAlgo_t as cuBLASLt returns it (64 bytes), stored in packages
 * as-is; valid is 1 once weft_gemm_select filled it. It is meaningful only to
 * the cuBLASLt version that made it (weft_gemm_library_version) and for the
 * same descriptor; weft_gemm_run checks it with cublasLtMatmulAlgoCheck. */
typedef struct weft_gemm_algo {
  unsigned char bytes[64];
  int valid;
} weft_gemm_algo;

/* Host-only: checks a descriptor (dims > 0, batch >= 1, trans 0/1, dtype bf16
 * or f16, a known epilogue, batch 1 for BGRAD_A and the aux epilogues,
 * strides of batched operands >= their matrix) and
 * names the values that break it. No library is loaded. */
WEFT_API weft_status weft_gemm_check(const weft_gemm_desc *desc);
/* sizeof(weft_gemm_desc) and sizeof(weft_gemm_algo), for bindings to check
 * their layout against. */
WEFT_API size_t weft_gemm_desc_size(void);
WEFT_API size_t weft_gemm_algo_size(void);
/* Loads cuBLASLt (no GPU needed) and returns cublasLtGetVersion(), e.g. 130100;
 * WEFT_ERROR_LIBRARY_MISSING naming every path tried when it cannot. */
WEFT_API weft_status weft_gemm_library_version(size_t *version);
/* Chooses an algorithm for `desc` on the current context's device with
 * cublasLtMatmulAlgoGetHeuristic: the best one whose workspace fits
 * `workspace_limit` bytes, for operands 16-byte aligned. `workspace_bytes`
 * receives what it needs (plan that much, 256-byte aligned). */
WEFT_API weft_status weft_gemm_select(const weft_gemm_desc *desc, size_t workspace_limit,
                                      weft_gemm_algo *algo, size_t *workspace_bytes);
/* Enqueues the GEMM on `stream` (cublasLtMatmul). a, b, d (and c when beta != 0)
 * are device pointers, 16-byte aligned; bias is required for the BIAS
 * epilogues (n elements, 16-byte aligned) and BGRAD_A (m elements, written)
 * and must be NULL otherwise;
 * workspace (256-byte aligned) holds at least what weft_gemm_select reported.
 * Thread-safe; descriptors are cached per device and descriptor. */
WEFT_API weft_status weft_gemm_run(const weft_gemm_desc *desc, const weft_gemm_algo *algo,
                                   const void *a, const void *b, const void *c, void *d,
                                   const void *bias, void *workspace, size_t workspace_bytes,
                                   CUstream stream);
/* The aux epilogues (GELU_AUX, GELU_AUX_BIAS, DGELU) take the aux matrix and
 * its row pitch aux_ld in elements (cuBLASLt's EPILOGUE_AUX_POINTER and
 * EPILOGUE_AUX_LD): weft_gemm_select_aux chooses an algorithm for that pitch
 * (weft_gemm_select assumes aux_ld = n), weft_gemm_run_aux runs it; aux is a
 * device pointer, 16-byte aligned, written by GELU_AUX* and read by DGELU.
 * weft_gemm_run refuses an aux epilogue, weft_gemm_run_aux any other one. */
WEFT_API weft_status weft_gemm_select_aux(const weft_gemm_desc *desc, long long aux_ld,
                                          size_t workspace_limit, weft_gemm_algo *algo,
                                          size_t *workspace_bytes);
WEFT_API weft_status weft_gemm_run_aux(const weft_gemm_desc *desc, const weft_gemm_algo *algo,
                                       const void *a, const void *b, const void *c, void *d,
                                       const void *bias, void *aux, long long aux_ld,
                                       void *workspace, size_t workspace_bytes,
                                       CUstream stream);

/* ---- Running a compiled step (a package of weft-compile --emit=package) ---
 * weft_step_load reads the package (bounds, checksums, format version), runs
 * its schedule checks, refuses a package built for another arch than the device,
 * allocates ONE arena of the planned size (cuMemAlloc; or takes the caller's, see
 * weft_step_options.arena), copies the package's
 * initial data, loads every kernel image (the cubin when it runs on the
 * device, else the PTX), resolves every launch's arguments (buffers -> arena
 * addresses, immediates, tensor maps encoded once) and chooses the GEMM
 * algorithms the package left open (buffers bound by the caller get their
 * addresses later: weft_step_bind_device). weft_step_run then issues the schedule
 * with no allocation: kernels, cuBLASLt GEMMs and events on the step's
 * streams, or one cuGraphLaunch with the graph option. */

typedef struct weft_step weft_step;

typedef struct weft_step_options {
  int device;        /* ordinal for weft_context_ensure (a current context wins) */
  int graph;         /* capture the schedule into a CUDA graph at the first run, replay it */
  int debug_buffers; /* each buffer its own cuMemAlloc, filled with 0xFF (NaN for
                        floats) when its live range ends, so reads of dead data show */
  /* Added after the fields above (the runtime's version stays the compiler's,
   * which AOT units compare). Zero-initialise the whole struct
   * (`weft_step_options o = {0};`): zero fields keep the earlier behaviour,
   * and fields added later will be appended after these.
   * weft_step_options_size() gives the size compiled in. */
  /* The caller's stream (e.g. PyTorch's current stream; CU_STREAM_LEGACY for
   * the legacy default stream, whose handle is 0): a run starts after the work
   * queued on it so far (an event recorded on it, which the step's stream 0
   * waits for; the other streams fork from stream 0 as always), and work queued
   * on it after the run starts after the whole step (every stream joins stream
   * 0, whose end the caller's stream waits for). weft_step_copy_in_device /
   * weft_step_copy_out_device are queued on it. 0: the step's own stream 0. */
  CUstream stream;
  /* The caller's memory for the arena (e.g. a framework's allocation): the
   * runtime then allocates no arena, refuses `arena_bytes` smaller than the
   * planned arena (naming both) and an arena not aligned to the package's
   * buffer alignment, and never frees it. The memory must outlive the step:
   * launches, tensor maps and GEMMs hold its addresses. Not with
   * debug_buffers. 0 (and arena_bytes 0): one cuMemAlloc of the planned size. */
  CUdeviceptr arena;
  size_t arena_bytes;
  /* How a partitioned step moves its all-gathers and all-to-alls
   * (weft_collective_engine): 0 takes $WEFT_COLLECTIVES ("nccl",
   * "copy-engine", "auto"; unset: NCCL). Every rank must choose the same. */
  int collectives;
  /* The priority of the streams that carry a partitioned step's collectives
   * (weft_comm_priority): 0 takes $WEFT_COMM_PRIORITY ("normal", "high";
   * unset: normal). High: the block scheduler gives a collective's kernels
   * the SMs that free up before the waiting compute's blocks, so a
   * collective beside a GEMM is not starved until the GEMM drains. */
  int comm_priority;
  /* SMs a GEMM leaves to the collectives while one of them runs beside it
   * (cuBLASLt's SM_COUNT_TARGET = the device's SMs - margin, for the GEMMs
   * the schedule issues between a collective on another stream and the wait
   * for it; their algorithms are chosen again for that target): > 0 that
   * many, 0 takes $WEFT_GEMM_SM_MARGIN (unset: none), < 0 none. */
  int gemm_sm_margin;
} weft_step_options;

/* The priority of a partitioned step's communication streams. */
typedef enum weft_comm_priority {
  WEFT_COMM_PRIORITY_DEFAULT = 0,
  WEFT_COMM_PRIORITY_NORMAL = 1,
  WEFT_COMM_PRIORITY_HIGH = 2
} weft_comm_priority;

/* The engine of a partitioned step's data-movement collectives. Copy
 * engine: every rank's arena is mapped into every other rank's context
 * (CUDA IPC, one node, peer access between every pair of devices), and an
 * all-gather or all-to-all pulls the peers' blocks with cuMemcpyDtoDAsync
 * (the GPU's copy engines, no SMs), ordered by flags the ranks write into
 * each other's memory with stream memory operations; reductions stay on
 * NCCL. Auto: the copy engine when every rank can use it, else NCCL. */
typedef enum weft_collective_engine {
  WEFT_COLLECTIVES_DEFAULT = 0,
  WEFT_COLLECTIVES_NCCL = 1,
  WEFT_COLLECTIVES_COPY_ENGINE = 2,
  WEFT_COLLECTIVES_AUTO = 3
} weft_collective_engine;

/* sizeof(weft_step_options) as the library was compiled, for bindings. */
WEFT_API size_t weft_step_options_size(void);

typedef enum weft_step_role {
  WEFT_ROLE_PARAMETER = 0,
  WEFT_ROLE_OPTIMIZER_STATE = 1,
  WEFT_ROLE_INPUT = 2,
  WEFT_ROLE_OUTPUT = 3,
  WEFT_ROLE_GRADIENT = 4,
  WEFT_ROLE_ACTIVATION = 5,
  WEFT_ROLE_TEMPORARY = 6,
  WEFT_ROLE_WORKSPACE = 7,
} weft_step_role;

#define WEFT_STEP_MAX_RANK 8

/* One planned buffer. Pointers stay valid until weft_step_free. */
typedef struct weft_step_buffer {
  const char *name; /* "arg0", "s12", "ws7": the schedule's buffer symbols */
  const char *type; /* "tensor<2x16xbf16>" or "" when the package has none */
  weft_step_role role;
  size_t offset, size; /* bytes in the arena */
  unsigned first, last; /* live schedule indices, inclusive */
  int arg, result;      /* the step function's argument / result, -1 if none */
  int rank;             /* parsed from type; -1 when type is empty */
  long long shape[WEFT_STEP_MAX_RANK];
  const char *dtype;    /* "bf16", "f16", "f32", "f64", "i64", "i32", "i16", "i1", "" */
  int has_initial_data; /* the package holds its bytes, copied in at load */
  int copy_of;          /* a weight copy: its master's argument, -1 otherwise.
                           Master f32: a carried copy (bind it as the master
                           rounded to nearest even). Master i16, copy bf16: a
                           split f32 master, the master argument its low half
                           and this its high half (weft/Support/FloatBits.h:
                           splitMasterHigh / splitMasterLow / joinMaster) */
} weft_step_buffer;

/* What cuMemGetInfo saw: used = total - free at each point. */
typedef struct weft_step_memory {
  size_t planned_bytes;    /* the package's arena (sum of buffer sizes in debug mode) */
  size_t total_bytes;      /* device memory */
  size_t used_before_load; /* before the arena was allocated */
  size_t used_after_arena; /* right after the arena's cuMemAlloc */
  size_t used_after_load;  /* after modules, tensor maps and GEMM selection */
  size_t used_peak;        /* the largest reading, also after each run */
} weft_step_memory;

/* Loads a package from memory (copied) or a file; see above. The options may
 * be NULL (device 0, no graph, no debug buffers). Needs the driver and a GPU:
 * without one, WEFT_ERROR_DRIVER_MISSING or WEFT_ERROR_CUDA with the reason. */
WEFT_API weft_status weft_step_load(const void *package, size_t size,
                                    const weft_step_options *options, weft_step **out);
WEFT_API weft_status weft_step_load_file(const char *path, const weft_step_options *options,
                                         weft_step **out);
/* Host-only: everything weft_step_load does before its first driver call, for
 * a device of compute capability `device_sm` (e.g. 90): reading, checks, arch
 * refusal, argument resolution, arena layout. The result can be inspected
 * (buffers, weft_step_describe) but not run. */
WEFT_API weft_status weft_step_prepare(const void *package, size_t size, int device_sm,
                                       const weft_step_options *options, weft_step **out);
/* Frees the arena (or the debug buffers), modules, graph, streams and events. */
WEFT_API weft_status weft_step_free(weft_step *step); /* NULL is fine */

WEFT_API size_t weft_step_buffer_count(const weft_step *step);
WEFT_API weft_status weft_step_buffer_info(const weft_step *step, size_t index,
                                           weft_step_buffer *info);
/* The buffer named `name`; WEFT_ERROR_NOT_FOUND otherwise. */
WEFT_API weft_status weft_step_find_buffer(const weft_step *step, const char *name,
                                           size_t *index);
/* Copies `bytes` (exactly the buffer's size) from the host into a buffer
 * (synchronous); weft_step_read copies it back after the work queued so far.
 * Both first wait for the caller's stream when options.stream is set. */
WEFT_API weft_status weft_step_bind(weft_step *step, size_t index, const void *host,
                                    size_t bytes);
WEFT_API weft_status weft_step_read(weft_step *step, size_t index, void *host, size_t bytes);
WEFT_API weft_status weft_step_device_pointer(const weft_step *step, size_t index,
                                              CUdeviceptr *pointer);
/* Queues a device-to-device copy of `bytes` (exactly the buffer's size) from
 * `source` into a buffer, or out of a buffer into `destination`, on the
 * caller's stream (options.stream) or else the step's stream 0, ordered with
 * the runs queued there; nothing waits. The other pointer is any device
 * memory of the step's context (e.g. a PyTorch tensor's data_ptr()). */
WEFT_API weft_status weft_step_copy_in_device(weft_step *step, size_t index, CUdeviceptr source,
                                              size_t bytes);
WEFT_API weft_status weft_step_copy_out_device(weft_step *step, size_t index,
                                               CUdeviceptr destination, size_t bytes);
/* Buffers bound by the caller (a package compiled with weft-compile
 * --bind-arguments, e.g. a framework's parameters): arguments that take no
 * arena bytes (offset 0) and that every run reads (and, when the step
 * updates the argument in place, writes) in the caller's memory.
 * weft_step_buffer_bound tells whether buffer `index` is one.
 * weft_step_bind_device gives it `bytes` at `pointer` (device memory of the
 * step's context, e.g. a PyTorch parameter's data_ptr()), checked: the
 * buffer is bound, bytes is exactly its size, the pointer is not null and
 * is 16-byte aligned (what cuBLASLt and TMA assume), and, when `dtype` is
 * not NULL, it is the buffer's element type ("bf16", "f32", ...); a refusal
 * names the buffer and both values. A run (weft_step_run, _enqueue,
 * _run_timed) refuses to start while a bound buffer has no memory. Binding
 * another address re-fills the launch arguments and tensor maps that use the
 * buffer and drops a captured CUDA graph (waiting for stream 0 first), which
 * the next run captures again; the same address again changes nothing. The
 * memory must stay valid while runs that use it are queued. */
WEFT_API weft_status weft_step_buffer_bound(const weft_step *step, size_t index, int *bound);
WEFT_API weft_status weft_step_bind_device(weft_step *step, size_t index, CUdeviceptr pointer,
                                           size_t bytes, const char *dtype);
/* Runs the schedule once and waits for it. */
WEFT_API weft_status weft_step_run(weft_step *step);
/* Queues one run (as weft_step_run does, on the caller's stream when
 * options.stream is set) and returns without waiting: a kernel's failure then
 * shows at the caller's next synchronisation. A partitioned step's
 * collectives are then not watched: wait with weft_comm_synchronize. */
WEFT_API weft_status weft_step_enqueue(weft_step *step);
WEFT_API weft_status weft_step_memory_info(weft_step *step, weft_step_memory *memory);
/* One schedule entry, for timing and listings. Pointers stay valid until
 * weft_step_free. */
typedef enum weft_step_entry_kind {
  WEFT_ENTRY_LAUNCH = 0,
  WEFT_ENTRY_GEMM = 1,
  WEFT_ENTRY_EVENT = 2,
  WEFT_ENTRY_COLLECTIVE = 3,
} weft_step_entry_kind;
typedef struct weft_step_entry {
  weft_step_entry_kind kind;
  const char *name; /* the kernel's name; "gemm"; "record_event" / "wait_event";
                       "all_reduce" / "all_gather" / "reduce_scatter" /
                       "all_to_all" / "send_recv" */
  unsigned index;   /* the schedule index it runs at */
  unsigned stream;
  long long m, n, k, batch; /* GEMM dims, 0 otherwise */
} weft_step_entry;
/* Entries in issue order (launches, GEMMs, events). */
WEFT_API size_t weft_step_entry_count(const weft_step *step);
WEFT_API weft_status weft_step_entry_info(const weft_step *step, size_t entry,
                                          weft_step_entry *info);
/* Runs the schedule once (never as a graph) with a timing event recorded on
 * stream 0 before the first entry and after every entry, the other streams
 * joined into stream 0 at each (which serialises them there), and waits for
 * it. entry_ms[i] (count = weft_step_entry_count) receives the time between
 * the events around entry i: its device time plus any idle gap before it.
 * *total_ms (may be NULL) the time from the first event to the last. */
WEFT_API weft_status weft_step_run_timed(weft_step *step, float *entry_ms, size_t count,
                                         float *total_ms);
/* Runs the schedule once (never as a graph) with an event recorded on each
 * entry's own stream after it, so the streams overlap as in a plain run, and
 * waits for it. end_ms[i] receives the time from the step's start to the
 * point where entry i's stream finished it (an entry starts where the one
 * before it on its stream ended); *total_ms (may be NULL) the whole step. */
WEFT_API weft_status weft_step_run_traced(weft_step *step, float *end_ms, size_t count,
                                          float *total_ms);
/* A text listing of the resolved step (arena, buffers, launches with their
 * resolved arguments, GEMMs, events), for tests and --dry-run; valid until
 * the next call on `step`. */
WEFT_API const char *weft_step_describe(weft_step *step);

/* ---- Several GPUs: NCCL communicators and partitioned (SPMD) steps --------
 * libnccl is opened with dlopen at first use: $WEFT_LIBNCCL when set, else
 * libnccl.so.2, else libnccl.so. One process per GPU; every process loads the
 * same package (weft-compile --grid=...), whose grid must have as many ranks
 * as the run. Every wait (joining, splitting, a step's collectives) polls
 * ncclCommGetAsyncError, the peer-failure flag (weft_comm_peer_failed) and a
 * timeout, and on any of them aborts the communicators (ncclCommAbort) and
 * fails with a message naming this rank, the step, the collective in flight
 * and the cause. */

typedef struct weft_nccl_id {
  char bytes[128]; /* an ncclUniqueId */
} weft_nccl_id;

/* Loads NCCL and returns ncclGetVersion (e.g. 22809 for 2.28.9). */
WEFT_API weft_status weft_nccl_version(int *version);
/* ncclGetUniqueId: made by one rank, handed to every other one (weft-run's
 * rendezvous sends it over TCP). */
WEFT_API weft_status weft_nccl_unique_id(weft_nccl_id *id);

typedef struct weft_comm weft_comm;
/* The communicator of `world_size` ranks for this process' rank, on the
 * current context's device (weft_context_ensure first). Waits (polling) for
 * every rank to join, at most `timeout_s` seconds; the same timeout bounds
 * every later wait on the communicator (weft_comm_set_timeout changes it). */
WEFT_API weft_status weft_comm_init(const weft_nccl_id *id, int world_size, int rank,
                                    double timeout_s, weft_comm **out);
WEFT_API weft_status weft_comm_set_timeout(weft_comm *comm, double timeout_s);
/* Thread-safe, from any thread (a heartbeat): rank `peer` failed for
 * `reason`; the next or current wait on `comm` aborts and fails naming it. */
WEFT_API void weft_comm_peer_failed(weft_comm *comm, int peer, const char *reason);
/* ncclCommAbort of every communicator (no wait); later calls fail. */
WEFT_API weft_status weft_comm_abort(weft_comm *comm);
/* Finalizes (waiting, with the timeout) and destroys; aborts instead when
 * that fails or the communicator was aborted. NULL is fine. */
WEFT_API weft_status weft_comm_free(weft_comm *comm);
WEFT_API int weft_comm_rank(const weft_comm *comm);
WEFT_API int weft_comm_size(const weft_comm *comm);

typedef enum weft_collective_kind {
  WEFT_ALL_REDUCE = 0,
  WEFT_ALL_GATHER = 1,     /* each rank sends count / ranks elements */
  WEFT_REDUCE_SCATTER = 2, /* each rank receives count / ranks elements */
  WEFT_ALL_TO_ALL = 3,     /* block j (count / ranks elements) of the input goes
                              to rank j, block i of the output comes from rank i
                              (torch's all_to_all_single); not in place */
  WEFT_SEND_RECV = 4       /* a shift: weft_comm_shift */
} weft_collective_kind;
typedef enum weft_reduction {
  WEFT_REDUCE_SUM = 0,
  WEFT_REDUCE_MAX = 1,
  WEFT_REDUCE_MIN = 2,
  WEFT_REDUCE_AVG = 3
} weft_reduction;
/* One collective over every rank, enqueued on `stream` (as a step's are):
 * `count` elements of the whole tensor, the package's convention; kinds 0-3
 * (`reduction` 0-3 always, used by all-reduce and reduce-scatter). For
 * benchmarks and tests of the collectives alone. */
WEFT_API weft_status weft_comm_collective(weft_comm *comm, weft_collective_kind kind,
                                          const void *send, void *recv, size_t count,
                                          weft_dtype dtype, weft_reduction reduction,
                                          CUstream stream);
/* A shift over every rank (WEFT_SEND_RECV, shard.shift): each rank sends its
 * `count` elements to rank + `shift` and receives `count` elements from
 * rank - `shift`; with `rotate` the ranks wrap around, without it a rank with
 * no source gets zeros. 0 < |shift| < ranks; send and recv distinct. */
WEFT_API weft_status weft_comm_shift(weft_comm *comm, const void *send, void *recv, size_t count,
                                     weft_dtype dtype, int shift, int rotate, CUstream stream);
/* Every rank waits here until all arrived (a one-element all-reduce on the
 * communicator's own stream, waited for with the watch): lines ranks up
 * before a timed step. */
WEFT_API weft_status weft_comm_barrier(weft_comm *comm);
/* Waits for `stream` with the communicator's watch (errors, peers, timeout). */
WEFT_API weft_status weft_comm_synchronize(weft_comm *comm, CUstream stream);
/* Every rank (a collective call) maps its `bytes` at `base`, the start of
 * one cuMemAlloc of the same size on every rank, into every other rank with
 * CUDA IPC; weft_comm_collective's all-gathers and all-to-alls whose input
 * lies in it then run on the copy engines, as a step's do in its arena
 * (weft_collective_engine), at the same offsets on every rank, one at a time
 * (one stream). `engine` as weft_step_options.collectives: copy engine
 * forced fails naming each rank that cannot; auto maps nothing then.
 * *active: whether the region is mapped. For benchmarks and tests. */
WEFT_API weft_status weft_comm_map_region(weft_comm *comm, CUdeviceptr base, size_t bytes,
                                          int engine, int *active);

/* weft_step_load for a partitioned package: refuses a package whose grid has
 * another number of ranks than `comm` (naming both), splits the grid's axis
 * communicators, and runs the collectives of the plan on them. weft_step_run
 * then waits with the communicator's watch. */
WEFT_API weft_status weft_step_load_spmd(const void *package, size_t size,
                                         const weft_step_options *options, weft_comm *comm,
                                         weft_step **out);
/* Host-only counterpart of weft_step_prepare for rank `rank` of `world_size`. */
WEFT_API weft_status weft_step_prepare_spmd(const void *package, size_t size, int device_sm,
                                            const weft_step_options *options, int world_size,
                                            int rank, weft_step **out);
/* The package's grid: *axes sizes in dims[0..*axes) (0 axes: one GPU), and
 * the axis its split buffers are split along (-1 when none). */
WEFT_API weft_status weft_step_grid(const weft_step *step, int *axes,
                                    long long dims[WEFT_STEP_MAX_RANK], int *split_axis);
/* The dimension of the whole (global) tensor that buffer `index` holds this
 * rank's block of, along the grid's split axis; -1 when replicated. */
WEFT_API weft_status weft_step_buffer_split(const weft_step *step, size_t index, int *dim);
/* The engine a loaded partitioned step's all-gathers and all-to-alls use:
 * WEFT_COLLECTIVES_NCCL or WEFT_COLLECTIVES_COPY_ENGINE (auto resolved). */
WEFT_API weft_status weft_step_collective_engine(const weft_step *step, int *engine);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_RUNTIME_H */
