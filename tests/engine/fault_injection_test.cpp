// A failure injected at each step of setting up and running a collective (BRAID_FAULT,
// engine/faults.h), on one rank of three, as threads and as processes: the failing rank names the
// step, and every rank returns an error. Failures after every rank attached reach the others
// through the abort word, long before BRAID_TIMEOUT; a rank that never attaches is waited for at
// most BRAID_TIMEOUT.
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

// Upper bound that catches hangs on a loaded two-core CI machine (see faults_test.cpp).
constexpr double kHangBound = 20.0;

struct Case {
  const char* fault;        // BRAID_FAULT
  const char* step;         // as the failing rank's error names it
  int rank;                 // the failing rank
  Collective collective;    // what the ranks run (twice)
  const char* placement;    // BRAID_REDUCE_PLACEMENT
  double timeout;           // BRAID_TIMEOUT: far above the bound where the abort word must end it
};

const Case kCases[] = {
    {"segments@0", "segments", 0, Collective::AllReduce, "auto", 2.0},
    {"segments@1", "segments", 1, Collective::AllReduce, "auto", 2.0},
    {"register@1", "register", 1, Collective::AllReduce, "auto", 60.0},
    {"barrier@2", "barrier", 2, Collective::AllReduce, "auto", 60.0},
    {"d2h@1", "d2h", 1, Collective::AllReduce, "host", 60.0},
    {"h2d@0", "h2d", 0, Collective::AllReduce, "host", 60.0},
    {"h2d@2#3", "h2d", 2, Collective::AllReduce, "host", 60.0},
    {"reduce@1", "reduce", 1, Collective::AllReduce, "device", 60.0},
    {"copy@1", "copy", 1, Collective::AllGather, "auto", 60.0},
};

class FaultInjection : public ::testing::TestWithParam<std::tuple<Case, test::Mode>> {};

TEST_P(FaultInjection, EveryRankReturnsAnErrorWithinTheBound) {
  const auto& [c, mode] = GetParam();
  setenv("BRAID_FAULT", c.fault, 1);
  setenv("BRAID_REDUCE_PLACEMENT", c.placement, 1);
  setenv("BRAID_TIMEOUT", std::to_string(c.timeout).c_str(), 1);
  settings_reload();
  const auto topo = test::load_test_topology();
  constexpr size_t kCount = 1 << 16;
  const auto t0 = std::chrono::steady_clock::now();
  auto outcomes = test::run_ranks(mode, 3, topo, 8, [&](engine::Communicator& comm, int, unsigned char*) {
    std::vector<float> send(kCount, 1.f), recv(kCount * 3);
    for (int i = 0; i < 2; ++i) {
      const Result r = c.collective == Collective::AllGather
                           ? comm.all_gather(send.data(), recv.data(), kCount, DataType::Float32)
                           : comm.all_reduce(send.data(), recv.data(), kCount, DataType::Float32, RedOp::Sum);
      if (r != Result::Success) return r;
    }
    return Result::Success;
  });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  unsetenv("BRAID_FAULT");
  unsetenv("BRAID_REDUCE_PLACEMENT");
  unsetenv("BRAID_TIMEOUT");
  settings_reload();

  EXPECT_LT(took, kHangBound) << c.fault;
  EXPECT_EQ(outcomes[c.rank].result, Result::InternalError) << c.fault << ": " << outcomes[c.rank].error;
  EXPECT_NE(outcomes[c.rank].error.find(std::string("failure injected at step '") + c.step + "'"), std::string::npos)
      << outcomes[c.rank].error;
  for (int r = 0; r < 3; ++r)
    EXPECT_NE(outcomes[r].result, Result::Success) << c.fault << ": rank " << r << " did not learn of the failure";
}

// How gtest prints a case in its messages: its BRAID_FAULT, not the struct's bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.fault; }

std::string case_name(const ::testing::TestParamInfo<FaultInjection::ParamType>& info) {
  return test::fault_case_name(std::get<0>(info.param).fault, std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Steps, FaultInjection,
                         ::testing::Combine(::testing::ValuesIn(kCases),
                                            ::testing::Values(test::Mode::Threads, test::Mode::Processes)),
                         case_name);

}  // namespace
}  // namespace braid
