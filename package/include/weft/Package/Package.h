// A compiled training step as the runtime loads it: the host schedule (buffers
// at arena offsets, kernels, launches, cuBLASLt GEMMs, events), kernel images
// and optional initial data, and its versioned binary container. No MLIR or
// LLVM dependency: the runtime reads packages with this library.
#ifndef WEFT_PACKAGE_PACKAGE_H
#define WEFT_PACKAGE_PACKAGE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::pkg {

/// The container's layout (header, section table, record layouts), written
/// into every package; a reader refuses any other number. Version 2: GEMM
/// records gained the aux matrix (buffer, leading dimension).
inline constexpr uint32_t kFormatVersion = 2;
/// "no index" in a record (an absent C operand, a kernel without an image).
inline constexpr uint32_t kNone = 0xFFFFFFFFu;
/// Limits of one launch on sm_90 (CUDA programming guide, compute capability
/// 9.0): grid.x < 2^31, grid.y/z <= 65535, block.x/y <= 1024, block.z <= 64,
/// 1024 threads per block, 227 KiB of shared memory per block (opt-in).
inline constexpr uint64_t kMaxGridX = 2147483647, kMaxGridYZ = 65535;
inline constexpr uint64_t kMaxBlockXY = 1024, kMaxBlockZ = 64, kMaxThreads = 1024;
inline constexpr uint64_t kMaxDynamicSmem = 232448;

enum class Role : uint32_t {
  Parameter, OptimizerState, Input, Output, Gradient, Activation, Temporary,
  Workspace,
};
inline constexpr uint32_t kNumRoles = 8;
/// "parameter", "optimizer_state", "input", "output", "gradient",
/// "activation", "temporary", "workspace".
const char *roleName(Role role);
std::optional<Role> parseRole(std::string_view name);

/// TensorMap: a 128-byte CUtensorMap passed by value (a TMA descriptor the
/// runtime encodes once at load from a TensorMap record).
enum class ParamKind : uint8_t { Pointer, I32, I64, F32, TensorMap };
inline constexpr uint32_t kNumParamKinds = 5;
/// "ptr", "i32", "i64", "f32", "tensormap".
const char *paramKindName(ParamKind kind);
std::optional<ParamKind> parseParamKind(std::string_view name);

enum class DType : uint32_t { BF16, F16, F32, F64 };
inline constexpr uint32_t kNumDTypes = 4;
const char *dtypeName(DType dtype); // "bf16", "f16", "f32", "f64"
std::optional<DType> parseDType(std::string_view name);
uint64_t dtypeBytes(DType dtype);

/// As weft_gemm_epilogue in runtime/include/weft_runtime.h. BGradA writes
/// the bias gradient of A's rows (bias[m] = sum over k of op(A)[m, k]) into
/// the bias buffer. GeluAux / GeluAuxBias also write the pre-activation to
/// the aux matrix, DGelu reads it (D = acc * gelu'(aux)).
enum class Epilogue : uint32_t {
  None, Bias, Gelu, BiasGelu, BGradA, GeluAux, GeluAuxBias, DGelu,
};
inline constexpr uint32_t kNumEpilogues = 8;
/// "none", "bias", "gelu", "bias_gelu", "bgrad_a", "gelu_aux",
/// "gelu_aux_bias", "dgelu".
const char *epilogueName(Epilogue epilogue);
std::optional<Epilogue> parseEpilogue(std::string_view name);
/// Whether the epilogue reads (bias) or writes (bias gradient) a bias buffer.
inline bool epilogueUsesBias(Epilogue epilogue) {
  return epilogue == Epilogue::Bias || epilogue == Epilogue::BiasGelu ||
         epilogue == Epilogue::BGradA || epilogue == Epilogue::GeluAuxBias;
}
/// Whether the epilogue writes (GeluAux*) or reads (DGelu) an aux matrix:
/// [m, n] of the GEMM's dtype, row-major with row pitch aux_ld (>= n, a
/// multiple of kAuxLdMultiple elements: cuBLASLt's EPILOGUE_AUX_LD), batch 1.
inline bool epilogueUsesAux(Epilogue epilogue) {
  return epilogue == Epilogue::GeluAux || epilogue == Epilogue::GeluAuxBias ||
         epilogue == Epilogue::DGelu;
}
inline constexpr int64_t kAuxLdMultiple = 8;
/// Elements of that buffer: n for a bias added to each row, m for the
/// bias gradient of A's rows; 0 when the epilogue has none.
inline int64_t epilogueBiasElements(Epilogue epilogue, int64_t m, int64_t n) {
  return epilogue == Epilogue::BGradA ? m : epilogueUsesBias(epilogue) ? n : 0;
}

/// One tensor's bytes in the arena, live during schedule indices
/// [first, last] (both inclusive).
struct Buffer {
  std::string name;
  /// The tensor type as the IR prints it ("tensor<2x16xbf16>"); may be empty.
  std::string type;
  uint64_t offset = 0, size = 0;
  uint32_t first = 0, last = 0;
  Role role = Role::Temporary;
  /// The step function's argument / result this buffer holds; -1 if none.
  int32_t arg = -1, result = -1;
  /// A carried weight copy: the argument of its master; -1 otherwise.
  int32_t copyOf = -1;
  /// Bound by the caller (weft-compile --bind-arguments): an argument whose
  /// bytes stay in the caller's memory, which the runtime is given before a
  /// run (weft_step_bind_device); it takes no arena bytes (offset 0).
  bool bound = false;
};

struct Kernel {
  std::string name;
  /// The entry point's name in the image.
  std::string entry;
  /// The image the kernel is in: its name, and its index into
  /// Package::images, kNone when the package lacks it.
  std::string imageName;
  uint32_t image = kNone;
  std::vector<ParamKind> params;
};

enum class ArgKind : uint32_t { Buffer, I32, I64, F32, TensorMap };
inline constexpr uint32_t kNumArgKinds = 5;
/// A launch argument: a buffer index, an immediate's bits (an i32 or f32
/// in the low 32 bits), or an index into Package::tensorMaps. An i64 or i32
/// immediate with `rankAxes` (a bit per grid axis; 0: none) is relative to
/// the rank: on the rank at position p of its group along those axes it is
/// `value + p * rankScale` (a shard's offset in the global tensor: a
/// vocabulary shard's first row, a dropout block's first column).
struct Arg {
  ArgKind kind = ArgKind::Buffer;
  uint64_t value = 0;
  uint32_t rankAxes = 0;
  int64_t rankScale = 0;
};

/// A TMA descriptor over a buffer (cuTensorMapEncodeTiled's arguments):
/// `rank` dims innermost first, byte strides of dims 1..rank-1, the box, the
/// swizzle span in bytes (0, 32, 64 or 128); elements of `dtype`; interleave
/// none, element strides 1, out-of-bounds elements read as zero.
inline constexpr uint32_t kMaxTensorMapRank = 5;
struct TensorMap {
  uint32_t buffer = 0;
  DType dtype = DType::BF16;
  uint32_t rank = 1;
  uint32_t swizzle = 0;
  uint64_t dims[kMaxTensorMapRank] = {1, 1, 1, 1, 1};
  uint64_t strides[kMaxTensorMapRank - 1] = {0, 0, 0, 0};
  uint32_t box[kMaxTensorMapRank] = {1, 1, 1, 1, 1};
};

struct Launch {
  uint32_t kernel = 0;
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  uint32_t smem = 0, stream = 0;
  /// The schedule index the launch runs at (buffers must be live there).
  uint32_t index = 0;
  std::vector<Arg> args;
};

/// D[m,n] = epilogue(alpha op(A) op(B) + beta C), as weft_gemm_desc. Operands
/// are buffer indices (c, bias, workspace may be kNone).
struct Gemm {
  uint32_t a = 0, b = 0, c = kNone, d = 0, bias = kNone, workspace = kNone;
  /// The aux matrix of the GELU epilogues (kNone for the others) and its
  /// row pitch in elements (0 without one).
  uint32_t aux = kNone;
  int64_t auxLd = 0;
  int64_t m = 1, n = 1, k = 1, batch = 1;
  /// Elements between batches of A, B, C, D (used when batch > 1).
  int64_t strides[4] = {0, 0, 0, 0};
  /// Where A, B, C, D and aux start in their buffers, in elements (a
  /// collective matmul's partial GEMMs read and write row blocks); byte
  /// offsets are multiples of kOperandAlignment.
  int64_t offsets[5] = {0, 0, 0, 0, 0};
  /// Rank-relative row blocks (a local-first collective matmul's partial
  /// GEMMs): on the rank at `position` of its group along the grid axes
  /// `rankAxes` (a bit per axis; 0: none), offsets[o] grows by
  /// ((position + rankShift) mod ranks) x rankStrides[o].
  uint32_t rankAxes = 0;
  int64_t rankShift = 0;
  int64_t rankStrides[5] = {0, 0, 0, 0, 0};
  bool transA = false, transB = false;
  DType dtype = DType::BF16;
  Epilogue epilogue = Epilogue::None;
  float alpha = 1.0f, beta = 0.0f;
  /// A cublasLtMatmulAlgo_t chosen at compile time (weft_gemm_algo.bytes).
  bool hasAlgo = false;
  uint8_t algo[64] = {};
  uint32_t stream = 0, index = 0;
};

struct Event {
  bool record = true; // record_event, else wait_event
  uint32_t stream = 0, event = 0, index = 0;
};

/// A collective of a partitioned (SPMD) step over the ranks that share every
/// grid coordinate outside `axes` (a bit per grid axis), in row-major order
/// of their coordinates along the axes (a rank's position in its group).
/// `count` is the element count of the whole tensor: both buffers of an
/// all-reduce, the output of an all-gather (each rank's input is count /
/// ranks), the input of a reduce-scatter (each rank's output is count /
/// ranks). Blocks are contiguous and in rank order along the axes (NCCL's
/// layout).
///  - all_to_all: input and output both `count` elements; block j (count /
///    ranks contiguous elements) of the input goes to the rank at position
///    j, block i of the output comes from the rank at position i (NCCL's
///    grouped send/recv all-to-all, as torch's all_to_all_single).
///  - send_recv: a shift along the group (shard.shift): each rank sends its
///    whole input (`count` elements) to the rank `shift` positions ahead and
///    receives its output (`count` elements) from the rank `shift` behind.
///    With `rotate` the ends wrap; without it a rank with no source (the
///    first `shift` ones, or the last -`shift` for a negative shift) gets
///    zeros, as the reference interpreter's shard.shift.
enum class CollectiveKind : uint32_t { AllReduce, AllGather, ReduceScatter, AllToAll, SendRecv };
inline constexpr uint32_t kNumCollectiveKinds = 5;
/// "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv".
const char *collectiveKindName(CollectiveKind kind);
std::optional<CollectiveKind> parseCollectiveKind(std::string_view name);
enum class Reduction : uint32_t { Sum, Max, Min, Avg };
inline constexpr uint32_t kNumReductions = 4;
const char *reductionName(Reduction reduction); // "sum", "max", "min", "avg"
std::optional<Reduction> parseReduction(std::string_view name);
struct Collective {
  CollectiveKind kind = CollectiveKind::AllReduce;
  uint32_t input = 0, output = 0;
  int64_t count = 0;
  DType dtype = DType::BF16;
  Reduction reduction = Reduction::Sum; // all_reduce, reduce_scatter only
  uint32_t axes = 0;
  /// send_recv: positions ahead in the group each rank sends to (not 0, its
  /// magnitude below the group's ranks), and whether the ends wrap.
  int32_t shift = 0;
  bool rotate = false;
  uint32_t stream = 0, index = 0;
  /// Where the input and output start in their buffers, in elements (the
  /// chunks of a collective matmul); byte offsets are multiples of
  /// kOperandAlignment.
  int64_t inputOffset = 0, outputOffset = 0;
};
/// The largest send_recv shift the record holds (24 bits, signed).
inline constexpr int32_t kMaxShift = (1 << 23) - 1;
/// The byte alignment of an operand offset inside its buffer: what
/// cuBLASLt's algorithms and NCCL assume of the arena's buffers.
inline constexpr int64_t kOperandAlignment = 256;
/// A buffer holding this rank's block of dimension `dim` of the whole
/// tensor, blocks in rank order along the package's split axis.
struct Split {
  uint32_t buffer = 0;
  int32_t dim = 0;
};
/// At most this many grid axes.
inline constexpr uint32_t kMaxGridAxes = 8;

enum class EntryKind : uint32_t { Launch, Gemm, Event, Collective };
inline constexpr uint32_t kNumEntryKinds = 4;
/// The host schedule: launches, GEMMs, events and collectives in issue order.
struct Entry {
  EntryKind kind = EntryKind::Launch;
  uint32_t item = 0; // index into launches / gemms / events
};

struct Image {
  std::string name;
  std::optional<std::string> cubin, ptx;
};

/// Initial bytes of one buffer (parameters, optimizer state).
struct InitData {
  uint32_t buffer = 0;
  std::string bytes;
};

struct Package {
  uint32_t formatVersion = kFormatVersion;
  std::string arch;        // "sm_90a"
  std::string weftVersion; // the compiler that wrote it
  std::string stepName;
  uint64_t arenaBytes = 0, alignment = 1;
  uint32_t numSteps = 0, numStreams = 1;
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  std::vector<Launch> launches;
  std::vector<TensorMap> tensorMaps;
  std::vector<Gemm> gemms;
  std::vector<Event> events;
  /// A partitioned step: the device grid (empty for one GPU) and its
  /// collectives. The package is the same for every rank (SPMD).
  std::vector<int64_t> grid;
  std::vector<Collective> collectives;
  /// The grid axis split buffers are divided along (-1: none), and the
  /// arguments and results this rank holds a block of (`splits`).
  int32_t splitAxis = -1;
  std::vector<Split> splits;
  std::vector<Entry> schedule;
  std::vector<Image> images;
  std::vector<InitData> initData;
};

//===----------------------------------------------------------------------===//
// Checks shared by the plan dialect's verifier and `weft-run --check`
//===----------------------------------------------------------------------===//

/// What a problem is about, so the plan dialect can report it at the op.
enum class Subject { Step, Buffer, Kernel, Launch, Gemm, Event, Image, Collective };
struct Problem {
  Subject subject = Subject::Step;
  uint32_t index = 0; // into the subject's table
  std::string message;
};

struct CheckOptions {
  /// Every kernel must have an image holding a cubin or PTX.
  bool requireImages = true;
  /// Stop after this many problems (the overlap check alone can find n^2).
  size_t maxProblems = 50;
};

/// Every buffer inside the arena and aligned (a bound buffer: an argument,
/// outside the arena, overlapping nothing), no two buffers overlapping in
/// bytes while both are live, every launch/GEMM operand a defined buffer that
/// is live at the entry's schedule index and large enough, launch limits,
/// streams and events consistent, the schedule a permutation in index order,
/// every kernel's image present (with requireImages). Never reads out of
/// bounds, whatever the indices say.
std::vector<Problem> checkPackage(const Package &package,
                                  const CheckOptions &options = {});

//===----------------------------------------------------------------------===//
// The container
//===----------------------------------------------------------------------===//

/// Serializes `package` (little-endian; layout in PackageFormat.h).
std::string writePackage(const Package &package);

/// Parses a container without trusting it: magic, format version (refused
/// unless kFormatVersion, naming both), every offset and length against the
/// file size, every checksum, every record count against its section, every
/// string and index against its table. On failure returns false with
/// `error` naming the field and the values.
bool readPackage(const void *data, size_t size, Package &package,
                 std::string &error);

/// FNV-1a, 64 bits: the section checksums.
uint64_t fnv1a64(const void *data, size_t size, uint64_t hash = 0xcbf29ce484222325ull);

} // namespace weft::pkg

#endif // WEFT_PACKAGE_PACKAGE_H
