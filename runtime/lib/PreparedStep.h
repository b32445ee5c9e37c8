// The host half of running a package: everything decided before the first
// driver call (arch and schedule checks, image choice, launch argument layout,
// tensor-map and GEMM descriptors, arena layout, poison points). Tested
// without a GPU; Step.cpp turns it into device work.
#ifndef WEFT_RUNTIME_PREPAREDSTEP_H
#define WEFT_RUNTIME_PREPAREDSTEP_H

#include "weft_runtime.h"

#include "weft/Package/Package.h"

#include <string>
#include <vector>

namespace weft::runtime {

// A buffer's tensor type parsed from the package's "tensor<2x16xbf16>".
struct BufferShape {
  int rank = -1; // -1: the package gave no type
  std::vector<long long> dims;
  std::string dtype; // "bf16", "f16", "f32", "f64", "i64", "i32", "i1"
};
// Parses `type`; false with `error` set for text of another form.
bool parseTensorType(const std::string &type, BufferShape &shape, std::string &error);

// One kernel parameter in the launch's argument blob.
struct ParamSlot {
  pkg::ParamKind kind = pkg::ParamKind::Pointer;
  size_t offset = 0; // into the blob; CUtensorMaps 64-byte aligned
  uint64_t value = 0; // buffer index, tensor-map index or immediate bits
};

struct ResolvedLaunch {
  uint32_t kernel = 0;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  uint32_t smem = 0, stream = 0, index = 0;
  std::vector<ParamSlot> params;
  size_t blobBytes = 0; // a multiple of 64
};

struct ResolvedTensorMap {
  uint32_t buffer = 0;
  CUtensorMapDataType dtype = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  unsigned rank = 1;
  unsigned long long dims[5] = {1, 1, 1, 1, 1}, strides[4] = {0, 0, 0, 0};
  unsigned box[5] = {1, 1, 1, 1, 1};
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
};

struct ResolvedGemm {
  weft_gemm_desc desc = {};
  uint32_t a = 0, b = 0, c = pkg::kNone, d = 0, bias = pkg::kNone, workspace = pkg::kNone;
  // The GELU epilogues' aux matrix (written or read) and its row pitch.
  uint32_t aux = pkg::kNone;
  long long auxLd = 0;
  // Bytes from the start of a, b, c, d and aux's buffers (a collective
  // matmul's partial GEMMs on row blocks).
  unsigned long long offsets[5] = {0, 0, 0, 0, 0};
  weft_gemm_algo algo = {}; // valid when the package chose it
  uint32_t stream = 0, index = 0;
};

// Which kernel image a module is loaded from.
struct ImageChoice {
  uint32_t image = pkg::kNone;
  bool cubin = false; // else PTX (JIT-compiled by the driver)
};

struct ScheduleStep {
  pkg::EntryKind kind = pkg::EntryKind::Launch;
  uint32_t item = 0;
  // Debug mode: buffers whose live range ends with this entry.
  std::vector<uint32_t> poison;
};

// A package resolved for one device and one set of options by prepareStep:
// the host schedule with every argument, descriptor and image decided (the
// runtime's counterpart of the compiler's weft_plan.step, not a new plan).
struct PreparedStep {
  pkg::Package package;
  int deviceSm = 0;
  weft_step_options options = {};
  std::vector<BufferShape> shapes;
  // Arena offsets (the package's), or in debug mode each buffer's own allocation.
  uint64_t arenaBytes = 0;
  std::vector<ImageChoice> images;  // per package image
  std::vector<uint32_t> kernelImage; // per kernel: index into images
  std::vector<ResolvedLaunch> launches;
  std::vector<ResolvedTensorMap> tensorMaps;
  std::vector<ResolvedGemm> gemms;
  std::vector<ScheduleStep> schedule;
  uint32_t numEvents = 0;
  // A partitioned step: the run's ranks and this one (0: one GPU).
  int worldSize = 0, rank = 0;
  // The streams that carry collectives and the GEMMs beside them
  // (CommOverlap.h), with the options that use them resolved:
  // WEFT_COMM_PRIORITY_NORMAL / _HIGH, and the SMs those GEMMs leave.
  std::vector<bool> commStreams, gemmBesideCollective;
  int commPriority = WEFT_COMM_PRIORITY_NORMAL, gemmSmMargin = 0;
};

// "sm_90a" -> 90 and whether the arch is specific ('a'); false otherwise.
bool parseArch(const std::string &arch, int &sm, bool &specific);

// Reads and checks `bytes` for a device of `deviceSm` and resolves it. On
// failure returns the status with the thread's error naming the problem.
// `worldSize` is the number of ranks of a multi-GPU run (0 for one GPU): a
// partitioned package needs exactly its grid's ranks, a one-GPU one none.
weft_status prepareStep(const void *bytes, size_t size, int deviceSm,
                        const weft_step_options &options, PreparedStep &prepared,
                        int worldSize = 0, int rank = 0);

// The text of weft_step_describe (no device addresses: offsets in the arena).
std::string describeStep(const PreparedStep &prepared);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_PREPAREDSTEP_H
