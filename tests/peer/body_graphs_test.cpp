#include "peer/body_graphs.h"

#include <gtest/gtest.h>

namespace braid::peer {
namespace {

void* handle(uintptr_t n) { return reinterpret_cast<void*>(n); }

TEST(BodyGraphCache, ABodyIsCapturedTheSecondTimeItComesAndLaunchedAfter) {
  BodyGraphCache cache;
  const BodyGraphCache::Key key{1, 0x1000, 0x2000, 64};
  EXPECT_EQ(cache.find(key), nullptr);
  EXPECT_FALSE(cache.seen_before(key));  // first time: queued as it is
  EXPECT_EQ(cache.find(key), nullptr);
  EXPECT_TRUE(cache.seen_before(key));  // second time: the caller makes a graph
  EXPECT_EQ(cache.add(key, handle(7)), nullptr);
  EXPECT_EQ(cache.find(key), handle(7));
  EXPECT_EQ(cache.find(key), handle(7));
  // Another buffer is another body.
  EXPECT_EQ(cache.find({1, 0x1000, 0x3000, 64}), nullptr);
  EXPECT_FALSE(cache.seen_before({1, 0x1000, 0x3000, 64}));
}

TEST(BodyGraphCache, TheLeastRecentlyUsedGraphIsPushedOutForTheCallerToDestroy) {
  BodyGraphCache cache(/*capacity=*/2);
  EXPECT_EQ(cache.add({1}, handle(1)), nullptr);
  EXPECT_EQ(cache.add({2}, handle(2)), nullptr);
  EXPECT_EQ(cache.find({1}), handle(1));        // {2} is now the least recently used
  EXPECT_EQ(cache.add({3}, handle(3)), handle(2));
  EXPECT_EQ(cache.find({2}), nullptr);
  EXPECT_EQ(cache.graphs(), 2u);
  const std::vector<void*> all = cache.take_all();
  EXPECT_EQ(all.size(), 2u);
  EXPECT_EQ(cache.graphs(), 0u);
  EXPECT_EQ(cache.find({1}), nullptr);
}

TEST(BodyGraphCache, OnlySoManyKeysSeenOnceAreRemembered) {
  BodyGraphCache cache(/*capacity=*/4, /*remembered=*/2);
  EXPECT_FALSE(cache.seen_before({1}));
  EXPECT_FALSE(cache.seen_before({2}));
  EXPECT_FALSE(cache.seen_before({3}));  // {1} forgotten
  EXPECT_FALSE(cache.seen_before({1}));
  EXPECT_TRUE(cache.seen_before({3}));
  EXPECT_FALSE(cache.seen_before({3}));  // a key said "seen" is forgotten: the caller now keeps a graph
  BodyGraphCache none(/*capacity=*/4, /*remembered=*/0);
  EXPECT_FALSE(none.seen_before({1}));
  EXPECT_FALSE(none.seen_before({1}));
}

TEST(BodyGraphCache, NoMoreGraphsAreMadeWhereTheyDoNotPay) {
  BodyGraphCache cache(/*capacity=*/4);
  // Buffers that change every call: each key comes twice, a graph is made, and it is never launched.
  uint64_t k = 0;
  for (; k < BodyGraphCache::kTrialBuilds; ++k) {
    EXPECT_FALSE(cache.seen_before({k}));
    ASSERT_TRUE(cache.seen_before({k})) << k;
    cache.add({k}, handle(k + 1));
  }
  EXPECT_FALSE(cache.seen_before({k}));
  EXPECT_FALSE(cache.seen_before({k}));  // 32 graphs made, none launched: no more
  // Graphs that are launched make it pay again.
  for (int i = 0; i < 40; ++i) EXPECT_NE(cache.find({k - 1}), nullptr);
  EXPECT_TRUE(cache.seen_before({k}));
}

}  // namespace
}  // namespace braid::peer
