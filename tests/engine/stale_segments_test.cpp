// A rank killed during set-up leaves no -ctl and -stage files in /dev/shm (issue 43, row 14): the
// ranks that live on remove them and fail at once naming the dead rank; where every rank was
// killed, the next set-up on the machine removes them.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "common/settings.h"
#include "engine/stale_segments.h"
#include "harness.h"

#include "support/sanitizer_suppressions.h"

namespace braid {
namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// Forks rank 0 of a two-rank communicator `id`, waits until its set-up made every segment (it then
// waits for rank 1), and kills it. Returns the segment paths.
std::vector<std::string> kill_rank0_during_setup(const engine::CommId& id, const topo::Topology& topo,
                                                 test::SharedArea& area, bool* made) {
  const std::string prefix = "/dev/shm/braid-" + id.hex();
  const std::vector<std::string> paths{prefix + "-ctl", prefix + "-stage0"};
  const pid_t rank0 = fork();
  if (rank0 == 0) _exit(test::run_rank(id, 0, 2, topo, area, [](engine::Communicator&, int, unsigned char*) {
                      return Result::Success;
                    }) == Result::Success ? 0 : 1);
  const auto t0 = std::chrono::steady_clock::now();
  while (!(exists(paths[0]) && exists(paths[1])) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // its staging allocated, waiting for rank 1
  *made = exists(paths[0]) && exists(paths[1]);
  kill(rank0, SIGKILL);
  waitpid(rank0, nullptr, 0);
  return paths;
}

// Three ranks: rank 1 attaches and is killed while rank 2 has not come yet. Rank 0 fails at once
// naming rank 1, and removes the names (before, it waited BRAID_TIMEOUT).
TEST(EngineStaleSegments, SurvivorsRemoveTheFilesAndNameTheDeadRank) {
  setenv("BRAID_TIMEOUT", "20", 1);
  settings_reload();
  const auto topo = test::load_test_topology("h200x2");
  const engine::CommId id = engine::CommId::random();
  test::SharedArea area(3, 8);
  const auto nothing = [](engine::Communicator&, int, unsigned char*) { return Result::Success; };
  // Forked first, while this process has one thread (ThreadSanitizer refuses threads after a
  // multi-threaded fork).
  const pid_t rank1 = fork();
  if (rank1 == 0) _exit(test::run_rank(id, 1, 3, topo, area, nothing) == Result::Success ? 0 : 1);
  const auto t0 = std::chrono::steady_clock::now();
  std::thread rank0([&] { test::run_rank(id, 0, 3, topo, area, nothing); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // rank 1 attached, waiting for rank 2
  const std::string prefix = "/dev/shm/braid-" + id.hex();
  const std::vector<std::string> paths{prefix + "-ctl", prefix + "-stage0"};
  EXPECT_TRUE(exists(paths[0]));
  kill(rank1, SIGKILL);
  waitpid(rank1, nullptr, 0);
  rank0.join();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  unsetenv("BRAID_TIMEOUT");
  settings_reload();
  EXPECT_EQ(*area.result(0), static_cast<int>(Result::RemoteError));
  EXPECT_NE(std::string(area.error(0)).find("rank 1 (pid"), std::string::npos) << area.error(0);
  EXPECT_NE(std::string(area.error(0)).find("died during set-up"), std::string::npos) << area.error(0);
  EXPECT_LT(took, 3.0) << "rank 0 waited for the dead rank";
  for (const auto& p : paths) EXPECT_FALSE(exists(p)) << p;
}

TEST(EngineStaleSegments, TheNextSetUpRemovesWhatKilledRanksLeft) {
  const auto topo = test::load_test_topology("h200x2");
  const engine::CommId id = engine::CommId::random();
  test::SharedArea area(2, 8);
  bool made = false;
  const auto paths = kill_rank0_during_setup(id, topo, area, &made);
  ASSERT_TRUE(made) << "rank 0 never made its segments";
  // Any set-up on the machine sweeps them, other tests' too where ctest runs them beside this one:
  // where this test's set-up below is not the first, the files may be gone before it starts.
  if (exists(paths[0])) {
    bool listed = false;
    for (const auto& f : engine::braid_shm_files())
      if ("/dev/shm/" + f.name == paths[0]) listed = f.stale && f.state.find("has ended") != std::string::npos;
    EXPECT_TRUE(listed || !exists(paths[0])) << "braid_shm_files() does not call " << paths[0] << " stale";
  }
  // Any later communicator's set-up on this machine.
  auto outcomes = test::run_ranks(test::Mode::Threads, 1, topo, 8, [](engine::Communicator&, int, unsigned char*) {
    return Result::Success;
  });
  EXPECT_EQ(outcomes[0].result, Result::Success) << outcomes[0].error;
  for (const auto& p : paths) EXPECT_FALSE(exists(p)) << p;
}

// A set-up that runs is no stale file: its files stay until its ranks remove them.
TEST(EngineStaleSegments, ALiveSetUpIsLeftAlone) {
  const auto topo = test::load_test_topology("h200x2");
  const engine::CommId id = engine::CommId::random();
  test::SharedArea area(2, 8);
  setenv("BRAID_TIMEOUT", "5", 1);
  settings_reload();
  std::thread rank0([&] { test::run_rank(id, 0, 2, topo, area, [](engine::Communicator&, int, unsigned char*) { return Result::Success; }); });
  const std::string ctl = "/dev/shm/braid-" + id.hex() + "-ctl";
  const auto t0 = std::chrono::steady_clock::now();
  while (!exists(ctl) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  engine::remove_stale_segments();
  EXPECT_TRUE(exists(ctl));
  test::run_rank(id, 1, 2, topo, area, [](engine::Communicator&, int, unsigned char*) { return Result::Success; });
  rank0.join();
  unsetenv("BRAID_TIMEOUT");
  settings_reload();
  EXPECT_EQ(*area.result(0), 0) << area.error(0);
  EXPECT_EQ(*area.result(1), 0) << area.error(1);
  EXPECT_FALSE(exists(ctl));
}

}  // namespace
}  // namespace braid
