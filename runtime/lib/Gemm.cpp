// The GEMM C API (weft_gemm_*): algorithm selection with cuBLASLt's heuristic
// and cublasLtMatmul launches, with handles and descriptors cached per device.
#include "Driver.h"
#include "GemmLibrary.h"
#include "GemmPlan.h"
#include "Status.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

namespace weft::runtime {

namespace {

static_assert(sizeof(cublasLtMatmulAlgo_t) == sizeof(weft_gemm_algo::bytes),
              "weft_gemm_algo stores a cublasLtMatmulAlgo_t as-is");

// Pointers the heuristic may assume: every algorithm it returns must work
// with 16-byte aligned operands (cuBLASLt's default assumes 256), so planned
// tensors at 16-byte offsets and PyTorch views qualify.
constexpr uint32_t kOperandAlignment = 16;
constexpr size_t kWorkspaceAlignment = 256;
// Bounds the descriptor cache; a plan has a few dozen distinct GEMMs.
constexpr size_t kMaxPreparedGemms = 1024;

// One descriptor's cuBLASLt objects on one device, and the workspace each
// algorithm it ran needs (cublasLtMatmulAlgoCheck, once per algorithm).
struct PreparedGemm {
  const CublasLtApi *api = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, c = nullptr, d = nullptr;
  std::map<std::string, size_t> algoWorkspace;

  ~PreparedGemm() {
    if (!api)
      return;
    for (cublasLtMatrixLayout_t layout : {first, second, c, d})
      if (layout)
        api->cublasLtMatrixLayoutDestroy(layout);
    if (op)
      api->cublasLtMatmulDescDestroy(op);
  }
};

// Guards the handles, the cache and the set-bias-then-enqueue sequence on a
// shared descriptor; cublasLtMatmul only enqueues, so holding it is brief.
std::mutex gemmMutex;
std::map<CUdevice, cublasLtHandle_t> handles; // process lifetime, like contexts
std::map<std::string, std::unique_ptr<PreparedGemm>> preparedGemms;

std::string algoKey(const weft_gemm_algo &algo) {
  return std::string(reinterpret_cast<const char *>(algo.bytes), sizeof(algo.bytes));
}

// Everything that shapes the cuBLASLt objects; alpha and beta are passed per
// call, only whether C is read matters; the aux pitch is part of the
// descriptor (EPILOGUE_AUX_LD), the aux pointer is set per call.
std::string gemmKey(const weft_gemm_desc &g, CUdevice device, long long auxLd, int smCount) {
  bool batched = g.batch > 1;
  return format("%d|%d,%d,%d|%d|%lld,%lld,%lld,%lld|%d,%d|%d|%d|%d|%lld|%d",
                static_cast<int>(device), g.m, g.n, g.k, g.batch, batched ? g.stride_a : 0,
                batched ? g.stride_b : 0, batched ? g.stride_c : 0, batched ? g.stride_d : 0,
                g.trans_a, g.trans_b, static_cast<int>(g.dtype), static_cast<int>(g.epilogue),
                g.beta != 0.0f ? 1 : 0, epilogueHasAux(g.epilogue) ? auxLd : 0, smCount);
}

weft_status handleFor(const CublasLtApi &api, CUdevice device, const weft_gemm_desc &desc,
                      cublasLtHandle_t &handle) {
  auto found = handles.find(device);
  if (found != handles.end()) {
    handle = found->second;
    return WEFT_OK;
  }
  if (cublasStatus_t status = api.cublasLtCreate(&handle))
    return failCublas(api, status, format("cublasLtCreate (device %d)", static_cast<int>(device)),
                      describeGemm(desc));
  handles.emplace(device, handle);
  return WEFT_OK;
}

weft_status createLayout(const CublasLtApi &api, const weft_gemm_desc &desc,
                         const GemmOperandLayout &layout, int batch, const char *operand,
                         cublasLtMatrixLayout_t &out) {
  std::string problem = describeGemm(desc);
  std::string call = format("cublasLtMatrixLayoutCreate(%s: %llu x %llu, ld %lld)", operand,
                            layout.rows, layout.cols, layout.ld);
  if (cublasStatus_t status = api.cublasLtMatrixLayoutCreate(
          &out, cudaDataTypeOf(desc.dtype), layout.rows, layout.cols, layout.ld))
    return failCublas(api, status, call, problem);
  if (batch > 1) {
    int32_t count = batch;
    int64_t stride = layout.batchStride;
    if (cublasStatus_t status = api.cublasLtMatrixLayoutSetAttribute(
            out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)))
      return failCublas(api, status, format("%s: BATCH_COUNT %d", call.c_str(), batch), problem);
    if (cublasStatus_t status = api.cublasLtMatrixLayoutSetAttribute(
            out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)))
      return failCublas(api, status,
                        format("%s: STRIDED_BATCH_OFFSET %lld", call.c_str(),
                               static_cast<long long>(stride)),
                        problem);
  }
  return WEFT_OK;
}

template <typename T>
weft_status setOpAttribute(const CublasLtApi &api, const weft_gemm_desc &desc,
                           cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t attribute,
                           const char *name, const T &value) {
  if (cublasStatus_t status = api.cublasLtMatmulDescSetAttribute(op, attribute, &value,
                                                                 sizeof(value)))
    return failCublas(api, status, format("cublasLtMatmulDescSetAttribute(%s)", name),
                      describeGemm(desc));
  return WEFT_OK;
}

// The cached cuBLASLt objects for `desc` (and the aux pitch of an aux
// epilogue, and the SMs it targets when > 0) on `device`; call with
// gemmMutex held.
weft_status prepare(const CublasLtApi &api, const weft_gemm_desc &desc, long long auxLd,
                    int smCount, CUdevice device, PreparedGemm *&out) {
  std::string key = gemmKey(desc, device, auxLd, smCount);
  auto found = preparedGemms.find(key);
  if (found != preparedGemms.end()) {
    out = found->second.get();
    return WEFT_OK;
  }
  auto gemm = std::make_unique<PreparedGemm>();
  gemm->api = &api;
  ColumnMajorGemm plan = columnMajorGemm(desc);
  if (cublasStatus_t status =
          api.cublasLtMatmulDescCreate(&gemm->op, CUBLAS_COMPUTE_32F, CUDA_R_32F))
    return failCublas(api, status, "cublasLtMatmulDescCreate(COMPUTE_32F, scale R_32F)",
                      describeGemm(desc));
  int32_t opFirst = plan.opFirst, opSecond = plan.opSecond;
  uint32_t epilogue = cublasEpilogueOf(desc.epilogue);
  if (weft_status status =
          setOpAttribute(api, desc, gemm->op, CUBLASLT_MATMUL_DESC_TRANSA, "TRANSA", opFirst))
    return status;
  if (weft_status status =
          setOpAttribute(api, desc, gemm->op, CUBLASLT_MATMUL_DESC_TRANSB, "TRANSB", opSecond))
    return status;
  if (weft_status status =
          setOpAttribute(api, desc, gemm->op, CUBLASLT_MATMUL_DESC_EPILOGUE, "EPILOGUE", epilogue))
    return status;
  if (epilogueHasAux(desc.epilogue)) {
    int64_t ld = auxLd;
    if (weft_status status =
            setOpAttribute(api, desc, gemm->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                           "EPILOGUE_AUX_LD", ld))
      return status;
  }
  // Fewer SMs than the device has: the heuristic sizes the kernel (a
  // persistent one's grid) for what a concurrent stream leaves free.
  if (smCount > 0)
    if (weft_status status = setOpAttribute(api, desc, gemm->op,
                                            CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET,
                                            "SM_COUNT_TARGET", int32_t(smCount)))
      return status;
  if (weft_status status = createLayout(api, desc, plan.first, plan.batch, "B", gemm->first))
    return status;
  if (weft_status status = createLayout(api, desc, plan.second, plan.batch, "A", gemm->second))
    return status;
  if (weft_status status = createLayout(api, desc, plan.c, plan.batch, "C", gemm->c))
    return status;
  if (weft_status status = createLayout(api, desc, plan.d, plan.batch, "D", gemm->d))
    return status;
  if (preparedGemms.size() >= kMaxPreparedGemms)
    preparedGemms.clear();
  out = gemm.get();
  preparedGemms.emplace(std::move(key), std::move(gemm));
  return WEFT_OK;
}

// Library, driver and current device: what select and run need after the
// descriptor checks.
weft_status gemmContext(const char *caller, const CublasLtApi *&api, CUdevice &device) {
  if (weft_status status = requireCublasLt(api, caller))
    return status;
  const DriverApi *driver = nullptr;
  if (weft_status status = requireDriver(driver))
    return status;
  return currentDevice(*driver, device, caller);
}

struct PreferenceGuard {
  const CublasLtApi &api;
  cublasLtMatmulPreference_t preference = nullptr;
  ~PreferenceGuard() {
    if (preference)
      api.cublasLtMatmulPreferenceDestroy(preference);
  }
};

/// What weft_gemm_select and weft_gemm_run share: the driver context, the
/// library, the problem's description for messages, gemmMutex held, and the
/// cached handle and descriptors of `desc` on this device.
struct GemmSession {
  const CublasLtApi *api = nullptr;
  CUdevice device = 0;
  std::string problem;
  std::unique_lock<std::mutex> lock;
  cublasLtHandle_t handle = nullptr;
  PreparedGemm *gemm = nullptr;
};

weft_status openGemm(const char *caller, const weft_gemm_desc &desc, long long auxLd,
                     int smCount, GemmSession &session) {
  if (weft_status status = gemmContext(caller, session.api, session.device))
    return status;
  session.problem = describeGemm(desc);
  session.lock = std::unique_lock<std::mutex>(gemmMutex);
  if (weft_status status = handleFor(*session.api, session.device, desc, session.handle))
    return status;
  return prepare(*session.api, desc, auxLd, smCount, session.device, session.gemm);
}

weft_status selectAlgo(const char *caller, const weft_gemm_desc &desc, long long auxLd,
                       int smCount, size_t workspaceLimit, weft_gemm_algo &algo,
                       size_t &workspaceBytes) {
  GemmSession session;
  if (weft_status status = openGemm(caller, desc, auxLd, smCount, session))
    return status;
  const CublasLtApi *api = session.api;
  const std::string &problem = session.problem;
  cublasLtHandle_t handle = session.handle;
  PreparedGemm *gemm = session.gemm;
  PreferenceGuard guard{*api};
  if (cublasStatus_t status = api->cublasLtMatmulPreferenceCreate(&guard.preference))
    return failCublas(*api, status, "cublasLtMatmulPreferenceCreate", problem);
  uint64_t limit = workspaceLimit;
  if (cublasStatus_t status = api->cublasLtMatmulPreferenceSetAttribute(
          guard.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit, sizeof(limit)))
    return failCublas(*api, status, "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)",
                      problem);
  for (cublasLtMatmulPreferenceAttributes_t attribute :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    if (cublasStatus_t status = api->cublasLtMatmulPreferenceSetAttribute(
            guard.preference, attribute, &kOperandAlignment, sizeof(kOperandAlignment)))
      return failCublas(*api, status,
                        "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT_*_BYTES)", problem);
  // The heuristic reads the aux pointer's alignment from its value (it never
  // dereferences it): an address 16-byte aligned and no more, so every
  // algorithm it returns takes a 16-byte aligned aux matrix, as the operands.
  if (epilogueHasAux(desc.epilogue))
    if (weft_status status =
            setOpAttribute(*api, desc, gemm->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                           "EPILOGUE_AUX_POINTER",
                           reinterpret_cast<void *>(uintptr_t(kOperandAlignment))))
      return status;
  constexpr int kRequested = 8;
  cublasLtMatmulHeuristicResult_t results[kRequested] = {};
  int returned = 0;
  if (cublasStatus_t status = api->cublasLtMatmulAlgoGetHeuristic(
          handle, gemm->op, gemm->first, gemm->second, gemm->c, gemm->d, guard.preference,
          kRequested, results, &returned))
    return failCublas(*api, status, "cublasLtMatmulAlgoGetHeuristic", problem);
  // Results come best first; the limit was a preference, so check it anyway.
  for (int i = 0; i < returned; ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS || results[i].workspaceSize > workspaceLimit)
      continue;
    std::memcpy(algo.bytes, &results[i].algo, sizeof(algo.bytes));
    algo.valid = 1;
    workspaceBytes = results[i].workspaceSize;
    gemm->algoWorkspace[algoKey(algo)] = results[i].workspaceSize;
    return WEFT_OK;
  }
  return fail(WEFT_ERROR_CUBLAS,
              format("%s: cublasLtMatmulAlgoGetHeuristic found no algorithm (%d returned) with a "
                     "workspace within %zu bytes [%s]",
                     caller, returned, workspaceLimit, problem.c_str()));
}

weft_status checkAligned(const void *pointer, size_t alignment, const char *name,
                         const weft_gemm_desc &desc) {
  if (reinterpret_cast<uintptr_t>(pointer) % alignment == 0)
    return WEFT_OK;
  return fail(WEFT_ERROR_INVALID_ARGUMENT,
              format("weft_gemm_run: %s %p is not %zu-byte aligned [%s]", name, pointer,
                     alignment, describeGemm(desc).c_str()));
}

// Host-side checks of weft_gemm_run's pointers, before any library.
weft_status checkRunArguments(const char *caller, const weft_gemm_desc &desc,
                              const weft_gemm_algo *algo, const void *a, const void *b,
                              const void *c, const void *d, const void *bias, const void *aux,
                              const void *workspace, size_t workspaceBytes) {
  if (!algo)
    return fail(WEFT_ERROR_INVALID_ARGUMENT, format("%s: algo is NULL", caller));
  if (algo->valid != 1)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: algo is not valid (valid=%d); fill it with weft_gemm_select", caller,
                       algo->valid));
  bool readsC = desc.beta != 0.0f;
  struct Operand {
    const char *name;
    const void *pointer;
    bool needed;
  } operands[] = {{"a", a, true}, {"b", b, true}, {"c", c, readsC}, {"d", d, true}};
  for (const Operand &operand : operands) {
    if (operand.needed && !operand.pointer)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("%s: %s is NULL%s [%s]", caller, operand.name,
                         operand.name[0] == 'c' ? format(" but beta=%g", desc.beta).c_str() : "",
                         describeGemm(desc).c_str()));
    if (operand.pointer)
      if (weft_status status = checkAligned(operand.pointer, kOperandAlignment, operand.name, desc))
        return status;
  }
  if (epilogueHasBias(desc.epilogue) && !bias)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: epilogue %s needs a bias of %s=%d elements, got NULL", caller,
                       epilogueName(desc.epilogue),
                       desc.epilogue == WEFT_GEMM_EPILOGUE_BGRAD_A ? "m" : "n",
                       biasElements(desc)));
  if (!epilogueHasBias(desc.epilogue) && bias)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: bias %p given but epilogue %s adds none", caller, bias,
                       epilogueName(desc.epilogue)));
  if (bias)
    if (weft_status status = checkAligned(bias, kOperandAlignment, "bias", desc))
      return status;
  if (epilogueHasAux(desc.epilogue) && !aux)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: epilogue %s needs an aux matrix of m=%d rows, got NULL", caller,
                       epilogueName(desc.epilogue), desc.m));
  if (aux)
    if (weft_status status = checkAligned(aux, kOperandAlignment, "aux", desc))
      return status;
  if (!workspace && workspaceBytes > 0)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: workspace is NULL but workspace_bytes=%zu", caller, workspaceBytes));
  if (workspace)
    if (weft_status status = checkAligned(workspace, kWorkspaceAlignment, "workspace", desc))
      return status;
  return WEFT_OK;
}

weft_status runGemm(const char *caller, const weft_gemm_desc &desc, const weft_gemm_algo &algo,
                    const void *a, const void *b, const void *c, void *d, const void *bias,
                    void *aux, long long auxLd, int smCount, void *workspace,
                    size_t workspaceBytes, CUstream stream) {
  GemmSession session;
  if (weft_status status = openGemm(caller, desc, auxLd, smCount, session))
    return status;
  const CublasLtApi *api = session.api;
  const std::string &problem = session.problem;
  cublasLtHandle_t handle = session.handle;
  PreparedGemm *gemm = session.gemm;
  cublasLtMatmulAlgo_t lt;
  std::memcpy(&lt, algo.bytes, sizeof(lt));
  std::string key = algoKey(algo);
  auto known = gemm->algoWorkspace.find(key);
  if (known == gemm->algoWorkspace.end()) {
    // An algorithm from a package: it must fit this descriptor, device and
    // cuBLASLt version.
    cublasLtMatmulHeuristicResult_t result = {};
    if (cublasStatus_t status = api->cublasLtMatmulAlgoCheck(
            handle, gemm->op, gemm->first, gemm->second, gemm->c, gemm->d, &lt, &result))
      return failCublas(*api, status,
                        "cublasLtMatmulAlgoCheck (an algorithm chosen for another descriptor, "
                        "device or cuBLASLt version? select again)",
                        problem);
    known = gemm->algoWorkspace.emplace(key, result.workspaceSize).first;
  }
  if (workspaceBytes < known->second)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: the algorithm needs %zu workspace bytes, got workspace_bytes=%zu [%s]",
                       caller, known->second, workspaceBytes, problem.c_str()));
  if (epilogueHasBias(desc.epilogue))
    if (weft_status status = setOpAttribute(*api, desc, gemm->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                            "BIAS_POINTER", bias))
      return status;
  if (epilogueHasAux(desc.epilogue))
    if (weft_status status = setOpAttribute(*api, desc, gemm->op,
                                            CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                            "EPILOGUE_AUX_POINTER", aux))
      return status;
  float alpha = desc.alpha, beta = desc.beta;
  // cuBLASLt's A is our B and its B our A (see columnMajorGemm). When C is not
  // read, D stands in for it with D's layout.
  const void *cSource = desc.beta != 0.0f ? c : d;
  if (cublasStatus_t status = api->cublasLtMatmul(
          handle, gemm->op, &alpha, b, gemm->first, a, gemm->second, &beta, cSource, gemm->c, d,
          gemm->d, &lt, workspace, workspaceBytes, reinterpret_cast<cudaStream_t>(stream)))
    return failCublas(*api, status, "cublasLtMatmul", problem);
  return WEFT_OK;
}

} // namespace

weft_status selectGemmOnSms(const weft_gemm_desc &desc, long long auxLd, int smCount,
                            size_t workspaceLimit, weft_gemm_algo &algo, size_t &workspaceBytes) {
  const char *caller = "a step's GEMM beside a collective";
  if (weft_status status = checkGemmDesc(&desc, caller))
    return status;
  algo.valid = 0;
  workspaceBytes = 0;
  return selectAlgo(caller, desc, auxLd, smCount, workspaceLimit, algo, workspaceBytes);
}

weft_status runGemmOnSms(const weft_gemm_desc &desc, const weft_gemm_algo &algo, const void *a,
                         const void *b, const void *c, void *d, const void *bias, void *aux,
                         long long auxLd, int smCount, void *workspace, size_t workspaceBytes,
                         CUstream stream) {
  const char *caller = "a step's GEMM beside a collective";
  if (weft_status status = checkRunArguments(caller, desc, &algo, a, b, c, d, bias, aux,
                                             workspace, workspaceBytes))
    return status;
  return runGemm(caller, desc, algo, a, b, c, d, bias, aux, auxLd, smCount, workspace,
                 workspaceBytes, stream);
}

} // namespace weft::runtime

using namespace weft::runtime;

extern "C" {

weft_status weft_gemm_check(const weft_gemm_desc *desc) {
  return apiCall("weft_gemm_check", [&] { return checkGemmDesc(desc, "weft_gemm_check"); });
}

size_t weft_gemm_desc_size(void) { return sizeof(weft_gemm_desc); }

size_t weft_gemm_algo_size(void) { return sizeof(weft_gemm_algo); }

weft_status weft_gemm_library_version(size_t *version) {
  return apiCall("weft_gemm_library_version", [&]() -> weft_status {
    if (!version)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_gemm_library_version: version is NULL");
    const CublasLtApi *api = nullptr;
    if (weft_status status = requireCublasLt(api, "weft_gemm_library_version"))
      return status;
    *version = api->cublasLtGetVersion();
    return WEFT_OK;
  });
}

weft_status weft_gemm_select(const weft_gemm_desc *desc, size_t workspace_limit,
                             weft_gemm_algo *algo, size_t *workspace_bytes) {
  return apiCall("weft_gemm_select", [&]() -> weft_status {
    if (weft_status status = checkGemmDesc(desc, "weft_gemm_select"))
      return status;
    if (!algo || !workspace_bytes)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_gemm_select: %s is NULL", !algo ? "algo" : "workspace_bytes"));
    algo->valid = 0;
    *workspace_bytes = 0;
    // An aux epilogue's matrix as plans lay it out: rows of exactly n.
    return selectAlgo("weft_gemm_select", *desc, desc->n, 0, workspace_limit, *algo,
                      *workspace_bytes);
  });
}

weft_status weft_gemm_select_aux(const weft_gemm_desc *desc, long long aux_ld,
                                 size_t workspace_limit, weft_gemm_algo *algo,
                                 size_t *workspace_bytes) {
  const char *caller = "weft_gemm_select_aux";
  return apiCall(caller, [&]() -> weft_status {
    if (weft_status status = checkGemmDesc(desc, caller))
      return status;
    if (!epilogueHasAux(desc->epilogue))
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("%s: epilogue %s has no aux matrix; use weft_gemm_select", caller,
                         epilogueName(desc->epilogue)));
    if (weft_status status = checkAuxLd(*desc, aux_ld, caller))
      return status;
    if (!algo || !workspace_bytes)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("%s: %s is NULL", caller, !algo ? "algo" : "workspace_bytes"));
    algo->valid = 0;
    *workspace_bytes = 0;
    return selectAlgo(caller, *desc, aux_ld, 0, workspace_limit, *algo, *workspace_bytes);
  });
}

weft_status weft_gemm_run(const weft_gemm_desc *desc, const weft_gemm_algo *algo, const void *a,
                          const void *b, const void *c, void *d, const void *bias,
                          void *workspace, size_t workspace_bytes, CUstream stream) {
  return apiCall("weft_gemm_run", [&]() -> weft_status {
    const char *caller = "weft_gemm_run";
    if (weft_status status = checkGemmDesc(desc, caller))
      return status;
    if (epilogueHasAux(desc->epilogue))
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("%s: epilogue %s needs an aux matrix: call weft_gemm_run_aux", caller,
                         epilogueName(desc->epilogue)));
    if (weft_status status = checkRunArguments(caller, *desc, algo, a, b, c, d, bias, nullptr,
                                               workspace, workspace_bytes))
      return status;
    return runGemm(caller, *desc, *algo, a, b, c, d, bias, nullptr, 0, 0, workspace,
                   workspace_bytes, stream);
  });
}

weft_status weft_gemm_run_aux(const weft_gemm_desc *desc, const weft_gemm_algo *algo,
                              const void *a, const void *b, const void *c, void *d,
                              const void *bias, void *aux, long long aux_ld, void *workspace,
                              size_t workspace_bytes, CUstream stream) {
  const char *caller = "weft_gemm_run_aux";
  return apiCall(caller, [&]() -> weft_status {
    if (weft_status status = checkGemmDesc(desc, caller))
      return status;
    if (!epilogueHasAux(desc->epilogue))
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("%s: epilogue %s has no aux matrix; use weft_gemm_run", caller,
                         epilogueName(desc->epilogue)));
    if (weft_status status = checkAuxLd(*desc, aux_ld, caller))
      return status;
    if (weft_status status = checkRunArguments(caller, *desc, algo, a, b, c, d, bias, aux,
                                               workspace, workspace_bytes))
      return status;
    return runGemm(caller, *desc, *algo, a, b, c, d, bias, aux, aux_ld, 0, workspace,
                   workspace_bytes, stream);
  });
}

} // extern "C"
