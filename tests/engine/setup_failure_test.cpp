// A rank that fails during set-up posts its cause in the control segment before it leaves, so the
// others fail within a second with that cause instead of waiting BRAID_TIMEOUT and asking "did
// every rank start?" (issue 43, row 13). BRAID_TIMEOUT is 60 s here: only the posted failure can
// end the others' set-up in time.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/settings.h"
#include "harness.h"

#include "support/sanitizer_suppressions.h"

namespace braid {
namespace {

struct Case {
  const char* fault;
  int rank;
};

class EngineSetupFailure : public ::testing::TestWithParam<std::tuple<Case, test::Mode>> {};

TEST_P(EngineSetupFailure, OthersFailAtOnceWithItsCause) {
  const auto& [c, mode] = GetParam();
  setenv("BRAID_FAULT", c.fault, 1);
  setenv("BRAID_TIMEOUT", "60", 1);
  settings_reload();
  const auto topo = test::load_test_topology();
  const auto t0 = std::chrono::steady_clock::now();
  // Ranks past their own set-up when the failure comes learn of it at their first collective.
  auto outcomes = test::run_ranks(mode, 3, topo, 8, [](engine::Communicator& comm, int, unsigned char*) {
    std::vector<float> data(1024, 1.f);
    return comm.all_reduce(data.data(), data.data(), data.size(), DataType::Float32, RedOp::Sum);
  });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  unsetenv("BRAID_FAULT");
  unsetenv("BRAID_TIMEOUT");
  settings_reload();

  EXPECT_LT(took, 3.0) << c.fault;
  const std::string cause = std::string("rank ") + std::to_string(c.rank) + ": failure injected at step '";
  for (int r = 0; r < 3; ++r) {
    EXPECT_NE(outcomes[r].result, Result::Success) << "rank " << r;
    EXPECT_NE(outcomes[r].error.find(cause), std::string::npos) << "rank " << r << ": " << outcomes[r].error;
    if (r != c.rank) {
      EXPECT_NE(outcomes[r].error.find("failed during "), std::string::npos) << outcomes[r].error;
    }
  }
}

// How gtest prints a case in its messages: its BRAID_FAULT, not the struct's bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.fault; }

std::string case_name(const ::testing::TestParamInfo<EngineSetupFailure::ParamType>& info) {
  return test::fault_case_name(std::get<0>(info.param).fault, std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Steps, EngineSetupFailure,
                         ::testing::Combine(::testing::Values(Case{"segments@0", 0}, Case{"segments@2", 2},
                                                              Case{"register@1", 1}),
                                            ::testing::Values(test::Mode::Threads, test::Mode::Processes)),
                         case_name);

}  // namespace
}  // namespace braid
