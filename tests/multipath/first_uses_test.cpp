// The first share of each collective and size class, which the calling thread queues itself
// (multipath/first_uses.h).
#include "multipath/first_uses.h"

#include <gtest/gtest.h>

namespace braid::multipath {
namespace {

TEST(FirstUses, OncePerCollectiveAndSizeClass) {
  FirstUses uses;
  EXPECT_TRUE(uses.first(Collective::AllGather, 3 << 20));
  EXPECT_FALSE(uses.first(Collective::AllGather, 3 << 20));
  EXPECT_FALSE(uses.first(Collective::AllGather, (2 << 20) + 1));  // the same bit width
  EXPECT_FALSE(uses.first(Collective::AllGather, (4 << 20) - 1));
  EXPECT_TRUE(uses.first(Collective::AllGather, 4 << 20));  // the next one
  EXPECT_FALSE(uses.first(Collective::AllGather, 2 << 20));  // the class is [2 MiB, 4 MiB)
  EXPECT_TRUE(uses.first(Collective::AllGather, (2 << 20) - 1));  // the one below
  EXPECT_TRUE(uses.first(Collective::ReduceScatter, 3 << 20));  // another collective
  EXPECT_TRUE(uses.first(Collective::AllReduce, 0));
  EXPECT_FALSE(uses.first(Collective::AllReduce, 0));
}

TEST(FirstUses, EveryRankAnswersAlike) {
  const size_t calls[] = {1 << 20, 3 << 20, 1 << 20, 256 << 20, 200 << 20, 3 << 20};
  FirstUses a, b;
  for (size_t bytes : calls) EXPECT_EQ(a.first(Collective::AllReduce, bytes), b.first(Collective::AllReduce, bytes));
}

}  // namespace
}  // namespace braid::multipath
