// GEMM runtime host-side: descriptor and argument checks name their values,
// the row-major -> column-major cuBLASLt mapping computes PyTorch's product
// (checked by emulating cuBLASLt's indexing), enum mappings, and the library
// loading paths (own ctest processes set WEFT_CUBLASLT).
#include "GemmPlan.h"
#include "RuntimeTestSupport.h"

#include <gtest/gtest.h>
#include <random>
#include <string>
#include <vector>

using namespace weft::runtime;

namespace {

std::string lastError() { return weft_last_error(); }

bool cublasLtOverridden() {
  const char *value = std::getenv("WEFT_CUBLASLT");
  return value && *value;
}

weft_gemm_desc validDesc() {
  weft_gemm_desc desc = {};
  desc.m = 77;
  desc.n = 130;
  desc.k = 61;
  desc.batch = 1;
  desc.dtype = WEFT_DTYPE_BF16;
  desc.epilogue = WEFT_GEMM_EPILOGUE_NONE;
  desc.alpha = 1.0f;
  return desc;
}

// Expects `status` INVALID_ARGUMENT with every piece in the message.
void expectInvalid(weft_status status, std::initializer_list<const char *> pieces) {
  EXPECT_EQ(status, WEFT_ERROR_INVALID_ARGUMENT) << lastError();
  for (const char *piece : pieces)
    EXPECT_NE(lastError().find(piece), std::string::npos) << "missing '" << piece << "' in: "
                                                          << lastError();
}

TEST(Gemm, StructSizes) {
  EXPECT_EQ(weft_gemm_desc_size(), sizeof(weft_gemm_desc));
  EXPECT_EQ(sizeof(weft_gemm_desc), 72u); // 4 ints, 4 long longs, 6 4-byte fields
  EXPECT_EQ(weft_gemm_algo_size(), sizeof(weft_gemm_algo));
  EXPECT_EQ(sizeof(weft_gemm_algo::bytes), sizeof(cublasLtMatmulAlgo_t));
}

TEST(Gemm, StatusNames) {
  EXPECT_STREQ(weft_status_name(WEFT_ERROR_LIBRARY_MISSING), "WEFT_ERROR_LIBRARY_MISSING");
  EXPECT_STREQ(weft_status_name(WEFT_ERROR_CUBLAS), "WEFT_ERROR_CUBLAS");
  EXPECT_EQ(weft_status_to_cu_result(WEFT_ERROR_CUBLAS), CUDA_ERROR_INVALID_VALUE);
  EXPECT_STREQ(cublasStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
  EXPECT_STREQ(cublasStatusName(CUBLAS_STATUS_EXECUTION_FAILED),
               "CUBLAS_STATUS_EXECUTION_FAILED");
  EXPECT_STREQ(cublasStatusName(static_cast<cublasStatus_t>(99)), "cublasStatus_t");
}

TEST(Gemm, DescriptorChecks) {
  weft_gemm_desc desc = validDesc();
  EXPECT_EQ(weft_gemm_check(&desc), WEFT_OK) << lastError();
  EXPECT_EQ(lastError(), "");
  expectInvalid(weft_gemm_check(nullptr), {"weft_gemm_check", "desc is NULL"});

  desc = validDesc();
  desc.k = 0;
  expectInvalid(weft_gemm_check(&desc), {"m=77 n=130 k=0"});
  desc = validDesc();
  desc.m = -3;
  expectInvalid(weft_gemm_check(&desc), {"m=-3"});
  desc = validDesc();
  desc.batch = 0;
  expectInvalid(weft_gemm_check(&desc), {"batch must be >= 1, got 0"});
  desc = validDesc();
  desc.trans_b = 2;
  expectInvalid(weft_gemm_check(&desc), {"got 0 and 2"});
  desc = validDesc();
  desc.dtype = WEFT_DTYPE_F32;
  expectInvalid(weft_gemm_check(&desc), {"dtype f32 (1) is not supported", "bf16 (2)", "f16 (3)"});
  desc = validDesc();
  desc.dtype = static_cast<weft_dtype>(0);
  expectInvalid(weft_gemm_check(&desc), {"dtype ? (0)"});
  desc = validDesc();
  desc.epilogue = static_cast<weft_gemm_epilogue>(8);
  expectInvalid(weft_gemm_check(&desc), {"epilogue 8 is not a weft_gemm_epilogue"});
  desc = validDesc();
  desc.epilogue = static_cast<weft_gemm_epilogue>(-1);
  expectInvalid(weft_gemm_check(&desc), {"epilogue -1"});
}

TEST(Gemm, BatchStrideChecks) {
  weft_gemm_desc desc = validDesc();
  desc.batch = 3;
  desc.stride_a = 77LL * 61;
  desc.stride_b = 61LL * 130;
  desc.stride_d = 77LL * 130;
  EXPECT_EQ(weft_gemm_check(&desc), WEFT_OK) << lastError(); // beta 0: stride_c unused
  desc.beta = 0.5f;
  expectInvalid(weft_gemm_check(&desc),
                {"stride_c=0 is smaller than one matrix (m*n = 10010) with batch=3"});
  desc.stride_c = 77LL * 130;
  EXPECT_EQ(weft_gemm_check(&desc), WEFT_OK) << lastError();
  desc.stride_b = 61LL * 130 - 1;
  expectInvalid(weft_gemm_check(&desc), {"stride_b=7929", "(k*n = 7930)"});
  desc.stride_b = 61LL * 130;
  desc.stride_a = 5;
  expectInvalid(weft_gemm_check(&desc), {"stride_a=5", "m*k = 4697"});
  // Strides are not read for one batch.
  desc.batch = 1;
  EXPECT_EQ(weft_gemm_check(&desc), WEFT_OK) << lastError();
  // Large dims: products do not overflow int.
  desc = validDesc();
  desc.m = desc.n = desc.k = 1 << 20;
  desc.batch = 2;
  desc.stride_a = desc.stride_b = desc.stride_d = 1LL << 40;
  EXPECT_EQ(weft_gemm_check(&desc), WEFT_OK) << lastError();
  desc.stride_d = (1LL << 40) - 1;
  expectInvalid(weft_gemm_check(&desc), {"stride_d=1099511627775", "1099511627776"});
}

TEST(Gemm, RunArgumentChecks) {
  weft_gemm_desc desc = validDesc();
  weft_gemm_algo algo = {};
  algo.valid = 1;
  auto *a = reinterpret_cast<void *>(0x10000), *b = reinterpret_cast<void *>(0x20000),
       *c = reinterpret_cast<void *>(0x30000), *d = reinterpret_cast<void *>(0x40000),
       *bias = reinterpret_cast<void *>(0x50000), *ws = reinterpret_cast<void *>(0x60000);
  expectInvalid(weft_gemm_run(nullptr, &algo, a, b, c, d, nullptr, nullptr, 0, nullptr),
                {"weft_gemm_run: desc is NULL"});
  expectInvalid(weft_gemm_run(&desc, nullptr, a, b, c, d, nullptr, nullptr, 0, nullptr),
                {"algo is NULL"});
  weft_gemm_algo unset = {};
  expectInvalid(weft_gemm_run(&desc, &unset, a, b, c, d, nullptr, nullptr, 0, nullptr),
                {"algo is not valid (valid=0)", "weft_gemm_select"});
  expectInvalid(weft_gemm_run(&desc, &algo, nullptr, b, c, d, nullptr, nullptr, 0, nullptr),
                {"a is NULL", "m=77 n=130 k=61"});
  expectInvalid(weft_gemm_run(&desc, &algo, a, b, c, nullptr, nullptr, nullptr, 0, nullptr),
                {"d is NULL"});
  desc.beta = 1.0f;
  expectInvalid(weft_gemm_run(&desc, &algo, a, b, nullptr, d, nullptr, nullptr, 0, nullptr),
                {"c is NULL but beta=1"});
  desc.beta = 0.0f;
  auto *odd = reinterpret_cast<void *>(0x20008);
  expectInvalid(weft_gemm_run(&desc, &algo, a, odd, c, d, nullptr, nullptr, 0, nullptr),
                {"b 0x20008 is not 16-byte aligned"});
  desc.epilogue = WEFT_GEMM_EPILOGUE_BIAS_GELU;
  expectInvalid(weft_gemm_run(&desc, &algo, a, b, c, d, nullptr, nullptr, 0, nullptr),
                {"epilogue BIAS_GELU needs a bias of n=130 elements, got NULL"});
  desc.epilogue = WEFT_GEMM_EPILOGUE_GELU;
  expectInvalid(weft_gemm_run(&desc, &algo, a, b, c, d, bias, nullptr, 0, nullptr),
                {"bias 0x50000 given but epilogue GELU adds none"});
  expectInvalid(weft_gemm_run(&desc, &algo, a, b, c, d, nullptr, nullptr, 4096, nullptr),
                {"workspace is NULL but workspace_bytes=4096"});
  auto *unalignedWs = reinterpret_cast<void *>(0x60010);
  expectInvalid(weft_gemm_run(&desc, &algo, a, b, c, d, nullptr, unalignedWs, 4096, nullptr),
                {"workspace 0x60010 is not 256-byte aligned"});
  // Valid arguments get as far as the library or the driver; with no driver
  // (this machine) the failure says which.
  if (!weft::runtime::test::driverLibraryPresent() && !weft::runtime::test::driverOverridden() &&
      !cublasLtOverridden()) {
    weft_status status = weft_gemm_run(&desc, &algo, a, b, c, d, nullptr, ws, 4096, nullptr);
    EXPECT_TRUE(status == WEFT_ERROR_DRIVER_MISSING || status == WEFT_ERROR_LIBRARY_MISSING)
        << weft_status_name(status) << ": " << lastError();
  }
}

// dW = dY^T X with db = sum over k of dY^T's rows: the bias has m elements,
// is written, and one GEMM has one (no batches).
TEST(Gemm, BiasGradientChecks) {
  weft_gemm_desc desc = validDesc();
  desc.trans_a = 1;
  desc.epilogue = WEFT_GEMM_EPILOGUE_BGRAD_A;
  EXPECT_EQ(weft_gemm_check(&desc), WEFT_OK) << lastError();
  weft_gemm_algo algo = {};
  algo.valid = 1;
  auto *a = reinterpret_cast<void *>(0x10000), *b = reinterpret_cast<void *>(0x20000),
       *d = reinterpret_cast<void *>(0x40000);
  expectInvalid(weft_gemm_run(&desc, &algo, a, b, nullptr, d, nullptr, nullptr, 0, nullptr),
                {"epilogue BGRAD_A needs a bias of m=77 elements, got NULL"});
  auto *odd = reinterpret_cast<void *>(0x50004);
  expectInvalid(weft_gemm_run(&desc, &algo, a, b, nullptr, d, odd, nullptr, 0, nullptr),
                {"bias 0x50004 is not 16-byte aligned"});
  desc.batch = 2;
  desc.stride_a = desc.stride_b = desc.stride_c = desc.stride_d = 1 << 20;
  expectInvalid(weft_gemm_check(&desc), {"epilogue BGRAD_A needs batch=1, got batch=2"});
}

TEST(Gemm, SelectArgumentChecks) {
  weft_gemm_desc desc = validDesc();
  size_t workspace = 7;
  expectInvalid(weft_gemm_select(&desc, 1 << 20, nullptr, &workspace), {"algo is NULL"});
  weft_gemm_algo algo = {};
  algo.valid = 1;
  expectInvalid(weft_gemm_select(&desc, 1 << 20, &algo, nullptr), {"workspace_bytes is NULL"});
  desc.n = 0;
  expectInvalid(weft_gemm_select(&desc, 1 << 20, &algo, &workspace), {"weft_gemm_select", "n=0"});
  if (!weft::runtime::test::driverLibraryPresent() && !weft::runtime::test::driverOverridden() &&
      !cublasLtOverridden()) {
    desc = validDesc();
    weft_status status = weft_gemm_select(&desc, 1 << 20, &algo, &workspace);
    EXPECT_TRUE(status == WEFT_ERROR_DRIVER_MISSING || status == WEFT_ERROR_LIBRARY_MISSING)
        << weft_status_name(status) << ": " << lastError();
    EXPECT_EQ(algo.valid, 0); // cleared, so a failed select cannot be run
    EXPECT_EQ(workspace, 0u);
  }
}

TEST(Gemm, EnumMappings) {
  EXPECT_EQ(cudaDataTypeOf(WEFT_DTYPE_BF16), CUDA_R_16BF);
  EXPECT_EQ(cudaDataTypeOf(WEFT_DTYPE_F16), CUDA_R_16F);
  EXPECT_EQ(cudaDataTypeOf(WEFT_DTYPE_F32), CUDA_R_32F);
  EXPECT_EQ(cublasEpilogueOf(WEFT_GEMM_EPILOGUE_NONE), CUBLASLT_EPILOGUE_DEFAULT);
  EXPECT_EQ(cublasEpilogueOf(WEFT_GEMM_EPILOGUE_BIAS), CUBLASLT_EPILOGUE_BIAS);
  EXPECT_EQ(cublasEpilogueOf(WEFT_GEMM_EPILOGUE_GELU), CUBLASLT_EPILOGUE_GELU);
  EXPECT_EQ(cublasEpilogueOf(WEFT_GEMM_EPILOGUE_BIAS_GELU), CUBLASLT_EPILOGUE_GELU_BIAS);
  EXPECT_FALSE(epilogueHasBias(WEFT_GEMM_EPILOGUE_NONE));
  EXPECT_TRUE(epilogueHasBias(WEFT_GEMM_EPILOGUE_BIAS));
  EXPECT_FALSE(epilogueHasBias(WEFT_GEMM_EPILOGUE_GELU));
  EXPECT_TRUE(epilogueHasBias(WEFT_GEMM_EPILOGUE_BIAS_GELU));
  // Our A is cuBLASLt's B: A's row sums are cuBLASLt's BGRADB, m of them.
  EXPECT_EQ(cublasEpilogueOf(WEFT_GEMM_EPILOGUE_BGRAD_A), CUBLASLT_EPILOGUE_BGRADB);
  EXPECT_TRUE(epilogueHasBias(WEFT_GEMM_EPILOGUE_BGRAD_A));
  EXPECT_STREQ(epilogueName(WEFT_GEMM_EPILOGUE_BGRAD_A), "BGRAD_A");
  weft_gemm_desc wgrad = validDesc();
  wgrad.trans_a = 1;
  wgrad.epilogue = WEFT_GEMM_EPILOGUE_BGRAD_A;
  EXPECT_EQ(biasElements(wgrad), 77);
  wgrad.epilogue = WEFT_GEMM_EPILOGUE_BIAS;
  EXPECT_EQ(biasElements(wgrad), 130);
  wgrad.epilogue = WEFT_GEMM_EPILOGUE_GELU;
  EXPECT_EQ(biasElements(wgrad), 0);
  // The wgrad layout TransformerEngine and Apex run BGRADB with: cuBLASLt's
  // A (our X) not transposed, its B (our dY, [k, m] stored) transposed, so
  // cuBLASLt's k is our k (the tokens db sums over).
  wgrad.epilogue = WEFT_GEMM_EPILOGUE_BGRAD_A;
  ColumnMajorGemm problem = columnMajorGemm(wgrad);
  EXPECT_EQ(problem.opFirst, CUBLAS_OP_N);
  EXPECT_EQ(problem.opSecond, CUBLAS_OP_T);
  EXPECT_EQ(problem.second.rows, 77u); // stored [k, m] row-major = [m, k] column-major
  EXPECT_EQ(problem.second.cols, 61u);
  EXPECT_EQ(problem.d.cols, 77u);      // cuBLASLt's D columns: one bias each
  EXPECT_EQ(dtypeBytes(WEFT_DTYPE_BF16), 2u);
  EXPECT_STREQ(epilogueName(WEFT_GEMM_EPILOGUE_BIAS_GELU), "BIAS_GELU");
  EXPECT_EQ(describeGemm(validDesc()),
            "m=77 n=130 k=61 batch=1 trans_a=0 trans_b=0 bf16 epilogue=NONE");
}

// cuBLASLt's view of one column-major operand: element (r, c) of batch i.
double columnMajorAt(const std::vector<double> &data, const GemmOperandLayout &layout, int batch,
                     unsigned long long r, unsigned long long c) {
  EXPECT_LT(r, layout.rows);
  EXPECT_LT(c, layout.cols);
  return data[batch * layout.batchStride + r + c * layout.ld];
}

// Emulates cublasLtMatmul on the column-major problem (with the BIAS
// epilogue: bias[row of D']) and compares it with the row-major product
// PyTorch defines, exactly (small integers).
void checkMapping(int m, int n, int k, int batch, int transA, int transB, bool withC) {
  SCOPED_TRACE(testing::Message() << "m=" << m << " n=" << n << " k=" << k << " batch=" << batch
                                  << " trans_a=" << transA << " trans_b=" << transB);
  weft_gemm_desc desc = validDesc();
  desc.m = m;
  desc.n = n;
  desc.k = k;
  desc.batch = batch;
  desc.trans_a = transA;
  desc.trans_b = transB;
  desc.beta = withC ? 1.0f : 0.0f;
  // Padded strides so a mix-up of stride and matrix size shows.
  desc.stride_a = 1LL * m * k + 3;
  desc.stride_b = 1LL * k * n + 5;
  desc.stride_c = 1LL * m * n + 7;
  desc.stride_d = 1LL * m * n + 11;
  ASSERT_EQ(checkGemmDesc(&desc, "test"), WEFT_OK) << lastError();
  ColumnMajorGemm plan = columnMajorGemm(desc);
  ASSERT_EQ(plan.batch, batch);
  ASSERT_EQ(plan.readsC, withC);

  std::mt19937 rng(m * 131 + n * 17 + k + transA * 2 + transB);
  std::uniform_int_distribution<int> small(-3, 3);
  auto filled = [&](long long size) {
    std::vector<double> values(size);
    for (double &v : values)
      v = small(rng);
    return values;
  };
  std::vector<double> a = filled(desc.stride_a * batch), b = filled(desc.stride_b * batch),
                      c = filled(desc.stride_c * batch), bias = filled(n);

  // Shapes after cuBLASLt's ops: op(first) is [n,k], op(second) [k,m], D [n,m].
  auto opRows = [](const GemmOperandLayout &l, cublasOperation_t op) {
    return op == CUBLAS_OP_N ? l.rows : l.cols;
  };
  auto opCols = [](const GemmOperandLayout &l, cublasOperation_t op) {
    return op == CUBLAS_OP_N ? l.cols : l.rows;
  };
  ASSERT_EQ(opRows(plan.first, plan.opFirst), static_cast<unsigned long long>(n));
  ASSERT_EQ(opCols(plan.first, plan.opFirst), static_cast<unsigned long long>(k));
  ASSERT_EQ(opRows(plan.second, plan.opSecond), static_cast<unsigned long long>(k));
  ASSERT_EQ(opCols(plan.second, plan.opSecond), static_cast<unsigned long long>(m));
  ASSERT_EQ(plan.d.rows, static_cast<unsigned long long>(n));
  ASSERT_EQ(plan.d.cols, static_cast<unsigned long long>(m));
  // Contiguous operands: ld is the stored row-major row length.
  EXPECT_EQ(plan.first.ld, transB ? k : n);
  EXPECT_EQ(plan.second.ld, transA ? m : k);

  std::vector<double> emulated(desc.stride_d * batch, 0.0);
  for (int i = 0; i < batch; ++i)
    for (int row = 0; row < n; ++row)
      for (int col = 0; col < m; ++col) {
        double sum = 0;
        for (int l = 0; l < k; ++l) {
          double x = plan.opFirst == CUBLAS_OP_N ? columnMajorAt(b, plan.first, i, row, l)
                                                 : columnMajorAt(b, plan.first, i, l, row);
          double y = plan.opSecond == CUBLAS_OP_N ? columnMajorAt(a, plan.second, i, l, col)
                                                  : columnMajorAt(a, plan.second, i, col, l);
          sum += x * y;
        }
        if (plan.readsC)
          sum += columnMajorAt(c, plan.c, i, row, col);
        sum += bias[row]; // cuBLASLt's bias: one value per row of D'
        emulated[i * plan.d.batchStride + row + col * plan.d.ld] = sum;
      }

  for (int i = 0; i < batch; ++i)
    for (int row = 0; row < m; ++row)
      for (int col = 0; col < n; ++col) {
        double sum = 0;
        for (int l = 0; l < k; ++l) {
          double x = transA ? a[i * desc.stride_a + 1LL * l * m + row]
                            : a[i * desc.stride_a + 1LL * row * k + l];
          double y = transB ? b[i * desc.stride_b + 1LL * col * k + l]
                            : b[i * desc.stride_b + 1LL * l * n + col];
          sum += x * y;
        }
        if (withC)
          sum += c[i * desc.stride_c + 1LL * row * n + col];
        sum += bias[col]; // PyTorch's linear bias: one value per column of D
        ASSERT_EQ(emulated[i * desc.stride_d + 1LL * row * n + col], sum)
            << "batch " << i << " D[" << row << "," << col << "]";
      }
}

TEST(Gemm, ColumnMajorMappingComputesRowMajorProduct) {
  for (int transA : {0, 1})
    for (int transB : {0, 1}) {
      checkMapping(5, 7, 3, 1, transA, transB, false);
      checkMapping(4, 6, 9, 3, transA, transB, true);
      checkMapping(1, 8, 2, 2, transA, transB, false);
    }
}

TEST(Gemm, LibraryLoadsOrNamesWhatItTried) {
  if (cublasLtOverridden())
    GTEST_SKIP() << "WEFT_CUBLASLT is set; the NoCublasLt/NotCublasLt tests cover this process";
  size_t version = 0;
  weft_status status = weft_gemm_library_version(&version);
  if (status == WEFT_OK) {
    EXPECT_GE(version, 120000u) << "cublasLtGetVersion() of CUDA 12 or newer";
    return;
  }
  EXPECT_EQ(status, WEFT_ERROR_LIBRARY_MISSING);
  for (const char *name : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so\n",
                           "WEFT_CUBLASLT"})
    EXPECT_NE(lastError().find(name), std::string::npos) << name << " in: " << lastError();
}

// Runs with WEFT_CUBLASLT=/nonexistent (a ctest of its own).
TEST(NoCublasLt, StatusNamesThePath) {
  if (!cublasLtOverridden())
    GTEST_SKIP() << "needs WEFT_CUBLASLT=/nonexistent";
  size_t version = 0;
  EXPECT_EQ(weft_gemm_library_version(&version), WEFT_ERROR_LIBRARY_MISSING);
  EXPECT_NE(lastError().find("/nonexistent: cannot open shared object file"), std::string::npos)
      << lastError();
  EXPECT_EQ(lastError().find("libcublasLt.so.13"), std::string::npos)
      << "only the override is tried: " << lastError();
  // select loads the library before it needs a driver; retried, not cached.
  weft_gemm_desc desc = validDesc();
  weft_gemm_algo algo = {};
  size_t workspace = 0;
  for (int attempt = 0; attempt < 2; ++attempt) {
    EXPECT_EQ(weft_gemm_select(&desc, 1 << 20, &algo, &workspace), WEFT_ERROR_LIBRARY_MISSING);
    EXPECT_NE(lastError().find("weft_gemm_select: cannot load cuBLASLt"), std::string::npos)
        << lastError();
  }
  EXPECT_EQ(algo.valid, 0);
}

// Runs with WEFT_CUBLASLT=libm.so.6: a library that loads but is no cuBLASLt.
TEST(NotCublasLt, StatusNamesTheMissingEntryPoint) {
  if (!cublasLtOverridden())
    GTEST_SKIP() << "needs WEFT_CUBLASLT=libm.so.6";
  size_t version = 0;
  EXPECT_EQ(weft_gemm_library_version(&version), WEFT_ERROR_LIBRARY_MISSING);
  EXPECT_NE(lastError().find("libm.so.6 is not a usable cuBLASLt: it has no entry point "
                             "cublasLtCreate"),
            std::string::npos)
      << lastError();
}

} // namespace
