// weft-package-gemms FILE: prints every GEMM of a package as the runtime's
// weft_gemm_desc (each checked with weft_gemm_check, no GPU needed) with its
// workspace and algorithm slot; --select chooses the empty slots' algorithms
// on the GPU and writes them into FILE (weft_package_gemms_select_file).
#include "weft/Support/ExitCode.h"
#include "weft_package_gemms.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

const char *dtypeName(weft_dtype dtype) {
  return dtype == WEFT_DTYPE_BF16 ? "bf16" : dtype == WEFT_DTYPE_F16 ? "f16" : "f32";
}

const char *epilogueName(weft_gemm_epilogue epilogue) {
  const char *names[] = {"none",     "bias",          "gelu",  "bias_gelu",
                         "bgrad_a",  "gelu_aux",      "gelu_aux_bias", "dgelu"};
  unsigned index = unsigned(epilogue);
  return index < sizeof(names) / sizeof(names[0]) ? names[index] : "?";
}

int usage() {
  std::fprintf(stderr, "usage: weft-package-gemms [--select [--reselect]] FILE.weftpkg\n");
  return weft::kExitUsage;
}

/// --select: chooses the empty algorithm slots on the GPU (--reselect: all)
/// and writes them into the package.
int selectAlgorithms(const char *path, bool reselect) {
  unsigned selected = 0;
  if (weft_package_gemms_select_file(path, reselect, &selected) != WEFT_OK) {
    std::fprintf(stderr, "weft-package-gemms: error: %s\n", weft_last_error());
    return weft::kExitFailed;
  }
  std::printf("%s: chose %u algorithms\n", path, selected);
  return weft::kExitOk;
}

/// Prints every GEMM of the package at `path` as the runtime's descriptor.
int printGemms(const char *path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "weft-package-gemms: error: cannot open '%s'\n", path);
    return weft::kExitUsage;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  unsigned count = 0;
  if (weft_package_gemms(bytes.data(), bytes.size(), nullptr, 0, &count) != WEFT_OK) {
    std::fprintf(stderr, "weft-package-gemms: error: %s: %s\n", path, weft_last_error());
    return weft::kExitFailed;
  }
  std::vector<weft_package_gemm> gemms(count);
  if (weft_package_gemms(bytes.data(), bytes.size(), gemms.data(), count, &count) != WEFT_OK) {
    std::fprintf(stderr, "weft-package-gemms: error: %s: %s\n", path, weft_last_error());
    return weft::kExitFailed;
  }
  unsigned chosen = 0;
  for (unsigned i = 0; i < count; ++i) {
    const weft_gemm_desc &d = gemms[i].desc;
    std::printf("gemm %u: m=%d n=%d k=%d batch=%d trans_a=%d trans_b=%d %s epilogue=%s "
                "alpha=%g beta=%g",
                i, d.m, d.n, d.k, d.batch, d.trans_a, d.trans_b, dtypeName(d.dtype),
                epilogueName(d.epilogue), d.alpha, d.beta);
    if (d.batch > 1)
      std::printf(" strides=%lld,%lld,%lld,%lld", d.stride_a, d.stride_b, d.stride_c,
                  d.stride_d);
    std::printf(" workspace=%zu algo=%s\n", gemms[i].workspace_bytes,
                gemms[i].algo_chosen ? "chosen" : "not-chosen");
    chosen += gemms[i].algo_chosen;
  }
  std::printf("%u gemms, every descriptor passes weft_gemm_check, %u algorithms chosen\n", count,
              chosen);
  return weft::kExitOk;
}

} // namespace

int main(int argc, char **argv) {
  bool select = false, reselect = false;
  const char *path = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--select"))
      select = true;
    else if (!std::strcmp(argv[i], "--reselect"))
      select = reselect = true;
    else if (argv[i][0] == '-' || path)
      return usage();
    else
      path = argv[i];
  }
  if (!path)
    return usage();
  if (select)
    if (int code = selectAlgorithms(path, reselect))
      return code;
  return printGemms(path);
}
