// Reads the autotuner's table (bench/attention_tuning.json) that
// weft-compile --emit=kernels takes its tiles (and the forward's MMA kind)
// from; every entry is checked
// against the kernels' own configuration check when the file is read.
#include "weft/Target/GPU/TuningTable.h"

#include "weft/Conversion/AttentionKernels.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace weft::gpu {

namespace {

std::string entryKey(StringRef arch, bool bf16, int64_t headDim, bool causal) {
  return llvm::formatv("{0}/{1}/d{2}/{3}", arch, bf16 ? "bf16" : "f16", headDim,
                       causal ? "causal" : "full")
      .str();
}

/// Reads one entry; `where` is "FILE: entries[i]" and grows as the entry's
/// key becomes known, so every message names the entry.
LogicalResult readEntry(const llvm::json::Value &value, std::string where,
                        std::string &key, AttentionTiles &forward,
                        AttentionTiles &backward, std::string &message) {
  const llvm::json::Object *entry = value.getAsObject();
  if (!entry) {
    message = where + ": expected an object";
    return failure();
  }
  std::optional<StringRef> arch = entry->getString("arch");
  std::optional<StringRef> dtype = entry->getString("dtype");
  std::optional<int64_t> headDim = entry->getInteger("head_dim");
  std::optional<bool> causal = entry->getBoolean("causal");
  if (!arch || !dtype || !headDim || !causal) {
    message = where + ": needs \"arch\" (string), \"dtype\" (string), "
                      "\"head_dim\" (integer) and \"causal\" (true/false)";
    return failure();
  }
  where += llvm::formatv(" ({0} {1} d{2} {3})", *arch, *dtype, *headDim,
                         *causal ? "causal" : "full")
               .str();
  if (*dtype != "bf16" && *dtype != "f16") {
    message = where + ": dtype \"" + dtype->str() + "\" is not bf16 or f16";
    return failure();
  }
  AttentionKernelConfig config;
  config.bf16 = *dtype == "bf16";
  config.headDim = *headDim;
  config.causal = *causal;
  for (auto [direction, tiles] :
       {std::pair<StringRef, AttentionTiles *>{"forward", &forward},
        {"backward", &backward}}) {
    const llvm::json::Object *chosen = entry->getObject(direction);
    std::optional<int64_t> blockQ =
        chosen ? chosen->getInteger("block_q") : std::nullopt;
    std::optional<int64_t> blockK =
        chosen ? chosen->getInteger("block_k") : std::nullopt;
    if (!blockQ || !blockK) {
      message = (where + ": needs \"" + direction +
                 "\": {\"block_q\": N, \"block_k\": N}")
                    .str();
      return failure();
    }
    // "mma" picks each direction's kernels; absent means "warp" (tables
    // written before the wgmma kernels).
    config.warpgroupMma = false;
    if (const llvm::json::Value *mma = chosen->get("mma")) {
      std::optional<StringRef> kind = mma->getAsString();
      if (!kind || (*kind != "warp" && *kind != "warpgroup")) {
        std::string got;
        llvm::raw_string_ostream os(got);
        os << *mma;
        message = (where + " " + direction + ": \"mma\" must be \"warp\" or "
                                             "\"warpgroup\", got " + got).str();
        return failure();
      }
      config.warpgroupMma = *kind == "warpgroup";
    }
    config.stages = 2;
    if (const llvm::json::Value *stages = chosen->get("stages")) {
      std::optional<int64_t> count = stages->getAsInteger();
      if (!count || !config.warpgroupMma) {
        message = (where + " " + direction +
                   ": \"stages\" must be an integer and is for the "
                   "warpgroup kernels only")
                      .str();
        return failure();
      }
      config.stages = *count;
    }
    config.schedule = AttentionKernelConfig::ForwardSchedule::Serial;
    if (const llvm::json::Value *schedule = chosen->get("schedule")) {
      std::optional<StringRef> name = schedule->getAsString();
      std::optional<AttentionKernelConfig::ForwardSchedule> parsed =
          name ? parseSchedule(*name) : std::nullopt;
      if (!parsed) {
        message = (where + " " + direction +
                   ": \"schedule\" must be \"serial\", \"overlap\" or \"pingpong\"")
                      .str();
        return failure();
      }
      config.schedule = *parsed;
    }
    config.blockQ = *blockQ;
    config.blockK = *blockK;
    std::string why;
    if (failed(verifyAttentionKernelConfig(config, direction == "backward", why))) {
      message = (where + " " + direction + ": " + why).str();
      return failure();
    }
    *tiles = {*blockQ, *blockK, config.warpgroupMma, config.stages, config.schedule};
  }
  key = entryKey(*arch, config.bf16, *headDim, *causal);
  return success();
}

} // namespace

FailureOr<AttentionTuningTable>
AttentionTuningTable::load(StringRef path, std::string &message) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file) {
    message = ("cannot read the tuning table " + path + ": " +
               file.getError().message())
                  .str();
    return failure();
  }
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse((*file)->getBuffer());
  if (!parsed) {
    message = ("the tuning table " + path + " is not JSON: " +
               llvm::toString(parsed.takeError()))
                  .str();
    return failure();
  }
  const llvm::json::Object *root = parsed->getAsObject();
  std::optional<int64_t> version =
      root ? root->getInteger("format_version") : std::nullopt;
  if (version != kTuningTableFormatVersion) {
    message = llvm::formatv("{0}: format_version {1}, weft-compile reads {2}",
                            path,
                            version ? std::to_string(*version) : "missing",
                            kTuningTableFormatVersion)
                  .str();
    return failure();
  }
  const llvm::json::Array *entries = root->getArray("entries");
  if (!entries) {
    message = (path + ": needs an \"entries\" array").str();
    return failure();
  }
  AttentionTuningTable table;
  table.filePath = path.str();
  llvm::StringMap<size_t> firstIndex;
  for (auto [index, value] : llvm::enumerate(*entries)) {
    std::string where = llvm::formatv("{0}: entries[{1}]", path, index).str();
    std::string key;
    Entry entry;
    if (failed(readEntry(value, where, key, entry.forward, entry.backward,
                         message)))
      return failure();
    auto [it, inserted] = firstIndex.try_emplace(key, index);
    if (!inserted) {
      message = llvm::formatv("{0}: entries[{1}] and entries[{2}] are both "
                              "for {3}",
                              path, it->second, index, key)
                    .str();
      return failure();
    }
    table.entries[key] = entry;
  }
  return table;
}

std::optional<AttentionTiles>
AttentionTuningTable::lookup(StringRef arch, bool bf16, int64_t headDim,
                             bool causal, bool backward) const {
  auto it = entries.find(entryKey(arch, bf16, headDim, causal));
  if (it == entries.end())
    return std::nullopt;
  return backward ? it->second.backward : it->second.forward;
}

} // namespace weft::gpu
