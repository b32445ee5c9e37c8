// Classifies an image as cubin or PTX and reads the sm it was built for,
// without the driver, so bad inputs get a precise message before loading.
#include "Image.h"
#include "Status.h"

#include <cstring>
#include <elf.h>
#include <string>
#include <string_view>

namespace weft::runtime {

namespace {

// CUDA ELF e_flags, checked against what CUDA 13.0's ptxas (V13.0.88) writes
// for a hand-written kernel: -arch=sm_80 gives EI_ABIVERSION 8 and e_flags
// 0x06005004, sm_90 and sm_90a both 0x06005a04, sm_100a 0x06006402, sm_120
// 0x06007802. So in ABI 8 (CUDA 13) the sm is bits 8..15 (0x50 = 80,
// 0x5a = 90), not the low byte, and ptxas did not set the arch-specific bit
// 0x8 for sm_90a even on a kernel using wgmma/setmaxnreg. CUDA <= 12 cubins
// (ABI 7) hold the sm in the low byte and mark sm_90a with 0x800, e.g.
// 0x5a0d5a. LLVM's ELF.h (EF_CUDA_SM, EF_CUDA_SM_MASK) decodes both this way.
constexpr unsigned char kCudaElfAbiV2 = 8;
constexpr unsigned kSmMaskV1 = 0xff;
constexpr unsigned kArchSpecificV1 = 0x800;
constexpr unsigned kSmShiftV2 = 8;
constexpr unsigned kArchSpecificV2 = 0x8;
// nvcc's fatbinary container; the driver takes it, but Weft packages carry
// the cubin and PTX themselves, so one showing up here is a packaging bug.
constexpr uint32_t kFatbinMagic = 0xba55ed50;

weft_status invalid(std::string message) {
  return fail(WEFT_ERROR_INVALID_IMAGE, std::move(message));
}

// Whether [offset, offset + count * entrySize) lies within `size`, without
// overflowing on hostile header values.
bool tableFits(uint64_t offset, uint64_t count, uint64_t entrySize, size_t size) {
  if (offset > size)
    return false;
  if (entrySize != 0 && count > (size - offset) / entrySize)
    return false;
  return true;
}

weft_status inspectCubin(const unsigned char *bytes, size_t size, weft_image_info &info) {
  Elf64_Ehdr header;
  if (size < sizeof(header))
    return invalid(format("ELF image of %zu bytes is shorter than the %zu-byte ELF64 header "
                          "(truncated cubin?)",
                          size, sizeof(header)));
  std::memcpy(&header, bytes, sizeof(header));
  if (header.e_ident[EI_CLASS] != ELFCLASS64)
    return invalid(format("ELF class %u is not ELFCLASS64 (2): CUDA cubins are 64-bit ELF",
                          header.e_ident[EI_CLASS]));
  if (header.e_ident[EI_DATA] != ELFDATA2LSB)
    return invalid(format("ELF data encoding %u is not little-endian (1)",
                          header.e_ident[EI_DATA]));
  if (header.e_machine != EM_CUDA)
    return invalid(format("ELF e_machine %u is not EM_CUDA (190): not a CUDA cubin%s",
                          header.e_machine,
                          header.e_machine == EM_X86_64 ? " (it is an x86-64 object)" : ""));
  if (header.e_ehsize < sizeof(header))
    return invalid(format("ELF e_ehsize %u is smaller than the ELF64 header (%zu bytes)",
                          header.e_ehsize, sizeof(header)));
  if (header.e_shnum == 0)
    return invalid("ELF cubin has no section headers (e_shnum 0)");
  if (header.e_shentsize != sizeof(Elf64_Shdr))
    return invalid(format("ELF e_shentsize %u is not the ELF64 section header size %zu",
                          header.e_shentsize, sizeof(Elf64_Shdr)));
  if (!tableFits(header.e_shoff, header.e_shnum, sizeof(Elf64_Shdr), size))
    return invalid(format("ELF section header table (offset %llu, %u entries of %zu bytes) ends "
                          "past the image's %zu bytes (truncated cubin?)",
                          static_cast<unsigned long long>(header.e_shoff), header.e_shnum,
                          sizeof(Elf64_Shdr), size));
  if (header.e_shstrndx >= header.e_shnum)
    return invalid(format("ELF e_shstrndx %u is not below e_shnum %u", header.e_shstrndx,
                          header.e_shnum));
  if (header.e_phnum != 0) {
    if (header.e_phentsize != sizeof(Elf64_Phdr))
      return invalid(format("ELF e_phentsize %u is not the ELF64 program header size %zu",
                            header.e_phentsize, sizeof(Elf64_Phdr)));
    if (!tableFits(header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr), size))
      return invalid(format("ELF program header table (offset %llu, %u entries) ends past the "
                            "image's %zu bytes (truncated cubin?)",
                            static_cast<unsigned long long>(header.e_phoff), header.e_phnum,
                            size));
  }
  // The section table sits at the end of ptxas' output, but a corrupt table
  // can still point its sections outside the image.
  for (unsigned index = 0; index < header.e_shnum; ++index) {
    Elf64_Shdr section;
    std::memcpy(&section, bytes + header.e_shoff + index * sizeof(Elf64_Shdr), sizeof(section));
    if (section.sh_type == SHT_NOBITS || section.sh_type == SHT_NULL)
      continue;
    if (!tableFits(section.sh_offset, 1, section.sh_size, size))
      return invalid(format("ELF section %u (offset %llu, %llu bytes) ends past the image's %zu "
                            "bytes (truncated cubin?)",
                            index, static_cast<unsigned long long>(section.sh_offset),
                            static_cast<unsigned long long>(section.sh_size), size));
  }

  unsigned abi = header.e_ident[EI_ABIVERSION];
  unsigned flags = header.e_flags;
  bool newLayout = abi >= kCudaElfAbiV2;
  int sm = newLayout ? static_cast<int>((flags >> kSmShiftV2) & 0xff)
                     : static_cast<int>(flags & kSmMaskV1);
  if (sm < 10)
    return invalid(format("ELF e_flags 0x%x (CUDA ELF ABI %u) name no sm", flags, abi));
  info.kind = WEFT_IMAGE_CUBIN;
  info.sm = sm;
  info.arch_specific = (flags & (newLayout ? kArchSpecificV2 : kArchSpecificV1)) != 0;
  info.family_specific = 0;
  info.elf_abi_version = static_cast<int>(abi);
  return WEFT_OK;
}

std::string_view trimLeft(std::string_view text) {
  size_t start = text.find_first_not_of(" \t\r");
  return start == std::string_view::npos ? std::string_view() : text.substr(start);
}

// Parses "sm_90a" / "sm_100f" / "sm_80" (the first .target option).
bool parseTarget(std::string_view target, weft_image_info &info) {
  if (target.substr(0, 3) != "sm_")
    return false;
  size_t position = 3;
  int sm = 0;
  while (position < target.size() && target[position] >= '0' && target[position] <= '9' &&
         sm < 1000)
    sm = sm * 10 + (target[position++] - '0');
  if (position == 3 || sm < 10 || sm >= 1000)
    return false;
  info.arch_specific = 0;
  info.family_specific = 0;
  if (position < target.size()) {
    if (target[position] == 'a')
      info.arch_specific = 1;
    else if (target[position] == 'f')
      info.family_specific = 1;
    else
      return false;
    if (++position != target.size())
      return false;
  }
  info.sm = sm;
  return true;
}

weft_status inspectPtx(const char *text, size_t size, weft_image_info &info) {
  const void *nul = std::memchr(text, '\0', size);
  if (!nul)
    return invalid(format("image of %zu bytes is neither a cubin (no ELF magic) nor PTX: PTX "
                          "must be NUL-terminated and no NUL byte lies within the %zu bytes",
                          size, size));
  std::string_view ptx(text, static_cast<const char *>(nul) - text);
  bool sawVersion = false;
  bool sawTarget = false;
  while (!ptx.empty() && !sawTarget) {
    size_t end = ptx.find('\n');
    std::string_view line = trimLeft(ptx.substr(0, end));
    ptx = end == std::string_view::npos ? std::string_view() : ptx.substr(end + 1);
    if (line.substr(0, 8) == ".version" && line.size() > 8 && (line[8] == ' ' || line[8] == '\t')) {
      sawVersion = true;
    } else if (line.substr(0, 7) == ".target" && line.size() > 7 &&
               (line[7] == ' ' || line[7] == '\t')) {
      std::string_view options = trimLeft(line.substr(7));
      std::string_view first = options.substr(0, options.find_first_of(", \t\r/"));
      if (!sawVersion)
        return invalid("PTX has a .target line before any .version line");
      if (!parseTarget(first, info))
        return invalid(format("PTX .target '%.*s' is not sm_XX, sm_XXa or sm_XXf",
                              static_cast<int>(first.size()), first.data()));
      sawTarget = true;
    }
  }
  if (!sawVersion)
    return invalid(format("text of %zu bytes is not PTX: no .version line", size));
  if (!sawTarget)
    return invalid("PTX has no .target sm_XX line");
  info.kind = WEFT_IMAGE_PTX;
  info.elf_abi_version = 0;
  return WEFT_OK;
}

std::string smName(const weft_image_info &info) {
  return format("sm_%d%s", info.sm,
                info.arch_specific ? "a" : info.family_specific ? "f" : "");
}

} // namespace

const char *imageKindName(weft_image_kind kind) {
  return kind == WEFT_IMAGE_CUBIN ? "cubin" : kind == WEFT_IMAGE_PTX ? "PTX" : "image";
}

weft_status inspectImage(const void *image, size_t size, weft_image_info &info) {
  if (!image)
    return fail(WEFT_ERROR_INVALID_ARGUMENT, format("image is NULL (size %zu)", size));
  if (size == 0)
    return invalid("image is empty (size 0)");
  const auto *bytes = static_cast<const unsigned char *>(image);
  if (size >= SELFMAG && std::memcmp(bytes, ELFMAG, SELFMAG) == 0)
    return inspectCubin(bytes, size, info);
  if (size >= 4) {
    uint32_t magic;
    std::memcpy(&magic, bytes, sizeof(magic));
    if (magic == kFatbinMagic)
      return invalid("image is a fatbinary (magic 0xba55ed50); pass the cubin or PTX it holds");
  }
  return inspectPtx(static_cast<const char *>(image), size, info);
}

weft_status checkImageArch(const weft_image_info &info, int deviceSm) {
  int imageMajor = info.sm / 10, imageMinor = info.sm % 10;
  int deviceMajor = deviceSm / 10, deviceMinor = deviceSm % 10;
  bool sameMajor = imageMajor == deviceMajor;
  bool fits;
  const char *rule;
  if (info.arch_specific) {
    fits = info.sm == deviceSm;
    rule = "arch-specific code runs only on exactly that compute capability";
  } else if (info.kind == WEFT_IMAGE_CUBIN) {
    fits = sameMajor && deviceMinor >= imageMinor;
    rule = "a cubin runs only on its major version, at an equal or higher minor version";
  } else if (info.family_specific) {
    fits = sameMajor && deviceMinor >= imageMinor;
    rule = "family-specific PTX runs only on its major version, at an equal or higher minor "
           "version";
  } else {
    fits = deviceSm >= info.sm;
    rule = "PTX is compiled for the device and needs an equal or higher compute capability";
  }
  if (fits)
    return WEFT_OK;
  return fail(WEFT_ERROR_ARCH_MISMATCH,
              format("%s built for %s cannot run on the device (sm_%d, compute capability "
                     "%d.%d): %s",
                     imageKindName(info.kind), smName(info).c_str(), deviceSm, deviceMajor,
                     deviceMinor, rule));
}

} // namespace weft::runtime

using namespace weft::runtime;

extern "C" {

weft_status weft_image_inspect(const void *image, size_t size, weft_image_info *info) {
  return apiCall("weft_image_inspect", [&]() -> weft_status {
    if (!info)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_image_inspect: info is NULL");
    weft_image_info found = {};
    if (weft_status status = inspectImage(image, size, found))
      return status;
    *info = found;
    return WEFT_OK;
  });
}

weft_status weft_image_check(const void *image, size_t size, weft_image_kind *kind, int *sm) {
  return apiCall("weft_image_check", [&]() -> weft_status {
    weft_image_info found = {};
    if (weft_status status = inspectImage(image, size, found))
      return status;
    if (kind)
      *kind = found.kind;
    if (sm)
      *sm = found.sm;
    return WEFT_OK;
  });
}

weft_status weft_image_check_arch(const weft_image_info *info, int device_sm) {
  return apiCall("weft_image_check_arch", [&]() -> weft_status {
    if (!info)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_image_check_arch: info is NULL");
    if (info->kind != WEFT_IMAGE_CUBIN && info->kind != WEFT_IMAGE_PTX)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_image_check_arch: image kind %d is neither WEFT_IMAGE_CUBIN (1) "
                         "nor WEFT_IMAGE_PTX (2)",
                         static_cast<int>(info->kind)));
    if (info->sm < 10 || device_sm < 10)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_image_check_arch: sm values must be >= 10 (image sm %d, device "
                         "sm %d)",
                         info->sm, device_sm));
    return checkImageArch(*info, device_sm);
  });
}

} // extern "C"
