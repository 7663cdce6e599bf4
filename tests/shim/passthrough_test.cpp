// libbraid.so as a pass-through, from a program linked against it instead of libnccl.
// The expectations come from the real NCCL, opened separately by the test (dlopen + pnccl*).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace {

// The real NCCL, opened by the test itself: the independent source of expected answers.
struct RealNcclForTest {
  void* handle = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_LOCAL);
  template <typename Fn>
  Fn entry(const char* name) const {
    return handle ? reinterpret_cast<Fn>(dlsym(handle, name)) : nullptr;
  }
  int version() const {
    int v = -1;
    auto get_version = entry<ncclResult_t (*)(int*)>("pncclGetVersion");
    if (get_version == nullptr || get_version(&v) != ncclSuccess) return -1;
    return v;
  }
  std::string path() const {
    Dl_info info{};
    void* probe = entry<void*>("pncclGetVersion");
    return probe && dladdr(probe, &info) ? info.dli_fname : "";
  }
};

bool cuda_driver_present() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver) dlclose(driver);
  return driver != nullptr;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ShimPassThrough, CallsGoThroughLibbraid) {
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info), 0);
  EXPECT_NE(std::string(info.dli_fname).find("libbraid.so"), std::string::npos) << info.dli_fname;
}

TEST(ShimPassThrough, VersionIsTheRealNccls) {
  const RealNcclForTest real;
  ASSERT_NE(real.handle, nullptr) << "the test needs the real libnccl.so.2: " << dlerror();
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, real.version());
  EXPECT_GE(version, 22800);
}

TEST(ShimPassThrough, ErrorStringsAreTheRealNccls) {
  const RealNcclForTest real;
  auto real_string = real.entry<const char* (*)(ncclResult_t)>("pncclGetErrorString");
  ASSERT_NE(real_string, nullptr);
  for (int r = ncclSuccess; r <= ncclNumResults; ++r) {
    const auto result = static_cast<ncclResult_t>(r);
    const char* text = ncclGetErrorString(result);
    ASSERT_NE(text, nullptr) << r;
    EXPECT_STREQ(text, real_string(result)) << r;
    if (r < ncclNumResults) {
      EXPECT_GT(std::strlen(text), 0u) << r;
    }
  }
}

TEST(ShimPassThrough, UniqueIdWorksOrFailsCleanly) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  const ncclResult_t result = ncclGetUniqueId(&id);
  if (result == ncclSuccess) {
    bool any_set = false;
    for (char c : id.internal) any_set = any_set || c != 0;
    EXPECT_TRUE(any_set) << "ncclGetUniqueId succeeded but left the id zero";
  } else {
    EXPECT_LT(result, ncclNumResults);
    EXPECT_GT(std::strlen(ncclGetLastError(nullptr)), 0u);
  }
}

TEST(ShimPassThrough, InitFailsCleanlyWithoutAGpu) {
  if (cuda_driver_present()) GTEST_SKIP() << "a CUDA driver is present: init may succeed here";
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  (void)ncclGetUniqueId(&id);
  ncclComm_t comm = nullptr;
  const ncclResult_t result = ncclCommInitRank(&comm, 1, id, 0);
  EXPECT_NE(result, ncclSuccess);
  EXPECT_NE(result, ncclInProgress);
  EXPECT_LT(result, ncclNumResults);
  EXPECT_EQ(comm, nullptr);
  EXPECT_GT(std::strlen(ncclGetLastError(nullptr)), 0u);

  ncclComm_t comms[1] = {nullptr};
  const int devices[1] = {0};
  const ncclResult_t all = ncclCommInitAll(comms, 1, devices);
  EXPECT_NE(all, ncclSuccess);
  EXPECT_LT(all, ncclNumResults);
}

TEST(ShimPassThrough, GroupsKeepNcclsSemantics) {
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  // An unmatched end is NCCL's to refuse, and its text is NCCL's.
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("group"), std::string::npos) << ncclGetLastError(nullptr);
}

// ---- resolution: once per process, so each case runs in a fresh copy of this program ----

class ShimResolution : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// Prints `what` to stderr and fails the child when `ok` is false.
int check(bool ok, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  return ok ? 0 : 1;
}

std::string child_log_path() { return "/tmp/braid-shim-test-" + std::to_string(getpid()) + ".log"; }

void child_log_to_file() {
  setenv("BRAID_DEBUG", "INFO", 1);
  setenv("BRAID_DEBUG_SUBSYS", "SHIM", 1);
  setenv("BRAID_DEBUG_FILE", child_log_path().c_str(), 1);
}

// Runs the first NCCL call, then returns the log braid wrote for it.
std::string child_first_call_log(int* version) {
  const ncclResult_t result = ncclGetVersion(version);
  if (result != ncclSuccess) *version = -int(result);
  std::string log = file_text(child_log_path());
  std::remove(child_log_path().c_str());
  std::fprintf(stderr, "log: %s\n", log.c_str());
  return log;
}

int child_nonexistent_library() {
  setenv("BRAID_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  int failures = 0;
  int version = 0;
  failures += check(ncclGetVersion(&version) == ncclSystemError, "ncclGetVersion gives ncclSystemError");
  const std::string last = ncclGetLastError(nullptr);
  std::fprintf(stderr, "last error: %s\n", last.c_str());
  failures += check(last.find("/nonexistent/libnccl.so.2") != std::string::npos, "last error names the path");
  ncclUniqueId id;
  failures += check(ncclGetUniqueId(&id) == ncclSystemError, "ncclGetUniqueId gives ncclSystemError");
  ncclComm_t comm = nullptr;
  failures += check(ncclCommInitRank(&comm, 1, id, 0) == ncclSystemError && comm == nullptr,
                    "ncclCommInitRank gives ncclSystemError");
  failures += check(ncclGroupStart() == ncclSystemError, "ncclGroupStart gives ncclSystemError");
  failures += check(ncclAllReduce(nullptr, nullptr, 1, ncclFloat, ncclSum, nullptr, nullptr) == ncclSystemError,
                    "ncclAllReduce gives ncclSystemError");
  // Deprecated in nccl.h but still exported, so still forwarded; with no NCCL it must just return.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  ncclResetDebugInit();
#pragma GCC diagnostic pop
  // braid answers the error strings itself, one distinct text per result.
  std::set<std::string> texts;
  for (int r = ncclSuccess; r < ncclNumResults; ++r) {
    const char* text = ncclGetErrorString(static_cast<ncclResult_t>(r));
    if (text != nullptr && *text != '\0') texts.insert(text);
  }
  failures += check(texts.size() == ncclNumResults, "ncclGetErrorString has a distinct text per result");
  failures += check(std::string(ncclGetErrorString(ncclSystemError)).find("system error") != std::string::npos,
                    "ncclSystemError's text says system error");
  return failures;
}

TEST_F(ShimResolution, MissingLibraryGivesSystemErrorNamingThePath) {
  EXPECT_EXIT(std::exit(child_nonexistent_library()), ::testing::ExitedWithCode(0),
              "last error: .*BRAID_NCCL_LIBRARY=/nonexistent/libnccl.so.2");
}

int child_refuses_itself() {
  setenv("BRAID_NCCL_LIBRARY", BRAID_SHIM_LIBRARY_PATH, 1);
  int version = 0;
  int failures = check(ncclGetVersion(&version) == ncclSystemError, "braid will not forward to itself");
  const std::string last = ncclGetLastError(nullptr);
  std::fprintf(stderr, "last error: %s\n", last.c_str());
  failures += check(last.find("braid's own libbraid.so") != std::string::npos, "and says why");
  return failures;
}

TEST_F(ShimResolution, RefusesToForwardToItself) {
  EXPECT_EXIT(std::exit(child_refuses_itself()), ::testing::ExitedWithCode(0), "braid's own libbraid.so");
}

int child_configured_library() {
  const RealNcclForTest real;
  setenv("BRAID_NCCL_LIBRARY", real.path().c_str(), 1);
  child_log_to_file();
  int version = 0;
  const std::string log = child_first_call_log(&version);
  int failures = check(version == real.version(), "version from BRAID_NCCL_LIBRARY's NCCL");
  failures += check(log.find("found via BRAID_NCCL_LIBRARY") != std::string::npos, "log says how it was found");
  failures += check(log.find(real.path()) != std::string::npos, "log names the library");
  char dotted[32];
  std::snprintf(dotted, sizeof dotted, "version %d.%d.%d", real.version() / 10000, real.version() / 100 % 100,
                real.version() % 100);
  failures += check(log.find(dotted) != std::string::npos, std::string("log has ") + dotted);
  failures += check(log.find("split across NCCL and braid") != std::string::npos, "log says pass-through");
  return failures;
}

TEST_F(ShimResolution, ConfiguredLibraryIsUsedAndLogged) {
  EXPECT_EXIT(std::exit(child_configured_library()), ::testing::ExitedWithCode(0), "BRAID INFO braid .* NCCL drop-in");
}

int child_already_loaded() {
  const RealNcclForTest real;  // the application loaded NCCL before its first call
  unsetenv("BRAID_NCCL_LIBRARY");
  child_log_to_file();
  int version = 0;
  const std::string log = child_first_call_log(&version);
  int failures = check(version == real.version(), "version from the loaded NCCL");
  failures += check(log.find("found via already loaded") != std::string::npos, "the loaded library is reused");
  return failures;
}

TEST_F(ShimResolution, ReusesTheLibraryTheApplicationLoaded) {
  EXPECT_EXIT(std::exit(child_already_loaded()), ::testing::ExitedWithCode(0), "found via already loaded");
}

int child_search_path() {
  unsetenv("BRAID_NCCL_LIBRARY");
  child_log_to_file();
  int version = 0;
  const std::string log = child_first_call_log(&version);
  int failures = check(version == RealNcclForTest().version(), "version from the loader's libnccl.so.2");
  failures += check(log.find("found via loader search path") != std::string::npos, "found on the search path");
  return failures;
}

TEST_F(ShimResolution, LoadsLibncclFromTheSearchPathOtherwise) {
  EXPECT_EXIT(std::exit(child_search_path()), ::testing::ExitedWithCode(0), "found via loader search path");
}

int child_disabled() {
  unsetenv("BRAID_NCCL_LIBRARY");
  setenv("BRAID_DISABLE", "1", 1);
  child_log_to_file();
  int version = 0;
  const std::string log = child_first_call_log(&version);
  int failures = check(version == RealNcclForTest().version(), "BRAID_DISABLE still forwards");
  failures += check(log.find("pass-through (BRAID_DISABLE=1)") != std::string::npos, "log says BRAID_DISABLE");
  failures += check(ncclGroupStart() == ncclSuccess && ncclGroupEnd() == ncclSuccess, "groups forward");
  return failures;
}

TEST_F(ShimResolution, DisableIsAPurePassThrough) {
  EXPECT_EXIT(std::exit(child_disabled()), ::testing::ExitedWithCode(0), "pass-through \\(BRAID_DISABLE=1\\)");
}

}  // namespace
