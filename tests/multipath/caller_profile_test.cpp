#include "multipath/caller_profile.h"

#include <gtest/gtest.h>

#include <vector>

namespace braid::multipath {
namespace {

using Clock = CallerProfile::Clock;
using std::chrono::microseconds;

// One call at `start` whose phases last the given microseconds, in order.
void call(CallerProfile& profile, Clock::time_point start, const std::vector<int>& phase_us, bool handed_on = true) {
  profile.begin(start);
  Clock::time_point now = start;
  int phase = 0;
  for (int us : phase_us) {
    now += microseconds(us);
    profile.mark(static_cast<CallerProfile::Phase>(phase++), now);
  }
  profile.end(handed_on, now);
}

TEST(CallerProfile, PhasesAndTotalsAreTheCallsOwn) {
  CallerProfile profile;
  const Clock::time_point t0 = Clock::now();
  // Every phase of call k lasts k us: totals kPhases * k.
  constexpr int n = CallerProfile::kPhases;
  for (int k = 1; k <= 100; ++k) call(profile, t0 + microseconds(100000 * k), std::vector<int>(n, k));
  EXPECT_EQ(profile.calls(), 100u);
  EXPECT_EQ(profile.calls(true), 100u);
  EXPECT_NEAR(profile.total_quantile(true, 0.5), n * 50.5, n);
  EXPECT_NEAR(profile.total_quantile(true, 1.0), n * 100, 1e-3);
  EXPECT_NEAR(profile.total_quantile(true, 0.0), n, 1e-3);
  EXPECT_EQ(profile.total_quantile(false, 0.5), 0);  // no call went to NCCL alone
  EXPECT_NEAR(profile.phase_mean(CallerProfile::kNccl), 50.5, 1e-6);
  EXPECT_NEAR(profile.phase_quantile(CallerProfile::kNccl, 0.5), 50.5, 1.0);
  EXPECT_NEAR(profile.phase_max(CallerProfile::kJoin), 100, 1e-6);
}

TEST(CallerProfile, APhaseNotReachedStaysOutOfItsMean) {
  CallerProfile profile;
  const Clock::time_point t0 = Clock::now();
  std::vector<int> every(CallerProfile::kPhases);
  for (int p = 0; p < CallerProfile::kPhases; ++p) every[p] = p + 1;
  call(profile, t0, every);
  call(profile, t0 + microseconds(1000), {1, 2}, /*handed_on=*/false);  // no later phase
  EXPECT_NEAR(profile.phase_mean(CallerProfile::kScope), 2, 1e-6);
  EXPECT_NEAR(profile.phase_mean(CallerProfile::kJoin), CallerProfile::kPhases, 1e-6);
  EXPECT_NEAR(profile.total_quantile(true, 1.0), CallerProfile::kPhases * (CallerProfile::kPhases + 1) / 2, 1e-3);
  EXPECT_NEAR(profile.total_quantile(false, 1.0), 3, 1e-3);
}

TEST(CallerProfile, SummaryNamesEveryPhaseAndTheWakeUps) {
  CallerProfile profile;
  EXPECT_EQ(profile.total_quantile(true, 0.5), 0);  // no call yet
  profile.begin();  // the calling thread's context switches are counted from here
  for (int p = 0; p < CallerProfile::kPhases; ++p) profile.mark(static_cast<CallerProfile::Phase>(p));
  profile.end(/*handed_on=*/true);
  profile.woke();
  const std::string text = profile.summary();
  for (int p = 0; p < CallerProfile::kPhases; ++p)
    EXPECT_NE(text.find(CallerProfile::phase_name(static_cast<CallerProfile::Phase>(p))), std::string::npos) << text;
  EXPECT_NE(text.find("1 split calls handed on"), std::string::npos) << text;
  EXPECT_NE(text.find("0 split calls NCCL alone"), std::string::npos) << text;
  EXPECT_NE(text.find("wake-ups 1"), std::string::npos) << text;
#ifdef __linux__
  EXPECT_NE(text.find("involuntary switches"), std::string::npos) << text;
#endif
}

}  // namespace
}  // namespace braid::multipath
