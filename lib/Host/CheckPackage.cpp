// weft-run --check: validates a package without a GPU (the reader's bounds
// and checksums, then the plan checks) and prints a short summary.
#include "weft/Host/CheckPackage.h"

#include "weft/Package/Package.h"
#include "weft/Support/ExitCode.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

namespace weft {

int checkPackageFile(llvm::StringRef path, bool allowMissingImages) {
  auto error = [&](const llvm::Twine &message) {
    llvm::outs().flush();
    llvm::WithColor::error(llvm::errs(), "weft-run") << path << ": " << message
                                                      << "\n";
  };
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!file) {
    error("cannot read: " + file.getError().message());
    return kExitUsage;
  }
  pkg::Package package;
  std::string message;
  if (!pkg::readPackage((*file)->getBufferStart(), (*file)->getBufferSize(),
                        package, message)) {
    error(message);
    return kExitFailed;
  }
  pkg::CheckOptions options;
  options.requireImages = false; // reported below, all in one line
  std::vector<pkg::Problem> problems = pkg::checkPackage(package, options);
  for (const pkg::Problem &problem : problems)
    error(problem.message);
  if (!problems.empty())
    return kExitFailed;

  std::vector<std::string> missing;
  for (const pkg::Kernel &kernel : package.kernels)
    if (kernel.image == pkg::kNone ||
        (!package.images[kernel.image].cubin && !package.images[kernel.image].ptx))
      missing.push_back(kernel.name);
  llvm::outs() << path << ": package format " << package.formatVersion
               << ", weft " << package.weftVersion << ", arch " << package.arch
               << ", step @" << package.stepName << "\n";
  llvm::outs() << "  arena " << package.arenaBytes << " bytes ("
               << llvm::format("%.2f", double(package.arenaBytes) / (1 << 20))
               << " MiB), alignment " << package.alignment << ", "
               << package.numSteps << " schedule indices, " << package.numStreams
               << (package.numStreams == 1 ? " stream\n" : " streams\n");
  llvm::outs() << "  " << package.buffers.size() << " buffers, "
               << package.kernels.size() << " kernels ("
               << package.kernels.size() - missing.size() << " with images), "
               << package.launches.size() << " launches, "
               << package.gemms.size() << " gemms, " << package.events.size()
               << " events, " << package.images.size() << " images\n";
  size_t bound = 0;
  uint64_t boundBytes = 0;
  for (const pkg::Buffer &buffer : package.buffers)
    if (buffer.bound) {
      ++bound;
      boundBytes += buffer.size;
    }
  if (bound)
    llvm::outs() << "  " << bound << " arguments bound by the caller outside the arena ("
                 << boundBytes << " bytes, "
                 << llvm::format("%.2f", double(boundBytes) / (1 << 20)) << " MiB)\n";
  if (!package.grid.empty()) {
    // A partitioned step: one plan that every rank of the grid runs.
    int64_t ranks = 1;
    std::string grid;
    for (int64_t size : package.grid) {
      ranks *= size;
      grid += (grid.empty() ? "" : "x") + std::to_string(size);
    }
    int64_t counts[pkg::kNumCollectiveKinds] = {};
    for (const pkg::Collective &collective : package.collectives)
      ++counts[uint32_t(collective.kind)];
    llvm::outs() << "  grid " << grid << " (" << ranks << " ranks, one plan), "
                 << package.collectives.size() << " collectives:";
    for (uint32_t kind = 0; kind < pkg::kNumCollectiveKinds; ++kind)
      llvm::outs() << " " << counts[kind] << " "
                   << pkg::collectiveKindName(pkg::CollectiveKind(kind));
    llvm::outs() << "\n";
    if (package.splitAxis >= 0) {
      size_t args = 0, results = 0;
      for (const pkg::Split &split : package.splits)
        (package.buffers[split.buffer].arg >= 0 ? args : results) += 1;
      llvm::outs() << "  split along grid axis " << package.splitAxis << ": " << args
                   << " arguments, " << results << " results\n";
    }
    // Shards' offsets in their global tensors (vocabulary rows, dropout
    // blocks, head offsets), each rank's from its grid position.
    size_t rankArgs = 0, launches = 0;
    for (const pkg::Launch &launch : package.launches) {
      size_t here = llvm::count_if(launch.args, [](const pkg::Arg &a) { return a.rankAxes; });
      rankArgs += here;
      launches += here > 0;
    }
    if (rankArgs)
      llvm::outs() << "  " << rankArgs << " rank-relative immediates in " << launches
                   << " launches\n";
  }
  if (!missing.empty()) {
    std::string names;
    for (size_t i = 0; i < missing.size() && i < 5; ++i)
      names += (i ? ", " : "") + missing[i];
    if (missing.size() > 5)
      names += ", ...";
    std::string text = std::to_string(missing.size()) + " of " +
                       std::to_string(package.kernels.size()) +
                       " kernels have no image in the package (" + names + ")";
    if (!allowMissingImages) {
      error(text + "; a GPU cannot run this step");
      return kExitFailed;
    }
    llvm::outs().flush();
    llvm::WithColor::warning(llvm::errs(), "weft-run") << path << ": " << text
                                                        << "\n";
  }
  llvm::outs() << "  ok\n";
  return kExitOk;
}

} // namespace weft
