// Checks GEMM descriptors and maps them onto cuBLASLt's column-major problem,
// data types and epilogues; host-only, so unit tests cover it without a GPU.
#include "GemmPlan.h"
#include "Status.h"

namespace weft::runtime {

weft_status checkGemmDesc(const weft_gemm_desc *desc, const char *caller) {
  if (!desc)
    return fail(WEFT_ERROR_INVALID_ARGUMENT, format("%s: desc is NULL", caller));
  const weft_gemm_desc &g = *desc;
  if (g.m <= 0 || g.n <= 0 || g.k <= 0)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: dims must be positive, got m=%d n=%d k=%d", caller, g.m, g.n, g.k));
  if (g.batch < 1)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: batch must be >= 1, got %d", caller, g.batch));
  if ((g.trans_a != 0 && g.trans_a != 1) || (g.trans_b != 0 && g.trans_b != 1))
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: trans_a and trans_b must be 0 or 1, got %d and %d", caller, g.trans_a,
                       g.trans_b));
  if (g.dtype != WEFT_DTYPE_BF16 && g.dtype != WEFT_DTYPE_F16)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: dtype %s (%d) is not supported; GEMM operands are bf16 (%d) or f16 "
                       "(%d), accumulated in f32",
                       caller, dtypeName(g.dtype), static_cast<int>(g.dtype), WEFT_DTYPE_BF16,
                       WEFT_DTYPE_F16));
  // Compared as an int: a C caller can pass any value in the enum's storage.
  int epilogue = static_cast<int>(g.epilogue);
  if (epilogue < WEFT_GEMM_EPILOGUE_NONE || epilogue > WEFT_GEMM_EPILOGUE_DGELU)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: epilogue %d is not a weft_gemm_epilogue (NONE=0, BIAS=1, GELU=2, "
                       "BIAS_GELU=3, BGRAD_A=4, GELU_AUX=5, GELU_AUX_BIAS=6, DGELU=7)",
                       caller, epilogue));
  // One bias gradient or aux matrix per call: batches would need their batch
  // strides (BIAS_BATCH_STRIDE, EPILOGUE_AUX_BATCH_STRIDE), which no plan uses.
  if ((g.epilogue == WEFT_GEMM_EPILOGUE_BGRAD_A || epilogueHasAux(g.epilogue)) && g.batch != 1)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: epilogue %s needs batch=1, got batch=%d", caller,
                       epilogueName(g.epilogue), g.batch));
  if (g.batch > 1) {
    // Products in long long: m * k of two ints cannot overflow it.
    struct Stride {
      const char *name;
      long long value, matrix;
      const char *shape;
      bool used;
    } strides[] = {
        {"stride_a", g.stride_a, 1LL * g.m * g.k, "m*k", true},
        {"stride_b", g.stride_b, 1LL * g.k * g.n, "k*n", true},
        {"stride_c", g.stride_c, 1LL * g.m * g.n, "m*n", g.beta != 0.0f},
        {"stride_d", g.stride_d, 1LL * g.m * g.n, "m*n", true},
    };
    for (const Stride &s : strides)
      if (s.used && s.value < s.matrix)
        return fail(WEFT_ERROR_INVALID_ARGUMENT,
                    format("%s: %s=%lld is smaller than one matrix (%s = %lld) with batch=%d; "
                           "batches would overlap",
                           caller, s.name, s.value, s.shape, s.matrix, g.batch));
  }
  return WEFT_OK;
}

ColumnMajorGemm columnMajorGemm(const weft_gemm_desc &g) {
  ColumnMajorGemm p;
  p.batch = g.batch;
  p.readsC = g.beta != 0.0f;
  bool batched = g.batch > 1;
  // Row-major B: [k,n] is column-major [n,k] (ld n), already op(B)^T; when
  // trans_b it is stored [n,k], column-major [k,n] (ld k), transposed by cuBLASLt.
  p.opFirst = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  p.first = g.trans_b ? GemmOperandLayout{static_cast<unsigned long long>(g.k),
                                          static_cast<unsigned long long>(g.n), g.k, 0}
                      : GemmOperandLayout{static_cast<unsigned long long>(g.n),
                                          static_cast<unsigned long long>(g.k), g.n, 0};
  // Row-major A: [m,k] is column-major [k,m] (ld k) = op(A)^T; when trans_a it
  // is stored [k,m], column-major [m,k] (ld m).
  p.opSecond = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  p.second = g.trans_a ? GemmOperandLayout{static_cast<unsigned long long>(g.m),
                                           static_cast<unsigned long long>(g.k), g.m, 0}
                       : GemmOperandLayout{static_cast<unsigned long long>(g.k),
                                           static_cast<unsigned long long>(g.m), g.k, 0};
  p.d = GemmOperandLayout{static_cast<unsigned long long>(g.n),
                          static_cast<unsigned long long>(g.m), g.n, 0};
  p.c = p.d;
  if (batched) {
    p.first.batchStride = g.stride_b;
    p.second.batchStride = g.stride_a;
    p.d.batchStride = g.stride_d;
    p.c.batchStride = p.readsC ? g.stride_c : g.stride_d;
  }
  return p;
}

cudaDataType_t cudaDataTypeOf(weft_dtype dtype) {
  switch (dtype) {
  case WEFT_DTYPE_BF16:
    return CUDA_R_16BF;
  case WEFT_DTYPE_F16:
    return CUDA_R_16F;
  case WEFT_DTYPE_F32:
    return CUDA_R_32F;
  }
  return CUDA_R_32F; // unreachable after checkGemmDesc
}

cublasLtEpilogue_t cublasEpilogueOf(weft_gemm_epilogue epilogue) {
  switch (epilogue) {
  case WEFT_GEMM_EPILOGUE_NONE:
    return CUBLASLT_EPILOGUE_DEFAULT;
  case WEFT_GEMM_EPILOGUE_BIAS:
    return CUBLASLT_EPILOGUE_BIAS;
  case WEFT_GEMM_EPILOGUE_GELU:
    return CUBLASLT_EPILOGUE_GELU;
  case WEFT_GEMM_EPILOGUE_BIAS_GELU:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  case WEFT_GEMM_EPILOGUE_BGRAD_A:
    // Our A is cuBLASLt's B (columnMajorGemm), and its k is ours: BGRADB sums
    // cuBLASLt's B over k into one value per column of its D (our row).
    return CUBLASLT_EPILOGUE_BGRADB;
  // The aux matrix has D's layout: column-major [n, m] with ld aux_ld, which
  // is row-major [m, n] with row pitch aux_ld, as D^T is D.
  case WEFT_GEMM_EPILOGUE_GELU_AUX:
    return CUBLASLT_EPILOGUE_GELU_AUX;
  case WEFT_GEMM_EPILOGUE_GELU_AUX_BIAS:
    return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  case WEFT_GEMM_EPILOGUE_DGELU:
    return CUBLASLT_EPILOGUE_DGELU;
  }
  return CUBLASLT_EPILOGUE_DEFAULT; // unreachable after checkGemmDesc
}

bool epilogueHasBias(weft_gemm_epilogue epilogue) {
  return epilogue == WEFT_GEMM_EPILOGUE_BIAS || epilogue == WEFT_GEMM_EPILOGUE_BIAS_GELU ||
         epilogue == WEFT_GEMM_EPILOGUE_BGRAD_A || epilogue == WEFT_GEMM_EPILOGUE_GELU_AUX_BIAS;
}

bool epilogueHasAux(weft_gemm_epilogue epilogue) {
  return epilogue == WEFT_GEMM_EPILOGUE_GELU_AUX ||
         epilogue == WEFT_GEMM_EPILOGUE_GELU_AUX_BIAS || epilogue == WEFT_GEMM_EPILOGUE_DGELU;
}

weft_status checkAuxLd(const weft_gemm_desc &desc, long long auxLd, const char *caller) {
  if (auxLd >= desc.n && auxLd % 8 == 0)
    return WEFT_OK;
  return fail(WEFT_ERROR_INVALID_ARGUMENT,
              format("%s: aux_ld=%lld must be at least n=%d and a multiple of 8 (cuBLASLt's "
                     "EPILOGUE_AUX_LD) [%s]",
                     caller, auxLd, desc.n, describeGemm(desc).c_str()));
}

int biasElements(const weft_gemm_desc &desc) {
  if (!epilogueHasBias(desc.epilogue))
    return 0;
  return desc.epilogue == WEFT_GEMM_EPILOGUE_BGRAD_A ? desc.m : desc.n;
}

size_t dtypeBytes(weft_dtype dtype) { return dtype == WEFT_DTYPE_F32 ? 4 : 2; }

const char *dtypeName(weft_dtype dtype) {
  switch (dtype) {
  case WEFT_DTYPE_F32:
    return "f32";
  case WEFT_DTYPE_BF16:
    return "bf16";
  case WEFT_DTYPE_F16:
    return "f16";
  }
  return "?";
}

const char *epilogueName(weft_gemm_epilogue epilogue) {
  switch (epilogue) {
  case WEFT_GEMM_EPILOGUE_NONE:
    return "NONE";
  case WEFT_GEMM_EPILOGUE_BIAS:
    return "BIAS";
  case WEFT_GEMM_EPILOGUE_GELU:
    return "GELU";
  case WEFT_GEMM_EPILOGUE_BIAS_GELU:
    return "BIAS_GELU";
  case WEFT_GEMM_EPILOGUE_BGRAD_A:
    return "BGRAD_A";
  case WEFT_GEMM_EPILOGUE_GELU_AUX:
    return "GELU_AUX";
  case WEFT_GEMM_EPILOGUE_GELU_AUX_BIAS:
    return "GELU_AUX_BIAS";
  case WEFT_GEMM_EPILOGUE_DGELU:
    return "DGELU";
  }
  return "?";
}

const char *cublasStatusName(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_MAPPING_ERROR:
    return "CUBLAS_STATUS_MAPPING_ERROR";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR:
    return "CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_LICENSE_ERROR:
    return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "cublasStatus_t";
}

std::string describeGemm(const weft_gemm_desc &g) {
  std::string text = format("m=%d n=%d k=%d batch=%d trans_a=%d trans_b=%d %s epilogue=%s", g.m,
                            g.n, g.k, g.batch, g.trans_a, g.trans_b, dtypeName(g.dtype),
                            epilogueName(g.epilogue));
  if (g.batch > 1)
    text += format(" strides a=%lld b=%lld c=%lld d=%lld", g.stride_a, g.stride_b, g.stride_c,
                   g.stride_d);
  return text;
}

} // namespace weft::runtime
