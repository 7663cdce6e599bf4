// CUDA_DEVICE_MAX_CONNECTIONS as braid reads it, and where the progress thread may queue shares.
#include <gtest/gtest.h>

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
  EXPECT_FALSE(progress_thread_may_queue(cuda_connections("1")));  // Megatron-LM's setting
  EXPECT_FALSE(progress_thread_may_queue(7));
  EXPECT_TRUE(progress_thread_may_queue(cuda_connections(nullptr)));
  EXPECT_TRUE(progress_thread_may_queue(32));
}

}  // namespace
}  // namespace braid::multipath
