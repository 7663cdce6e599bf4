// braid-bench --phases' per-phase summary, on the calls of a real run: bench/results/h200x2/run9
// (packed in that folder's logs.tar.xz; a copy of its mp_phases.json is kept in tests/api/data/)
// (256 MB all_reduce, PCIe bursts in calls 30-59), where PERFORMANCE.md reads by hand that
// HyLink left PCIe 2 calls after the bursts started and was back at 80% of its quiet share 7
// calls after they stopped.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "phase_summary.h"

namespace braid::bench {
namespace {

std::vector<PhaseCall> run9_calls() {
  std::ifstream in(std::string(BRAID_SOURCE_DIR) + "/tests/api/data/h200x2_run9_mp_phases.json");
  const auto doc = nlohmann::json::parse(in);
  std::vector<PhaseCall> calls;
  for (const auto& c : doc.at("phases").at("calls"))
    calls.push_back({c.at("phase").get<int>(), c.at("noise").get<bool>(), c.at("adaptive_us").get<double>(),
                     c.at("adaptive_pcie_share").get<double>()});
  return calls;
}

TEST(BenchPhaseSummary, Run9SharesSettleAsReadByHand) {
  const auto calls = run9_calls();
  ASSERT_EQ(calls.size(), 90u);
  EXPECT_EQ(calls_to_settle_share(calls, 0, 0.2), 0);
  EXPECT_EQ(calls_to_settle_share(calls, 1, 0.2), 2);
  EXPECT_EQ(calls_to_settle_share(calls, 2, 0.2), 7);
  // By time, NCCL alone is within 15% of the steady time from the first call after the bursts.
  EXPECT_EQ(calls_to_converge(calls, 2, 0.15), 0);
  EXPECT_NEAR(steady_time_us(calls, 0), 857.0, 0.05);
}

TEST(BenchPhaseSummary, ALateOutlierCountsAndUnsettledCallsDoNot) {
  std::vector<PhaseCall> calls;
  for (int i = 0; i < 10; ++i) calls.push_back({0, false, 100, 0.1});
  for (int i = 0; i < 10; ++i) calls.push_back({1, true, 100, i < 3 ? 0.05 : 0.0});
  calls[15].pcie_share = 0.05;  // a late excursion: the phase settles only after it
  calls.back().pcie_share = -1; // not settled: ignored
  EXPECT_EQ(calls_to_settle_share(calls, 0, 0.2), 0);
  EXPECT_EQ(calls_to_settle_share(calls, 1, 0.2), 6);
}

}  // namespace
}  // namespace braid::bench
