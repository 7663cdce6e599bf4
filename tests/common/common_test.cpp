#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "../support/log_capture.h"
#include "common/log.h"
#include "common/result.h"
#include "common/settings.h"
#include "common/types.h"

namespace braid {
namespace {

TEST(Result, ValuesMatchNccl) {
  // ncclResult_t values, from nccl.h.
  EXPECT_EQ(static_cast<int>(Result::Success), 0);
  EXPECT_EQ(static_cast<int>(Result::UnhandledCudaError), 1);
  EXPECT_EQ(static_cast<int>(Result::SystemError), 2);
  EXPECT_EQ(static_cast<int>(Result::InternalError), 3);
  EXPECT_EQ(static_cast<int>(Result::InvalidArgument), 4);
  EXPECT_EQ(static_cast<int>(Result::InvalidUsage), 5);
  EXPECT_EQ(static_cast<int>(Result::RemoteError), 6);
  EXPECT_EQ(static_cast<int>(Result::InProgress), 7);
}

TEST(Result, FailSetsLastErrorPerThread) {
  clear_last_error();
  EXPECT_STREQ(last_error(), "");
  EXPECT_EQ(fail(Result::InvalidArgument, "count %d is negative", -3), Result::InvalidArgument);
  EXPECT_STREQ(last_error(), "count -3 is negative");
  std::string other;
  std::thread([&] { other = last_error(); }).join();
  EXPECT_EQ(other, "");
}

TEST(Types, NamesRoundTrip) {
  for (DataType t : all_datatypes()) EXPECT_EQ(parse_datatype(datatype_name(t)), t);
  for (RedOp op : all_redops()) EXPECT_EQ(parse_redop(redop_name(op)), op);
  for (Collective c : all_collectives()) EXPECT_EQ(parse_collective(collective_name(c)), c);
  EXPECT_EQ(parse_collective("all_reduce"), Collective::AllReduce);
  EXPECT_EQ(parse_datatype("bf16"), DataType::Bfloat16);
  EXPECT_FALSE(parse_datatype("float128").has_value());
  EXPECT_EQ(datatype_size(DataType::Float8e5m2), 1u);
  EXPECT_EQ(datatype_size(DataType::Uint64), 8u);
  EXPECT_FALSE(datatype_valid(12));
  EXPECT_FALSE(redop_valid(-1));
}

TEST(Settings, ReadsEnvironmentAndKeepsDefaultOnGarbage) {
  setenv("BRAID_TIMEOUT", "2.5", 1);
  setenv("BRAID_CHUNKS", "notanumber", 1);
  setenv("BRAID_DETERMINISTIC", "1", 1);
  settings_reload();
  EXPECT_DOUBLE_EQ(settings().timeout, 2.5);
  EXPECT_EQ(settings().chunks, 0);
  EXPECT_TRUE(settings().deterministic);
  unsetenv("BRAID_TIMEOUT");
  unsetenv("BRAID_CHUNKS");
  unsetenv("BRAID_DETERMINISTIC");
  settings_reload();
  EXPECT_DOUBLE_EQ(settings().timeout, 30.0);
}

// A Choice setting takes only its listed values; anything else keeps the default, and the one
// warning names the setting and every allowed value. Every Choice's default is its first value.
TEST(Settings, ChoicesAcceptOnlyTheirValues) {
  setenv("BRAID_BALANCER", "flexlink", 1);
  setenv("BRAID_NVLINK_PATH", "Copy", 1);  // values are exact: no case folding
  testing::internal::CaptureStderr();
  settings_reload();
  const std::string warned = testing::internal::GetCapturedStderr();
  EXPECT_EQ(settings().balancer, "flexlink");
  EXPECT_EQ(settings().nvlink_path, "auto");
  EXPECT_NE(warned.find("BRAID_NVLINK_PATH=Copy is not one of auto, copy, nccl"), std::string::npos) << warned;
  unsetenv("BRAID_BALANCER");
  unsetenv("BRAID_NVLINK_PATH");
  settings_reload();
  EXPECT_EQ(settings().balancer, "hylink");
  for (const auto& s : setting_table())
    if (std::string(s.type) == "Choice") {
      const std::string alternatives = std::string(s.default_text).substr(1);  // drop the quote
      EXPECT_NE(alternatives.find('|'), std::string::npos) << s.env_name << " lists no alternatives";
    }
}

// docs/SETTINGS.md must list exactly the settings the code reads.
TEST(Settings, DocumentedInOneTable) {
  std::ifstream f(std::string(BRAID_SOURCE_DIR) + "/docs/SETTINGS.md");
  ASSERT_TRUE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  std::set<std::string> documented;
  const std::regex row(R"(\n\|\s*`(BRAID_[A-Z0-9_]+)`\s*\|)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), row); it != std::sregex_iterator(); ++it)
    documented.insert((*it)[1]);
  std::set<std::string> in_code;
  for (const auto& s : setting_table()) in_code.insert(s.env_name);
  EXPECT_EQ(documented, in_code);
}

std::string capture_log(const char* level, const char* subsys, void (*emit)()) {
  return test::capture_log({{"BRAID_DEBUG", level}, {"BRAID_DEBUG_SUBSYS", subsys}}, emit);
}

TEST(Log, NcclFormat) {
  const std::string out = capture_log("INFO", "INIT", [] {
    log_set_device(1);
    BRAID_INFO(Init, "hello %d", 42);
    BRAID_INFO(Shm, "filtered out");
    BRAID_WARN(Shm, "a warning");
    log_set_device(-1);
  });
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(^[^:\n]+:\d+:\d+ \[1\] BRAID INFO hello 42\n)")))
      << out;
  EXPECT_EQ(out.find("filtered out"), std::string::npos) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(\n\n[^:\n]+:\d+:\d+ \[1\] BRAID WARN common_test\.cpp:\d+ a warning\n)")))
      << out;
}

TEST(Log, InvertedSubsystemsAndLevels) {
  const std::string out = capture_log("WARN", "^SHM", [] {
    BRAID_INFO(Init, "info hidden at WARN");
    BRAID_WARN(Init, "shown");
  });
  EXPECT_EQ(out.find("info hidden"), std::string::npos);
  EXPECT_NE(out.find("shown"), std::string::npos);
  const std::string out2 = capture_log("INFO", "^SHM", [] {
    BRAID_INFO(Shm, "shm hidden");
    BRAID_INFO(Topo, "topo shown");
  });
  EXPECT_EQ(out2.find("shm hidden"), std::string::npos);
  EXPECT_NE(out2.find("topo shown"), std::string::npos);
}

}  // namespace
}  // namespace braid

#include "common/sizes.h"

namespace braid {
namespace {

TEST(Sizes, NcclTestsSyntax) {
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("256K"), 256u << 10);
  EXPECT_EQ(parse_byte_size("64M"), size_t{64} << 20);
  EXPECT_EQ(parse_byte_size("1G"), size_t{1} << 30);
  EXPECT_EQ(parse_byte_size("1GiB"), size_t{1} << 30);
  EXPECT_EQ(parse_byte_size("2.5M"), size_t{5} << 19);
  EXPECT_EQ(parse_byte_size("0"), 0u);
  for (const char* bad : {"", "-1", "12Q", "M", "1e400", "x8"}) EXPECT_FALSE(parse_byte_size(bad).has_value()) << bad;
}

}  // namespace
}  // namespace braid
