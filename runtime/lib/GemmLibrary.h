// The cuBLASLt entry points, resolved from libcublasLt with dlsym at first
// use: the runtime never links cuBLASLt, so it starts where none is installed.
#ifndef WEFT_RUNTIME_GEMMLIBRARY_H
#define WEFT_RUNTIME_GEMMLIBRARY_H

#include "weft_runtime.h"

#include <cublasLt.h>
#include <string>

namespace weft::runtime {

#define WEFT_CUBLASLT_REQUIRED(X)                                                                  \
  X(cublasLtCreate)                                                                                \
  X(cublasLtGetVersion)                                                                            \
  X(cublasLtMatmulDescCreate)                                                                      \
  X(cublasLtMatmulDescDestroy)                                                                     \
  X(cublasLtMatmulDescSetAttribute)                                                                \
  X(cublasLtMatrixLayoutCreate)                                                                    \
  X(cublasLtMatrixLayoutDestroy)                                                                   \
  X(cublasLtMatrixLayoutSetAttribute)                                                              \
  X(cublasLtMatmulPreferenceCreate)                                                                \
  X(cublasLtMatmulPreferenceDestroy)                                                               \
  X(cublasLtMatmulPreferenceSetAttribute)                                                          \
  X(cublasLtMatmulAlgoGetHeuristic)                                                                \
  X(cublasLtMatmulAlgoCheck)                                                                       \
  X(cublasLtMatmul)

// Only improves messages.
#define WEFT_CUBLASLT_OPTIONAL(X) X(cublasLtGetStatusString)

struct CublasLtApi {
#define WEFT_CUBLASLT_MEMBER(name) decltype(&::name) name = nullptr;
  WEFT_CUBLASLT_REQUIRED(WEFT_CUBLASLT_MEMBER)
  WEFT_CUBLASLT_OPTIONAL(WEFT_CUBLASLT_MEMBER)
#undef WEFT_CUBLASLT_MEMBER
  std::string path; // what dlopen loaded, for messages
};

// Loads cuBLASLt once per process ($WEFT_CUBLASLT, else the sonames of CUDA
// 13, 12, then the unversioned name). A failure is not cached, so a later
// call tries again; its message names every path tried and why each failed.
weft_status requireCublasLt(const CublasLtApi *&api, const char *caller);

// "<call> failed: CUBLAS_STATUS_X (n): <cuBLASLt's text> [<problem>]".
weft_status failCublas(const CublasLtApi &api, cublasStatus_t status, const std::string &call,
                       const std::string &problem);

// weft_gemm_select(_aux) and weft_gemm_run(_aux) for a GEMM that targets
// `smCount` SMs (cuBLASLt's SM_COUNT_TARGET; 0: the device's), as a step runs
// the GEMMs beside its collectives (weft_step_options.gemm_sm_margin). An
// algorithm selected for a target runs only with that target. `auxLd` is
// read for the aux epilogues only.
weft_status selectGemmOnSms(const weft_gemm_desc &desc, long long auxLd, int smCount,
                            size_t workspaceLimit, weft_gemm_algo &algo, size_t &workspaceBytes);
weft_status runGemmOnSms(const weft_gemm_desc &desc, const weft_gemm_algo &algo, const void *a,
                         const void *b, const void *c, void *d, const void *bias, void *aux,
                         long long auxLd, int smCount, void *workspace, size_t workspaceBytes,
                         CUstream stream);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_GEMMLIBRARY_H
