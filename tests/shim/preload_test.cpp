// The way the drop-in is really used: an unmodified program linked against libnccl, run with
// LD_PRELOAD=libbraid.so. braid must be called first, find the libnccl the program loaded, and
// forward to it without calling itself again.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

namespace {

std::string run(const std::string& command) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return output;
  std::array<char, 512> buffer;
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) output += buffer.data();
  pclose(pipe);
  return output;
}

std::string value_of(const std::string& output, const std::string& key) {
  const size_t at = output.find(key + "=");
  if (at == std::string::npos) return "";
  const size_t start = at + key.size() + 1;
  return output.substr(start, output.find('\n', start) - start);
}

TEST(ShimPreload, UnmodifiedProgramGoesThroughBraidToItsOwnNccl) {
  const std::string plain = run("env -u LD_PRELOAD -u BRAID_NCCL_LIBRARY " BRAID_SHIM_PROBE_PATH " 2>&1");
  ASSERT_EQ(value_of(plain, "result"), "0") << plain;
  EXPECT_NE(value_of(plain, "bound_to").find("libnccl"), std::string::npos) << plain;

  const std::string preloaded =
      run("env -u BRAID_NCCL_LIBRARY -u BRAID_DISABLE LD_PRELOAD=" BRAID_SHIM_LIBRARY_PATH
          " BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=SHIM " BRAID_SHIM_PROBE_PATH " 2>&1");
  EXPECT_EQ(value_of(preloaded, "result"), "0") << preloaded;
  EXPECT_EQ(value_of(preloaded, "version"), value_of(plain, "version")) << preloaded;
  EXPECT_NE(value_of(preloaded, "bound_to").find("libbraid.so"), std::string::npos) << preloaded;
  EXPECT_NE(preloaded.find("found via already loaded"), std::string::npos) << preloaded;
  EXPECT_NE(preloaded.find("split across NCCL and braid"), std::string::npos) << preloaded;
  // Groups behave exactly as without braid.
  EXPECT_EQ(value_of(preloaded, "group"), value_of(plain, "group")) << preloaded;
  EXPECT_EQ(value_of(preloaded, "unmatched_end"), value_of(plain, "unmatched_end")) << preloaded;
  EXPECT_EQ(value_of(plain, "unmatched_end"), "5") << plain;  // ncclInvalidUsage
}

// The drop-in never changes the application's module loading (eager loading cost a PyTorch
// process about 1 GiB of GPU memory and seconds of start-up), and BRAID_EAGER_MODULE_LOADING, which
// once asked for it, is gone.
TEST(ShimPreload, LeavesTheApplicationsModuleLoadingAlone) {
  const std::string preload = "LD_PRELOAD=" BRAID_SHIM_LIBRARY_PATH " ";
  EXPECT_EQ(run("env -u CUDA_MODULE_LOADING " + preload + "sh -c 'echo ${CUDA_MODULE_LOADING:-unset}'"), "unset\n");
  EXPECT_EQ(run("env -u CUDA_MODULE_LOADING BRAID_EAGER_MODULE_LOADING=1 " + preload +
                "sh -c 'echo ${CUDA_MODULE_LOADING:-unset}'"),
            "unset\n");
  EXPECT_EQ(run("env CUDA_MODULE_LOADING=LAZY " + preload + "printenv CUDA_MODULE_LOADING"), "LAZY\n");
  EXPECT_EQ(run("env CUDA_MODULE_LOADING=EAGER " + preload + "printenv CUDA_MODULE_LOADING"), "EAGER\n");
}

}  // namespace
