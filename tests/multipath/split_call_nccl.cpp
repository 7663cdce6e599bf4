// The bytes of each buffer a split call uses at a rank (no GPU): what a rank whose buffers braid's
// path cannot take stages through device memory, so that it still splits as its peers do.
#include <gtest/gtest.h>

#include "multipath/split_call.h"

namespace braid::multipath {
namespace {

nccl::Call call_of(Collective collective, size_t count, ncclDataType_t type, int root = 0) {
  nccl::Call c;
  c.operation = nccl::operation_of(collective);
  c.count = count;
  c.type = type;
  c.root = root;
  return c;
}

TEST(SplitCallBytes, AllReduceUsesTheWholeMessageBothWays) {
  const BufferBytes b = buffer_bytes(call_of(Collective::AllReduce, 1000, ncclFloat32), 4, 2);
  EXPECT_EQ(b.send, 4000u);
  EXPECT_EQ(b.recv, 4000u);
}

TEST(SplitCallBytes, AllGatherSendsOneBlockAndReceivesEveryRanks) {
  const BufferBytes b = buffer_bytes(call_of(Collective::AllGather, 1000, ncclBfloat16), 4, 1);
  EXPECT_EQ(b.send, 2000u);
  EXPECT_EQ(b.recv, 8000u);
}

TEST(SplitCallBytes, ReduceScatterSendsEveryRanksBlockAndReceivesOne) {
  const BufferBytes b = buffer_bytes(call_of(Collective::ReduceScatter, 1000, ncclFloat64), 3, 0);
  EXPECT_EQ(b.send, 24000u);
  EXPECT_EQ(b.recv, 8000u);
}

TEST(SplitCallBytes, BroadcastReadsTheSendBufferAtItsRootOnly) {
  const nccl::Call c = call_of(Collective::Broadcast, 10, ncclInt64, /*root=*/1);
  EXPECT_EQ(buffer_bytes(c, 2, 1).send, 80u);
  EXPECT_EQ(buffer_bytes(c, 2, 0).send, 0u);
  EXPECT_EQ(buffer_bytes(c, 2, 0).recv, 80u);
  EXPECT_EQ(buffer_bytes(c, 2, 1).recv, 80u);
}

TEST(SplitCallBytes, ReduceWritesTheReceiveBufferAtItsRootOnly) {
  const nccl::Call c = call_of(Collective::Reduce, 10, ncclUint8, /*root=*/0);
  EXPECT_EQ(buffer_bytes(c, 2, 0).recv, 10u);
  EXPECT_EQ(buffer_bytes(c, 2, 1).recv, 0u);
  EXPECT_EQ(buffer_bytes(c, 2, 1).send, 10u);
}

TEST(SplitCallBytes, OnlyBroadcastAndReduceLeaveABufferAloneOffTheRoot) {
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter}) {
    const BuffersUsed used = buffers_used(call_of(c, 10, ncclFloat32, /*root=*/0), 1);
    EXPECT_TRUE(used.send && used.recv) << collective_name(c);
  }
  EXPECT_FALSE(buffers_used(call_of(Collective::Broadcast, 10, ncclFloat32, 0), 1).send);
  EXPECT_TRUE(buffers_used(call_of(Collective::Broadcast, 10, ncclFloat32, 0), 1).recv);
  EXPECT_TRUE(buffers_used(call_of(Collective::Reduce, 10, ncclFloat32, 0), 1).send);
  EXPECT_FALSE(buffers_used(call_of(Collective::Reduce, 10, ncclFloat32, 0), 1).recv);
  EXPECT_TRUE(buffers_used(call_of(Collective::Reduce, 10, ncclFloat32, 0), 0).recv);
}

TEST(SplitCallBytes, AnEmptyCallUsesNothing) {
  const BufferBytes b = buffer_bytes(call_of(Collective::AllGather, 0, ncclFloat32), 8, 3);
  EXPECT_EQ(b.send, 0u);
  EXPECT_EQ(b.recv, 0u);
}

}  // namespace
}  // namespace braid::multipath
