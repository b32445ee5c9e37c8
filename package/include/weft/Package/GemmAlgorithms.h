// Writing cuBLASLt algorithms into a package file's GEMM slots in place (the
// first-load selection stores them there); plain C++ like the rest of
// WeftPackage, so the runtime uses it without MLIR.
#ifndef WEFT_PACKAGE_GEMMALGORITHMS_H
#define WEFT_PACKAGE_GEMMALGORITHMS_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weft::pkg {

/// The 64 bytes of a cublasLtMatmulAlgo_t for GEMM record `gemm`.
struct GemmAlgorithmUpdate {
  uint32_t gemm = 0;
  std::array<uint8_t, 64> algo{};
};

/// Writes each update's bytes into its GEMM record of the serialized package
/// `file` (`size` bytes), sets the record's has_algo flag, and recomputes the
/// GEMMS section's checksum and the header checksum, so readPackage accepts
/// the file again and reads the new bytes. The file must read as a valid
/// package and every index must name a GEMM; otherwise nothing is written
/// and `error` names the problem. The size of the file never changes.
bool setGemmAlgorithms(uint8_t *file, size_t size,
                       const std::vector<GemmAlgorithmUpdate> &updates,
                       std::string &error);

} // namespace weft::pkg

#endif // WEFT_PACKAGE_GEMMALGORITHMS_H
