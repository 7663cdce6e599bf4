// Ranks in different pid namespaces that share /dev/shm (containers with a shared IPC namespace):
// a peer's pid means nothing outside its namespace, so it never decides that the peer died (issue
// 43, row 12). Before, the rank in the new namespace failed at once with "rank 0 (pid N) died".
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>

#include <cstdlib>
#include <vector>

#include "common/process.h"
#include "common/settings.h"
#include "engine/watchdog.h"
#include "harness.h"

#include "support/sanitizer_suppressions.h"
#include "isolated_child.h"

namespace braid {
namespace {

// The rule itself: a pid is judged only within the namespace it was recorded in.
TEST(EnginePidNamespace, LivenessJudgesPidsOnlyWithinTheirNamespace) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);  // a pid that has ended
  const uint64_t own = pid_namespace();
  ASSERT_NE(own, 0u) << "/proc/self/ns/pid unreadable";
  EXPECT_TRUE(engine::PeerProcess({1, child, own}).dead());
  EXPECT_TRUE(engine::PeerProcess({1, child, 0}).dead());  // namespace unknown: the pid decides
  EXPECT_FALSE(engine::PeerProcess({1, child, own + 1}).dead());  // another namespace's pid: no verdict
  EXPECT_FALSE(engine::PeerProcess({1, getpid(), own}).dead());
}

TEST(EnginePidNamespace, RanksInTwoPidNamespacesRunTogether) {
  setenv("BRAID_TIMEOUT", "20", 1);
  settings_reload();
  const auto topo = test::load_test_topology();
  const engine::CommId id = engine::CommId::random();
  test::SharedArea area(2, 8);
  constexpr size_t kCount = 1 << 16;
  const test::Body body = [&](engine::Communicator& comm, int rank, unsigned char*) {
    std::vector<float> send(kCount, static_cast<float>(rank + 1)), recv(kCount);
    for (int i = 0; i < 3; ++i) {
      BRAID_TRY(comm.all_reduce(send.data(), recv.data(), kCount, DataType::Float32, RedOp::Sum));
      if (recv[0] != 3.f) return fail(Result::InternalError, "wrong sum");
    }
    return Result::Success;
  };
  // Whether this machine lets a process make a pid namespace.
  const test::ChildEnd probe = test::run_in_child([](test::ChildReport* report) {
    if (unshare(CLONE_NEWPID) != 0)
      std::snprintf(report->skip, sizeof report->skip, "no new pid namespace here (%s)", strerror(errno));
  });
  if (probe.report.skip[0] != '\0') {
    unsetenv("BRAID_TIMEOUT");
    settings_reload();
    GTEST_SKIP() << probe.report.skip;
  }
  // Rank 1: the first process of a new pid namespace (pid 1 there), sharing this /dev/shm.
  const pid_t outer = fork();
  if (outer == 0) {
    if (unshare(CLONE_NEWPID) != 0) _exit(3);
    const pid_t rank1 = fork();
    if (rank1 == 0) _exit(test::run_rank(id, 1, 2, topo, area, body) == Result::Success ? 0 : 1);
    int status = 0;
    waitpid(rank1, &status, 0);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 2);
  }
  const Result rank0 = test::run_rank(id, 0, 2, topo, area, body);
  int status = 0;
  waitpid(outer, &status, 0);
  unsetenv("BRAID_TIMEOUT");
  settings_reload();
  EXPECT_EQ(rank0, Result::Success) << area.error(0);
  EXPECT_EQ(*area.result(1), 0) << area.error(1);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace braid
