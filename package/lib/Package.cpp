// Names of the package's enumerations and the FNV-1a checksum.
#include "weft/Package/Package.h"

#include "PackageFormat.h"

#include <iterator>

namespace weft::pkg {

namespace {
template <typename Enum, size_t N>
std::optional<Enum> parseName(std::string_view name, const char *const (&names)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (name == names[i])
      return Enum(i);
  return std::nullopt;
}

const char *const kRoleNames[] = {"parameter", "optimizer_state", "input",
                                  "output",    "gradient",        "activation",
                                  "temporary", "workspace"};
const char *const kParamKindNames[] = {"ptr", "i32", "i64", "f32", "tensormap"};
const char *const kDTypeNames[] = {"bf16", "f16", "f32", "f64"};
const char *const kEpilogueNames[] = {"none",     "bias",          "gelu",
                                      "bias_gelu", "bgrad_a",      "gelu_aux",
                                      "gelu_aux_bias", "dgelu"};
static_assert(std::size(kEpilogueNames) == kNumEpilogues);
const char *const kCollectiveKindNames[] = {"all_reduce", "all_gather", "reduce_scatter",
                                            "all_to_all", "send_recv"};
static_assert(std::size(kCollectiveKindNames) == kNumCollectiveKinds);
const char *const kReductionNames[] = {"sum", "max", "min", "avg"};
static_assert(std::size(kReductionNames) == kNumReductions);
} // namespace

const char *collectiveKindName(CollectiveKind kind) {
  return uint32_t(kind) < kNumCollectiveKinds ? kCollectiveKindNames[uint32_t(kind)] : "?";
}
std::optional<CollectiveKind> parseCollectiveKind(std::string_view name) {
  return parseName<CollectiveKind>(name, kCollectiveKindNames);
}
const char *reductionName(Reduction reduction) {
  return uint32_t(reduction) < kNumReductions ? kReductionNames[uint32_t(reduction)] : "?";
}
std::optional<Reduction> parseReduction(std::string_view name) {
  return parseName<Reduction>(name, kReductionNames);
}

const char *roleName(Role role) {
  return uint32_t(role) < kNumRoles ? kRoleNames[uint32_t(role)] : "?";
}
std::optional<Role> parseRole(std::string_view name) {
  return parseName<Role>(name, kRoleNames);
}
const char *paramKindName(ParamKind kind) {
  return uint32_t(kind) < kNumParamKinds ? kParamKindNames[uint32_t(kind)] : "?";
}
std::optional<ParamKind> parseParamKind(std::string_view name) {
  return parseName<ParamKind>(name, kParamKindNames);
}
const char *dtypeName(DType dtype) {
  return uint32_t(dtype) < kNumDTypes ? kDTypeNames[uint32_t(dtype)] : "?";
}
std::optional<DType> parseDType(std::string_view name) {
  return parseName<DType>(name, kDTypeNames);
}
uint64_t dtypeBytes(DType dtype) {
  switch (dtype) {
  case DType::BF16:
  case DType::F16:
    return 2;
  case DType::F32:
    return 4;
  case DType::F64:
    return 8;
  }
  return 0;
}
const char *epilogueName(Epilogue epilogue) {
  return uint32_t(epilogue) < kNumEpilogues ? kEpilogueNames[uint32_t(epilogue)]
                                            : "?";
}
std::optional<Epilogue> parseEpilogue(std::string_view name) {
  return parseName<Epilogue>(name, kEpilogueNames);
}

uint64_t fnv1a64(const void *data, size_t size, uint64_t hash) {
  const auto *bytes = static_cast<const uint8_t *>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

const char *format::sectionName(uint32_t kind) {
  static const char *const names[] = {
      "?",       "STRINGS", "STEP",   "BUFFERS",  "KERNELS", "PARAM_KINDS",
      "LAUNCHES", "ARGS",   "GEMMS",  "EVENTS",   "SCHEDULE", "IMAGES",
      "CUBIN",   "PTX",     "INIT_DATA", "TENSOR_MAPS", "GRID", "COLLECTIVES",
      "SPLITS",  "OFFSETS", "BOUND", "RANK_OFFSETS", "RANK_ARGS"};
  return kind <= kLastKind ? names[kind] : "?";
}

} // namespace weft::pkg
