// The GELU epilogues with an aux matrix, host side: enum mappings onto
// cuBLASLt, descriptor and argument checks of weft_gemm_select_aux /
// weft_gemm_run_aux (and the refusals of the plain calls), and a package
// GEMM record's aux buffer and leading dimension through the writer, the
// reader, the package checks and the step plan.
#include "GemmPlan.h"
#include "PreparedStep.h"

#include "weft/Package/Package.h"

#include <gtest/gtest.h>
#include <string>

using namespace weft;
using namespace weft::runtime;

namespace {

std::string lastError() { return weft_last_error(); }

void expectInvalid(weft_status status, std::initializer_list<const char *> pieces) {
  EXPECT_EQ(status, WEFT_ERROR_INVALID_ARGUMENT) << lastError();
  for (const char *piece : pieces)
    EXPECT_NE(lastError().find(piece), std::string::npos)
        << "missing '" << piece << "' in: " << lastError();
}

weft_gemm_desc auxDesc(weft_gemm_epilogue epilogue) {
  weft_gemm_desc desc = {};
  desc.m = 64;
  desc.n = 136;
  desc.k = 32;
  desc.batch = 1;
  desc.trans_b = 1;
  desc.dtype = WEFT_DTYPE_BF16;
  desc.epilogue = epilogue;
  desc.alpha = 1.0f;
  return desc;
}

TEST(GemmAux, EnumMappings) {
  EXPECT_EQ(cublasEpilogueOf(WEFT_GEMM_EPILOGUE_GELU_AUX), CUBLASLT_EPILOGUE_GELU_AUX);
  EXPECT_EQ(cublasEpilogueOf(WEFT_GEMM_EPILOGUE_GELU_AUX_BIAS), CUBLASLT_EPILOGUE_GELU_AUX_BIAS);
  EXPECT_EQ(cublasEpilogueOf(WEFT_GEMM_EPILOGUE_DGELU), CUBLASLT_EPILOGUE_DGELU);
  EXPECT_STREQ(epilogueName(WEFT_GEMM_EPILOGUE_GELU_AUX_BIAS), "GELU_AUX_BIAS");
  EXPECT_STREQ(epilogueName(WEFT_GEMM_EPILOGUE_DGELU), "DGELU");
  for (weft_gemm_epilogue e : {WEFT_GEMM_EPILOGUE_GELU_AUX, WEFT_GEMM_EPILOGUE_GELU_AUX_BIAS,
                               WEFT_GEMM_EPILOGUE_DGELU})
    EXPECT_TRUE(epilogueHasAux(e)) << epilogueName(e);
  for (weft_gemm_epilogue e : {WEFT_GEMM_EPILOGUE_NONE, WEFT_GEMM_EPILOGUE_BIAS,
                               WEFT_GEMM_EPILOGUE_GELU, WEFT_GEMM_EPILOGUE_BIAS_GELU,
                               WEFT_GEMM_EPILOGUE_BGRAD_A})
    EXPECT_FALSE(epilogueHasAux(e)) << epilogueName(e);
  // GELU_AUX_BIAS adds bias[n]; the others with an aux take none.
  EXPECT_TRUE(epilogueHasBias(WEFT_GEMM_EPILOGUE_GELU_AUX_BIAS));
  EXPECT_EQ(biasElements(auxDesc(WEFT_GEMM_EPILOGUE_GELU_AUX_BIAS)), 136);
  EXPECT_FALSE(epilogueHasBias(WEFT_GEMM_EPILOGUE_GELU_AUX));
  EXPECT_FALSE(epilogueHasBias(WEFT_GEMM_EPILOGUE_DGELU));
  // Package epilogues are the runtime's values, names as the plan spells them.
  EXPECT_EQ(pkg::parseEpilogue("gelu_aux_bias"), pkg::Epilogue::GeluAuxBias);
  EXPECT_EQ(uint32_t(pkg::Epilogue::DGelu), uint32_t(WEFT_GEMM_EPILOGUE_DGELU));
  EXPECT_STREQ(pkg::epilogueName(pkg::Epilogue::GeluAux), "gelu_aux");
}

TEST(GemmAux, DescriptorChecks) {
  weft_gemm_desc desc = auxDesc(WEFT_GEMM_EPILOGUE_DGELU);
  EXPECT_EQ(weft_gemm_check(&desc), WEFT_OK) << lastError();
  desc.batch = 2;
  desc.stride_a = desc.stride_b = desc.stride_c = desc.stride_d = 1 << 20;
  expectInvalid(weft_gemm_check(&desc), {"epilogue DGELU needs batch=1, got batch=2"});
  desc = auxDesc(WEFT_GEMM_EPILOGUE_GELU_AUX);
  EXPECT_EQ(checkAuxLd(desc, 136, "t"), WEFT_OK);
  EXPECT_EQ(checkAuxLd(desc, 144, "t"), WEFT_OK);
  expectInvalid(checkAuxLd(desc, 128, "t"), {"t: aux_ld=128 must be at least n=136",
                                             "a multiple of 8"});
  expectInvalid(checkAuxLd(desc, 140, "t"), {"aux_ld=140"});
}

TEST(GemmAux, RunArgumentChecks) {
  weft_gemm_algo algo = {};
  algo.valid = 1;
  auto *a = reinterpret_cast<void *>(0x10000), *b = reinterpret_cast<void *>(0x20000),
       *d = reinterpret_cast<void *>(0x40000), *bias = reinterpret_cast<void *>(0x50000),
       *aux = reinterpret_cast<void *>(0x70000);
  weft_gemm_desc desc = auxDesc(WEFT_GEMM_EPILOGUE_GELU_AUX_BIAS);
  // The plain call has no aux matrix to give.
  expectInvalid(weft_gemm_run(&desc, &algo, a, b, nullptr, d, bias, nullptr, 0, nullptr),
                {"weft_gemm_run: epilogue GELU_AUX_BIAS needs an aux matrix",
                 "weft_gemm_run_aux"});
  expectInvalid(weft_gemm_run_aux(&desc, &algo, a, b, nullptr, d, bias, nullptr, 136, nullptr,
                                  0, nullptr),
                {"weft_gemm_run_aux: epilogue GELU_AUX_BIAS needs an aux matrix of m=64 rows, "
                 "got NULL"});
  expectInvalid(weft_gemm_run_aux(&desc, &algo, a, b, nullptr, d, nullptr, aux, 136, nullptr, 0,
                                  nullptr),
                {"epilogue GELU_AUX_BIAS needs a bias of n=136 elements"});
  auto *odd = reinterpret_cast<void *>(0x70008);
  expectInvalid(weft_gemm_run_aux(&desc, &algo, a, b, nullptr, d, bias, odd, 136, nullptr, 0,
                                  nullptr),
                {"aux 0x70008 is not 16-byte aligned"});
  expectInvalid(weft_gemm_run_aux(&desc, &algo, a, b, nullptr, d, bias, aux, 100, nullptr, 0,
                                  nullptr),
                {"weft_gemm_run_aux: aux_ld=100 must be at least n=136"});
  // An epilogue without aux belongs to weft_gemm_run.
  desc = auxDesc(WEFT_GEMM_EPILOGUE_BIAS);
  expectInvalid(weft_gemm_run_aux(&desc, &algo, a, b, nullptr, d, bias, aux, 136, nullptr, 0,
                                  nullptr),
                {"epilogue BIAS has no aux matrix; use weft_gemm_run"});
  size_t workspace = 0;
  expectInvalid(weft_gemm_select_aux(&desc, 136, 0, &algo, &workspace),
                {"weft_gemm_select_aux: epilogue BIAS has no aux matrix"});
  desc = auxDesc(WEFT_GEMM_EPILOGUE_DGELU);
  expectInvalid(weft_gemm_select_aux(&desc, 8, 0, &algo, &workspace), {"aux_ld=8"});
  expectInvalid(weft_gemm_select_aux(&desc, 136, 0, nullptr, &workspace), {"algo is NULL"});
}

pkg::Package auxPackage() {
  pkg::Package p;
  p.arch = "sm_90a";
  p.weftVersion = "test";
  p.stepName = "step";
  p.alignment = 256;
  p.numSteps = 2;
  // x [64, 32], w [136, 32], u and g [64, 136] (17408 bytes), bias [136].
  uint64_t offset = 0;
  auto buffer = [&](const char *name, uint64_t size) {
    pkg::Buffer b;
    b.name = name;
    b.offset = offset;
    b.size = size;
    b.first = 0;
    b.last = 1;
    offset += (size + 255) / 256 * 256;
    p.buffers.push_back(b);
  };
  buffer("x", 64 * 32 * 2);
  buffer("w", 136 * 32 * 2);
  buffer("b", 136 * 2);
  buffer("g", 64 * 136 * 2);
  buffer("u", 64 * 136 * 2);
  p.arenaBytes = offset;
  pkg::Gemm g;
  g.a = 0, g.b = 1, g.bias = 2, g.d = 3, g.aux = 4, g.auxLd = 136;
  g.m = 64, g.n = 136, g.k = 32;
  g.transB = true;
  g.epilogue = pkg::Epilogue::GeluAuxBias;
  p.gemms.push_back(g);
  p.schedule.push_back({pkg::EntryKind::Gemm, 0});
  return p;
}

std::vector<std::string> problems(const pkg::Package &p) {
  std::vector<std::string> messages;
  for (const pkg::Problem &problem : pkg::checkPackage(p))
    messages.push_back(problem.message);
  return messages;
}

TEST(GemmAux, PackageRecordRoundTripsAndResolves) {
  pkg::Package p = auxPackage();
  EXPECT_TRUE(problems(p).empty()) << problems(p).front();
  std::string bytes = pkg::writePackage(p);
  pkg::Package read;
  std::string error;
  ASSERT_TRUE(pkg::readPackage(bytes.data(), bytes.size(), read, error)) << error;
  EXPECT_EQ(read.formatVersion, 2u);
  ASSERT_EQ(read.gemms.size(), 1u);
  EXPECT_EQ(read.gemms[0].aux, 4u);
  EXPECT_EQ(read.gemms[0].auxLd, 136);
  EXPECT_EQ(read.gemms[0].epilogue, pkg::Epilogue::GeluAuxBias);
  // The step plan carries them to the runtime's descriptor and call.
  PreparedStep plan;
  weft_step_options options = {};
  ASSERT_EQ(prepareStep(bytes.data(), bytes.size(), 90, options, plan), WEFT_OK) << lastError();
  ASSERT_EQ(plan.gemms.size(), 1u);
  EXPECT_EQ(plan.gemms[0].desc.epilogue, WEFT_GEMM_EPILOGUE_GELU_AUX_BIAS);
  EXPECT_EQ(plan.gemms[0].aux, 4u);
  EXPECT_EQ(plan.gemms[0].auxLd, 136);
}

TEST(GemmAux, PackageChecksNameTheAux) {
  auto expectProblem = [](const pkg::Package &p, const std::string &piece) {
    std::vector<std::string> found = problems(p);
    bool seen = false;
    for (const std::string &message : found)
      seen |= message.find(piece) != std::string::npos;
    EXPECT_TRUE(seen) << "no problem mentions '" << piece << "' among " << found.size();
  };
  pkg::Package p = auxPackage();
  p.gemms[0].aux = pkg::kNone;
  expectProblem(p, "gemm 0: epilogue gelu_aux_bias needs an aux buffer");
  p = auxPackage();
  p.gemms[0].epilogue = pkg::Epilogue::Bias;
  expectProblem(p, "gemm 0: epilogue bias takes no aux buffer");
  p = auxPackage();
  p.gemms[0].auxLd = 132;
  expectProblem(p, "gemm 0: aux_ld 132 must be at least n 136 and a multiple of 8");
  // A pitch of 144 needs 63 * 144 + 136 elements: more than u holds.
  p = auxPackage();
  p.gemms[0].auxLd = 144;
  expectProblem(p, "gemm 0 operand aux: buffer 'u' has 17408 bytes, the GEMM reads or writes "
                   "18416");
  p = auxPackage();
  p.buffers[4].first = 1;
  expectProblem(p, "operand aux uses buffer 'u' at schedule index 0, outside its live range");
  // The reader refuses an aux naming no buffer.
  p = auxPackage();
  p.gemms[0].aux = 9;
  std::string bytes = pkg::writePackage(p), error;
  pkg::Package read;
  EXPECT_FALSE(pkg::readPackage(bytes.data(), bytes.size(), read, error));
  EXPECT_NE(error.find("gemm 0: operand aux names buffer 9, undefined: the package has 5 "
                       "buffers"),
            std::string::npos)
      << error;
}

} // namespace
