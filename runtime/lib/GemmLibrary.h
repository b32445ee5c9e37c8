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

} // namespace weft::runtime

#endif // WEFT_RUNTIME_GEMMLIBRARY_H
