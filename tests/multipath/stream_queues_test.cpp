// CUDA_DEVICE_MAX_CONNECTIONS as braid reads it, and where the progress thread may queue shares.
#include <gtest/gtest.h>

#include <cstring>
#include <span>
#include <vector>

#include "../engine/harness.h"
#include "engine/communicator.h"
#include "multipath/stream_queues.h"

namespace braid::multipath {
namespace {

TEST(StreamQueues, UnsetOrUnreadableMeansCudasDefault) {
  for (const char* value : {static_cast<const char*>(nullptr), "", "eight", "8x", "0", "-2", "99999999999999999999"})
    EXPECT_EQ(cuda_connections(value), kDefaultCudaConnections) << (value == nullptr ? "(unset)" : value);
}

TEST(StreamQueues, ANumberIsTakenAsItIs) {
  EXPECT_EQ(cuda_connections("1"), 1);
  EXPECT_EQ(cuda_connections("4"), 4);
  EXPECT_EQ(cuda_connections("32"), 32);
}

TEST(StreamQueues, TheProgressThreadQueuesOnlyFromCudasDefaultOn) {
  EXPECT_FALSE(progress_thread_may_queue({.connections = cuda_connections("1")}));  // Megatron-LM's setting
  EXPECT_FALSE(progress_thread_may_queue({.connections = 7}));
  EXPECT_TRUE(progress_thread_may_queue({.connections = cuda_connections(nullptr)}));
  EXPECT_TRUE(progress_thread_may_queue({.connections = 32}));
}

TEST(StreamQueues, LazyModuleLoadingKeepsTheProgressThreadFromQueueing) {
  EXPECT_FALSE(progress_thread_may_queue({.connections = 32, .lazy_module_loading = true}));
  EXPECT_FALSE(progress_thread_may_queue({.connections = kDefaultCudaConnections, .lazy_module_loading = true}));
  EXPECT_TRUE(progress_thread_may_queue({.connections = kDefaultCudaConnections, .lazy_module_loading = false}));
}

// The ranks agree even where their environments differ: one rank with one queue, or one loading
// lazily, keeps every rank to the NVLink share (their splits must match), none keeps none.
TEST(StreamQueues, EveryRankLearnsWhetherAnyRankForbidsQueueing) {
  const auto topo = test::load_test_topology();
  for (const bool lazy : {false, true})
    for (const test::Mode mode : {test::Mode::Threads, test::Mode::Processes})
      for (const int odd_rank : {-1, 0, 2}) {
        SCOPED_TRACE(std::string(test::mode_name(mode)) + (lazy ? ", lazy loading" : ", few queues") + " on rank " +
                     std::to_string(odd_rank));
        const auto outcomes = test::run_ranks(mode, 3, topo, 1, [&](engine::Communicator& comm, int rank, unsigned char* out) {
          LaneQueueing process{.connections = cuda_connections(nullptr)};
          if (rank == odd_rank && lazy) process.lazy_module_loading = true;
          if (rank == odd_rank && !lazy) process.connections = cuda_connections("1");
          bool any = false;
          const Result r = any_rank_forbids_lane_queueing(
              process, [&](std::span<const uint64_t> mine, std::vector<uint64_t>* all) { return comm.exchange(mine, all); },
              &any);
          *out = any ? 1 : 0;
          return r;
        });
        ASSERT_EQ(outcomes.size(), 3u);
        for (const auto& o : outcomes) {
          EXPECT_EQ(o.result, Result::Success) << o.error;
          EXPECT_EQ(o.output.at(0), odd_rank >= 0 ? 1 : 0);
        }
      }
}

}  // namespace
}  // namespace braid::multipath
