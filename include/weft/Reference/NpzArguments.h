// A function's arguments from an .npz archive and its results back into one,
// under the keys every tool shares: arg<i> / res<i>, rank<r>/arg<i> for SPMD
// functions (an unprefixed arg<i> then meaning every rank). weft-run,
// weft-cpu-run and --weft-diff-each-pass read arguments through it.
#ifndef WEFT_REFERENCE_NPZARGUMENTS_H
#define WEFT_REFERENCE_NPZARGUMENTS_H

#include "weft/Support/Npz.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace weft::reference {

/// Per rank, the tensors of a function's arguments or results.
using PerRankTensors = std::vector<std::vector<Tensor>>;

/// The key of argument/result `index` (`kind` "arg"/"res") of `rank`:
/// unprefixed when the function runs on one rank.
std::string tensorKey(llvm::StringRef kind, int64_t rank, int64_t numRanks, size_t index);

/// Parses "arg3" or "rank1/arg3" (for kind "arg"); rank is nullopt when the
/// key has no prefix. Returns false for keys of other forms.
bool parseTensorKey(llvm::StringRef key, llvm::StringRef kind, std::optional<uint64_t> &rank,
                    uint64_t &index);

/// "tensor<2x3xf32>", the form the IR and the messages use.
std::string describeTensor(llvm::ArrayRef<int64_t> shape, DType dtype);

/// Fails when an argument key of `archive` (arg<i>, rank<r>/arg<i>) names an
/// argument past `func`'s signature or a rank past `numRanks`: for a file
/// meant for `func` alone (weft-run --inputs), never one shared by several
/// functions (--weft-diff-inputs).
llvm::Error checkArgumentKeys(mlir::func::FuncOp func, int64_t numRanks,
                              const NpzArchive &archive, llvm::StringRef file);

/// A tensor for each (rank, argument) of `func` from `archive`, each checked
/// against the signature; `file` names the archive in messages. Other keys
/// (results, data kept beside the inputs) are not read.
llvm::Expected<PerRankTensors> argumentsFromNpz(mlir::func::FuncOp func, int64_t numRanks,
                                                const NpzArchive &archive,
                                                llvm::StringRef file);

/// The archive of `perRank` under `kind`'s keys (tensorKey).
NpzArchive archiveOf(const PerRankTensors &perRank, llvm::StringRef kind);

} // namespace weft::reference

#endif // WEFT_REFERENCE_NPZARGUMENTS_H
