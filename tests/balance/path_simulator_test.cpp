// The path simulator's equal-finish split (what a balancer aims for) and its measured-curve paths.
#include <gtest/gtest.h>

#include <cmath>

#include "balance/path_simulator.h"

namespace braid::balance {
namespace {

constexpr size_t kBytes = size_t{1} << 30;

TEST(EqualFinish, TwoLinearPathsFinishTogether) {
  const PathSimulator sim({SimPath{10e-6, 320e9}, SimPath{150e-6, 38e9}});
  const Shares s = sim.equal_finish_shares(kBytes);
  const auto t = sim.path_seconds(0, kBytes, s);
  // Within one share unit of each other, and at the share the line formula gives.
  const double unit_s = kBytes / double(kShareUnits) / 38e9;
  EXPECT_NEAR(t[0], t[1], unit_s);
  const double want = (kBytes / 320e9 + 10e-6 - 150e-6) / (kBytes / 320e9 + kBytes / 38e9);
  EXPECT_NEAR(s.fraction(1), want, 1.0 / kShareUnits);
}

TEST(EqualFinish, AFixedCostAboveTheWholeCallLeavesPathZeroAlone) {
  const PathSimulator sim({SimPath{10e-6, 320e9}, SimPath{10e-3, 38e9}});
  EXPECT_EQ(sim.equal_finish_shares(size_t{16} << 20), dedicated_only(2));
}

TEST(EqualFinish, FollowsAPathsMeasuredCurve) {
  // Path 0 twice as slow per byte below 64 MiB as above: the split follows the curve, not a line.
  auto curve = [](size_t bytes) { return bytes < (size_t{64} << 20) ? bytes / 100e9 : bytes / 200e9; };
  const PathSimulator sim({SimPath{.seconds_of_bytes = curve}, SimPath{0, 20e9}});
  const Shares s = sim.equal_finish_shares(kBytes);
  EXPECT_NEAR(s.fraction(1), 20.0 / 220.0, 1.0 / kShareUnits);
  // Interference scales a curve path's time too.
  const PathSimulator slowed({SimPath{.seconds_of_bytes = curve}, SimPath{0, 20e9}}, {SimInterference{0, 0, 1, 0.5}});
  EXPECT_NEAR(slowed.path_seconds(0, kBytes, dedicated_only(2))[0], 2 * kBytes / 200e9, 1e-12);
}

}  // namespace
}  // namespace braid::balance
