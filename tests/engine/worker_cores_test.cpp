// How a rank's engine workers are sized and pinned when BRAID_THREADS does not say.
#include <gtest/gtest.h>

#include <set>

#include "engine/worker_pool.h"

namespace braid::engine {
namespace {

std::vector<int> range(int first, int count) {
  std::vector<int> v;
  for (int i = 0; i < count; ++i) v.push_back(first + i);
  return v;
}

TEST(WorkerCores, LeavesThreeCoresToEachRanksCallerProgressAndProxyThreads) {
  EXPECT_EQ(workers_for(16, 2, 0, {}).threads, 5);
  EXPECT_EQ(workers_for(16, 4, 3, {}).threads, 1);
  EXPECT_EQ(workers_for(64, 2, 1, {}).threads, 8);  // at most 8
  EXPECT_EQ(workers_for(2, 4, 0, {}).threads, 1);   // at least 1
  EXPECT_EQ(workers_for(0, 0, 0, {}).threads, 1);
}

TEST(WorkerCores, UnpinnedWithoutCores) { EXPECT_TRUE(workers_for(16, 2, 1, {}).cpus.empty()); }

TEST(WorkerCores, RanksSharingANodePinToDisjointCores) {
  const std::vector<int> node = range(16, 32);  // the node's cores: 16..47
  std::set<int> taken;
  for (int slot = 0; slot < 4; ++slot) {
    const WorkerCores w = workers_for(32, 4, slot, node);
    ASSERT_EQ(w.threads, 5);
    ASSERT_EQ(w.cpus.size(), 5u);
    for (int cpu : w.cpus) {
      EXPECT_GE(cpu, 16 + slot * 8);
      EXPECT_LT(cpu, 16 + slot * 8 + 5);  // the slice's last three cores stay free
      EXPECT_TRUE(taken.insert(cpu).second) << "core " << cpu << " pinned twice";
    }
  }
}

TEST(WorkerCores, MoreRanksThanCoresWrapAroundTheNode) {
  const WorkerCores w = workers_for(4, 8, 7, range(0, 4));
  ASSERT_EQ(w.cpus.size(), 1u);
  EXPECT_EQ(w.cpus[0], 3);
}

}  // namespace
}  // namespace braid::engine
