// The host side of running a package (weft-run STEP.weftpkg): loads a package with the runtime, binds each step's
// inputs from an .npz (a leading step dimension), restores and saves the
// parameters and optimizer state, runs the steps and prints the loss per step
// and the device memory cuMemGetInfo saw. --dry-run does everything up to the
// first driver call, so it is tested without a GPU. State files hold f32
// masters whatever the package keeps: carried bf16 copies are derived from
// them, and split masters (an i16 low half + a bf16 high half) are split from
// and joined back into them.
#include "weft/Host/RunPackage.h"

#include "StepTransfer.h"

#include "weft/Host/HostBytes.h"
#include "weft/Host/Rendezvous.h"
#include "weft/Host/Shards.h"
#include "weft/Host/StepTiming.h"
#include "weft/Package/Package.h"
#include "weft/Support/ExitCode.h"
#include "weft/Support/ToolError.h"
#include "weft/Support/FloatBits.h"
#include "weft/Support/Npz.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include "weft_runtime.h"

#include <chrono>
#include <cstring>
#include <map>
#include <optional>

namespace weft {

using namespace run;

namespace {

struct StepFree {
  void operator()(weft_step *step) const { weft_step_free(step); }
};
struct CommFree {
  void operator()(weft_comm *comm) const { weft_comm_free(comm); }
};

/// A package loaded (or, for --dry-run, prepared) by the runtime, with its
/// buffers' shapes.
struct LoadedStep {
  std::unique_ptr<llvm::MemoryBuffer> file;
  /// A rank of a multi-GPU run: its place, the store and heartbeat, and the
  /// communicators (declared before the step, so freed after it).
  std::optional<RankEnv> env;
  RankLayout layout;
  std::unique_ptr<Rendezvous> rendezvous;
  std::unique_ptr<weft_comm, CommFree> comm;
  /// Device memory in use before and after the communicators were made.
  size_t usedBeforeComm = 0, usedAfterComm = 0;
  std::unique_ptr<weft_step, StepFree> step;
  std::vector<BufferView> buffers;
  /// A training step's first result: the scalar loss (null for others).
  const BufferView *loss = nullptr;
};

/// Where every bound buffer's bytes come from, resolved once before the
/// first step.
struct StepBindings {
  std::optional<NpzArchive> data, state;
  bool stateIsShard = false; // --load-state named a shard index: this rank's file
  std::string shardFile;
  std::vector<Binding> bindings;
  /// Weight copies, each with its master, never read from a file: a carried
  /// copy is derived after the state is bound; a split master's high half is
  /// bound with its low half.
  std::vector<CopyPair> copies;
  std::map<const BufferView *, const BufferView *> highHalfOf;
};


/// FNV-1a of the package: every rank of a run must load the same one.
std::string packageDigest(llvm::StringRef bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes)
    hash = (hash ^ c) * 0x100000001b3ull;
  return llvm::formatv("fnv1a64 {0:x16} {1} bytes", hash, bytes.size()).str();
}

/// A rank of a multi-GPU run (WORLD_SIZE set, or --dry-run of a partitioned
/// package: rank 0 of its grid): the device is LOCAL_RANK unless --device,
/// then the rendezvous, the communicator and the heartbeat.
int joinRun(const RunPackageOptions &options, llvm::StringRef bytes, LoadedStep &loaded,
            weft_step_options &stepOptions) {
  std::string why;
  loaded.env = readRankEnv(why);
  if (!why.empty())
    return error(kExitUsage, why);
  pkg::Package package;
  if (!pkg::readPackage(bytes.data(), bytes.size(), package, why))
    return kExitOk; // the runtime's load says why
  int64_t ranks = 1;
  std::string grid;
  for (int64_t size : package.grid) {
    ranks *= size;
    grid += (grid.empty() ? "" : "x") + std::to_string(size);
  }
  if (!loaded.env && options.dryRun && !package.grid.empty()) {
    loaded.env = RankEnv();
    loaded.env->worldSize = int(ranks);
  }
  if (!loaded.env && !package.grid.empty())
    return error(kExitUsage,
                 options.path + ": the package is a partitioned step for grid " + grid + " (" +
                     llvm::Twine(ranks) + " ranks) with " +
                     llvm::Twine(package.collectives.size()) +
                     " collectives; run it with one process per rank (weft-run "
                     "--nproc-per-node " + llvm::Twine(ranks) + ", or under torchrun)");
  if (!loaded.env || options.dryRun)
    return kExitOk;
  const RankEnv &env = *loaded.env;
  auto rankError = [&](const llvm::Twine &message) {
    return error(kExitFailed, "rank " + llvm::Twine(env.rank) + ": " + message);
  };
  // Refused before waiting for peers that would all refuse it too.
  if (!package.grid.empty() && ranks != env.worldSize)
    return rankError(options.path + " was built for grid " + grid + " of " +
                     llvm::Twine(ranks) + " ranks, but this run has " +
                     llvm::Twine(env.worldSize) + " ranks (WORLD_SIZE)");
  if (package.grid.empty() && env.worldSize > 1)
    return rankError(options.path + " is a one-GPU package, but this run has " +
                     llvm::Twine(env.worldSize) + " ranks (WORLD_SIZE); compile it with "
                     "weft-compile --grid=tp=" + llvm::Twine(env.worldSize));
  if (!options.deviceGiven)
    stepOptions.device = env.localRank;
  weft_nccl_id id;
  loaded.rendezvous =
      Rendezvous::join(env, options.collectiveTimeout, packageDigest(bytes), id, why);
  if (!loaded.rendezvous)
    return error(kExitFailed, why);
  if (weft_context_ensure(stepOptions.device))
    return rankError(llvm::Twine("device ") + llvm::Twine(stepOptions.device) + ": " +
                     weft_last_error());
  size_t free = 0, total = 0;
  if (weft_device_memory(&free, &total) == WEFT_OK)
    loaded.usedBeforeComm = total - free;
  weft_comm *comm = nullptr;
  if (weft_comm_init(&id, env.worldSize, env.rank, options.collectiveTimeout, &comm))
    return rankError(weft_last_error());
  loaded.comm.reset(comm);
  if (weft_device_memory(&free, &total) == WEFT_OK)
    loaded.usedAfterComm = total - free;
  loaded.rendezvous->watch(comm);
  return kExitOk;
}

/// Reads the package and loads it, or prepares it for --dry-run (the device
/// taken to be --sm, else the package's own arch).
int loadStep(const RunPackageOptions &options, LoadedStep &loaded) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(options.path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!file)
    return error(kExitUsage, options.path + ": cannot read: " + file.getError().message());
  loaded.file = std::move(*file);
  llvm::StringRef bytes = loaded.file->getBuffer();

  weft_step_options stepOptions = {};
  stepOptions.device = options.device;
  stepOptions.graph = options.graph;
  stepOptions.debug_buffers = options.debugBuffers;
  stepOptions.collectives = options.collectives == "nccl"          ? WEFT_COLLECTIVES_NCCL
                            : options.collectives == "copy-engine" ? WEFT_COLLECTIVES_COPY_ENGINE
                            : options.collectives == "auto"        ? WEFT_COLLECTIVES_AUTO
                                                                   : WEFT_COLLECTIVES_DEFAULT;
  stepOptions.comm_priority = options.commPriority == "high"     ? WEFT_COMM_PRIORITY_HIGH
                              : options.commPriority == "normal" ? WEFT_COMM_PRIORITY_NORMAL
                                                                 : WEFT_COMM_PRIORITY_DEFAULT;
  // 0 asks the runtime for its default; an explicit 0 is "none" (-1 there).
  stepOptions.gemm_sm_margin = options.gemmSmMargin < 0    ? 0
                               : options.gemmSmMargin == 0 ? -1
                                                           : options.gemmSmMargin;
  weft_step *raw = nullptr;
  weft_status status;
  if (int code = joinRun(options, bytes, loaded, stepOptions))
    return code;
  if (loaded.env) {
    int sm = options.sm;
    if (options.dryRun && !sm) {
      std::string arch = bytes.size() >= 56 ? bytes.substr(40, 16).str().c_str() : "";
      sm = arch.size() >= 5 ? std::atoi(arch.c_str() + 3) : 90;
    }
    status = options.dryRun
                 ? weft_step_prepare_spmd(bytes.data(), bytes.size(), sm, &stepOptions,
                                          loaded.env->worldSize, loaded.env->rank, &raw)
                 : weft_step_load_spmd(bytes.data(), bytes.size(), &stepOptions,
                                       loaded.comm.get(), &raw);
  } else if (options.dryRun) {
    int sm = options.sm;
    if (sm == 0) {
      // The package's own arch from its header ("sm_90a" at byte 40).
      std::string arch = bytes.size() >= 56 ? bytes.substr(40, 16).str().c_str() : "";
      if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0)
        return error(kExitFailed, options.path + ": no arch in the package header; give --sm");
      sm = std::atoi(arch.c_str() + 3);
    }
    status = weft_step_prepare(bytes.data(), bytes.size(), sm, &stepOptions, &raw);
  } else {
    status = weft_step_load(bytes.data(), bytes.size(), &stepOptions, &raw);
  }
  loaded.step.reset(raw);
  if (status)
    return error(kExitFailed, options.path + ": cannot " +
                                  (options.dryRun ? "prepare" : "load") + " the step (" +
                                  weft_status_name(status) + "): " + weft_last_error());

  int engine = WEFT_COLLECTIVES_NCCL;
  if (loaded.comm && loaded.env->rank == 0 && !weft_step_collective_engine(raw, &engine))
    llvm::outs() << "[rank 0] collectives: "
                 << (engine == WEFT_COLLECTIVES_COPY_ENGINE
                         ? "all-gathers and all-to-alls on the copy engines (peer-mapped "
                           "arenas), reductions on NCCL\n"
                         : "NCCL\n");
  int axes = 0;
  long long dims[WEFT_STEP_MAX_RANK];
  weft_step_grid(raw, &axes, dims, &loaded.layout.splitAxis);
  loaded.layout.grid.assign(dims, dims + axes);
  loaded.layout.rank = loaded.env ? loaded.env->rank : 0;
  loaded.buffers.resize(weft_step_buffer_count(raw));
  for (size_t i = 0; i < loaded.buffers.size(); ++i) {
    BufferView &buffer = loaded.buffers[i];
    buffer.index = i;
    weft_step_buffer_info(raw, i, &buffer.info);
    // weft-run owns no memory of the caller's to bind; --dry-run still lists it.
    int bound = 0;
    weft_step_buffer_bound(raw, i, &bound);
    if (bound && !options.dryRun)
      return error(kExitFailed, options.path + ": buffer '" + buffer.info.name +
                                    "' is bound by the caller (compiled with "
                                    "--bind-arguments); weft-run runs only packages whose "
                                    "arguments live in the arena: compile without it");
    for (int d = 0; d < buffer.info.rank; ++d) {
      buffer.shape.push_back(buffer.info.shape[d]);
      buffer.elements *= buffer.info.shape[d];
    }
    weft_step_buffer_split(raw, i, &buffer.splitDim);
    if (buffer.splitDim >= buffer.info.rank)
      buffer.splitDim = -1;
    buffer.global = wholeShape(buffer.shape, buffer.splitDim, loaded.layout.parts());
    buffer.globalElements = buffer.elements * (buffer.splitDim >= 0 ? loaded.layout.parts() : 1);
  }
  for (const BufferView &buffer : loaded.buffers)
    if (buffer.info.result == 0 && buffer.elements == 1 && buffer.info.rank >= 0 &&
        (buffer.info.dtype[0] == 'f' || std::string(buffer.info.dtype) == "bf16"))
      loaded.loss = &buffer;
  return kExitOk;
}

/// Pairs every weight copy (weft.copy_of) with its master, checking that
/// the pair is a carried copy or a split master.
int findWeightCopies(const LoadedStep &loaded, StepBindings &bound) {
  for (const BufferView &buffer : loaded.buffers) {
    const weft_step_buffer &info = buffer.info;
    if (info.copy_of < 0)
      continue;
    const BufferView *master = nullptr;
    for (const BufferView &m : loaded.buffers)
      if (m.info.arg == info.copy_of && isState(m.info) && m.info.copy_of < 0)
        master = &m;
    std::string masterType = master ? std::string(master->info.dtype) : "";
    std::string copyType = info.dtype;
    bool sameCount = master && master->elements == buffer.elements;
    bool carried = sameCount && masterType == "f32" &&
                   (copyType == "bf16" || copyType == "f16");
    bool split = sameCount && masterType == "i16" && copyType == "bf16";
    if (!carried && !split)
      return error(kExitUsage,
                   llvm::Twine("buffer '") + info.name + "' (" + buffer.type() +
                       ") is a copy of argument " + llvm::Twine(info.copy_of) + ", whose " +
                       (master ? "buffer '" + std::string(master->info.name) + "' (" +
                                     master->type() + ")"
                               : std::string("state buffer does not exist and")) +
                       " is neither an f32 master nor an i16 split low half of " +
                       llvm::Twine(buffer.elements) + " elements (a copy is bf16 or f16 "
                       "of an f32 master, or bf16 of an i16 low half)");
    bound.copies.push_back({&buffer, master, split});
    if (split)
      bound.highHalfOf[master] = &buffer;
  }
  return kExitOk;
}

/// The message for a buffer that no file, seed or package gives a value.
std::string missingValue(const BufferView &buffer, const Binding &binding, bool input) {
  const weft_step_buffer &info = buffer.info;
  return std::string(input ? "input" : "state buffer") + " '" + info.name + "' (" +
         buffer.type() + ", argument " + std::to_string(info.arg) + ") has no value: " +
         (input ? "give --data with '" + std::string(info.name) +
                      "' of shape [steps, ...] or its own shape"
                : "give --load-state (or --data) with '" + std::string(info.name) + "'" +
                      (binding.high ? " (its f32 master: the step splits it)" : ""));
}

/// The binding of one input or state buffer: a tensor of --load-state or
/// --data, a draw from --init-state, or none (`binding.buffer` stays null)
/// when the package's initial data stays.
int resolveBinding(const RunPackageOptions &options, const BufferView &buffer,
                   StepBindings &bound, std::map<std::string, bool> &usedKeys) {
  const weft_step_buffer &info = buffer.info;
  bool input = info.role == WEFT_ROLE_INPUT && info.arg >= 0;
  if (info.rank < 0)
    return error(kExitUsage, llvm::Twine("buffer '") + info.name +
                                 "' has no tensor type in the package: cannot bind it");
  Binding binding;
  binding.buffer = &buffer;
  auto half = bound.highHalfOf.find(&buffer);
  if (half != bound.highHalfOf.end())
    binding.high = half->second;
  const Tensor *tensor = nullptr;
  std::string file;
  if (isState(info) && bound.state && (tensor = bound.state->lookup(info.name)))
    file = options.loadState;
  else if (bound.data && (tensor = bound.data->lookup(info.name)))
    file = options.data;
  if (!tensor && isState(info) && options.initState >= 0) {
    binding.draw = true;
    binding.source = "--init-state=" + std::to_string(options.initState);
    bound.bindings.push_back(binding);
    return kExitOk;
  }
  if (!tensor) {
    if (binding.high && info.has_initial_data && !binding.high->info.has_initial_data)
      return error(kExitUsage,
                   llvm::Twine("split master '") + info.name + "' (" + buffer.type() +
                       ") has its low half in the package but its high half '" +
                       binding.high->info.name +
                       "' has none: give the f32 master with --load-state, --data or "
                       "--init-state");
    if (isState(info) && info.has_initial_data)
      return kExitOk; // copied from the package at load
    return error(kExitUsage, missingValue(buffer, binding, input));
  }
  if (file == options.data)
    usedKeys[info.name] = true;
  if (!tensorDType(info.dtype))
    return error(kExitUsage, llvm::Twine("buffer '") + info.name + "' has element type " +
                                 info.dtype + ", which .npz files cannot hold");
  // A state file holds a split master as the f32 master, as it does for a
  // converted or carried package, never as its halves.
  if (binding.high && tensor->dtype != DType::F32 && tensor->dtype != DType::F64)
    return error(kExitUsage, file + ": '" + info.name + "' is " +
                                 describe(tensor->shape, dtypeName(tensor->dtype)) +
                                 ", but the step keeps it as a split f32 master (low half '" +
                                 info.name + "' " + buffer.type() + ", high half '" +
                                 binding.high->info.name + "' " + binding.high->type() +
                                 "): give the f32 master");
  // A split buffer's file holds the whole tensor, a shard this rank's block.
  binding.local = file == options.loadState && bound.stateIsShard;
  const std::vector<int64_t> &whole = binding.local ? buffer.shape : buffer.global;
  bool leading = input && tensor->shape.size() == whole.size() + 1 &&
                 std::equal(whole.begin(), whole.end(), tensor->shape.begin() + 1) &&
                 tensor->shape[0] >= 1;
  if (!leading && tensor->shape != whole)
    return error(kExitUsage, file + ": '" + info.name + "' is " +
                                 describe(tensor->shape, dtypeName(tensor->dtype)) +
                                 " but buffer '" + info.name + "' is " + buffer.type() +
                                 (buffer.splitDim >= 0
                                      ? " (this rank's block of " +
                                            describe(whole, info.dtype) + ", split along "
                                            "dimension " + std::to_string(buffer.splitDim) + ")"
                                      : std::string()) +
                                 (input ? " (give [steps, ...] for one value per step, or "
                                          "its own shape for the same value every step)"
                                        : ""));
  binding.tensor = tensor;
  binding.steps = leading ? tensor->shape[0] : 0;
  binding.source = (binding.local ? bound.shardFile : file) + ":" + info.name;
  bound.bindings.push_back(binding);
  return kExitOk;
}

/// Inputs come from --data (per step, or the same every step); parameters
/// and optimizer state from --load-state, else --data, else the package.
/// Every --data key must bind something.
int resolveBindings(const RunPackageOptions &options, const LoadedStep &loaded,
                    StepBindings &bound) {
  bound.stateIsShard = loaded.env && !options.loadState.empty() &&
                      isShardIndex(options.loadState);
  if (bound.stateIsShard)
    bound.shardFile = shardPath(options.loadState, loaded.env->rank);
  for (auto [path, archive] : {std::pair(&options.data, &bound.data),
                               std::pair(&options.loadState, &bound.state)}) {
    if (path->empty())
      continue;
    llvm::Expected<NpzArchive> read =
        readNpz(archive == &bound.state && bound.stateIsShard ? bound.shardFile : *path);
    if (!read)
      return error(kExitUsage, llvm::toString(read.takeError()));
    *archive = std::move(*read);
  }
  if (int code = findWeightCopies(loaded, bound))
    return code;
  std::map<std::string, bool> usedKeys;
  for (const BufferView &buffer : loaded.buffers) {
    const weft_step_buffer &info = buffer.info;
    if (info.copy_of >= 0 || (!(info.role == WEFT_ROLE_INPUT && info.arg >= 0) &&
                              !isState(info)))
      continue;
    if (int code = resolveBinding(options, buffer, bound, usedKeys))
      return code;
  }
  if (!bound.data)
    return kExitOk;
  for (const auto &entry : bound.data->entries()) {
    if (usedKeys.count(entry.first))
      continue;
    std::string names;
    for (const Binding &b : bound.bindings)
      names += (names.empty() ? "" : ", ") + std::string(b.buffer->info.name);
    return error(kExitUsage, options.data + ": '" + entry.first +
                                 "' names no input or state buffer of the step (bound: " +
                                 (names.empty() ? "none" : names) + ")");
  }
  return kExitOk;
}

/// --dry-run: the resolved step and, per step, where each buffer comes from.
void printDryRun(const RunPackageOptions &options, const LoadedStep &loaded,
                 const StepBindings &bound) {
  llvm::outs() << weft_step_describe(loaded.step.get());
  for (int64_t s = 0; s < options.steps; ++s) {
    llvm::outs() << "step " << s + 1 << ":";
    for (const Binding &b : bound.bindings) {
      llvm::outs() << " " << b.buffer->info.name << " <- " << b.source;
      if (b.steps)
        llvm::outs() << "[" << s % b.steps << "]";
      if (b.buffer->splitDim >= 0 && !b.local)
        llvm::outs() << " block " << loaded.layout.part() << "/" << loaded.layout.parts()
                     << " of dim " << b.buffer->splitDim;
    }
    llvm::outs() << "\n";
  }
  for (const CopyPair &pair : bound.copies) {
    if (pair.split)
      llvm::outs() << "state: " << pair.master->info.name << " <- low half (i16), "
                   << pair.copy->info.name << " <- high half (bf16) of the f32 master '"
                   << pair.master->info.name << "'\n";
    else
      llvm::outs() << "state: " << pair.copy->info.name << " <- " << pair.master->info.name
                   << " rounded to " << pair.copy->info.dtype << "\n";
  }
  if (loaded.loss)
    llvm::outs() << "loss: buffer '" << loaded.loss->info.name << "'\n";
}


/// Binds the state once (the step updates it in place), derives the carried
/// copies, then runs the steps, binding inputs before every step, even a
/// value that is the same each time: the arena may reuse an input's bytes
/// once its live range ends. Prints the loss and time of each step.
int runSteps(const RunPackageOptions &options, const LoadedStep &loaded,
             const StepBindings &bound, StepTransfer &transfer, double loadSeconds) {
  auto stateStart = std::chrono::steady_clock::now();
  for (const Binding &b : bound.bindings)
    if (isState(b.buffer->info) && !transfer.bind(b, 0))
      return kExitFailed;
  for (const CopyPair &pair : bound.copies)
    if (!pair.split && !transfer.deriveCopy(*pair.copy, *pair.master))
      return kExitFailed; // a split pair is bound with its low half
  // Where a run's start-up goes (device time is scarce; benchmarks read it).
  if (loaded.env)
    llvm::outs() << "[rank " << loaded.env->rank << "] ";
  llvm::outs() << llvm::format(
      "start-up: load %.2f s (package, rendezvous, communicators, modules, GEMM algorithms), "
      "state %.2f s\n",
      loadSeconds,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - stateStart).count());
  for (int64_t s = 0; s < options.steps; ++s) {
    for (const Binding &b : bound.bindings)
      if (!isState(b.buffer->info) && !transfer.bind(b, s))
        return kExitFailed;
    // The ranks start each step together: one rank's binding is not timed
    // as another's wait in a collective.
    if (loaded.comm && weft_comm_barrier(loaded.comm.get()))
      return error(kExitFailed, "step " + llvm::Twine(s + 1) + ": " + weft_last_error());
    auto start = std::chrono::steady_clock::now();
    if (weft_status run = weft_step_run(loaded.step.get()))
      return error(kExitFailed, "step " + llvm::Twine(s + 1) + ": " + weft_status_name(run) +
                                    ": " + weft_last_error());
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                          start)
                    .count();
    if (loaded.env)
      llvm::outs() << "[rank " << loaded.env->rank << "] ";
    llvm::outs() << "step " << s + 1 << "/" << options.steps;
    if (loaded.loss) {
      Tensor value;
      if (!transfer.readBack(*loaded.loss, value))
        return kExitFailed;
      llvm::outs() << llvm::format(" loss %.6f", value.data[0]);
    }
    llvm::outs() << llvm::format(" (%.3f ms)\n", ms);
    llvm::outs().flush();
  }
  return kExitOk;
}

/// One GPU: `path` itself. A rank of a multi-GPU run: its shard beside
/// `path`, and rank 0 writes `path` as the index naming each split tensor.
int writeArchive(const std::string &path, const LoadedStep &loaded, const NpzArchive &archive,
                 const std::map<std::string, int> &splitDims) {
  std::string file = loaded.env ? shardPath(path, loaded.env->rank) : path;
  if (llvm::Error err = writeNpz(file, archive))
    return error(kExitFailed, llvm::toString(std::move(err)));
  std::string why;
  if (loaded.env && loaded.env->rank == 0 &&
      !writeShardIndex(path, loaded.layout, splitDims, why))
    return error(kExitFailed, why);
  return kExitOk;
}

/// --outputs: the last step's results as res<i>.
int writeOutputs(const std::string &path, const LoadedStep &loaded, StepTransfer &transfer) {
  NpzArchive archive;
  std::map<std::string, int> splitDims;
  for (const BufferView &buffer : loaded.buffers) {
    if (buffer.info.result < 0 || buffer.info.rank < 0)
      continue;
    Tensor tensor;
    if (!transfer.readBack(buffer, tensor))
      return kExitFailed;
    std::string name = "res" + std::to_string(buffer.info.result);
    if (buffer.splitDim >= 0)
      splitDims[name] = buffer.splitDim;
    archive.set(name, std::move(tensor));
  }
  return writeArchive(path, loaded, archive, splitDims);
}

/// --save-state: parameters and optimizer state by buffer name, each split
/// master joined back into its f32 master; copies are derived again on load.
int writeState(const std::string &path, const LoadedStep &loaded, const StepBindings &bound,
               StepTransfer &transfer) {
  NpzArchive archive;
  std::map<std::string, int> splitDims;
  for (const BufferView &buffer : loaded.buffers) {
    if (!isState(buffer.info) || buffer.info.rank < 0 || buffer.info.copy_of >= 0)
      continue;
    if (buffer.splitDim >= 0)
      splitDims[buffer.info.name] = buffer.splitDim;
    Tensor tensor;
    auto half = bound.highHalfOf.find(&buffer);
    bool read = half != bound.highHalfOf.end()
                    ? transfer.joinSplit(buffer, *half->second, tensor)
                    : transfer.readBack(buffer, tensor);
    if (!read)
      return kExitFailed;
    archive.set(buffer.info.name, std::move(tensor));
  }
  return writeArchive(path, loaded, archive, splitDims);
}

} // namespace

bool isPackageFile(llvm::StringRef path) {
  auto file = llvm::MemoryBuffer::getFileSlice(path, 8, 0, /*IsVolatile=*/false);
  return file && (*file)->getBuffer() == llvm::StringRef("WEFTPKG\0", 8);
}

int runPackage(const RunPackageOptions &options) {
  if (options.steps < 1)
    return error(kExitUsage, "--steps must be at least 1, got " + llvm::Twine(options.steps));
  auto start = std::chrono::steady_clock::now();
  LoadedStep loaded;
  if (int code = loadStep(options, loaded))
    return code;
  double loadSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  StepBindings bound;
  if (int code = resolveBindings(options, loaded, bound))
    return code;
  if (options.dryRun) {
    printDryRun(options, loaded, bound);
    return kExitOk;
  }
  StepTransfer transfer(loaded.step.get(), options.initState, loaded.layout);
  if (int code = runSteps(options, loaded, bound, transfer, loadSeconds))
    return code;
  if (options.timeSegments > 0 || !options.traceJson.empty())
    if (int code = timeAndTrace(options, loaded.step.get(),
                                loaded.loss ? std::optional<unsigned>(loaded.loss->info.first)
                                            : std::nullopt,
                                loaded.env ? std::optional<int>(loaded.env->rank) : std::nullopt,
                                loaded.comm.get()))
      return code;
  if (!options.outputs.empty())
    if (int code = writeOutputs(options.outputs, loaded, transfer))
      return code;
  if (!options.saveState.empty())
    if (int code = writeState(options.saveState, loaded, bound, transfer))
      return code;
  if (options.printMemory)
    if (int code = printStepMemory(
            loaded.step.get(), options.debugBuffers,
            loaded.env ? "[rank " + std::to_string(loaded.env->rank) + "] " : std::string(),
            loaded.comm ? std::optional(std::pair(loaded.usedBeforeComm, loaded.usedAfterComm))
                        : std::nullopt))
      return code;
  // Every rank finished: rank 0 waits for the others' word before its store
  // and the communicators go away.
  if (loaded.rendezvous)
    loaded.rendezvous->finish();
  return kExitOk;
}

} // namespace weft
