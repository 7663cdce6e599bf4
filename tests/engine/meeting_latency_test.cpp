// A measurement, not a check (disabled by default): how long after the last rank arrives a host
// meeting (Communicator::exchange, which braid's NVLink path runs on the calling thread per call)
// lets the first rank go, for a range of arrival skews. The waiter's back-off decides it: a waiter
// that has gone to sleep wakes late. Run with --gtest_also_run_disabled_tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "harness.h"

namespace braid {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void spin_for_ns(int64_t ns) {
  const int64_t until = now_ns() + ns;
  while (now_ns() < until) {
  }
}

TEST(EngineMeasure, DISABLED_MeetingOvershoot) {
  const auto topo = test::load_test_topology();
  const std::vector<int64_t> skews_us = {0, 5, 20, 100, 500, 2000};
  constexpr int kRounds = 40;
  const size_t per_rank = skews_us.size() * kRounds * 2 * sizeof(int64_t);
  for (test::Mode mode : {test::Mode::Threads, test::Mode::Processes}) {
    auto outcomes = test::run_ranks(mode, 2, topo, per_rank, [&](engine::Communicator& comm, int rank, unsigned char* out) {
      std::vector<int64_t> stamps;
      std::vector<uint64_t> all;
      const uint64_t mine[1] = {uint64_t(rank)};
      for (int64_t skew : skews_us) {
        for (int i = 0; i < kRounds; ++i) {
          BRAID_TRY(comm.exchange(mine, &all));  // line up
          if (rank == 1) spin_for_ns(skew * 1000);
          const int64_t arrived = now_ns();
          BRAID_TRY(comm.exchange(mine, &all));
          stamps.push_back(arrived);
          stamps.push_back(now_ns());
        }
      }
      std::memcpy(out, stamps.data(), stamps.size() * sizeof(int64_t));
      return Result::Success;
    });
    ASSERT_EQ(outcomes[0].result, Result::Success) << outcomes[0].error;
    ASSERT_EQ(outcomes[1].result, Result::Success) << outcomes[1].error;
    const auto* early = reinterpret_cast<const int64_t*>(outcomes[0].output.data());
    const auto* late = reinterpret_cast<const int64_t*>(outcomes[1].output.data());
    for (size_t s = 0; s < skews_us.size(); ++s) {
      std::vector<double> overshoot_us;
      for (int i = 0; i < kRounds; ++i) {
        const size_t at = (s * kRounds + size_t(i)) * 2;
        overshoot_us.push_back(double(early[at + 1] - late[at]) / 1e3);  // early's return - late's arrival
      }
      std::sort(overshoot_us.begin(), overshoot_us.end());
      std::printf("%-9s skew %5lld us: first rank leaves %7.1f us (median) / %7.1f us (p90) after the last arrives\n",
                  test::mode_name(mode), static_cast<long long>(skews_us[s]), overshoot_us[kRounds / 2],
                  overshoot_us[kRounds * 9 / 10]);
    }
  }
}

}  // namespace
}  // namespace braid
