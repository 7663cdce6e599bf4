// libbraid.so exports exactly the NCCL API: every function nccl.h declares (read from the
// header itself) plus the two nccl_device host functions PyTorch imports, and nothing else.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

// Not in nccl.h (they live in nccl_device/core.h) but imported by PyTorch 2.11.
const std::set<std::string> kDeviceHostFunctions = {"ncclDevCommCreate", "ncclDevCommDestroy"};

// DESIGN.md's list: the NCCL symbols PyTorch 2.11's libtorch_cuda.so imports.
const std::vector<std::string> kPyTorchImports = {
    "ncclGetVersion", "ncclGetUniqueId", "ncclCommInitRank", "ncclCommInitRankConfig",
    "ncclCommInitRankScalable", "ncclCommInitAll", "ncclCommSplit", "ncclCommShrink", "ncclCommFinalize",
    "ncclCommDestroy", "ncclCommAbort", "ncclCommGetAsyncError", "ncclCommCount", "ncclCommUserRank",
    "ncclGetErrorString", "ncclGetLastError", "ncclCommRegister", "ncclCommDeregister",
    "ncclCommWindowRegister", "ncclCommWindowDeregister", "ncclMemAlloc", "ncclMemFree",
    "ncclDevCommCreate", "ncclDevCommDestroy", "ncclGroupStart", "ncclGroupEnd", "ncclGroupSimulateEnd",
    "ncclRedOpCreatePreMulSum", "ncclRedOpDestroy", "ncclAllReduce", "ncclAllGather", "ncclReduceScatter",
    "ncclAlltoAll", "ncclBroadcast", "ncclBcast", "ncclReduce", "ncclSend", "ncclRecv"};

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Function names declared in nccl.h, split into nccl* and pnccl*.
struct HeaderNames {
  std::set<std::string> nccl;
  std::set<std::string> pnccl;
};

HeaderNames parse_header(const std::string& text) {
  HeaderNames names;
  // A declaration starts a line: return type, then the name and its parameter list.
  const std::regex declaration(R"((?:^|\n)[ \t]*(?:ncclResult_t|const[ \t]+char[ \t]*\*|void)[ \t]+(p?nccl\w+)[ \t]*\()");
  for (std::sregex_iterator it(text.begin(), text.end(), declaration), end; it != end; ++it) {
    const std::string name = (*it)[1];
    (name[0] == 'p' ? names.pnccl : names.nccl).insert(name);
  }
  return names;
}

// The defined global symbols in a shared library's dynamic symbol table (what it exports).
std::set<std::string> exported_symbols(const std::string& image) {
  std::set<std::string> names;
  if (image.size() < sizeof(Elf64_Ehdr)) return names;
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(image.data());
  if (std::string(image.data(), 4) != ELFMAG || header->e_ident[EI_CLASS] != ELFCLASS64) return names;
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(image.data() + header->e_shoff);
  for (int i = 0; i < header->e_shnum; ++i) {
    if (sections[i].sh_type != SHT_DYNSYM) continue;
    const Elf64_Shdr& strings = sections[sections[i].sh_link];
    const auto* symbols = reinterpret_cast<const Elf64_Sym*>(image.data() + sections[i].sh_offset);
    const size_t count = sections[i].sh_size / sizeof(Elf64_Sym);
    for (size_t s = 1; s < count; ++s) {
      const Elf64_Sym& sym = symbols[s];
      const int binding = ELF64_ST_BIND(sym.st_info);
      const int visibility = ELF64_ST_VISIBILITY(sym.st_other);
      if (sym.st_shndx == SHN_UNDEF || (binding != STB_GLOBAL && binding != STB_WEAK)) continue;
      if (visibility != STV_DEFAULT && visibility != STV_PROTECTED) continue;
      names.insert(image.data() + strings.sh_offset + sym.st_name);
    }
  }
  return names;
}

TEST(ShimSymbols, HeaderParseFindsTheWholeApi) {
  const HeaderNames names = parse_header(read_file(BRAID_NCCL_HEADER_PATH));
  // NCCL 2.28.9's nccl.h declares 41 functions, each with its p-alias.
  EXPECT_GE(names.nccl.size(), 41u);
  for (const std::string& name : names.nccl) EXPECT_TRUE(names.pnccl.count("p" + name)) << name;
  EXPECT_TRUE(names.nccl.count("ncclGroupSimulateEnd"));
  EXPECT_TRUE(names.nccl.count("ncclResetDebugInit"));
  EXPECT_TRUE(names.nccl.count("ncclCommInitRankScalable"));
}

TEST(ShimSymbols, ExportsExactlyTheNcclApi) {
  const HeaderNames header = parse_header(read_file(BRAID_NCCL_HEADER_PATH));
  std::set<std::string> expected = header.nccl;
  expected.insert(kDeviceHostFunctions.begin(), kDeviceHostFunctions.end());

  const std::set<std::string> exported = exported_symbols(read_file(BRAID_SHIM_LIBRARY_PATH));
  ASSERT_FALSE(exported.empty()) << "could not read the dynamic symbols of " << BRAID_SHIM_LIBRARY_PATH;
  for (const std::string& name : expected) EXPECT_TRUE(exported.count(name)) << "missing export " << name;
  // Nothing else: no pnccl* (those are the real NCCL's), no braid internals, no C++ runtime bits.
  for (const std::string& name : exported) EXPECT_TRUE(expected.count(name)) << "unexpected export " << name;
}

TEST(ShimSymbols, EveryExportResolvesInsideLibbraid) {
  const HeaderNames header = parse_header(read_file(BRAID_NCCL_HEADER_PATH));
  std::set<std::string> expected = header.nccl;
  expected.insert(kDeviceHostFunctions.begin(), kDeviceHostFunctions.end());

  void* braid = dlopen(BRAID_SHIM_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(braid, nullptr) << dlerror();
  Dl_info own{};
  ASSERT_NE(dladdr(dlsym(braid, "ncclGetVersion"), &own), 0);
  for (const std::string& name : expected) {
    void* address = dlsym(braid, name.c_str());
    ASSERT_NE(address, nullptr) << name;
    Dl_info info{};
    ASSERT_NE(dladdr(address, &info), 0) << name;
    EXPECT_EQ(info.dli_fbase, own.dli_fbase) << name << " resolves outside libbraid.so (" << info.dli_fname << ")";
  }
  // libbraid.so does not depend on NCCL: its handle's scope has no pnccl entry points.
  EXPECT_EQ(dlsym(braid, "pncclGetVersion"), nullptr);
  EXPECT_EQ(dlsym(braid, "pncclAllReduce"), nullptr);
  dlclose(braid);
}

TEST(ShimSymbols, CoversEverySymbolPyTorchImports) {
  EXPECT_EQ(kPyTorchImports.size(), 38u);
  void* braid = dlopen(BRAID_SHIM_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(braid, nullptr) << dlerror();
  for (const std::string& name : kPyTorchImports) EXPECT_NE(dlsym(braid, name.c_str()), nullptr) << name;
  dlclose(braid);
}

}  // namespace
