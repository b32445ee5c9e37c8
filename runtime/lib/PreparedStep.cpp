// Host half of weft_step_load: reads and checks a package for a device of a
// given sm and resolves every launch, tensor map, GEMM and poison point, so
// the device half only allocates, loads and encodes.
#include "PreparedStep.h"

#include "CommOverlap.h"
#include "Image.h"
#include "Nccl.h"
#include "Status.h"

#include <algorithm>
#include <cstring>

namespace weft::runtime {

namespace {

std::string join(const std::vector<pkg::Problem> &problems, size_t limit) {
  std::string text;
  for (size_t i = 0; i < problems.size() && i < limit; ++i)
    text += "\n  " + problems[i].message;
  if (problems.size() > limit)
    text += format("\n  ... and %zu more", problems.size() - limit);
  return text;
}

size_t alignUp(size_t value, size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// The image's bytes as the loader wants them: PTX NUL-terminated.
std::string loadableBytes(const std::string &bytes, bool ptx) {
  std::string copy = bytes;
  if (ptx && (copy.empty() || copy.back() != '\0'))
    copy.push_back('\0');
  return copy;
}

weft_status chooseImage(const pkg::Image &image, int deviceSm, ImageChoice &choice) {
  std::string why;
  weft_image_info info = {};
  if (image.cubin) {
    if (inspectImage(image.cubin->data(), image.cubin->size(), info) == WEFT_OK &&
        checkImageArch(info, deviceSm) == WEFT_OK) {
      choice.cubin = true;
      clearError();
      return WEFT_OK;
    }
    why = format("its cubin cannot run there (%s)", weft_last_error());
  }
  if (image.ptx) {
    std::string text = loadableBytes(*image.ptx, /*ptx=*/true);
    if (inspectImage(text.data(), text.size(), info) == WEFT_OK &&
        checkImageArch(info, deviceSm) == WEFT_OK) {
      choice.cubin = false;
      clearError();
      return WEFT_OK;
    }
    why += (why.empty() ? "" : "; ") + format("its PTX cannot either (%s)", weft_last_error());
  }
  if (why.empty())
    why = "it holds neither a cubin nor PTX";
  return fail(WEFT_ERROR_ARCH_MISMATCH,
              format("image '%s' has no code for the device (sm_%d): %s", image.name.c_str(),
                     deviceSm, why.c_str()));
}

weft_status resolveLaunch(const pkg::Package &package, const pkg::Launch &launch, int rank,
                          ResolvedLaunch &out) {
  const pkg::Kernel &kernel = package.kernels[launch.kernel];
  out.kernel = launch.kernel;
  for (int d = 0; d < 3; ++d) {
    out.grid[d] = launch.grid[d];
    out.block[d] = launch.block[d];
  }
  out.smem = launch.smem;
  out.stream = launch.stream;
  out.index = launch.index;
  size_t at = 0;
  for (size_t p = 0; p < kernel.params.size(); ++p) {
    ParamSlot slot;
    slot.kind = kernel.params[p];
    const pkg::Arg &arg = launch.args[p];
    slot.value = arg.value;
    // A shard's offset in the global tensor: relative to this rank's
    // position in its group (one package for every rank).
    if (arg.rankAxes) {
      int64_t base = arg.kind == pkg::ArgKind::I32 ? int64_t(int32_t(uint32_t(arg.value)))
                                                   : int64_t(arg.value);
      // Two's-complement arithmetic in uint64 (a hostile scale wraps, never UB).
      slot.value = uint64_t(base) + uint64_t(groupPosition(package.grid, arg.rankAxes, rank)) *
                                        uint64_t(arg.rankScale);
      if (arg.kind == pkg::ArgKind::I32)
        slot.value = uint32_t(slot.value);
    }
    size_t bytes = 8, alignment = 8;
    switch (slot.kind) {
    case pkg::ParamKind::Pointer:
    case pkg::ParamKind::I64:
      break;
    case pkg::ParamKind::I32:
    case pkg::ParamKind::F32:
      bytes = alignment = 4;
      break;
    case pkg::ParamKind::TensorMap:
      // CUtensorMap: 128 bytes, 64-byte aligned (the driver checks).
      bytes = sizeof(CUtensorMap);
      alignment = 64;
      break;
    }
    at = alignUp(at, alignment);
    slot.offset = at;
    at += bytes;
    out.params.push_back(slot);
  }
  out.blobBytes = alignUp(std::max<size_t>(at, 1), 64);
  return WEFT_OK;
}

weft_status resolveTensorMap(const pkg::TensorMap &map, ResolvedTensorMap &out) {
  out.buffer = map.buffer;
  switch (map.dtype) {
  case pkg::DType::BF16:
    out.dtype = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    break;
  case pkg::DType::F16:
    out.dtype = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    break;
  case pkg::DType::F32:
    out.dtype = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    break;
  case pkg::DType::F64:
    out.dtype = CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
    break;
  }
  out.rank = map.rank;
  for (unsigned d = 0; d < pkg::kMaxTensorMapRank; ++d) {
    out.dims[d] = map.dims[d];
    out.box[d] = map.box[d];
  }
  for (unsigned d = 0; d + 1 < pkg::kMaxTensorMapRank; ++d)
    out.strides[d] = map.strides[d];
  switch (map.swizzle) {
  case 0:
    out.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
    break;
  case 32:
    out.swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
    break;
  case 64:
    out.swizzle = CU_TENSOR_MAP_SWIZZLE_64B;
    break;
  default:
    out.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
    break;
  }
  return WEFT_OK;
}

weft_status resolveGemm(const pkg::Package &package, uint32_t i, int rank, ResolvedGemm &out) {
  const pkg::Gemm &g = package.gemms[i];
  auto fits = [](int64_t v) { return v >= 1 && v <= 0x7fffffff; };
  if (!fits(g.m) || !fits(g.n) || !fits(g.k) || !fits(g.batch))
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("gemm %u: m %lld, n %lld, k %lld, batch %lld must each fit cuBLASLt's "
                       "32-bit sizes",
                       i, (long long)g.m, (long long)g.n, (long long)g.k, (long long)g.batch));
  weft_gemm_desc &desc = out.desc;
  desc.m = int(g.m);
  desc.n = int(g.n);
  desc.k = int(g.k);
  desc.batch = int(g.batch);
  desc.stride_a = g.strides[0];
  desc.stride_b = g.strides[1];
  desc.stride_c = g.strides[2];
  desc.stride_d = g.strides[3];
  desc.trans_a = g.transA;
  desc.trans_b = g.transB;
  switch (g.dtype) {
  case pkg::DType::BF16:
    desc.dtype = WEFT_DTYPE_BF16;
    break;
  case pkg::DType::F16:
    desc.dtype = WEFT_DTYPE_F16;
    break;
  case pkg::DType::F32:
    desc.dtype = WEFT_DTYPE_F32;
    break;
  case pkg::DType::F64:
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("gemm %u: dtype f64 has no cuBLASLt path in the runtime", i));
  }
  static_assert(uint32_t(pkg::Epilogue::BGradA) == WEFT_GEMM_EPILOGUE_BGRAD_A &&
                    uint32_t(pkg::Epilogue::GeluAux) == WEFT_GEMM_EPILOGUE_GELU_AUX &&
                    uint32_t(pkg::Epilogue::GeluAuxBias) == WEFT_GEMM_EPILOGUE_GELU_AUX_BIAS &&
                    uint32_t(pkg::Epilogue::DGelu) == WEFT_GEMM_EPILOGUE_DGELU,
                "package epilogues are weft_gemm_epilogue values");
  desc.epilogue = weft_gemm_epilogue(uint32_t(g.epilogue));
  desc.alpha = g.alpha;
  desc.beta = g.beta;
  if (weft_status status = weft_gemm_check(&desc))
    return fail(status, format("gemm %u: %s", i, weft_last_error()));
  out.a = g.a;
  out.b = g.b;
  out.c = g.c;
  out.d = g.d;
  out.bias = g.bias;
  out.aux = g.aux;
  out.auxLd = g.auxLd;
  // A local-first gather's partial GEMMs: row blocks relative to this rank's
  // position in its group (one package for every rank).
  int64_t block = 0;
  if (g.rankAxes)
    block = (groupPosition(package.grid, g.rankAxes, rank) + g.rankShift) %
            ranksAlong(package.grid, g.rankAxes);
  for (int o = 0; o < 5; ++o)
    out.offsets[o] = (unsigned long long)(g.offsets[o] + block * g.rankStrides[o]) *
                     pkg::dtypeBytes(g.dtype);
  out.workspace = g.workspace;
  out.stream = g.stream;
  out.index = g.index;
  if (g.hasAlgo) {
    std::memcpy(out.algo.bytes, g.algo, sizeof(out.algo.bytes));
    out.algo.valid = 1;
  }
  return WEFT_OK;
}

uint32_t entryIndex(const pkg::Package &package, const pkg::Entry &entry) {
  switch (entry.kind) {
  case pkg::EntryKind::Launch:
    return package.launches[entry.item].index;
  case pkg::EntryKind::Gemm:
    return package.gemms[entry.item].index;
  case pkg::EntryKind::Event:
    return package.events[entry.item].index;
  case pkg::EntryKind::Collective:
    return package.collectives[entry.item].index;
  }
  return 0;
}

} // namespace

bool parseTensorType(const std::string &type, BufferShape &shape, std::string &error) {
  shape = BufferShape();
  if (type.empty())
    return true;
  const std::string prefix = "tensor<";
  if (type.compare(0, prefix.size(), prefix) != 0 || type.back() != '>') {
    error = "buffer type '" + type + "' is not of the form tensor<AxBxT>";
    return false;
  }
  std::string inner = type.substr(prefix.size(), type.size() - prefix.size() - 1);
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t x = inner.find('x'); x != std::string::npos; x = inner.find('x', start)) {
    parts.push_back(inner.substr(start, x - start));
    start = x + 1;
  }
  parts.push_back(inner.substr(start));
  shape.dtype = parts.back();
  parts.pop_back();
  static const char *const known[] = {"bf16", "f16", "f32", "f64", "i64", "i32", "i16", "i1"};
  if (std::find_if(std::begin(known), std::end(known),
                   [&](const char *name) { return shape.dtype == name; }) == std::end(known)) {
    error = "buffer type '" + type + "' has element type '" + shape.dtype +
            "', not one of bf16, f16, f32, f64, i64, i32, i16, i1";
    return false;
  }
  if (parts.size() > WEFT_STEP_MAX_RANK) {
    error = "buffer type '" + type + "' has rank " + std::to_string(parts.size()) +
            ", more than " + std::to_string(WEFT_STEP_MAX_RANK);
    return false;
  }
  for (const std::string &part : parts) {
    if (part.empty() || part.size() > 15 ||
        part.find_first_not_of("0123456789") != std::string::npos) {
      error = "buffer type '" + type + "' has a dimension '" + part + "' that is not a number";
      return false;
    }
    shape.dims.push_back(std::stoll(part));
  }
  shape.rank = int(parts.size());
  return true;
}

bool parseArch(const std::string &arch, int &sm, bool &specific) {
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0)
    return false;
  std::string digits = arch.substr(3);
  specific = false;
  if (digits.back() == 'a' || digits.back() == 'f') {
    specific = digits.back() == 'a';
    digits.pop_back();
  }
  if (digits.empty() || digits.size() > 4 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return false;
  sm = std::stoi(digits);
  return true;
}

// A partitioned package runs on exactly its grid's ranks, a one-GPU one on
// one process.
static weft_status checkRanks(const pkg::Package &package, int worldSize) {
  std::string grid;
  int64_t ranks = 1;
  for (int64_t size : package.grid) {
    grid += (grid.empty() ? "" : "x") + std::to_string(size);
    ranks *= size;
  }
  if (!package.grid.empty() && worldSize == 0)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("the package is a partitioned step for grid %s (%lld ranks) with %zu "
                       "collectives; run it with one process per rank (weft-run "
                       "--nproc-per-node %lld, or weft_step_load_spmd)",
                       grid.c_str(), (long long)ranks, package.collectives.size(),
                       (long long)ranks));
  if (package.grid.empty() && worldSize > 1)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("the package is a one-GPU step but this run has %d ranks; compile it "
                       "with weft-compile --grid=tp=%d to run it on %d GPUs",
                       worldSize, worldSize, worldSize));
  if (!package.grid.empty() && ranks != worldSize)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("the package was built for grid %s of %lld ranks, but this run has %d "
                       "ranks (WORLD_SIZE or --nproc-per-node)",
                       grid.c_str(), (long long)ranks, worldSize));
  return WEFT_OK;
}

// The caller's arena (weft_step_options.arena): it holds the planned arena and
// keeps the package's buffer alignment, or the step is refused before any
// driver call.
static weft_status checkExternalArena(const pkg::Package &package, const weft_step_options &options) {
  if (!options.arena && !options.arena_bytes)
    return WEFT_OK;
  if (!options.arena)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("weft_step_options: arena_bytes is %zu but arena is 0; give both (the "
                       "caller's arena) or neither (the runtime allocates it)",
                       options.arena_bytes));
  if (options.debug_buffers)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                "weft_step_options: debug_buffers allocates each buffer on its own, so it "
                "cannot use the caller's arena; set one of debug_buffers and arena");
  if (options.arena_bytes < package.arenaBytes)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("weft_step_options: the caller's arena has %zu bytes but the step's "
                       "planned arena needs %llu bytes",
                       options.arena_bytes, (unsigned long long)package.arenaBytes));
  uint64_t alignment = std::max<uint64_t>(package.alignment, 1);
  if (options.arena % alignment)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("weft_step_options: the caller's arena at 0x%llx is not aligned to the "
                       "package's %llu-byte buffer alignment",
                       (unsigned long long)options.arena, (unsigned long long)alignment));
  return WEFT_OK;
}

weft_status prepareStep(const void *bytes, size_t size, int deviceSm,
                        const weft_step_options &options, PreparedStep &prepared,
                        int worldSize, int rank) {
  if (!bytes)
    return fail(WEFT_ERROR_INVALID_ARGUMENT, "the package is NULL");
  prepared = PreparedStep();
  prepared.deviceSm = deviceSm;
  prepared.options = options;
  pkg::Package &package = prepared.package;
  std::string error;
  if (!pkg::readPackage(bytes, size, package, error))
    return fail(package.formatVersion != pkg::kFormatVersion ? WEFT_ERROR_VERSION_MISMATCH
                                                             : WEFT_ERROR_INVALID_ARGUMENT,
                "cannot read the package: " + error);
  prepared.worldSize = worldSize;
  prepared.rank = rank;
  if (weft_status status = checkRanks(package, worldSize))
    return status;

  int packageSm = 0;
  bool specific = false;
  if (!parseArch(package.arch, packageSm, specific))
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("the package's arch '%s' is not of the form sm_XX[a]",
                       package.arch.c_str()));
  bool runs = specific ? packageSm == deviceSm
                       : packageSm / 10 == deviceSm / 10 && deviceSm >= packageSm;
  if (!runs)
    return fail(WEFT_ERROR_ARCH_MISMATCH,
                format("the package is built for %s but the device is sm_%d (compute "
                       "capability %d.%d)%s",
                       package.arch.c_str(), deviceSm, deviceSm / 10, deviceSm % 10,
                       specific ? format("; %s code runs only on compute capability %d.%d",
                                         package.arch.c_str(), packageSm / 10, packageSm % 10)
                                      .c_str()
                                : ""));

  pkg::CheckOptions checks;
  checks.requireImages = true;
  std::vector<pkg::Problem> problems = pkg::checkPackage(package, checks);
  if (!problems.empty())
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("the package's plan has %zu problem(s):%s", problems.size(),
                       join(problems, 8).c_str()));

  for (const pkg::Buffer &buffer : package.buffers) {
    BufferShape shape;
    if (!parseTensorType(buffer.type, shape, error))
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "buffer '" + buffer.name + "': " + error);
    prepared.shapes.push_back(std::move(shape));
  }

  if (options.debug_buffers) {
    prepared.arenaBytes = 0;
    for (const pkg::Buffer &buffer : package.buffers)
      prepared.arenaBytes += buffer.bound ? 0 : buffer.size;
  } else {
    prepared.arenaBytes = package.arenaBytes;
  }
  if (weft_status status = checkExternalArena(package, options))
    return status;

  // Images the kernels use, each checked against the device once.
  prepared.images.resize(package.images.size());
  std::vector<bool> used(package.images.size(), false);
  for (const pkg::Kernel &kernel : package.kernels)
    used[kernel.image] = true; // checkPackage(requireImages) made it valid
  for (size_t i = 0; i < package.images.size(); ++i) {
    if (!used[i])
      continue;
    prepared.images[i].image = uint32_t(i);
    if (weft_status status = chooseImage(package.images[i], deviceSm, prepared.images[i]))
      return status;
  }
  for (const pkg::Kernel &kernel : package.kernels)
    prepared.kernelImage.push_back(kernel.image);

  for (const pkg::Launch &launch : package.launches) {
    ResolvedLaunch resolved;
    if (weft_status status = resolveLaunch(package, launch, prepared.rank, resolved))
      return status;
    prepared.launches.push_back(std::move(resolved));
  }
  for (const pkg::TensorMap &map : package.tensorMaps) {
    ResolvedTensorMap resolved;
    if (weft_status status = resolveTensorMap(map, resolved))
      return status;
    prepared.tensorMaps.push_back(resolved);
  }
  for (uint32_t i = 0; i < package.gemms.size(); ++i) {
    ResolvedGemm resolved;
    if (weft_status status = resolveGemm(package, i, prepared.rank, resolved))
      return status;
    prepared.gemms.push_back(resolved);
  }
  for (const pkg::Event &event : package.events)
    prepared.numEvents = std::max(prepared.numEvents, event.event + 1);

  for (const pkg::Entry &entry : package.schedule)
    prepared.schedule.push_back({entry.kind, entry.item, {}});
  if (weft_status status =
          resolveCommOptions(options, prepared.commPriority, prepared.gemmSmMargin))
    return status;
  CommOverlap overlap = findCommOverlap(package);
  prepared.commStreams = std::move(overlap.commStreams);
  prepared.gemmBesideCollective = std::move(overlap.gemmBeside);
  if (options.debug_buffers) {
    // A buffer dies after the last entry at or before the end of its live
    // range; one live to the step's last index (results, parameters) never.
    for (uint32_t b = 0; b < package.buffers.size(); ++b) {
      const pkg::Buffer &buffer = package.buffers[b];
      // The caller's memory is never poisoned.
      if (buffer.last + 1 >= package.numSteps || buffer.size == 0 || buffer.bound)
        continue;
      int last = -1;
      for (size_t e = 0; e < package.schedule.size(); ++e)
        if (entryIndex(package, package.schedule[e]) <= buffer.last)
          last = int(e);
      if (last >= 0)
        prepared.schedule[size_t(last)].poison.push_back(b);
    }
  }
  return WEFT_OK;
}

std::string describeStep(const PreparedStep &prepared) {
  const pkg::Package &package = prepared.package;
  std::string text;
  text += format("step @%s: package for %s, format %u, on sm_%d\n", package.stepName.c_str(),
                 package.arch.c_str(), package.formatVersion, prepared.deviceSm);
  text += format("arena %llu bytes (%s), %u stream(s), %u event(s), %zu schedule entries\n",
                 (unsigned long long)prepared.arenaBytes,
                 prepared.options.debug_buffers ? "debug: one allocation per buffer"
                 : prepared.options.arena       ? "the caller's memory"
                                                : "one allocation",
                 prepared.options.debug_buffers ? 1u : package.numStreams, prepared.numEvents,
                 prepared.schedule.size());
  if (prepared.worldSize > 0)
    text += format("rank %d of %d, %zu collectives\n", prepared.rank, prepared.worldSize,
                   package.collectives.size());
  for (size_t i = 0; i < package.buffers.size(); ++i) {
    const pkg::Buffer &b = package.buffers[i];
    text += format("buffer %zu '%s' %s %s offset %llu size %llu live [%u, %u]", i,
                   b.name.c_str(), pkg::roleName(b.role), b.type.empty() ? "-" : b.type.c_str(),
                   (unsigned long long)b.offset, (unsigned long long)b.size, b.first, b.last);
    if (b.arg >= 0)
      text += format(" arg %d", b.arg);
    if (b.result >= 0)
      text += format(" result %d", b.result);
    if (b.bound)
      text += " bound by the caller";
    for (const pkg::Split &split : package.splits)
      if (split.buffer == i)
        text += format(" split dim %d along grid axis %d", split.dim, package.splitAxis);
    text += "\n";
  }
  for (size_t i = 0; i < prepared.images.size(); ++i)
    if (prepared.images[i].image != pkg::kNone)
      text += format("image %zu '%s': %s\n", i, package.images[i].name.c_str(),
                     prepared.images[i].cubin ? "cubin" : "PTX (JIT)");
  auto bufferText = [&](uint64_t index) {
    const pkg::Buffer &b = package.buffers[index];
    return b.bound ? format("'%s'@bound", b.name.c_str())
                   : format("'%s'@%llu", b.name.c_str(), (unsigned long long)b.offset);
  };
  for (const ScheduleStep &step : prepared.schedule) {
    if (step.kind == pkg::EntryKind::Launch) {
      const ResolvedLaunch &l = prepared.launches[step.item];
      text += format("launch %u at %u stream %u: %s grid (%u, %u, %u) block (%u, %u, %u) smem "
                     "%u blob %zu [",
                     step.item, l.index, l.stream, package.kernels[l.kernel].entry.c_str(),
                     l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2],
                     l.smem, l.blobBytes);
      for (size_t p = 0; p < l.params.size(); ++p) {
        const ParamSlot &slot = l.params[p];
        text += p ? ", " : "";
        text += format("+%zu ", slot.offset);
        switch (slot.kind) {
        case pkg::ParamKind::Pointer:
          text += "ptr " + bufferText(slot.value);
          break;
        case pkg::ParamKind::I32:
          text += format("i32 %d", int32_t(uint32_t(slot.value)));
          break;
        case pkg::ParamKind::I64:
          text += format("i64 %lld", (long long)int64_t(slot.value));
          break;
        case pkg::ParamKind::F32: {
          uint32_t bits = uint32_t(slot.value);
          float value;
          std::memcpy(&value, &bits, 4);
          text += format("f32 %g", double(value));
          break;
        }
        case pkg::ParamKind::TensorMap: {
          const ResolvedTensorMap &m = prepared.tensorMaps[slot.value];
          text += format("tensormap %s dims [", bufferText(m.buffer).c_str());
          for (unsigned d = 0; d < m.rank; ++d)
            text += format("%s%llu", d ? ", " : "", m.dims[d]);
          text += "] strides [";
          for (unsigned d = 0; d + 1 < m.rank; ++d)
            text += format("%s%llu", d ? ", " : "", m.strides[d]);
          text += "] box [";
          for (unsigned d = 0; d < m.rank; ++d)
            text += format("%s%u", d ? ", " : "", m.box[d]);
          const int spans[] = {0, 32, 64, 128};
          text += format("] swizzle %dB", spans[int(m.swizzle) & 3]);
          break;
        }
        }
      }
      text += "]\n";
    } else if (step.kind == pkg::EntryKind::Gemm) {
      const ResolvedGemm &g = prepared.gemms[step.item];
      text += format("gemm %u at %u stream %u: %s = %s%s x %s%s", step.item, g.index, g.stream,
                     bufferText(g.d).c_str(), bufferText(g.a).c_str(),
                     g.desc.trans_a ? "^T" : "", bufferText(g.b).c_str(),
                     g.desc.trans_b ? "^T" : "");
      if (g.bias != pkg::kNone)
        text += (g.desc.epilogue == WEFT_GEMM_EPILOGUE_BGRAD_A ? ", bias grad -> " : " + bias ") +
                bufferText(g.bias);
      if (g.aux != pkg::kNone)
        text += (g.desc.epilogue == WEFT_GEMM_EPILOGUE_DGELU ? ", dgelu of aux " : ", gelu, aux -> ") +
                bufferText(g.aux) + format(" (ld %lld)", g.auxLd);
      text += format(" m %d n %d k %d batch %d, algo %s, workspace %s", g.desc.m, g.desc.n,
                     g.desc.k, g.desc.batch,
                     g.algo.valid ? "from the package" : "chosen at load",
                     g.workspace == pkg::kNone ? "none" : bufferText(g.workspace).c_str());
      if (std::any_of(std::begin(g.offsets), std::end(g.offsets),
                      [](unsigned long long o) { return o != 0; }))
        text += format(", byte offsets a %llu b %llu c %llu d %llu aux %llu", g.offsets[0],
                       g.offsets[1], g.offsets[2], g.offsets[3], g.offsets[4]);
      // The SMs it leaves to the collective it runs beside (gemm_sm_margin).
      if (prepared.gemmSmMargin > 0 && step.item < prepared.gemmBesideCollective.size() &&
          prepared.gemmBesideCollective[step.item])
        text += format(", beside a collective: leaves %d SMs", prepared.gemmSmMargin);
      text += "\n";
    } else if (step.kind == pkg::EntryKind::Collective) {
      const pkg::Collective &c = package.collectives[step.item];
      std::string detail; // the reduction, or a send_recv's shift
      if (c.kind == pkg::CollectiveKind::SendRecv)
        detail = format(" (shift %d%s)", c.shift, c.rotate ? ", rotate" : "");
      else if (c.kind == pkg::CollectiveKind::AllReduce ||
               c.kind == pkg::CollectiveKind::ReduceScatter)
        detail = std::string(" (") + pkg::reductionName(c.reduction) + ")";
      text += format("collective %u at %u stream %u: %s = %s(%s) %lld %s over grid axes %u%s\n",
                     step.item, c.index, c.stream, bufferText(c.output).c_str(),
                     pkg::collectiveKindName(c.kind), bufferText(c.input).c_str(),
                     (long long)c.count, pkg::dtypeName(c.dtype), c.axes, detail.c_str());
    } else {
      const pkg::Event &e = package.events[step.item];
      text += format("%s event %u on stream %u at %u\n", e.record ? "record" : "wait", e.event,
                     e.stream, e.index);
    }
    if (!step.poison.empty()) {
      text += "  poison";
      for (uint32_t b : step.poison)
        text += " '" + package.buffers[b].name + "'";
      text += "\n";
    }
  }
  return text;
}

} // namespace weft::runtime
