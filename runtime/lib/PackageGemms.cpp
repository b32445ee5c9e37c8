// weft_package_gemms.h: package GEMM records -> weft_gemm_desc, and the
// first-load algorithm selection written back into the package's slots.
#include "weft_package_gemms.h"

#include "Status.h"

#include "weft/Package/GemmAlgorithms.h"
#include "weft/Package/Package.h"

#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

using namespace weft::runtime;
namespace pkg = weft::pkg;

namespace {

weft_status readGemms(const void *bytes, size_t size, const char *caller,
                      pkg::Package &package) {
  std::string error;
  // An empty file may come as NULL; the reader names its size.
  static const char empty = 0;
  if (!bytes && size > 0)
    return fail(WEFT_ERROR_INVALID_ARGUMENT, format("%s: package is NULL", caller));
  if (!bytes)
    bytes = &empty;
  if (!pkg::readPackage(bytes, size, package, error))
    return fail(WEFT_ERROR_INVALID_ARGUMENT, format("%s: %s", caller, error.c_str()));
  return WEFT_OK;
}

// Record -> descriptor, checked as weft_gemm_run would check it.
weft_status describe(const pkg::Package &package, unsigned index, const char *caller,
                     weft_package_gemm &out) {
  const pkg::Gemm &g = package.gemms[index];
  std::memset(&out, 0, sizeof(out));
  for (auto [name, value] : {std::pair{"m", g.m}, {"n", g.n}, {"k", g.k}, {"batch", g.batch}})
    if (value < 1 || value > INT_MAX)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("%s: gemm %u: %s = %lld is not in [1, %d], which weft_gemm_desc holds",
                         caller, index, name, static_cast<long long>(value), INT_MAX));
  weft_gemm_desc &d = out.desc;
  d.m = int(g.m), d.n = int(g.n), d.k = int(g.k), d.batch = int(g.batch);
  d.stride_a = g.strides[0], d.stride_b = g.strides[1];
  d.stride_c = g.strides[2], d.stride_d = g.strides[3];
  d.trans_a = g.transA, d.trans_b = g.transB;
  switch (g.dtype) {
  case pkg::DType::BF16:
    d.dtype = WEFT_DTYPE_BF16;
    break;
  case pkg::DType::F16:
    d.dtype = WEFT_DTYPE_F16;
    break;
  case pkg::DType::F32:
    d.dtype = WEFT_DTYPE_F32; // weft_gemm_check refuses it, naming it
    break;
  case pkg::DType::F64:
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: gemm %u: dtype f64 has no cuBLASLt GEMM; operands are bf16 or f16",
                       caller, index));
  }
  // The runtime's epilogue of each pkg::Epilogue, in its order (Package.h).
  static constexpr weft_gemm_epilogue kEpilogues[pkg::kNumEpilogues] = {
      WEFT_GEMM_EPILOGUE_NONE,     WEFT_GEMM_EPILOGUE_BIAS,
      WEFT_GEMM_EPILOGUE_GELU,     WEFT_GEMM_EPILOGUE_BIAS_GELU,
      WEFT_GEMM_EPILOGUE_BGRAD_A,  WEFT_GEMM_EPILOGUE_GELU_AUX,
      WEFT_GEMM_EPILOGUE_GELU_AUX_BIAS, WEFT_GEMM_EPILOGUE_DGELU};
  if (uint32_t(g.epilogue) >= pkg::kNumEpilogues)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: gemm %u: epilogue %u is not one of the %u the package format names",
                       caller, index, unsigned(g.epilogue), unsigned(pkg::kNumEpilogues)));
  d.epilogue = kEpilogues[uint32_t(g.epilogue)];
  d.alpha = g.alpha, d.beta = g.beta;
  if (weft_gemm_check(&d) != WEFT_OK) {
    std::string why = weft_last_error();
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: gemm %u: %s", caller, index, why.c_str()));
  }
  out.workspace_bytes = g.workspace == pkg::kNone ? 0 : package.buffers[g.workspace].size;
  out.algo_chosen = g.hasAlgo;
  out.algo.valid = g.hasAlgo;
  std::memcpy(out.algo.bytes, g.algo, sizeof(out.algo.bytes));
  return WEFT_OK;
}

weft_status store(void *bytes, size_t size, const std::vector<pkg::GemmAlgorithmUpdate> &updates,
                  const char *caller) {
  std::string error;
  if (!pkg::setGemmAlgorithms(static_cast<uint8_t *>(bytes), size, updates, error))
    return fail(WEFT_ERROR_INVALID_ARGUMENT, format("%s: %s", caller, error.c_str()));
  return WEFT_OK;
}

weft_status selectAll(void *bytes, size_t size, int reselect, unsigned *selected,
                      const char *caller) {
  if (selected)
    *selected = 0;
  pkg::Package package;
  if (weft_status s = readGemms(bytes, size, caller, package))
    return s;
  std::vector<pkg::GemmAlgorithmUpdate> updates;
  for (unsigned i = 0; i < package.gemms.size(); ++i) {
    weft_package_gemm gemm;
    if (weft_status s = describe(package, i, caller, gemm))
      return s;
    if (gemm.algo_chosen && !reselect)
      continue;
    weft_gemm_algo algo;
    size_t needed = 0;
    // The GELU epilogues' algorithms are chosen for the planned aux pitch.
    const pkg::Gemm &record = package.gemms[i];
    weft_status s = pkg::epilogueUsesAux(record.epilogue)
                        ? weft_gemm_select_aux(&gemm.desc, record.auxLd, gemm.workspace_bytes,
                                               &algo, &needed)
                        : weft_gemm_select(&gemm.desc, gemm.workspace_bytes, &algo, &needed);
    if (s) {
      std::string why = weft_last_error();
      return fail(s, format("%s: gemm %u: %s", caller, i, why.c_str()));
    }
    // weft_gemm_select honours the limit; a larger answer would overrun the arena.
    if (needed > gemm.workspace_bytes)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("%s: gemm %u: the chosen algorithm needs %zu workspace bytes, the "
                         "plan has %zu",
                         caller, i, needed, gemm.workspace_bytes));
    pkg::GemmAlgorithmUpdate update;
    update.gemm = i;
    std::memcpy(update.algo.data(), algo.bytes, sizeof(algo.bytes));
    updates.push_back(update);
  }
  if (!updates.empty())
    if (weft_status s = store(bytes, size, updates, caller))
      return s;
  if (selected)
    *selected = unsigned(updates.size());
  return WEFT_OK;
}

} // namespace

extern "C" {

weft_status weft_package_gemms(const void *package, size_t size, weft_package_gemm *out,
                               unsigned capacity, unsigned *count) {
  return apiCall("weft_package_gemms", [&]() -> weft_status {
    const char *caller = "weft_package_gemms";
    if (!count || (capacity > 0 && !out))
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("%s: count is NULL, or out is NULL with capacity %u", caller, capacity));
    *count = 0;
    pkg::Package parsed;
    if (weft_status s = readGemms(package, size, caller, parsed))
      return s;
    for (unsigned i = 0; i < parsed.gemms.size(); ++i) {
      weft_package_gemm gemm;
      if (weft_status s = describe(parsed, i, caller, gemm))
        return s;
      if (i < capacity)
        out[i] = gemm;
    }
    *count = unsigned(parsed.gemms.size());
    return WEFT_OK;
  });
}

weft_status weft_package_gemm_set_algo(void *package, size_t size, unsigned gemm,
                                       const weft_gemm_algo *algo) {
  return apiCall("weft_package_gemm_set_algo", [&]() -> weft_status {
    if (!package || !algo)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  "weft_package_gemm_set_algo: package or algo is NULL");
    pkg::GemmAlgorithmUpdate update;
    update.gemm = gemm;
    std::memcpy(update.algo.data(), algo->bytes, sizeof(algo->bytes));
    return store(package, size, {update}, "weft_package_gemm_set_algo");
  });
}

weft_status weft_package_gemms_select(void *package, size_t size, int reselect,
                                      unsigned *selected) {
  return apiCall("weft_package_gemms_select", [&]() {
    return selectAll(package, size, reselect, selected, "weft_package_gemms_select");
  });
}

weft_status weft_package_gemms_select_file(const char *path, int reselect, unsigned *selected) {
  return apiCall("weft_package_gemms_select_file", [&]() -> weft_status {
    const char *caller = "weft_package_gemms_select_file";
    if (selected)
      *selected = 0;
    if (!path)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, format("%s: path is NULL", caller));
    std::ifstream in(path, std::ios::binary);
    if (!in)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, format("%s: cannot open '%s'", caller, path));
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    unsigned count = 0;
    if (weft_status s = selectAll(bytes.data(), bytes.size(), reselect, &count, caller))
      return s;
    if (count > 0) {
      // Whole or not at all: a crash mid-write must not leave half a package.
      std::string temp = std::string(path) + ".tmp";
      {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), std::streamsize(bytes.size()));
        if (!out.flush())
          return fail(WEFT_ERROR_INVALID_ARGUMENT,
                      format("%s: cannot write '%s'", caller, temp.c_str()));
      }
      if (std::rename(temp.c_str(), path) != 0) {
        std::remove(temp.c_str());
        return fail(WEFT_ERROR_INVALID_ARGUMENT,
                    format("%s: cannot replace '%s' with '%s'", caller, path, temp.c_str()));
      }
    }
    if (selected)
      *selected = count;
    return WEFT_OK;
  });
}

} // extern "C"
