// braid::process_dead, which the engine's waits and the net plugin's NIC monitor and relay pool
// all use to tell a dead peer.
#include "common/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace braid {
namespace {

TEST(ProcessDead, ThisProcessAndNoProcessAreNotDead) {
  EXPECT_FALSE(process_dead(getpid()));
  EXPECT_FALSE(process_dead(0));
  EXPECT_FALSE(process_dead(-1));
}

TEST(ProcessDead, AZombieIsDeadAndSoIsAReapedChild) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  EXPECT_FALSE(process_dead(child));
  ASSERT_EQ(kill(child, SIGKILL), 0);
  // Not reaped yet: a zombie, which must count as dead (it will never answer).
  bool dead = false;
  for (int i = 0; i < 2000 && !dead; ++i) {
    dead = process_dead(child);
    if (!dead) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(dead);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_TRUE(process_dead(child));
}

}  // namespace
}  // namespace braid
