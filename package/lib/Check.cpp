// The semantic checks of a plan (package or weft_plan.step): arena bounds,
// byte overlaps of simultaneously live buffers, operand liveness and sizes,
// launch limits, streams and events, schedule order, images.
#include "weft/Package/Package.h"

#include <tuple>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>
#include <string>

namespace weft::pkg {

namespace {

std::string str(uint64_t v) { return std::to_string(v); }

/// A byte count computed in long double from untrusted dims: exact when it
/// fits in 64 bits, else in scientific notation (a cast would be undefined).
std::string bytesText(long double bytes) {
  if (bytes >= 0 && bytes < 0x1p64L)
    return str(uint64_t(bytes));
  char text[32];
  snprintf(text, sizeof(text), "%.6Lg", bytes);
  return text;
}

class PlanChecker {
public:
  PlanChecker(const Package &package, const CheckOptions &options)
      : package(package), options(options) {}

  std::vector<Problem> run() {
    checkStep();
    checkBuffers();
    checkOverlaps();
    checkKernels();
    for (uint32_t i = 0; i < package.launches.size(); ++i)
      checkLaunch(i);
    for (uint32_t i = 0; i < package.gemms.size(); ++i)
      checkGemm(i);
    for (uint32_t i = 0; i < package.collectives.size(); ++i)
      checkCollective(i);
    checkSplits();
    checkEventsAndSchedule();
    if (problems.size() > options.maxProblems)
      problems.resize(options.maxProblems);
    return std::move(problems);
  }

private:
  void report(Subject subject, uint32_t index, std::string message) {
    if (problems.size() <= options.maxProblems)
      problems.push_back({subject, index, std::move(message)});
  }
  std::string bufferName(uint64_t index) const {
    return index < package.buffers.size()
               ? "'" + package.buffers[index].name + "'"
               : "#" + str(index);
  }

  void checkStep() {
    uint64_t align = package.alignment;
    if (align == 0 || (align & (align - 1)) != 0)
      report(Subject::Step, 0, "alignment " + str(align) +
                                   " is not a power of two");
    if (package.numStreams == 0)
      report(Subject::Step, 0, "the step has no stream (streams = 0)");
  }

  void checkBuffers() {
    for (uint32_t i = 0; i < package.buffers.size(); ++i) {
      const Buffer &b = package.buffers[i];
      std::string name = "buffer '" + b.name + "'";
      if (b.bound) {
        checkBound(i);
      } else if (b.offset > package.arenaBytes || b.size > package.arenaBytes - b.offset)
        report(Subject::Buffer, i,
               name + " at offset " + str(b.offset) + " with size " +
                   str(b.size) + " ends past the arena of " +
                   str(package.arenaBytes) + " bytes");
      uint64_t align = package.alignment;
      if (align && (align & (align - 1)) == 0 && b.offset % align != 0)
        report(Subject::Buffer, i,
               name + " offset " + str(b.offset) +
                   " is not a multiple of the alignment " + str(align));
      if (b.first > b.last)
        report(Subject::Buffer, i,
               name + " live range [" + str(b.first) + ", " + str(b.last) +
                   "] ends before it starts");
      else if (b.last >= package.numSteps)
        report(Subject::Buffer, i,
               name + " live range [" + str(b.first) + ", " + str(b.last) +
                   "] runs past the step's " + str(package.numSteps) +
                   " schedule indices");
      if (b.copyOf >= 0)
        checkCopy(i);
    }
  }

  /// A buffer the caller binds: a step argument with a type (the runtime
  /// checks the caller's memory against it), offset 0, no initial data.
  void checkBound(uint32_t i) {
    const Buffer &b = package.buffers[i];
    std::string name = "bound buffer '" + b.name + "'";
    if (b.arg < 0)
      report(Subject::Buffer, i, name + " holds no step argument; only arguments are bound");
    if (b.type.empty())
      report(Subject::Buffer, i, name + " has no tensor type");
    if (b.offset != 0)
      report(Subject::Buffer, i,
             name + " has arena offset " + str(b.offset) + "; a bound buffer has 0");
    if (b.copyOf >= 0)
      report(Subject::Buffer, i, name + " is a carried weight copy, which the runtime fills");
    for (const InitData &data : package.initData)
      if (data.buffer == i)
        report(Subject::Buffer, i, name + " has initial data, which the caller's memory holds");
  }

  /// The element type of a buffer's "tensor<...xT>" type, or "" if untyped.
  static std::string elementType(const std::string &type) {
    size_t x = type.rfind('x'), lt = type.find('<');
    size_t start = x == std::string::npos ? lt : x;
    if (start == std::string::npos || type.empty() || type.back() != '>')
      return "";
    return type.substr(start + 1, type.size() - start - 2);
  }

  /// A carried weight copy: an argument buffer whose master is another
  /// argument's parameter buffer of twice its bytes (f32 -> bf16 / f16), or
  /// the bf16 high half of a split master whose i16 low half is the master
  /// argument (--weight-copies=split: the same bytes).
  void checkCopy(uint32_t i) {
    const Buffer &b = package.buffers[i];
    std::string name = "buffer '" + b.name + "' (a copy of argument " +
                       str(uint64_t(b.copyOf)) + ")";
    if (b.arg < 0 || b.role != Role::Parameter) {
      report(Subject::Buffer, i, name + " is not a parameter argument (role " +
                                     roleName(b.role) + ", argument " +
                                     std::to_string(b.arg) + ")");
      return;
    }
    for (const Buffer &m : package.buffers)
      if (m.arg == b.copyOf) {
        bool split = elementType(m.type) == "i16";
        if (split && elementType(b.type) != "bf16")
          report(Subject::Buffer, i,
                 name + ": its master '" + m.name + "' (" + m.type +
                     ") is a split low half, but the copy is " + b.type +
                     ", not the bf16 high half");
        else if (m.role != Role::Parameter || m.copyOf >= 0 ||
                 m.size != (split ? 1 : 2) * b.size)
          report(Subject::Buffer, i,
                 name + ": its master '" + m.name + "' (role " + roleName(m.role) +
                     ", " + str(m.size) + " bytes) is not a parameter of " +
                     str((split ? 1 : 2) * b.size) + " bytes");
        return;
      }
    report(Subject::Buffer, i, name + ": no buffer holds that argument");
  }

  /// Sweep in offset order: each buffer against those that start before its
  /// end; n log n plus the overlapping pairs.
  void checkOverlaps() {
    const std::vector<Buffer> &buffers = package.buffers;
    std::vector<uint32_t> order(buffers.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return buffers[a].offset < buffers[b].offset ||
             (buffers[a].offset == buffers[b].offset && a < b);
    });
    for (size_t x = 0; x < order.size(); ++x) {
      const Buffer &a = buffers[order[x]];
      if (a.size == 0 || a.bound)
        continue;
      uint64_t end = a.offset + a.size; // overflow: reported by checkBuffers
      for (size_t y = x + 1; y < order.size(); ++y) {
        const Buffer &b = buffers[order[y]];
        if (b.offset >= end)
          break;
        if (b.size == 0 || b.bound || a.first > b.last || b.first > a.last)
          continue;
        uint32_t later = std::max(order[x], order[y]);
        uint32_t earlier = std::min(order[x], order[y]);
        const Buffer &l = buffers[later], &e = buffers[earlier];
        report(Subject::Buffer, later,
               "buffer '" + l.name + "' [" + str(l.offset) + ", " +
                   str(l.offset + l.size) + ") overlaps buffer '" + e.name +
                   "' [" + str(e.offset) + ", " + str(e.offset + e.size) +
                   ") while both are live (schedule indices " +
                   str(std::max(l.first, e.first)) + " to " +
                   str(std::min(l.last, e.last)) + ")");
        if (problems.size() > options.maxProblems)
          return;
      }
    }
  }

  void checkKernels() {
    for (uint32_t i = 0; i < package.kernels.size(); ++i) {
      const Kernel &kernel = package.kernels[i];
      if (!options.requireImages)
        continue;
      if (kernel.image == kNone || kernel.image >= package.images.size())
        report(Subject::Kernel, i,
               "kernel '" + kernel.name + "' has no image in the package "
               "(wants '" + kernel.imageName + "')");
      else if (!package.images[kernel.image].cubin &&
               !package.images[kernel.image].ptx)
        report(Subject::Kernel, i,
               "kernel '" + kernel.name + "': its image '" +
                   package.images[kernel.image].name +
                   "' holds neither cubin nor PTX");
    }
  }

  /// A buffer operand of the entry at `index`: defined and live there.
  bool checkOperand(Subject subject, uint32_t entry, uint32_t index,
                    uint64_t buffer, const std::string &what) {
    std::string where = subject == Subject::Launch ? "launch "
                        : subject == Subject::Gemm ? "gemm "
                                                   : "collective ";
    where += str(entry) + " " + what;
    if (buffer >= package.buffers.size()) {
      report(subject, entry,
             where + " names buffer " + str(buffer) + ", undefined: the step has " +
                 str(package.buffers.size()) + " buffers");
      return false;
    }
    const Buffer &b = package.buffers[buffer];
    if (index < b.first || index > b.last) {
      report(subject, entry,
             where + " uses buffer '" + b.name + "' at schedule index " +
                 str(index) + ", outside its live range [" + str(b.first) +
                 ", " + str(b.last) + "]");
      return false;
    }
    return true;
  }

  /// A tensor-map operand: its buffer live at `index`, the view's last
  /// element inside the buffer, strides multiples of 16 and increasing.
  void checkTensorMap(uint32_t entry, uint32_t index, uint64_t map,
                      const std::string &what) {
    std::string where = "launch " + str(entry) + " " + what;
    if (map >= package.tensorMaps.size()) {
      report(Subject::Launch, entry,
             where + " names tensor map " + str(map) +
                 ", undefined: the step has " + str(package.tensorMaps.size()));
      return;
    }
    const TensorMap &t = package.tensorMaps[map];
    if (!checkOperand(Subject::Launch, entry, index, t.buffer,
                      what + " (tensor map " + str(map) + ")"))
      return;
    if (t.rank < 1 || t.rank > kMaxTensorMapRank)
      return report(Subject::Launch, entry,
                    where + ": tensor map " + str(map) + " has rank " + str(t.rank));
    uint64_t element = dtypeBytes(t.dtype);
    // Byte offset of the last element; dims and strides are bounded by the
    // driver's limits (2^32, 2^40), so the sum cannot overflow 64 bits.
    uint64_t last = (t.dims[0] - 1) * element + element;
    for (uint32_t d = 1; d < t.rank; ++d) {
      if (t.dims[d] == 0 || t.dims[d] > (1ull << 32) || t.strides[d - 1] % 16 != 0 ||
          t.strides[d - 1] >= (1ull << 40)) {
        report(Subject::Launch, entry,
               where + ": tensor map " + str(map) + " dim " + str(d) + " = " +
                   str(t.dims[d]) + " with byte stride " + str(t.strides[d - 1]) +
                   " (dims 1..2^32, strides multiples of 16 below 2^40)");
        return;
      }
      last += (t.dims[d] - 1) * t.strides[d - 1];
    }
    const Buffer &b = package.buffers[t.buffer];
    if (t.dims[0] == 0 || last > b.size)
      report(Subject::Launch, entry,
             where + ": tensor map " + str(map) + " over buffer '" + b.name +
                 "' reaches byte " + str(last) + " but the buffer has " +
                 str(b.size));
  }

  void checkLaunch(uint32_t i) {
    const Launch &launch = package.launches[i];
    std::string where = "launch " + str(i);
    if (launch.kernel >= package.kernels.size()) {
      report(Subject::Launch, i, where + " names kernel " + str(launch.kernel) +
                                     ", undefined: the step has " +
                                     str(package.kernels.size()) + " kernels");
      return;
    }
    const Kernel &kernel = package.kernels[launch.kernel];
    where += " of '" + kernel.name + "'";
    const uint64_t gridMax[3] = {kMaxGridX, kMaxGridYZ, kMaxGridYZ};
    const uint64_t blockMax[3] = {kMaxBlockXY, kMaxBlockXY, kMaxBlockZ};
    const char *axes = "xyz";
    uint64_t threads = 1;
    for (int d = 0; d < 3; ++d) {
      if (launch.grid[d] < 1 || launch.grid[d] > gridMax[d])
        report(Subject::Launch, i,
               where + ": grid." + axes[d] + " = " + str(launch.grid[d]) +
                   " is outside [1, " + str(gridMax[d]) + "]");
      if (launch.block[d] < 1 || launch.block[d] > blockMax[d])
        report(Subject::Launch, i,
               where + ": block." + axes[d] + " = " + str(launch.block[d]) +
                   " is outside [1, " + str(blockMax[d]) + "]");
      threads *= launch.block[d];
    }
    if (threads > kMaxThreads)
      report(Subject::Launch, i,
             where + ": block of " + str(threads) + " threads exceeds " +
                 str(kMaxThreads));
    if (launch.smem > kMaxDynamicSmem)
      report(Subject::Launch, i,
             where + ": dynamic shared memory " + str(launch.smem) +
                 " bytes exceeds the " + str(kMaxDynamicSmem) +
                 " bytes a block may use");
    if (launch.stream >= package.numStreams)
      report(Subject::Launch, i,
             where + ": stream " + str(launch.stream) + " but the step has " +
                 str(package.numStreams));
    if (launch.args.size() != kernel.params.size()) {
      report(Subject::Launch, i,
             where + " passes " + str(launch.args.size()) +
                 " arguments, the kernel takes " + str(kernel.params.size()));
      return;
    }
    for (size_t a = 0; a < launch.args.size(); ++a) {
      const Arg &arg = launch.args[a];
      ParamKind want = kernel.params[a];
      bool matches = (want == ParamKind::Pointer && arg.kind == ArgKind::Buffer) ||
                     (want == ParamKind::I32 && arg.kind == ArgKind::I32) ||
                     (want == ParamKind::I64 && arg.kind == ArgKind::I64) ||
                     (want == ParamKind::F32 && arg.kind == ArgKind::F32) ||
                     (want == ParamKind::TensorMap && arg.kind == ArgKind::TensorMap);
      if (!matches) {
        const char *kinds[] = {"buffer", "i32", "i64", "f32", "tensormap"};
        report(Subject::Launch, i,
               where + " argument " + str(a) + " is " +
                   (uint32_t(arg.kind) < kNumArgKinds ? kinds[uint32_t(arg.kind)] : "?") +
                   ", the kernel's parameter " + str(a) + " is " +
                   paramKindName(want));
        continue;
      }
      if (arg.kind == ArgKind::Buffer)
        checkOperand(Subject::Launch, i, launch.index, arg.value,
                     "argument " + str(a));
      if (arg.kind == ArgKind::TensorMap)
        checkTensorMap(i, launch.index, arg.value, "argument " + str(a));
    }
  }

  void checkGemm(uint32_t i) {
    const Gemm &g = package.gemms[i];
    std::string where = "gemm " + str(i);
    if (g.m < 1 || g.n < 1 || g.k < 1 || g.batch < 1) {
      report(Subject::Gemm, i,
             where + ": m " + std::to_string(g.m) + ", n " + std::to_string(g.n) +
                 ", k " + std::to_string(g.k) + ", batch " +
                 std::to_string(g.batch) + " must all be positive");
      return;
    }
    if (g.stream >= package.numStreams)
      report(Subject::Gemm, i, where + ": stream " + str(g.stream) +
                                   " but the step has " +
                                   str(package.numStreams));
    bool wantsBias = epilogueUsesBias(g.epilogue);
    if (wantsBias != (g.bias != kNone))
      report(Subject::Gemm, i,
             where + ": epilogue " + epilogueName(g.epilogue) +
                 (wantsBias ? " needs a bias buffer" : " takes no bias buffer"));
    // One bias gradient per GEMM: batches would need a bias batch stride.
    if (g.epilogue == Epilogue::BGradA && g.batch != 1)
      report(Subject::Gemm, i,
             where + ": epilogue bgrad_a needs batch 1, got batch " +
                 std::to_string(g.batch));
    // The GELU epilogues' aux matrix: [m, n] with row pitch aux_ld (cuBLASLt's
    // EPILOGUE_AUX_LD: at least n, a multiple of 8), one batch.
    bool wantsAux = epilogueUsesAux(g.epilogue);
    if (wantsAux != (g.aux != kNone))
      report(Subject::Gemm, i,
             where + ": epilogue " + epilogueName(g.epilogue) +
                 (wantsAux ? " needs an aux buffer" : " takes no aux buffer"));
    if (wantsAux && (g.auxLd < g.n || g.auxLd % kAuxLdMultiple != 0))
      report(Subject::Gemm, i,
             where + ": aux_ld " + std::to_string(g.auxLd) + " must be at least n " +
                 std::to_string(g.n) + " and a multiple of " +
                 std::to_string(kAuxLdMultiple));
    if (wantsAux && g.batch != 1)
      report(Subject::Gemm, i,
             where + ": epilogue " + epilogueName(g.epilogue) +
                 " needs batch 1, got batch " + std::to_string(g.batch));
    // Elements each operand spans: the last batch's start plus one matrix.
    uint64_t esize = dtypeBytes(g.dtype);
    auto need = [&](int s, uint64_t rows, uint64_t cols) -> long double {
      long double matrix = (long double)rows * cols;
      return ((g.batch - 1) * (long double)std::max<int64_t>(g.strides[s], 0) +
              matrix) * esize;
    };
    struct Operand {
      const char *name;
      uint32_t buffer;
      long double bytes;
      int64_t offset = 0; // elements (a, b, c, d, aux only)
      int64_t rankStride = 0;
    } operands[] = {
        {"a", g.a, need(0, g.m, g.k), g.offsets[0], g.rankStrides[0]},
        {"b", g.b, need(1, g.k, g.n), g.offsets[1], g.rankStrides[1]},
        {"c", g.c, need(2, g.m, g.n), g.offsets[2], g.rankStrides[2]},
        {"d", g.d, need(3, g.m, g.n), g.offsets[3], g.rankStrides[3]},
        {"bias", g.bias,
         (long double)epilogueBiasElements(g.epilogue, g.m, g.n) * esize},
        {"workspace", g.workspace, 0},
        // Rows 0..m-2 at their full pitch, the last one n elements.
        {"aux", g.aux,
         ((long double)(g.m - 1) * std::max<int64_t>(g.auxLd, 0) + (long double)g.n) *
             esize,
         g.offsets[4], g.rankStrides[4]},
    };
    // Rank-relative row blocks: every rank of the group along the axes
    // reads and writes within the buffers (the farthest at ranks - 1).
    int64_t ranks = 1;
    for (size_t axis = 0; axis < package.grid.size(); ++axis)
      if (g.rankAxes >> axis & 1)
        ranks *= package.grid[axis];
    if (g.batch > 1)
      for (int s = 0; s < 4; ++s)
        if (g.strides[s] < 0)
          report(Subject::Gemm, i, where + ": stride " + std::to_string(s) +
                                       " is negative (" +
                                       std::to_string(g.strides[s]) + ")");
    for (const Operand &op : operands) {
      int64_t offset = op.offset + (ranks - 1) * op.rankStride;
      if (op.buffer == kNone) {
        if (offset != 0)
          report(Subject::Gemm, i,
                 where + " has offset " + std::to_string(offset) + " for operand " + op.name +
                     ", which it does not have");
        continue;
      }
      if (!checkOperand(Subject::Gemm, i, g.index, op.buffer,
                        std::string("operand ") + op.name))
        continue;
      if (!checkOffset(Subject::Gemm, i, where + " operand " + op.name + "'s rank stride",
                       op.rankStride, g.dtype) ||
          !checkOffset(Subject::Gemm, i, where + " operand " + op.name, offset, g.dtype))
        continue;
      const Buffer &b = package.buffers[op.buffer];
      long double start = (long double)offset * esize;
      if ((long double)b.size < start + op.bytes)
        report(Subject::Gemm, i,
               where + " operand " + op.name + ": buffer '" + b.name + "' has " +
                   str(b.size) + " bytes, the GEMM reads or writes " +
                   bytesText(op.bytes) + (offset ? " from byte " + bytesText(start) : "") +
                   (op.rankStride ? " on rank " + str(uint64_t(ranks - 1)) + " of its group" : ""));
    }
  }

  /// Split buffers: a grid with the split axis, each an argument or result
  /// (what a launcher slices and gathers).
  void checkSplits() {
    if (package.splitAxis >= 0 && size_t(package.splitAxis) >= package.grid.size())
      report(Subject::Step, 0,
             "split axis " + str(uint64_t(package.splitAxis)) + " but the step's grid has " +
                 str(package.grid.size()) + " axes");
    for (const Split &split : package.splits) {
      if (split.buffer >= package.buffers.size())
        continue; // the reader refuses these
      const Buffer &b = package.buffers[split.buffer];
      if (b.arg < 0 && b.result < 0)
        report(Subject::Buffer, split.buffer,
               "buffer '" + b.name + "' is split along dimension " +
                   str(uint64_t(split.dim)) +
                   " but holds no argument or result of the step");
    }
  }

  /// An operand's element offset: not negative, its bytes a multiple of
  /// kOperandAlignment.
  bool checkOffset(Subject subject, uint32_t i, const std::string &what, int64_t offset,
                   DType dtype) {
    long double bytes = (long double)offset * dtypeBytes(dtype);
    if (offset >= 0 && std::fmod(bytes, (long double)kOperandAlignment) == 0)
      return true;
    report(subject, i,
           what + ": offset " + std::to_string(offset) + " elements is " +
               (offset < 0 ? std::string("negative")
                           : "not a multiple of " + std::to_string(kOperandAlignment) +
                                 " bytes (cuBLASLt's and NCCL's alignment)"));
    return false;
  }

  /// A collective: its grid axes in the grid, its buffers live at its index
  /// and sized as its kind says (the whole tensor's count on one side, the
  /// count over the ranks of its group on the other; both whole for an
  /// all-to-all and a send/recv), its stream; a send/recv's shift inside the
  /// group; an all-to-all's and a send/recv's buffers apart.
  void checkCollective(uint32_t i) {
    const Collective &c = package.collectives[i];
    std::string where = "collective " + str(i) + " (" + collectiveKindName(c.kind) + ")";
    if (package.grid.empty() || c.axes == 0 || (c.axes >> package.grid.size()) != 0) {
      report(Subject::Collective, i,
             where + " names grid axes mask " + str(c.axes) + " but the step's grid has " +
                 str(package.grid.size()) + " axes");
      return;
    }
    uint64_t ranks = 1;
    for (size_t axis = 0; axis < package.grid.size(); ++axis)
      if (c.axes >> axis & 1)
        ranks *= uint64_t(package.grid[axis]);
    // Blocks per rank: all but all_reduce and send_recv (whole buffers).
    bool blocks = c.kind != CollectiveKind::AllReduce && c.kind != CollectiveKind::SendRecv;
    if (c.count <= 0 || (blocks && uint64_t(c.count) % ranks != 0)) {
      report(Subject::Collective, i,
             where + " has count " + str(uint64_t(c.count)) +
                 ", not a positive multiple of its " + str(ranks) + " ranks");
      return;
    }
    if (c.stream >= package.numStreams)
      report(Subject::Collective, i,
             where + " on stream " + str(c.stream) + " but the step has " +
                 str(package.numStreams) + " streams");
    uint64_t magnitude = uint64_t(c.shift < 0 ? -int64_t(c.shift) : int64_t(c.shift));
    if (c.kind == CollectiveKind::SendRecv &&
        (c.shift == 0 || magnitude >= ranks || magnitude > uint64_t(kMaxShift)))
      report(Subject::Collective, i,
             where + " shifts by " + std::to_string(c.shift) + " positions, not a nonzero " +
                 "shift of magnitude below its " + str(ranks) + " ranks (at most " +
                 std::to_string(kMaxShift) + ")");
    uint64_t whole = uint64_t(c.count) * dtypeBytes(c.dtype), part = whole / ranks;
    uint64_t inBytes = c.kind == CollectiveKind::AllGather ? part : whole;
    uint64_t outBytes = c.kind == CollectiveKind::ReduceScatter ? part : whole;
    int fitting = 0; // operands defined, live and large enough
    for (auto [buffer, bytes, offset, what] :
         {std::tuple(c.input, inBytes, c.inputOffset, "input"),
          std::tuple(c.output, outBytes, c.outputOffset, "output")}) {
      if (!checkOperand(Subject::Collective, i, c.index, buffer, what))
        continue;
      const Buffer &b = package.buffers[buffer];
      long double start = (long double)offset * dtypeBytes(c.dtype);
      if (!checkOffset(Subject::Collective, i, where + " " + what, offset, c.dtype))
        continue;
      if ((long double)b.size < start + bytes)
        report(Subject::Collective, i,
               where + " " + what + ": buffer '" + b.name + "' has " + str(b.size) +
                   " bytes, the collective moves " + str(bytes) +
                   (offset ? " from byte " + bytesText(start) : std::string()));
      else
        ++fitting;
    }
    // NCCL's send/recv read the input while peers write the output.
    bool sendRecv = c.kind == CollectiveKind::AllToAll || c.kind == CollectiveKind::SendRecv;
    // A bound buffer lies outside the arena: it overlaps no arena buffer.
    if (fitting == 2 && sendRecv && !package.buffers[c.input].bound &&
        !package.buffers[c.output].bound) {
      long double size = dtypeBytes(c.dtype);
      long double in = package.buffers[c.input].offset + c.inputOffset * size;
      long double out = package.buffers[c.output].offset + c.outputOffset * size;
      if (in < out + whole && out < in + whole)
        report(Subject::Collective, i,
               where + " cannot run in place: its input and output (" + str(whole) +
                   " bytes each, from arena bytes " + bytesText(in) + " and " +
                   bytesText(out) + ") overlap");
    }
  }

  void checkEventsAndSchedule() {
    std::vector<std::vector<bool>> seen(kNumEntryKinds);
    seen[0].assign(package.launches.size(), false);
    seen[1].assign(package.gemms.size(), false);
    seen[2].assign(package.events.size(), false);
    seen[3].assign(package.collectives.size(), false);
    std::set<uint32_t> recorded;
    uint64_t lastIndex = 0;
    for (size_t e = 0; e < package.schedule.size(); ++e) {
      const Entry &entry = package.schedule[e];
      uint32_t kind = uint32_t(entry.kind);
      if (kind >= kNumEntryKinds || entry.item >= seen[kind].size()) {
        report(Subject::Step, 0, "schedule entry " + str(e) + " names item " +
                                     str(entry.item) + " of kind " + str(kind) +
                                     ", which does not exist");
        continue;
      }
      if (seen[kind][entry.item]) {
        report(Subject::Step, 0, "schedule entry " + str(e) +
                                     " repeats an item already scheduled");
        continue;
      }
      seen[kind][entry.item] = true;
      const Subject subjects[] = {Subject::Launch, Subject::Gemm, Subject::Event,
                                  Subject::Collective};
      Subject subject = subjects[kind];
      uint32_t index = kind == 0   ? package.launches[entry.item].index
                       : kind == 1 ? package.gemms[entry.item].index
                       : kind == 2 ? package.events[entry.item].index
                                   : package.collectives[entry.item].index;
      if (index >= package.numSteps)
        report(subject, entry.item,
               "schedule index " + str(index) + " is past the step's " +
                   str(package.numSteps) + " indices");
      if (index < lastIndex)
        report(subject, entry.item,
               "schedule index " + str(index) +
                   " comes after an entry at index " + str(lastIndex) +
                   " (entries must be in schedule order)");
      lastIndex = std::max<uint64_t>(lastIndex, index);
      if (kind != 2)
        continue;
      const Event &event = package.events[entry.item];
      if (event.stream >= package.numStreams)
        report(Subject::Event, entry.item,
               "event " + str(event.event) + " on stream " + str(event.stream) +
                   " but the step has " + str(package.numStreams) + " streams");
      if (event.record)
        recorded.insert(event.event);
      else if (!recorded.count(event.event))
        report(Subject::Event, entry.item,
               "wait on event " + str(event.event) + " that no earlier entry "
               "records");
    }
    const char *kinds[] = {"launch", "gemm", "event", "collective"};
    Subject subjects[] = {Subject::Launch, Subject::Gemm, Subject::Event,
                          Subject::Collective};
    for (uint32_t kind = 0; kind < kNumEntryKinds; ++kind)
      for (uint32_t i = 0; i < seen[kind].size(); ++i)
        if (!seen[kind][i])
          report(subjects[kind], i,
                 std::string(kinds[kind]) + " " + str(i) +
                     " is not in the schedule");
  }

  const Package &package;
  const CheckOptions &options;
  std::vector<Problem> problems;
};

} // namespace

std::vector<Problem> checkPackage(const Package &package,
                                  const CheckOptions &options) {
  return PlanChecker(package, options).run();
}

} // namespace weft::pkg
