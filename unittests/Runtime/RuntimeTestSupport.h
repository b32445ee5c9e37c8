// Helpers shared by the runtime tests: reading test inputs and asking whether
// this process runs with a CUDA driver library to load.
#ifndef WEFT_UNITTESTS_RUNTIME_TESTSUPPORT_H
#define WEFT_UNITTESTS_RUNTIME_TESTSUPPORT_H

#include "weft_runtime.h"

#include <cstdlib>
#include <dlfcn.h>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace weft::runtime::test {

inline std::vector<unsigned char> readBytes(const std::string &path) {
  std::ifstream stream(path, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(stream),
                                    std::istreambuf_iterator<char>());
}

inline std::string inputPath(const std::string &name) {
  return std::string(WEFT_RUNTIME_TEST_INPUTS) + "/" + name;
}

inline std::string cubinPath(const std::string &name) {
  return std::string(WEFT_RUNTIME_TEST_CUBINS) + "/" + name;
}

// PTX as the driver takes it: the file's text and its terminating NUL.
inline std::vector<unsigned char> readPtx(const std::string &name) {
  std::vector<unsigned char> bytes = readBytes(inputPath(name));
  bytes.push_back('\0');
  return bytes;
}

// Whether WEFT_LIBCUDA points the runtime at another library (the stub-driver
// test processes); the default-process tests then do not apply.
inline bool driverOverridden() {
  const char *value = std::getenv("WEFT_LIBCUDA");
  return value && *value;
}

// Whether a real libcuda.so.1 can be loaded here (a GPU machine).
inline bool driverLibraryPresent() {
  void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return false;
  dlclose(handle);
  return true;
}

} // namespace weft::runtime::test

#endif // WEFT_UNITTESTS_RUNTIME_TESTSUPPORT_H
