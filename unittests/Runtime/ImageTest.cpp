// Host-only image checks: PTX and ptxas-made cubins are classified with their
// sm; truncated, corrupt and foreign images are refused with a reason.
#include "RuntimeTestSupport.h"

#include <cstring>
#include <elf.h>
#include <gtest/gtest.h>
#include <string>

using namespace weft::runtime::test;

namespace {

std::string lastError() { return weft_last_error(); }

weft_status inspect(const std::vector<unsigned char> &bytes, weft_image_info &info) {
  return weft_image_inspect(bytes.data(), bytes.size(), &info);
}

// A 64-byte ELF64 header plus one null section header: the smallest image the
// checks accept, with the given CUDA ELF ABI version and e_flags.
std::vector<unsigned char> syntheticCubin(unsigned char abi, unsigned flags) {
  Elf64_Ehdr header = {};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_ident[EI_DATA] = ELFDATA2LSB;
  header.e_ident[EI_VERSION] = EV_CURRENT;
  header.e_ident[EI_OSABI] = 0x33;
  header.e_ident[EI_ABIVERSION] = abi;
  header.e_type = ET_EXEC;
  header.e_machine = EM_CUDA;
  header.e_flags = flags;
  header.e_ehsize = sizeof(Elf64_Ehdr);
  header.e_shoff = sizeof(Elf64_Ehdr);
  header.e_shentsize = sizeof(Elf64_Shdr);
  header.e_shnum = 1;
  std::vector<unsigned char> bytes(sizeof(Elf64_Ehdr) + sizeof(Elf64_Shdr), 0);
  std::memcpy(bytes.data(), &header, sizeof(header));
  return bytes;
}

Elf64_Ehdr headerOf(const std::vector<unsigned char> &bytes) {
  Elf64_Ehdr header;
  std::memcpy(&header, bytes.data(), sizeof(header));
  return header;
}

void setHeader(std::vector<unsigned char> &bytes, const Elf64_Ehdr &header) {
  std::memcpy(bytes.data(), &header, sizeof(header));
}

TEST(Image, PtxSm80) {
  std::vector<unsigned char> ptx = readPtx("add_one_sm80.ptx");
  ASSERT_GT(ptx.size(), 100u);
  weft_image_kind kind = WEFT_IMAGE_CUBIN;
  int sm = 0;
  ASSERT_EQ(weft_image_check(ptx.data(), ptx.size(), &kind, &sm), WEFT_OK) << lastError();
  EXPECT_EQ(kind, WEFT_IMAGE_PTX);
  EXPECT_EQ(sm, 80);
  EXPECT_EQ(lastError(), "");
  weft_image_info info = {};
  ASSERT_EQ(inspect(ptx, info), WEFT_OK);
  EXPECT_EQ(info.arch_specific, 0);
  EXPECT_EQ(info.family_specific, 0);
}

TEST(Image, PtxSm90aIsArchSpecific) {
  weft_image_info info = {};
  ASSERT_EQ(inspect(readPtx("fence_sm90a.ptx"), info), WEFT_OK) << lastError();
  EXPECT_EQ(info.kind, WEFT_IMAGE_PTX);
  EXPECT_EQ(info.sm, 90);
  EXPECT_EQ(info.arch_specific, 1);
}

TEST(Image, PtxFamilyAndOptions) {
  const char text[] = "// generated\n  .version 9.0\n\t.target sm_100f, debug // comment\n";
  weft_image_info info = {};
  ASSERT_EQ(weft_image_inspect(text, sizeof(text), &info), WEFT_OK) << lastError();
  EXPECT_EQ(info.sm, 100);
  EXPECT_EQ(info.family_specific, 1);
  EXPECT_EQ(info.arch_specific, 0);
}

TEST(Image, PtxWithoutNulIsRefused) {
  std::vector<unsigned char> ptx = readBytes(inputPath("add_one_sm80.ptx"));
  weft_image_kind kind;
  int sm;
  EXPECT_EQ(weft_image_check(ptx.data(), ptx.size(), &kind, &sm), WEFT_ERROR_INVALID_IMAGE);
  EXPECT_NE(lastError().find("NUL"), std::string::npos) << lastError();
  EXPECT_NE(lastError().find(std::to_string(ptx.size()) + " bytes"), std::string::npos)
      << lastError();
}

TEST(Image, PtxMissingDirectives) {
  const char noVersion[] = ".target sm_80\n.address_size 64\n";
  weft_image_info info;
  EXPECT_EQ(weft_image_inspect(noVersion, sizeof(noVersion), &info), WEFT_ERROR_INVALID_IMAGE);
  EXPECT_NE(lastError().find(".version"), std::string::npos) << lastError();

  const char noTarget[] = ".version 8.0\n.address_size 64\n";
  EXPECT_EQ(weft_image_inspect(noTarget, sizeof(noTarget), &info), WEFT_ERROR_INVALID_IMAGE);
  EXPECT_NE(lastError().find(".target"), std::string::npos) << lastError();

  const char badTarget[] = ".version 8.0\n.target compute_90\n";
  EXPECT_EQ(weft_image_inspect(badTarget, sizeof(badTarget), &info), WEFT_ERROR_INVALID_IMAGE);
  EXPECT_NE(lastError().find("'compute_90'"), std::string::npos) << lastError();

  const char badSuffix[] = ".version 8.0\n.target sm_90x\n";
  EXPECT_EQ(weft_image_inspect(badSuffix, sizeof(badSuffix), &info), WEFT_ERROR_INVALID_IMAGE);
  EXPECT_NE(lastError().find("'sm_90x'"), std::string::npos) << lastError();

  const char prose[] = "hello, world";
  EXPECT_EQ(weft_image_inspect(prose, sizeof(prose), &info), WEFT_ERROR_INVALID_IMAGE);
  EXPECT_NE(lastError().find("not PTX"), std::string::npos) << lastError();
}

TEST(Image, EmptyNullAndFatbin) {
  weft_image_info info;
  const char byte = 0;
  EXPECT_EQ(weft_image_inspect(&byte, 0, &info), WEFT_ERROR_INVALID_IMAGE);
  EXPECT_NE(lastError().find("size 0"), std::string::npos) << lastError();
  EXPECT_EQ(weft_image_inspect(nullptr, 16, &info), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("NULL"), std::string::npos) << lastError();
  const unsigned char fatbin[] = {0x50, 0xed, 0x55, 0xba, 1, 0, 0x10, 0};
  EXPECT_EQ(weft_image_inspect(fatbin, sizeof(fatbin), &info), WEFT_ERROR_INVALID_IMAGE);
  EXPECT_NE(lastError().find("fatbinary"), std::string::npos) << lastError();
}

// CUDA 12 and older write ABI 7 with the sm in the low byte of e_flags and
// 0x800 for sm_90a (0x5a0d5a); CUDA 13 writes ABI 8 with the sm in bits 8..15.
TEST(Image, CubinFlagLayouts) {
  weft_image_info info = {};
  ASSERT_EQ(inspect(syntheticCubin(7, 0x5a0d5a), info), WEFT_OK) << lastError();
  EXPECT_EQ(info.kind, WEFT_IMAGE_CUBIN);
  EXPECT_EQ(info.sm, 90);
  EXPECT_EQ(info.arch_specific, 1);
  EXPECT_EQ(info.elf_abi_version, 7);
  ASSERT_EQ(inspect(syntheticCubin(7, 0x500550), info), WEFT_OK) << lastError();
  EXPECT_EQ(info.sm, 80);
  EXPECT_EQ(info.arch_specific, 0);
  ASSERT_EQ(inspect(syntheticCubin(8, 0x06006402 | 0x8), info), WEFT_OK) << lastError();
  EXPECT_EQ(info.sm, 100);
  EXPECT_EQ(info.arch_specific, 1);
  EXPECT_EQ(inspect(syntheticCubin(8, 0x06000004), info), WEFT_ERROR_INVALID_IMAGE);
  EXPECT_NE(lastError().find("0x6000004"), std::string::npos) << lastError();
}

TEST(Image, CorruptElfHeaders) {
  weft_image_info info;
  std::vector<unsigned char> bytes = syntheticCubin(8, 0x06005a04);

  Elf64_Ehdr header = headerOf(bytes);
  header.e_machine = EM_X86_64;
  setHeader(bytes, header);
  EXPECT_EQ(inspect(bytes, info), WEFT_ERROR_INVALID_IMAGE);
  EXPECT_NE(lastError().find("e_machine 62"), std::string::npos) << lastError();
  EXPECT_NE(lastError().find("EM_CUDA (190)"), std::string::npos) << lastError();

  header = headerOf(syntheticCubin(8, 0x06005a04));
  header.e_ident[EI_CLASS] = ELFCLASS32;
  setHeader(bytes, header);
  EXPECT_EQ(inspect(bytes, info), WEFT_ERROR_INVALID_IMAGE);
  EXPECT_NE(lastError().find("ELF class 1"), std::string::npos) << lastError();

  // A section table offset near 2^64 must not wrap around the bounds check.
  header = headerOf(syntheticCubin(8, 0x06005a04));
  header.e_shoff = ~0ull - 8;
  setHeader(bytes, header);
  EXPECT_EQ(inspect(bytes, info), WEFT_ERROR_INVALID_IMAGE);
  EXPECT_NE(lastError().find("section header table"), std::string::npos) << lastError();

  header = headerOf(syntheticCubin(8, 0x06005a04));
  header.e_shnum = 0;
  setHeader(bytes, header);
  EXPECT_EQ(inspect(bytes, info), WEFT_ERROR_INVALID_IMAGE);
  EXPECT_NE(lastError().find("e_shnum 0"), std::string::npos) << lastError();
}

#ifdef WEFT_RUNTIME_TEST_HAVE_CUBINS

TEST(Image, PtxasCubinsSm80AndSm90a) {
  std::vector<unsigned char> sm80 = readBytes(cubinPath("add_one_sm80.cubin"));
  std::vector<unsigned char> sm90a = readBytes(cubinPath("fence_sm90a.cubin"));
  ASSERT_GT(sm80.size(), sizeof(Elf64_Ehdr));
  ASSERT_GT(sm90a.size(), sizeof(Elf64_Ehdr));
  weft_image_kind kind = WEFT_IMAGE_PTX;
  int sm = 0;
  ASSERT_EQ(weft_image_check(sm80.data(), sm80.size(), &kind, &sm), WEFT_OK) << lastError();
  EXPECT_EQ(kind, WEFT_IMAGE_CUBIN);
  EXPECT_EQ(sm, 80);
  ASSERT_EQ(weft_image_check(sm90a.data(), sm90a.size(), &kind, &sm), WEFT_OK) << lastError();
  EXPECT_EQ(kind, WEFT_IMAGE_CUBIN);
  EXPECT_EQ(sm, 90);
}

TEST(Image, TruncatedCubins) {
  std::vector<unsigned char> cubin = readBytes(cubinPath("add_one_sm80.cubin"));
  ASSERT_GT(cubin.size(), 200u);
  weft_image_info info;
  EXPECT_EQ(weft_image_inspect(cubin.data(), 40, &info), WEFT_ERROR_INVALID_IMAGE);
  EXPECT_NE(lastError().find("40 bytes is shorter than the 64-byte"), std::string::npos)
      << lastError();
  // ptxas puts the section header table last, so any cut shows there.
  size_t cut = cubin.size() - 10;
  EXPECT_EQ(weft_image_inspect(cubin.data(), cut, &info), WEFT_ERROR_INVALID_IMAGE);
  EXPECT_NE(lastError().find("ends past the image's " + std::to_string(cut) + " bytes"),
            std::string::npos)
      << lastError();
}

TEST(Image, CubinSectionOutsideImage) {
  std::vector<unsigned char> cubin = readBytes(cubinPath("add_one_sm80.cubin"));
  Elf64_Ehdr header = headerOf(cubin);
  ASSERT_GT(header.e_shnum, 2u);
  // Section 1 (.shstrtab) now claims to run far past the end.
  Elf64_Shdr section;
  size_t at = header.e_shoff + sizeof(Elf64_Shdr);
  std::memcpy(&section, cubin.data() + at, sizeof(section));
  section.sh_size = cubin.size();
  std::memcpy(cubin.data() + at, &section, sizeof(section));
  weft_image_info info;
  EXPECT_EQ(inspect(cubin, info), WEFT_ERROR_INVALID_IMAGE);
  EXPECT_NE(lastError().find("section 1"), std::string::npos) << lastError();
}

#endif // WEFT_RUNTIME_TEST_HAVE_CUBINS

weft_image_info image(weft_image_kind kind, int sm, int archSpecific, int familySpecific = 0) {
  weft_image_info info = {};
  info.kind = kind;
  info.sm = sm;
  info.arch_specific = archSpecific;
  info.family_specific = familySpecific;
  return info;
}

TEST(ImageArch, CubinRunsOnItsMajorVersion) {
  weft_image_info sm80 = image(WEFT_IMAGE_CUBIN, 80, 0);
  EXPECT_EQ(weft_image_check_arch(&sm80, 80), WEFT_OK);
  EXPECT_EQ(weft_image_check_arch(&sm80, 86), WEFT_OK);
  EXPECT_EQ(weft_image_check_arch(&sm80, 90), WEFT_ERROR_ARCH_MISMATCH);
  EXPECT_NE(lastError().find("cubin built for sm_80"), std::string::npos) << lastError();
  EXPECT_NE(lastError().find("sm_90, compute capability 9.0"), std::string::npos) << lastError();
  weft_image_info sm86 = image(WEFT_IMAGE_CUBIN, 86, 0);
  EXPECT_EQ(weft_image_check_arch(&sm86, 80), WEFT_ERROR_ARCH_MISMATCH);
}

TEST(ImageArch, ArchSpecificNeedsExactly) {
  weft_image_info sm90a = image(WEFT_IMAGE_PTX, 90, 1);
  EXPECT_EQ(weft_image_check_arch(&sm90a, 90), WEFT_OK);
  EXPECT_EQ(weft_image_check_arch(&sm90a, 100), WEFT_ERROR_ARCH_MISMATCH);
  EXPECT_NE(lastError().find("PTX built for sm_90a"), std::string::npos) << lastError();
  EXPECT_NE(lastError().find("sm_100"), std::string::npos) << lastError();
  EXPECT_EQ(weft_status_to_cu_result(WEFT_ERROR_ARCH_MISMATCH), CUDA_ERROR_NO_BINARY_FOR_GPU);
  weft_image_info cubin100a = image(WEFT_IMAGE_CUBIN, 100, 1);
  EXPECT_EQ(weft_image_check_arch(&cubin100a, 103), WEFT_ERROR_ARCH_MISMATCH);
}

TEST(ImageArch, PtxJitsForwardAndFamilies) {
  weft_image_info sm80 = image(WEFT_IMAGE_PTX, 80, 0);
  EXPECT_EQ(weft_image_check_arch(&sm80, 90), WEFT_OK);
  EXPECT_EQ(weft_image_check_arch(&sm80, 75), WEFT_ERROR_ARCH_MISMATCH);
  weft_image_info sm100f = image(WEFT_IMAGE_PTX, 100, 0, 1);
  EXPECT_EQ(weft_image_check_arch(&sm100f, 103), WEFT_OK);
  EXPECT_EQ(weft_image_check_arch(&sm100f, 120), WEFT_ERROR_ARCH_MISMATCH);
  EXPECT_NE(lastError().find("sm_100f"), std::string::npos) << lastError();
  weft_image_info bogus = image(static_cast<weft_image_kind>(9), 80, 0);
  EXPECT_EQ(weft_image_check_arch(&bogus, 90), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("kind 9"), std::string::npos) << lastError();
}

} // namespace
