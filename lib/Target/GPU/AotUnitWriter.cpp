// The text files of an AOT attention unit: NAME.json (metadata), NAME.h (C
// declarations and macros), NAME.c (embedded cubin, metadata check, launcher)
// and the run's kernels.json. The C never exits: every path returns CUresult.
#include "AotUnit.h"

#include "weft/Dialect/AttentionWorkspace.h"
#include "weft/Target/GPU/AotKernels.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>

using namespace mlir;

namespace weft::gpu {

namespace {

const char *kindName(KernelParam::Kind kind) {
  switch (kind) {
  case KernelParam::Kind::Pointer:
    return "pointer";
  case KernelParam::Kind::I32:
    return "i32";
  case KernelParam::Kind::F32:
    return "f32";
  case KernelParam::Kind::TensorMap:
    return "tensormap";
  }
  return "pointer";
}

const char *dtypeName(const AttentionKernelConfig &config) {
  return config.bf16 ? "bf16" : "f16";
}

/// The MMA kind as the tuning table and test/gpu/kernel_units.py spell it.
const char *mmaName(const AttentionKernelConfig &config) {
  return config.warpgroupMma ? "warpgroup" : "warp";
}

/// Grid of a kernel of the unit (see KernelSpec).
std::array<int64_t, 3> gridOf(const AotUnit &unit, const KernelSpec &kernel) {
  const AttentionShapes &s = unit.shapes;
  if (kernel.role == "decode_split")
    return {unit.decode.numSplits, s.kvHeads, s.batch};
  if (kernel.role == "decode_combine")
    return {s.batch * s.qHeads * s.qLen, 1, 1};
  int64_t len = kernel.overKeys ? unit.shapes.kLen : unit.shapes.qLen;
  int64_t heads = kernel.overKeys ? unit.shapes.kvHeads : unit.shapes.qHeads;
  return {static_cast<int64_t>(llvm::divideCeil(len, kernel.rowsPerBlock)),
          heads, unit.shapes.batch};
}

/// Query rows of a decode unit: its partial O and lse have one row each per
/// split.
int64_t decodeRows(const AotUnit &unit) {
  return unit.shapes.batch * unit.shapes.qHeads * unit.shapes.qLen;
}

int64_t workspaceBytes(const AotUnit &unit) {
  if (unit.config.decodeRows)
    return unit.decode.numSplits * decodeRows(unit) * (unit.shapes.headDim + 1) * 4;
  const AttentionShapes &s = unit.shapes;
  bool dropout = unit.config.dropoutP > 0.0;
  if (unit.backward)
    return attentionGradWorkspaceBytes(s.batch * s.qHeads, s.qLen, s.kLen, dropout,
                                       unit.config.atomicDq ? s.headDim : 0);
  // A Hopper forward with dropout draws its keep mask into the workspace.
  return dropout && unit.config.warpgroupMma
             ? attentionKeepMaskBytes(s.batch * s.qHeads, s.qLen, s.kLen)
             : 0;
}

/// The scale as C writes it back with "%.9e": ten significant digits
/// round-trip a float, so the header's literal and the metadata agree.
std::string scaleText(double scale) {
  char text[64];
  std::snprintf(text, sizeof text, "%.9e", static_cast<double>(static_cast<float>(scale)));
  return text;
}

/// The dropout probability in the fewest digits that read back exactly (0.1).
std::string probabilityText(double p) {
  char text[64];
  for (int digits = 1;; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, p);
    if (digits == 17 || std::strtod(text, nullptr) == p)
      return text;
  }
}

/// The "key=value\n" lines embedded in NAME.c and rebuilt from NAME.h's
/// macros at load time; keep in sync with kMetadataFormat.
std::string metadataText(const AotUnit &unit) {
  const AttentionShapes &s = unit.shapes;
  return llvm::formatv("weft_version={0}\nformat_version={1}\narch={2}\n"
                       "direction={3}\ndtype={4}\nbatch={5}\nq_heads={6}\n"
                       "kv_heads={7}\nq_len={8}\nk_len={9}\nhead_dim={10}\n"
                       "causal={11}\nblock_q={12}\nblock_k={13}\nscale={14}\n"
                       "layout={15}\n",
                       kWeftVersion, kAotFormatVersion, unit.chip,
                       unit.backward ? "backward" : "forward",
                       dtypeName(unit.config), s.batch, s.qHeads, s.kvHeads,
                       s.qLen, s.kLen, s.headDim, unit.config.causal ? 1 : 0,
                       unit.config.blockQ, unit.config.blockK,
                       scaleText(s.scale), layoutName(unit.config))
      .str();
}

constexpr const char *kMetadataFormat =
    "weft_version=%s\\nformat_version=%d\\narch=%s\\ndirection=%s\\n"
    "dtype=%s\\nbatch=%d\\nq_heads=%d\\nkv_heads=%d\\nq_len=%d\\nk_len=%d\\n"
    "head_dim=%d\\ncausal=%d\\nblock_q=%d\\nblock_k=%d\\nscale=%.9e\\n"
    "layout=%s\\n";

/// The launcher's pointer arguments, in its C signature's order: a packed
/// layout takes the packed tensors once (qkv, dqkv).
llvm::SmallVector<std::string> launcherPointers(const AotUnit &unit) {
  const AttentionKernelConfig &c = unit.config;
  if (c.decodeRows)
    return {"q", "k", "v", "out", "lse", "split_workspace"};
  llvm::SmallVector<std::string> inputs =
      c.packedQkv ? llvm::SmallVector<std::string>{"qkv"}
                  : llvm::SmallVector<std::string>{"q", "k", "v"};
  if (!unit.backward) {
    inputs.append({"out", "lse"});
    if (c.dropoutP > 0.0 && c.warpgroupMma)
      inputs.push_back("mask_workspace");
  } else {
    inputs.append({"out", "dout", "lse", "delta_workspace"});
    if (c.packedGrads)
      inputs.push_back("dqkv");
    else
      inputs.append({"dq", "dk", "dv"});
  }
  // Dropout's seed: the device address of one int64, read at launch.
  if (c.dropoutP > 0.0)
    inputs.push_back("seed");
  return inputs;
}

/// The launcher argument that carries kernel tensor `name`.
std::string launcherTensor(const AttentionKernelConfig &config, llvm::StringRef name) {
  if (name == "delta")
    return "delta_workspace";
  if (name == "mask")
    return "mask_workspace";
  if (name == "o_partial")
    return "split_workspace";
  if (config.packedQkv && (name == "q" || name == "k" || name == "v"))
    return "qkv";
  if (config.packedGrads && (name == "dq" || name == "dk" || name == "dv"))
    return "dqkv";
  return name.str();
}

/// What the header says about the tensors' layout.
std::string layoutComment(const AotUnit &unit) {
  const AttentionKernelConfig &c = unit.config;
  std::string dtype = dtypeName(c);
  if (c.layout == AttentionKernelConfig::Layout::HeadMajor)
    return " * Layout head_major: tensors are contiguous [batch, heads, len, head_dim] " + dtype +
           ".\n";
  std::string text = " * Layout " + layoutName(c).str() +
                     ": tensors are contiguous [batch, len, heads, head_dim] " + dtype;
  if (c.packedQkv)
    text += c.groupedQkv
                ? ";\n *   qkv is one [batch, len, kv_heads, q_heads / kv_heads + 2, head_dim] "
                  "tensor (per kv head: its q heads, then k, then v)"
                : ";\n *   qkv is one [batch, len, q_heads + 2 * kv_heads, head_dim] tensor (q's "
                  "heads, then k's, then v's)";
  if (c.packedGrads)
    text += ";\n *   dqkv is the gradient in the same packed form";
  return text + ".\n";
}

std::string launcherSignature(const AotUnit &unit) {
  std::string text = llvm::formatv("CUresult {0}_launch({0}_module *module, "
                                   "CUstream stream",
                                   unit.name)
                         .str();
  for (const std::string &pointer : launcherPointers(unit))
    text += ", CUdeviceptr " + pointer;
  return text + ")";
}

} // namespace

std::string writeUnitJson(const AotUnit &unit) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os, /*IndentSize=*/2);
  const AttentionShapes &s = unit.shapes;
  json.object([&] {
    json.attribute("weft_version", kWeftVersion);
    json.attribute("format_version", kAotFormatVersion);
    json.attribute("arch", unit.chip);
    json.attribute("name", unit.name);
    json.attribute("direction", unit.backward ? "backward" : "forward");
    json.attributeObject("config", [&] {
      json.attribute("dtype", dtypeName(unit.config));
      json.attribute("head_dim", unit.config.headDim);
      json.attribute("causal", unit.config.causal);
      json.attribute("block_q", unit.config.blockQ);
      json.attribute("block_k", unit.config.blockK);
      json.attribute("mma", mmaName(unit.config));
      if (unit.config.warpgroupMma)
        json.attribute("stages", unit.config.stages);
      // Written only when not serial: the units of the serial kernels stay
      // byte for byte what they were.
      if (unit.config.schedule != AttentionKernelConfig::ForwardSchedule::Serial)
        json.attribute("schedule", scheduleName(unit.config.schedule));
      json.attribute("layout", layoutName(unit.config));
      if (unit.config.atomicDq)
        json.attribute("atomic_dq", true);
      if (unit.config.dropoutP > 0.0)
        json.attributeObject("dropout", [&] {
          json.attribute("p", unit.config.dropoutP);
          json.attribute("rng_id", unit.config.rngId);
        });
      if (unit.config.decodeRows)
        json.attributeObject("decode", [&] {
          json.attribute("rows", unit.config.decodeRows);
          json.attribute("num_splits", unit.decode.numSplits);
          json.attribute("keys_per_split", unit.decode.keysPerSplit);
          json.attribute("sm_count", unit.smCount);
          json.attribute("ctas_per_sm", unit.ctasPerSm);
        });
    });
    json.attributeObject("shapes", [&] {
      json.attribute("batch", s.batch);
      json.attribute("q_heads", s.qHeads);
      json.attribute("kv_heads", s.kvHeads);
      json.attribute("q_len", s.qLen);
      json.attribute("k_len", s.kLen);
      json.attribute("head_dim", s.headDim);
      json.attribute("scale", s.scale);
    });
    json.attribute("ptx", unit.name + ".ptx");
    json.attribute("cubin", unit.name + ".cubin");
    json.attributeArray("kernels", [&] {
      for (const KernelSpec &kernel : unit.kernels) {
        KernelResources resources =
            unit.binary ? unit.binary->resources.lookup(kernel.name)
                        : KernelResources();
        json.object([&] {
          json.attribute("name", kernel.name);
          json.attribute("role", kernel.role);
          json.attributeArray("params", [&] {
            for (const KernelParam &param : kernel.params)
              json.object([&] {
                json.attribute("name", param.name);
                json.attribute("kind", kindName(param.kind));
                if (param.kind == KernelParam::Kind::TensorMap) {
                  json.attribute("len", param.lenName);
                  json.attribute("heads", param.headsName);
                  json.attribute("box_rows", param.boxRows);
                }
              });
          });
          json.attribute("threads", kernel.threads);
          // Decode grids come from the split rule, not from rows_per_block.
          if (unit.config.decodeRows)
            json.attributeArray("grid", [&] {
              for (int64_t extent : gridOf(unit, kernel))
                json.value(extent);
            });
          json.attribute("rows_per_block", kernel.rowsPerBlock);
          json.attribute("over_keys", kernel.overKeys);
          json.attribute("dynamic_smem_bytes", kernel.dynamicSmemBytes);
          json.attribute("registers", resources.registers);
          json.attribute("spill_store_bytes", resources.spillStoreBytes);
          json.attribute("spill_load_bytes", resources.spillLoadBytes);
          json.attribute("stack_bytes", resources.stackBytes);
          json.attribute("static_smem_bytes", resources.sharedBytes);
          // Launch it with weft_launch_dependent (cuLaunchKernelEx's
          // programmatic stream serialization) after the kernel before it.
          if (kernel.programmatic)
            json.attribute("programmatic", true);
        });
      }
    });
    json.attributeArray("workspaces", [&] {
      if (unit.config.decodeRows) {
        // One buffer: o_partial [num_splits, rows, d] f32, then lse_partial
        // [num_splits, rows] f32.
        json.object([&] {
          json.attribute("name", "split_workspace");
          json.attribute("dtype", "f32");
          json.attribute("bytes", workspaceBytes(unit));
          json.attribute("lse_partial_offset",
                         unit.decode.numSplits * decodeRows(unit) * s.headDim * 4);
        });
        return;
      }
      if (!unit.backward) {
        if (workspaceBytes(unit) > 0)
          json.object([&] {
            // The keep mask's bits (weft/Dialect/AttentionWorkspace.h).
            json.attribute("name", "mask");
            json.attribute("dtype", "bits");
            json.attribute("bytes", workspaceBytes(unit));
          });
        return;
      }
      json.object([&] {
        json.attribute("name", "delta");
        json.attribute("dtype", "f32");
        json.attributeArray("shape", [&] {
          json.value(s.batch);
          json.value(s.qHeads);
          json.value(s.qLen);
        });
        // With dropout the keep mask follows delta
        // (weft/Dialect/AttentionWorkspace.h): the buffer is larger.
        json.attribute("bytes", workspaceBytes(unit));
        if (unit.config.dropoutP > 0.0)
          json.attribute("keep_mask_offset",
                         attentionKeepMaskOffset(s.batch * s.qHeads * s.qLen));
        if (unit.config.atomicDq)
          json.attribute("dq_accumulator_offset",
                         attentionDqAccumOffset(s.batch * s.qHeads, s.qLen, s.kLen,
                                                unit.config.dropoutP > 0.0));
      });
    });
  });
  os << "\n";
  return text;
}

std::string writeUnitHeader(const AotUnit &unit) {
  const std::string &n = unit.name;
  const AttentionShapes &s = unit.shapes;
  std::string guard = "WEFT_AOT_" + llvm::StringRef(n).upper() + "_H";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "/* " << n << ": a Weft AOT attention unit ("
     << (unit.backward ? "backward" : "forward") << ", " << dtypeName(unit.config)
     << ", " << unit.chip << "), generated by weft-compile " << kWeftVersion
     << " --emit=kernels; do not edit.\n"
     << layoutComment(unit) << " * lse"
     << (unit.backward ? " and the delta workspace are" : " is")
     << " [batch, q_heads, q_len] f32";
  if (unit.backward && unit.config.dropoutP > 0.0)
    os << "; with dropout the workspace\n * (" << n
       << "_workspace_bytes() bytes) holds the keep mask after delta";
  os << ".\n";
  if (unit.config.dropoutP > 0.0)
    os << " * Dropout p = " << probabilityText(unit.config.dropoutP) << " on the probabilities, "
       << "rng_id " << unit.config.rngId << ": the launcher's last argument,\n"
       << " *   seed, is the device address of one int64 (the step's seed), read by\n"
       << " *   the kernels when they run; element P[b, h, i, j] is kept by Philox4x32-10\n"
       << " *   with key (uint32(seed), rng_id) at index ((b * q_heads + h) * q_len + i)\n"
       << " *   * k_len + j (ARCHITECTURE.md, Randomness); the backward takes the\n"
       << " *   forward's seed.\n";
  os << " * Every function returns CUresult; on failure weft_last_error() "
        "says why. */\n";
  os << "#ifndef " << guard << "\n#define " << guard << "\n\n";
  os << "#include <stddef.h>\n\n#include <cuda.h>\n\n#include \"weft_runtime.h\"\n\n";
  os << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  os << "typedef struct " << n << "_module " << n << "_module;\n\n";
  auto define = [&](llvm::StringRef macro, const llvm::Twine &value) {
    os << "#define " << n << "_" << macro << " " << value << "\n";
  };
  define("WEFT_VERSION", llvm::Twine("\"") + kWeftVersion + "\"");
  define("FORMAT_VERSION", llvm::Twine(kAotFormatVersion));
  define("ARCH", "\"" + unit.chip + "\"");
  define("DIRECTION", unit.backward ? "\"backward\"" : "\"forward\"");
  define("DTYPE", llvm::Twine("\"") + dtypeName(unit.config) + "\"");
  define("BATCH", llvm::Twine(s.batch));
  define("Q_HEADS", llvm::Twine(s.qHeads));
  define("KV_HEADS", llvm::Twine(s.kvHeads));
  define("Q_LEN", llvm::Twine(s.qLen));
  define("K_LEN", llvm::Twine(s.kLen));
  define("HEAD_DIM", llvm::Twine(s.headDim));
  define("CAUSAL", llvm::Twine(unit.config.causal ? 1 : 0));
  define("SCALE", scaleText(s.scale) + "f");
  define("BLOCK_Q", llvm::Twine(unit.config.blockQ));
  define("BLOCK_K", llvm::Twine(unit.config.blockK));
  define("MMA", llvm::Twine("\"") + mmaName(unit.config) + "\"");
  define("LAYOUT", "\"" + layoutName(unit.config) + "\"");
  if (unit.config.dropoutP > 0.0) {
    define("DROPOUT_P", probabilityText(unit.config.dropoutP));
    define("RNG_ID", llvm::Twine(unit.config.rngId));
  }
  os << "\n/* Checks the metadata, makes a context current (keeping one that "
        "is),\n * loads the cubin and its kernels. */\n";
  os << "CUresult " << n << "_load(" << n << "_module **out);\n";
  os << "/* NULL is fine. */\n";
  os << "CUresult " << n << "_unload(" << n << "_module *module);\n";
  os << "/* Enqueues the " << unit.kernels.size() << " kernel"
     << (unit.kernels.size() == 1 ? "" : "s") << " on `stream`; returns without waiting. */\n";
  os << launcherSignature(unit) << ";\n";
  os << "/* Bytes of the f32 workspace the launcher takes ("
     << (unit.config.decodeRows
             ? "split_workspace: num_splits * batch * q_heads * q_len * (head_dim + 1) * 4"
             : unit.backward
                 ? (unit.config.atomicDq
                        ? (unit.config.dropoutP > 0.0
                               ? "delta_workspace: batch * q_heads * q_len * 4, then at a "
                                 "256-byte boundary the keep mask, then at the next the f32 dQ "
                                 "accumulator, batch * q_heads * q_len * head_dim * 4"
                               : "delta_workspace: batch * q_heads * q_len * 4, then at a "
                                 "256-byte boundary the f32 dQ accumulator, batch * q_heads * "
                                 "q_len * head_dim * 4")
                    : unit.config.dropoutP > 0.0
                        ? "delta_workspace: batch * q_heads * q_len * 4, then at a 256-byte "
                          "boundary the keep mask"
                        : "batch * q_heads * q_len * 4")
                 : workspaceBytes(unit) > 0
                       ? "mask_workspace: the keep mask, batch * q_heads * ceil(q_len / 8) * "
                         "ceil(k_len / 16) * 16"
                       : "none: 0")
     << "). */\n";
  os << "size_t " << n << "_workspace_bytes(void);\n\n";
  os << "#ifdef __cplusplus\n}\n#endif\n\n#endif /* " << guard << " */\n";
  return text;
}

namespace {

/// The launcher's argument for each kernel parameter: the argument of the
/// same name ("delta" is the caller's workspace), or for a tensor map its own
/// `<param>_map` (q, k and v of a packed tensor differ in their box rows).
class LauncherArguments {
public:
  explicit LauncherArguments(const AotUnit &unit) : unit(unit) {
    for (const std::string &pointer : launcherPointers(unit))
      pointers.insert(pointer);
    // The decode launcher's locals: lse_partial inside split_workspace and
    // the split rule's two numbers.
    if (unit.config.decodeRows) {
      pointers.insert("lse_partial");
      scalars.insert("num_splits");
      scalars.insert("keys_per_split");
    }
  }

  /// Empty for a parameter the launcher has no argument for: a builder change
  /// this writer does not know, better refused than launched wrongly.
  std::string of(const KernelParam &param) const {
    std::string name = launcherTensor(unit.config, param.name);
    if (param.kind == KernelParam::Kind::Pointer && pointers.contains(name))
      return name;
    if (param.kind == KernelParam::Kind::TensorMap && pointers.contains(name))
      return param.name + "_map";
    if (param.kind != KernelParam::Kind::Pointer && scalars.contains(name))
      return name;
    return {};
  }

private:
  const AotUnit &unit;
  llvm::StringSet<> pointers;
  llvm::StringSet<> scalars = {"batch", "q_heads", "kv_heads", "q_len", "k_len",
                               "scale"};
};

/// The embedded cubin, its metadata, the kernel table, the module struct and
/// the error helper `<n>_fail`.
void writeImageAndTables(llvm::raw_ostream &os, const AotUnit &unit) {
  const std::string &n = unit.name;
  const std::vector<char> &cubin = unit.binary->cubin;
  os << "/* ptxas -arch=" << unit.chip << " of " << n << ".ptx (" << cubin.size()
     << " bytes). */\n";
  os << "static const unsigned char " << n << "_image[" << cubin.size()
     << "] __attribute__((aligned(16))) = {";
  for (size_t i = 0; i < cubin.size(); ++i) {
    if (i % 16 == 0)
      os << "\n   ";
    os << llvm::format(" 0x%02x,", static_cast<unsigned char>(cubin[i]));
  }
  os << "\n};\n\n";

  os << "/* What the image was built for; NAME_load compares it with " << n
     << ".h's macros. */\nstatic const char " << n << "_metadata[] =";
  std::string metadata = metadataText(unit);
  for (llvm::StringRef line : llvm::split(llvm::StringRef(metadata).rtrim('\n'), '\n'))
    os << "\n    \"" << line << "\\n\"";
  os << ";\n\n";

  size_t count = unit.kernels.size();
  os << "enum { " << n << "_KERNELS = " << count << " };\n";
  os << "static const char *const " << n << "_kernel_names[" << count << "] = {";
  for (const KernelSpec &kernel : unit.kernels)
    os << "\n    \"" << kernel.name << "\",";
  os << "\n};\n";
  os << "static const size_t " << n << "_dynamic_smem[" << count << "] = {";
  for (const KernelSpec &kernel : unit.kernels)
    os << kernel.dynamicSmemBytes << ", ";
  os << "};\n\n";

  os << "struct " << n << "_module {\n  weft_module *module;\n  CUfunction functions["
     << count << "];\n};\n\n";

  // Failures the unit finds itself go through the runtime's error state
  // (weft_set_error) so that weft_last_error() reports them like the
  // runtime's own.
  os << "static CUresult " << n << "_fail(weft_status status, const char *message) {\n"
     << "  return weft_status_to_cu_result(weft_set_error(status, message));\n}\n\n";
}

/// `<n>_check_metadata`: the header's macros against the embedded metadata,
/// then the linked runtime's version.
void writeMetadataCheck(llvm::raw_ostream &os, const std::string &n) {
  os << "/* Rebuilds the metadata from " << n << ".h and compares it line by line "
        "with the\n * embedded one, so a header and source from different "
        "weft-compile runs are\n * caught; then the runtime's version. */\n";
  os << "static CUresult " << n << "_check_metadata(void) {\n"
     << "  char expected[sizeof " << n << "_metadata + 256];\n"
     << "  int length = snprintf(expected, sizeof expected,\n"
     << "      \"" << kMetadataFormat << "\",\n"
     << "      " << n << "_WEFT_VERSION, " << n << "_FORMAT_VERSION, " << n
     << "_ARCH, " << n << "_DIRECTION, " << n << "_DTYPE,\n"
     << "      " << n << "_BATCH, " << n << "_Q_HEADS, " << n << "_KV_HEADS, " << n
     << "_Q_LEN, " << n << "_K_LEN,\n"
     << "      " << n << "_HEAD_DIM, " << n << "_CAUSAL, " << n << "_BLOCK_Q, " << n
     << "_BLOCK_K, (double)" << n << "_SCALE, " << n << "_LAYOUT);\n"
     << "  if (length < 0 || (size_t)length >= sizeof expected)\n"
     << "    return " << n << "_fail(WEFT_ERROR_VERSION_MISMATCH,\n"
     << "        \"" << n << ": the metadata of " << n
     << ".h does not fit the buffer sized for " << n << ".c's\");\n"
     << "  const char *header = expected, *image = " << n << "_metadata;\n"
     << "  while (*header || *image) {\n"
     << "    size_t headerLength = strcspn(header, \"\\n\");\n"
     << "    size_t imageLength = strcspn(image, \"\\n\");\n"
     << "    if (headerLength != imageLength || strncmp(header, image, headerLength) != 0) {\n"
     << "      char message[512];\n"
     << "      snprintf(message, sizeof message,\n"
     << "               \"" << n << ": the kernel image in " << n
     << ".c was built with %.*s but " << n << ".h says %.*s; \"\n"
     << "               \"regenerate both with weft-compile --emit=kernels\",\n"
     << "               (int)imageLength, image, (int)headerLength, header);\n"
     << "      return " << n << "_fail(WEFT_ERROR_VERSION_MISMATCH, message);\n"
     << "    }\n"
     << "    header += headerLength + (header[headerLength] == '\\n');\n"
     << "    image += imageLength + (image[imageLength] == '\\n');\n"
     << "  }\n"
     << "  const char *runtime = weft_runtime_version();\n"
     << "  if (strcmp(runtime, " << n << "_WEFT_VERSION) != 0) {\n"
     << "    char message[256];\n"
     << "    snprintf(message, sizeof message,\n"
     << "             \"" << n << ": built by weft-compile %s but the linked weft "
        "runtime is version %s\",\n"
     << "             " << n << "_WEFT_VERSION, runtime);\n"
     << "    return " << n << "_fail(WEFT_ERROR_VERSION_MISMATCH, message);\n"
     << "  }\n"
     << "  return CUDA_SUCCESS;\n}\n\n";
}

/// `<n>_load` and `<n>_unload`.
void writeLoadAndUnload(llvm::raw_ostream &os, const std::string &n) {
  os << "CUresult " << n << "_load(" << n << "_module **out) {\n"
     << "  if (!out)\n"
     << "    return " << n << "_fail(WEFT_ERROR_INVALID_ARGUMENT, \"" << n
     << "_load: out is NULL\");\n"
     << "  *out = NULL;\n"
     << "  CUresult result = " << n << "_check_metadata();\n"
     << "  if (result != CUDA_SUCCESS)\n    return result;\n"
     << "  weft_status status = weft_context_ensure(0);\n"
     << "  if (status != WEFT_OK)\n    return weft_status_to_cu_result(status);\n"
     << "  " << n << "_module *module = (" << n
     << "_module *)calloc(1, sizeof *module);\n"
     << "  if (!module)\n"
     << "    return " << n << "_fail(WEFT_ERROR_INVALID_ARGUMENT, \"" << n
     << "_load: out of host memory\");\n"
     << "  status = weft_module_load(" << n << "_image, sizeof " << n
     << "_image, &module->module);\n"
     << "  for (int i = 0; status == WEFT_OK && i < " << n << "_KERNELS; ++i) {\n"
     << "    status = weft_module_function(module->module, " << n
     << "_kernel_names[i], &module->functions[i]);\n"
     << "    if (status == WEFT_OK && " << n << "_dynamic_smem[i] > 0)\n"
     << "      status = weft_function_set_dynamic_smem(module->functions[i], " << n
     << "_dynamic_smem[i]);\n"
     << "  }\n"
     << "  if (status != WEFT_OK) {\n"
     << "    /* Unloading clears the runtime's message: keep it. */\n"
     << "    char message[1024];\n"
     << "    snprintf(message, sizeof message, \"%s\", weft_last_error());\n"
     << "    CUresult failed = weft_status_to_cu_result(status);\n"
     << "    weft_module_unload(module->module);\n"
     << "    free(module);\n"
     << "    weft_set_error(status, message);\n"
     << "    return failed;\n"
     << "  }\n"
     << "  *out = module;\n"
     << "  return CUDA_SUCCESS;\n}\n\n";

  os << "CUresult " << n << "_unload(" << n << "_module *module) {\n"
     << "  if (!module)\n    return CUDA_SUCCESS;\n"
     << "  weft_status status = weft_module_unload(module->module);\n"
     << "  free(module);\n"
     << "  return weft_status_to_cu_result(status);\n}\n\n";
}

/// The block of the launcher that encodes tensor map `map` of `param` into a
/// local CUtensorMap: attentionTensorMap's view of this unit's shapes, the
/// one the package planner encodes too.
void writeTensorMap(llvm::raw_ostream &os, const AotUnit &unit,
                    const KernelParam &param, const std::string &map) {
  AttentionTensorMap view = attentionTensorMap(unit.config, param, unit.shapes.batch,
                                               unit.shapes.qHeads, unit.shapes.kvHeads,
                                               unit.shapes.qLen, unit.shapes.kLen);
  auto list = [](llvm::ArrayRef<int64_t> values, llvm::StringRef suffix) {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::interleaveComma(values, os, [&](int64_t v) { os << v << suffix; });
    return text;
  };
  os << "    CUtensorMap " << map << " __attribute__((aligned(64)));\n"
     << "    {\n"
     << "      /* " << param.name << " as (head_dim, " << param.lenName << ", heads, batch), "
     << layoutName(unit.config) << " */\n"
     << "      const unsigned long long dims[" << view.dims.size() << "] = {"
     << list(view.dims, "ull") << "};\n"
     << "      const unsigned long long strides[" << view.strides.size() << "] = {"
     << list(view.strides, "ull") << "};\n"
     << "      const unsigned box[" << view.box.size() << "] = {" << list(view.box, "u")
     << "};\n"
     << "      status = weft_tensor_map_encode_tiled(&" << map << ", "
     << (unit.config.bf16 ? "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"
                          : "CU_TENSOR_MAP_DATA_TYPE_FLOAT16")
     << ", " << view.dims.size() << "u, (void *)(uintptr_t)"
     << launcherTensor(unit.config, param.name)
     << ", dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B);\n"
     << "      if (status != WEFT_OK)\n"
     << "        return weft_status_to_cu_result(status);\n"
     << "    }\n";
}

/// `<n>_launch`: null checks, then per kernel its tensor maps and one launch.
void writeLauncher(llvm::raw_ostream &os, const AotUnit &unit,
                   const LauncherArguments &arguments) {
  const std::string &n = unit.name;
  os << launcherSignature(unit) << " {\n"
     << "  if (!module)\n"
     << "    return " << n << "_fail(WEFT_ERROR_INVALID_ARGUMENT, \"" << n
     << "_launch: module is NULL (call " << n << "_load first)\");\n";
  for (const std::string &pointer : launcherPointers(unit))
    os << "  if (!" << pointer << ")\n    return " << n
       << "_fail(WEFT_ERROR_INVALID_ARGUMENT, \"" << n << "_launch: " << pointer
       << " is a null device pointer\");\n";
  os << "  int batch = " << n << "_BATCH, q_heads = " << n
     << "_Q_HEADS, kv_heads = " << n << "_KV_HEADS;\n"
     << "  int q_len = " << n << "_Q_LEN, k_len = " << n << "_K_LEN;\n"
     << "  float scale = " << n << "_SCALE;\n"
     << "  weft_status status;\n";
  if (unit.config.decodeRows) {
    // The kernels read q, k, v and the workspace with 16-byte vector loads
    // and write out and lse 4 bytes at a time: a misaligned view is refused
    // here, not faulted on the GPU.
    for (const std::string &pointer : launcherPointers(unit)) {
      int alignment = pointer == "out" || pointer == "lse" ? 4 : 16;
      os << "  if (" << pointer << " % " << alignment << "u != 0)\n    return " << n
         << "_fail(WEFT_ERROR_INVALID_ARGUMENT, \"" << n << "_launch: " << pointer
         << " is not " << alignment << "-byte aligned\");\n";
    }
    int64_t lseOffset = unit.decode.numSplits * decodeRows(unit) * unit.shapes.headDim * 4;
    os << "  /* o_partial [" << unit.decode.numSplits << ", " << decodeRows(unit) << ", "
       << unit.shapes.headDim << "] f32, then lse_partial [" << unit.decode.numSplits << ", "
       << decodeRows(unit) << "] f32. */\n"
       << "  CUdeviceptr lse_partial = split_workspace + " << lseOffset << "u;\n"
       << "  int num_splits = " << unit.decode.numSplits
       << ", keys_per_split = " << unit.decode.keysPerSplit << ";\n";
  }
  for (auto [index, kernel] : llvm::enumerate(unit.kernels)) {
    std::array<int64_t, 3> grid = gridOf(unit, kernel);
    os << "  { /* " << kernel.name << " (" << kernel.role << ") */\n";
    for (const KernelParam &param : kernel.params)
      if (param.kind == KernelParam::Kind::TensorMap)
        writeTensorMap(os, unit, param, arguments.of(param));
    os << "    void *args[] = {";
    llvm::interleaveComma(kernel.params, os, [&](const KernelParam &param) {
      os << "&" << arguments.of(param);
    });
    os << "};\n"
       << "    const unsigned grid[3] = {" << grid[0] << "u, " << grid[1] << "u, "
       << grid[2] << "u};\n"
       << "    const unsigned block[3] = {" << kernel.threads << "u, 1u, 1u};\n"
       << "    status = " << (kernel.programmatic ? "weft_launch_dependent" : "weft_launch")
       << "(module->functions[" << index << "], grid, block, "
       << kernel.dynamicSmemBytes << ", stream, args);\n"
       << "    if (status != WEFT_OK)\n"
       << "      return weft_status_to_cu_result(status);\n  }\n";
  }
  os << "  return CUDA_SUCCESS;\n}\n\n";
}

} // namespace

LogicalResult writeUnitSource(const AotUnit &unit, std::string &source,
                              std::string &message) {
  const std::string &n = unit.name;
  if (!unit.binary || unit.binary->cubin.empty()) {
    message = "unit " + n + " has no cubin to embed";
    return failure();
  }
  LauncherArguments arguments(unit);
  for (const KernelSpec &kernel : unit.kernels)
    for (const KernelParam &param : kernel.params)
      if (arguments.of(param).empty()) {
        message = "kernel " + kernel.name + " of unit " + n +
                  " takes parameter '" + param.name + "' (" +
                  kindName(param.kind) +
                  "), which the generated launcher has no argument for";
        return failure();
      }

  llvm::raw_string_ostream os(source);
  os << "/* " << n << ".c: the cubin of unit " << n
     << " and its loader and launcher, generated by weft-compile "
     << kWeftVersion << "; do not edit. */\n";
  os << "#include \"" << n << ".h\"\n\n#include <stdint.h>\n#include <stdio.h>\n"
     << "#include <stdlib.h>\n#include <string.h>\n\n";
  writeImageAndTables(os, unit);
  writeMetadataCheck(os, n);
  writeLoadAndUnload(os, n);
  writeLauncher(os, unit, arguments);
  os << "size_t " << n << "_workspace_bytes(void) {\n  return (size_t)"
     << workspaceBytes(unit) << "u;\n}\n";
  return success();
}

std::string writeUnitIndex(llvm::StringRef chip,
                           llvm::ArrayRef<std::string> unitNames) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os, /*IndentSize=*/2);
  json.object([&] {
    json.attribute("weft_version", kWeftVersion);
    json.attribute("format_version", kAotFormatVersion);
    json.attribute("arch", chip);
    json.attributeArray("units", [&] {
      for (const std::string &name : unitNames)
        json.value(name);
    });
  });
  os << "\n";
  return text;
}

} // namespace weft::gpu
