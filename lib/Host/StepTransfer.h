// weft-run's host side of a loaded step's buffers: what each buffer is
// (BufferView), where its bytes come from before each step (Binding,
// CopyPair), and the transfers between the host and the step (StepTransfer:
// binding inputs and state, drawing --init-state, splitting and joining
// masters, reading results back). Internal to lib/Host.
#ifndef WEFT_LIB_HOST_STEPTRANSFER_H
#define WEFT_LIB_HOST_STEPTRANSFER_H

#include "weft/Host/Shards.h"
#include "weft/Support/ExitCode.h"
#include "weft/Support/Npz.h"

#include "llvm/ADT/Twine.h"

#include "weft_runtime.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace weft::run {

/// Prints weft-run's error message and returns `code`.
int error(ExitCode code, const llvm::Twine &message);

/// A step buffer as weft-run sees it: the runtime's record and its shape.
struct BufferView {
  size_t index = 0;
  weft_step_buffer info = {};
  std::vector<int64_t> shape;
  int64_t elements = 1;
  /// A partitioned step's argument or result split along `splitDim`: the
  /// whole tensor's shape (files hold it; the buffer holds this rank's block).
  int splitDim = -1;
  std::vector<int64_t> global;
  int64_t globalElements = 1;
  std::string type() const { return info.type[0] ? info.type : "(untyped)"; }
};

/// A buffer with weft.copy_of and its master. Carried: an f32 master and its
/// bf16/f16 copy (the master rounded to nearest even). Split: the master
/// argument holds the i16 low half and the copy the bf16 high half of one f32
/// master (splitMasterHigh / splitMasterLow).
struct CopyPair {
  const BufferView *copy = nullptr, *master = nullptr;
  bool split = false;
};

/// Where a buffer's bytes come from before each step.
struct Binding {
  const BufferView *buffer = nullptr;
  /// A split master's high half: the f32 master bound to `buffer` is split,
  /// its low half written there and its high half here.
  const BufferView *high = nullptr;
  const Tensor *tensor = nullptr;
  std::string source; // for the dry-run listing
  int64_t steps = 0;  // > 0: the tensor has a leading step dim of this size
  bool draw = false;  // state drawn from --init-state's seed
  bool local = false; // this rank's shard (a shard index), not the whole tensor
};

/// Parameters and optimizer state: bound once, before the first step.
bool isState(const weft_step_buffer &info);

/// Moves bytes between the host and a loaded step's buffers; every failure
/// is printed and returns false.
class StepTransfer {
public:
  StepTransfer(weft_step *step, int64_t initState, const RankLayout &layout)
      : step(step), initState(initState), layout(layout) {}

  bool bindBytes(const BufferView &buffer, const std::string &host);

  /// Binds `b` for step `s`: a split master's halves, a draw, or the step's
  /// slice of a tensor. An input's bytes are converted once per slice:
  /// steps that bind the slice bound last again (every step, for a file of
  /// one) only copy them.
  bool bind(const Binding &b, int64_t s);

  bool readRaw(const BufferView &buffer, std::string &host);

  bool readBack(const BufferView &buffer, Tensor &tensor);

  /// A carried copy: its master as bound (from a file, drawn, or the
  /// package's bytes), rounded to nearest even as the step's convert does.
  bool deriveCopy(const BufferView &copy, const BufferView &master);

  /// The f32 master of a split pair joined from its halves' bits, so one
  /// state file serves converted, carried and split packages alike.
  bool joinSplit(const BufferView &low, const BufferView &high, Tensor &tensor);

private:
  /// Per input binding, the slice it bound last and its bytes (one, so a
  /// file of many steps costs no more host memory than before).
  std::map<const Binding *, std::pair<int64_t, std::string>> lastSlice;

  /// Step s's value of a tensor binding, this rank's block when split.
  std::vector<double> localValues(const Binding &b, int64_t s);

  /// Draws this rank's block of the whole tensor (so every grid draws the
  /// same state).
  bool draw(const BufferView &buffer, std::string &host, const char *dtype = nullptr);

  /// A split master: the f32 master (from a file, or drawn exactly as the f32
  /// master of a converted package is) split into its two halves.
  bool bindSplit(const Binding &b);

  weft_step *step;
  int64_t initState;
  RankLayout layout;
};

} // namespace weft::run

#endif // WEFT_LIB_HOST_STEPTRANSFER_H
