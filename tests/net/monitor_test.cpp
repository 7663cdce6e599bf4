// The NIC monitor: which NICs are busy for whom, the hysteresis, and the host-wide board shared
// by processes.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "net/clock.h"
#include "net/nic_monitor.h"

namespace braid::net {
namespace {

constexpr int64_t kIdle = 2000000;  // 2 ms

TEST(NetMonitor, OwnerTrafficMakesTheNicBusyForOthersOnly) {
  NicMonitor m(2, kIdle);
  uint64_t a = new_worker_id(), b = new_worker_id();
  int sa = m.claim(0, a);
  ASSERT_GE(sa, 0);
  m.claim(1, b);
  int64_t t = 1000000000;
  EXPECT_EQ(m.idle_mask_for(b, 1, t), 0b11u);
  m.begin(0, sa, t);
  EXPECT_TRUE(m.busy_for(0, b, 1, t));
  EXPECT_FALSE(m.busy_for(0, a, 0, t));  // a worker's own traffic never pushes it off its NIC
  EXPECT_FALSE(m.busy_for(1, b, 1, t));
  EXPECT_EQ(m.idle_mask_for(b, 1, t), 0b10u);
  EXPECT_EQ(m.idle_mask_for(a, 0, t), 0b11u);
}

TEST(NetMonitor, BusyStartsAtOnceAndEndsAfterTheIdleWindow) {
  NicMonitor m(1, kIdle);
  uint64_t a = new_worker_id(), b = new_worker_id();
  int sa = m.claim(0, a);
  int64_t t = 5000000000;
  m.begin(0, sa, t);
  // In flight: busy however long it takes.
  EXPECT_TRUE(m.busy_for(0, b, 1, t + 50 * kIdle));
  m.end(0, sa, t + 100);
  EXPECT_TRUE(m.busy_for(0, b, 1, t + 100 + kIdle - 1));
  EXPECT_FALSE(m.busy_for(0, b, 1, t + 100 + kIdle));
  // A receiver's completions (touch) count the same way.
  m.touch(0, sa, t + 10 * kIdle);
  EXPECT_TRUE(m.busy_for(0, b, 1, t + 10 * kIdle + kIdle / 2));
  EXPECT_FALSE(m.busy_for(0, b, 1, t + 12 * kIdle));
}

TEST(NetMonitor, OlderOwnerOfTheSameNicRanksFirst) {
  NicMonitor m(2, kIdle);
  uint64_t older = new_worker_id(), younger = new_worker_id();
  int so = m.claim(0, older), sy = m.claim(0, younger);
  m.begin(0, so, 10);
  m.begin(0, sy, 10);
  // Both own NIC 0: the younger yields to the older, never the other way round.
  EXPECT_TRUE(m.busy_for(0, younger, 0, 10));
  EXPECT_FALSE(m.busy_for(0, older, 0, 10));
  // To a guest (direct NIC 1) both are owners of NIC 0 and count.
  uint64_t guest = new_worker_id();
  m.end(0, so, 10);
  EXPECT_TRUE(m.busy_for(0, guest, 1, 10));
  EXPECT_TRUE(m.busy_for(0, older, 1, 10));
}

TEST(NetMonitor, ReleaseFreesTheSlot) {
  NicMonitor m(1, kIdle);
  uint64_t a = new_worker_id(), b = new_worker_id();
  int sa = m.claim(0, a);
  m.begin(0, sa, 1);
  EXPECT_TRUE(m.busy_for(0, b, 1, 2));
  m.release(0, sa);
  EXPECT_FALSE(m.busy_for(0, b, 1, 2));
  // The slot is reused.
  EXPECT_EQ(m.claim(0, b), sa);
}

TEST(NetMonitor, FullNicLeavesNewWorkersUnseen) {
  NicMonitor m(1, kIdle);
  for (int i = 0; i < kMaxWorkersPerNic; ++i) ASSERT_GE(m.claim(0, new_worker_id()), 0);
  EXPECT_EQ(m.claim(0, new_worker_id()), -1);
  m.begin(0, -1, 1);  // harmless
  EXPECT_EQ(m.claim(5, new_worker_id()), -1);  // no such NIC
}

TEST(NetMonitor, HostWideBoardIsSharedByProcesses) {
  std::string name = "/braid-net-test-" + std::to_string(getpid());
  std::unique_ptr<NicMonitor> m;
  ASSERT_EQ(NicMonitor::open_shared(name, 2, kIdle, &m), Result::Success);
  int go[2], done[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(done), 0);
  pid_t child = fork();
  if (child == 0) {
    std::unique_ptr<NicMonitor> cm;
    if (NicMonitor::open_shared(name, 2, kIdle, &cm) != Result::Success) _exit(2);
    int slot = cm->claim(1, new_worker_id());
    // Work posted two seconds ago and never finished: the child dies with it in flight.
    cm->begin(1, slot, now_ns() - 2000000000);
    char c = 1;
    if (write(done[1], &c, 1) != 1) _exit(3);
    if (read(go[0], &c, 1) != 1) _exit(4);
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(done[0], &c, 1), 1);
  uint64_t me = new_worker_id();
  EXPECT_TRUE(m->busy_for(1, me, 0, now_ns()));   // the other process's work in flight
  EXPECT_FALSE(m->busy_for(0, me, 0, now_ns()));
  ASSERT_EQ(write(go[1], &c, 1), 1);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // Its owner is gone and it has been quiet for over a second: it keeps nothing busy.
  EXPECT_FALSE(m->busy_for(1, me, 0, now_ns()));
  shm_unlink(name.c_str());
}

bool shm_exists(const std::string& name) { return access(("/dev/shm" + name).c_str(), F_OK) == 0; }

// The last process to leave a shared board removes its name; a live holder of a slot keeps it,
// a dead one does not.
TEST(NetMonitor, TheLastToLeaveRemovesTheBoard) {
  std::string name = "/braid-net-test-last-" + std::to_string(getpid());
  std::unique_ptr<NicMonitor> m;
  ASSERT_EQ(NicMonitor::open_shared(name, 2, kIdle, &m), Result::Success);
  int ready[2], go[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(go), 0);
  pid_t child = fork();
  if (child == 0) {
    std::unique_ptr<NicMonitor> cm;
    if (NicMonitor::open_shared(name, 2, kIdle, &cm) != Result::Success) _exit(2);
    if (cm->claim(0, new_worker_id()) < 0) _exit(3);
    char c = 1;
    if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(4);
    _exit(0);  // dies holding its slot
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  std::unique_ptr<NicMonitor> second;
  ASSERT_EQ(NicMonitor::open_shared(name, 2, kIdle, &second), Result::Success);
  second.reset();  // the child, alive, holds a slot: the board stays
  EXPECT_TRUE(shm_exists(name));
  ASSERT_EQ(write(go[1], &c, 1), 1);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  m.reset();  // only a dead process's slot is left: this was the last user
  EXPECT_FALSE(shm_exists(name));
  shm_unlink(name.c_str());
}

}  // namespace
}  // namespace braid::net
