// The GPU tests' runner of forked ranks (tests/support/forked_ranks.h), checked where a failure of
// it would hide: a rank's exit code and signal come back, and a hung rank is killed at the limit
// while the others' results stand.
#include "support/forked_ranks.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>

namespace braid::test {
namespace {

TEST(ForkedRanks, EachRanksExitCodeAndSignalComeBack) {
  const auto exits = run_forked({[] { return 0; }, [] { return 3; }, [] {
                                   raise(SIGABRT);
                                   return 0;
                                 }},
                                std::chrono::seconds(30));
  ASSERT_EQ(exits.size(), 3u);
  EXPECT_TRUE(exits[0].ok());
  EXPECT_FALSE(exits[1].ok());
  EXPECT_EQ(exits[1].code, 3);
  EXPECT_EQ(exits[2].code, 128 + SIGABRT);
  EXPECT_EQ(exits[2].what(), "died of signal " + std::to_string(SIGABRT));
}

TEST(ForkedRanks, AHungRankIsKilledAtTheLimitAndTheOthersStand) {
  const auto start = std::chrono::steady_clock::now();
  const auto exits = run_forked({[] { return 0; }, [] {
                                   for (;;) pause();
                                   return 0;
                                 }},
                                std::chrono::seconds(1));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(waited, 20.0);
  EXPECT_TRUE(exits[0].ok());
  EXPECT_TRUE(exits[1].killed);
  EXPECT_FALSE(exits[1].ok());
}

TEST(ForkedRanks, TheParentsHookRunsOnceAllAreStarted) {
  int pipe_ends[2];
  ASSERT_EQ(pipe(pipe_ends), 0);
  // The rank waits for the parent to close its write end: only then does its read see the end.
  bool hooked = false;
  const auto exits = run_forked({[&] {
                                   close(pipe_ends[1]);
                                   char c;
                                   return read(pipe_ends[0], &c, 1) == 0 ? 0 : 1;
                                 }},
                                std::chrono::seconds(30), [&] {
                                  hooked = true;
                                  close(pipe_ends[0]);
                                  close(pipe_ends[1]);
                                });
  EXPECT_TRUE(hooked);
  EXPECT_TRUE(exits[0].ok()) << exits[0].what();
}

}  // namespace
}  // namespace braid::test
