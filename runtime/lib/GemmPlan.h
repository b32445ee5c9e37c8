// Host-only half of the GEMMs: descriptor checks and the mapping of a
// row-major weft_gemm_desc onto cuBLASLt's column-major operands and enums.
#ifndef WEFT_RUNTIME_GEMMPLAN_H
#define WEFT_RUNTIME_GEMMPLAN_H

#include "weft_runtime.h"

#include <cublasLt.h>
#include <string>

namespace weft::runtime {

// One column-major matrix operand as cuBLASLt sees it.
struct GemmOperandLayout {
  unsigned long long rows = 0, cols = 0;
  long long ld = 0;
  long long batchStride = 0; // elements; 0 when batch == 1
};

// The cuBLASLt problem equivalent to a row-major desc: D^T = op(B)^T op(A)^T.
// cuBLASLt's A is our B and its B is our A; their ops are our trans flags
// (a row-major [r,c] matrix is a column-major [c,r] one, so no flag flips).
struct ColumnMajorGemm {
  cublasOperation_t opFirst = CUBLAS_OP_N, opSecond = CUBLAS_OP_N;
  GemmOperandLayout first;  // cuBLASLt's A: our B
  GemmOperandLayout second; // cuBLASLt's B: our A
  GemmOperandLayout c, d;   // [n, m] column-major, ld n
  int batch = 1;
  bool readsC = false; // beta != 0; otherwise D's layout stands in for C
};

// WEFT_OK, or WEFT_ERROR_INVALID_ARGUMENT with a message "<caller>: ..."
// naming the offending values. Needs no library.
weft_status checkGemmDesc(const weft_gemm_desc *desc, const char *caller);

// Call only on a desc that passed checkGemmDesc.
ColumnMajorGemm columnMajorGemm(const weft_gemm_desc &desc);

cudaDataType_t cudaDataTypeOf(weft_dtype dtype);
cublasLtEpilogue_t cublasEpilogueOf(weft_gemm_epilogue epilogue);
// Whether the epilogue reads (BIAS*) or writes (BGRAD_A) the bias pointer,
// and its length: n for a bias added to rows, m for A's row sums.
bool epilogueHasBias(weft_gemm_epilogue epilogue);
int biasElements(const weft_gemm_desc &desc);
// Whether the epilogue writes (GELU_AUX*) or reads (DGELU) an aux matrix.
bool epilogueHasAux(weft_gemm_epilogue epilogue);
// WEFT_OK, or INVALID_ARGUMENT naming aux_ld when it is below n or not a
// multiple of 8 (cuBLASLt's EPILOGUE_AUX_LD for a GELU input matrix).
weft_status checkAuxLd(const weft_gemm_desc &desc, long long auxLd, const char *caller);
size_t dtypeBytes(weft_dtype dtype);

const char *dtypeName(weft_dtype dtype);          // "bf16"; "?" if unknown
const char *epilogueName(weft_gemm_epilogue epi); // "BIAS_GELU"; "?" if unknown
// "CUBLAS_STATUS_NOT_SUPPORTED"; "cublasStatus_t" for values it does not know.
const char *cublasStatusName(cublasStatus_t status);

// "m=77 n=130 k=61 batch=1 trans_a=0 trans_b=1 bf16 epilogue=BIAS", for messages.
std::string describeGemm(const weft_gemm_desc &desc);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_GEMMPLAN_H
