// package_load PACKAGE [REPEATS]: times what loading a package costs on the
// host with the hand-written container (package/): reading the file,
// readPackage (bounds, checksums, every record and index), the FNV-1a
// checksums alone, checkPackage (the plan checks) and writePackage. Prints
// one JSON object; bench/package_format.py builds and runs it.
#include "weft/Package/Package.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

/// The median over `repeats` runs of `body`, in milliseconds.
template <typename Body> double medianMs(int repeats, Body body) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    Clock::time_point start = Clock::now();
    body();
    times.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

std::string readFile(const char *path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: package_load PACKAGE [REPEATS]\n");
    return 2;
  }
  int repeats = argc > 2 ? std::max(1, atoi(argv[2])) : 20;
  std::string file = readFile(argv[1]);
  weft::pkg::Package package;
  std::string error;
  if (!weft::pkg::readPackage(file.data(), file.size(), package, error)) {
    fprintf(stderr, "package_load: %s: %s\n", argv[1], error.c_str());
    return 1;
  }

  uint64_t imageBytes = 0, initBytes = 0;
  for (const weft::pkg::Image &image : package.images)
    imageBytes += (image.cubin ? image.cubin->size() : 0) +
                  (image.ptx ? image.ptx->size() : 0);
  for (const weft::pkg::InitData &data : package.initData)
    initBytes += data.bytes.size();

  volatile uint64_t sink = 0;
  double fileMs = medianMs(repeats, [&] { sink = readFile(argv[1]).size(); });
  double readMs = medianMs(repeats, [&] {
    weft::pkg::Package read;
    weft::pkg::readPackage(file.data(), file.size(), read, error);
    sink = read.buffers.size();
  });
  double checksumMs = medianMs(repeats, [&] {
    sink = weft::pkg::fnv1a64(file.data(), file.size());
  });
  weft::pkg::CheckOptions options;
  options.requireImages = false;
  double checkMs = medianMs(repeats, [&] {
    sink = weft::pkg::checkPackage(package, options).size();
  });
  double writeMs = medianMs(repeats, [&] {
    sink = weft::pkg::writePackage(package).size();
  });
  (void)sink;

  printf("{\"package\": \"%s\", \"file_bytes\": %zu, \"image_bytes\": %llu, "
         "\"init_bytes\": %llu, \"buffers\": %zu, \"kernels\": %zu, "
         "\"launches\": %zu, \"gemms\": %zu, \"schedule\": %zu, "
         "\"file_read_ms\": %.4f, \"read_package_ms\": %.4f, "
         "\"checksums_ms\": %.4f, \"check_package_ms\": %.4f, "
         "\"write_package_ms\": %.4f}\n",
         argv[1], file.size(), (unsigned long long)imageBytes,
         (unsigned long long)initBytes, package.buffers.size(),
         package.kernels.size(), package.launches.size(), package.gemms.size(),
         package.schedule.size(), fileMs, readMs, checksumMs, checkMs, writeMs);
  return 0;
}
