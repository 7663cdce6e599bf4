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
#include "../support/sanitizer_suppressions.h"  // the settings tests reload settings
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

// Every number has a range: a value outside it, or no number at all, is refused with one warning
// that names the setting, the range and the default kept (issue 43, row 10: a timeout of nan, inf
// or 1e308 waited for ever; -1 or 0 failed every set-up).
TEST(Settings, NumbersOutsideTheirRangeAreRefused) {
  for (const char* bad : {"nan", "inf", "-inf", "1e308", "-1", "0", "", "30s"}) {
    setenv("BRAID_TIMEOUT", bad, 1);
    setenv("BRAID_ABORT_TIMEOUT", bad[0] == '0' ? "-1" : bad, 1);
    testing::internal::CaptureStderr();
    settings_reload();
    const std::string warned = testing::internal::GetCapturedStderr();
    EXPECT_DOUBLE_EQ(settings().timeout, 30.0) << bad;
    EXPECT_DOUBLE_EQ(settings().abort_timeout, 2.0) << bad;
    EXPECT_NE(warned.find(std::string("BRAID_TIMEOUT=") + bad + " is not a number in [0.1, 86400]; keeping the default 30.0"),
              std::string::npos) << warned;
    EXPECT_NE(warned.find("BRAID_ABORT_TIMEOUT="), std::string::npos) << warned;
  }
  setenv("BRAID_THREADS", "100000", 1);
  setenv("BRAID_SPLIT_MIN_BYTES", "-5", 1);
  setenv("BRAID_CHUNKS", "0x10", 1);
  setenv("BRAID_ROUTE_EXCHANGES", "3", 1);
  setenv("BRAID_TIMEOUT", "0.5", 1);
  settings_reload();
  EXPECT_EQ(settings().threads, 0);
  EXPECT_EQ(settings().split_min_bytes, 0);
  EXPECT_EQ(settings().chunks, 16);
  EXPECT_EQ(settings().route_exchanges, 0);
  EXPECT_DOUBLE_EQ(settings().timeout, 0.5);
  for (const char* name : {"BRAID_TIMEOUT", "BRAID_ABORT_TIMEOUT", "BRAID_THREADS", "BRAID_SPLIT_MIN_BYTES", "BRAID_CHUNKS",
                           "BRAID_ROUTE_EXCHANGES"})
    unsetenv(name);
  settings_reload();
  for (const auto& s : setting_table()) {
    const std::string type = s.type;
    EXPECT_EQ(s.ranged, type == "Int" || type == "Double") << s.env_name;
    if (s.ranged) {
      EXPECT_LT(s.min, s.max) << s.env_name;
    }
  }
}

// The one parser the tools show (braid-plan --show-settings, braid doctor): what braid makes of a
// value, and whether it refuses it.
TEST(Settings, IntegersTakeSizeSuffixes) {
  setenv("BRAID_SPLIT_MIN_BYTES", "1M", 1);
  setenv("BRAID_NVLINK_SCRATCH_BYTES", "64k", 1);
  setenv("BRAID_STAGING_BYTES", "2G", 1);
  settings_reload();
  EXPECT_EQ(settings().split_min_bytes, int64_t{1} << 20);
  EXPECT_EQ(settings().nvlink_scratch_bytes, int64_t{64} << 10);
  EXPECT_EQ(settings().staging_bytes, int64_t{2} << 30);
  // A suffix on nothing, twice, after hex, past the range, or unknown: refused, the default kept.
  for (const char* bad : {"M", "1MM", "0x10M", "9000000T", "1X", "1.5M"}) {
    setenv("BRAID_SPLIT_MIN_BYTES", bad, 1);
    testing::internal::CaptureStderr();
    settings_reload();
    const std::string warned = testing::internal::GetCapturedStderr();
    EXPECT_EQ(settings().split_min_bytes, 0) << bad;
    EXPECT_NE(warned.find(std::string("BRAID_SPLIT_MIN_BYTES=") + bad + " is not an integer"), std::string::npos) << warned;
  }
  for (const char* name : {"BRAID_SPLIT_MIN_BYTES", "BRAID_NVLINK_SCRATCH_BYTES", "BRAID_STAGING_BYTES"}) unsetenv(name);
  settings_reload();
}

TEST(Settings, ParseSettingIsTheLibrarysOwnReading) {
  const auto info = [](const char* name) {
    for (const auto& s : setting_table())
      if (std::string(s.env_name) == name) return s;
    ADD_FAILURE() << name;
    return SettingInfo{};
  };
  const SettingInfo min_bytes = info("BRAID_SPLIT_MIN_BYTES");
  EXPECT_EQ(parse_setting(min_bytes, "0x10").value, "16");
  EXPECT_TRUE(parse_setting(min_bytes, "0x10").accepted);
  EXPECT_EQ(parse_setting(min_bytes, "0x4000000000000000").value, "4611686018427387904");
  EXPECT_EQ(parse_setting(min_bytes, "1M").value, "1048576");
  for (const char* bad : {"1e9", "nan", "inf", "1.5M", "-5", "abc", "99999999999999999999", "", " 5"}) {
    const SettingParse p = parse_setting(min_bytes, bad);
    EXPECT_FALSE(p.accepted) << bad;
    EXPECT_EQ(p.value, "0") << bad;
    EXPECT_NE(p.reason.find("not an integer in [0, "), std::string::npos) << p.reason;
  }
  EXPECT_EQ(parse_setting(info("BRAID_TIMEOUT"), "1e308").value, "30.0");
  EXPECT_EQ(parse_setting(info("BRAID_TIMEOUT"), "2.5").value, "2.5");
  EXPECT_EQ(parse_setting(info("BRAID_ASYNC"), "off").value, "false");
  EXPECT_FALSE(parse_setting(info("BRAID_ASYNC"), "maybe").accepted);
  EXPECT_EQ(parse_setting(info("BRAID_BALANCER"), "bogus").value, "hylink");
  EXPECT_EQ(parse_setting(info("BRAID_TOPO_FILE"), "nan").value, "nan");
}

// A BRAID_* name braid does not read draws one warning with the nearest name it knows; names that
// braid's tools and Python package read are known.
TEST(Settings, UnknownNamesGetTheNearestKnownOne) {
  setenv("BRAID_TIMEOUTT", "5", 1);
  setenv("BRAID_build_dir", "x", 1);
  setenv("BRAID_BUILD_DIR", "/tmp", 1);
  testing::internal::CaptureStderr();
  settings_reload();
  const std::string warned = testing::internal::GetCapturedStderr();
  const auto unknown = unknown_settings();
  unsetenv("BRAID_TIMEOUTT");
  unsetenv("BRAID_build_dir");
  unsetenv("BRAID_BUILD_DIR");
  settings_reload();
  ASSERT_EQ(unknown.size(), 2u);
  EXPECT_EQ(unknown[0].name, "BRAID_TIMEOUTT");
  EXPECT_EQ(unknown[0].nearest, "BRAID_TIMEOUT");
  EXPECT_EQ(unknown[1].nearest, "BRAID_BUILD_DIR");
  EXPECT_NE(warned.find("BRAID_TIMEOUTT is not a braid setting (did you mean BRAID_TIMEOUT?)"), std::string::npos) << warned;
  EXPECT_EQ(warned.find("BRAID_BUILD_DIR is not"), std::string::npos) << warned;
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

TEST(Log, FailuresACallerReportsItselfAreNoWarnOfTheirOwn) {
  const std::string out = capture_log("WARN", "ALL", [] {
    {
      const FailuresReportedByCaller once;
      fail(Result::SystemError, "inner cause");
      {
        const FailuresReportedByCaller nested;
      }
      fail(Result::SystemError, "still inside");  // the nested guard left the outer one in force
      EXPECT_STREQ(last_error(), "still inside");  // the caller's WARN reads it
    }
    fail(Result::SystemError, "outside");
  });
  EXPECT_EQ(out.find("inner cause"), std::string::npos) << out;
  EXPECT_EQ(out.find("still inside"), std::string::npos) << out;
  EXPECT_NE(out.find("BRAID WARN unhandled system error (run with BRAID_DEBUG=INFO for details): outside"),
            std::string::npos)
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
