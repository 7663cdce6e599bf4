// The relay pool (D1) on host memory standing in for a relay GPU's: the cap, the owner's work
// first, slots distinct and inside the region, and many threads borrowing at once.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "net/relay_pool.h"

namespace braid::net {
namespace {

constexpr size_t kSlot = 64 << 10;

TEST(NetRelayPool, CapBoundsWhatRelaysGet) {
  std::vector<char> region(16 * kSlot);
  RelayPool pool(region.data(), region.size(), kSlot, 5 * kSlot + 100);
  std::set<void*> got;
  while (void* s = pool.acquire()) {
    EXPECT_GE(static_cast<char*>(s), region.data());
    EXPECT_LE(static_cast<char*>(s) + kSlot, region.data() + region.size());
    EXPECT_TRUE(got.insert(s).second) << "a slot lent twice";
  }
  EXPECT_EQ(got.size(), 5u);  // the cap, in whole slots
  EXPECT_EQ(pool.lent_bytes(), 5 * kSlot);
  pool.release(*got.begin());
  EXPECT_NE(pool.acquire(), nullptr);
}

TEST(NetRelayPool, OwnerDemandComesFirstAndNeverRevokesLentSlots) {
  std::vector<char> region(8 * kSlot);
  RelayPool pool(region.data(), region.size(), kSlot, 8 * kSlot);
  std::vector<void*> lent;
  for (int i = 0; i < 6; ++i) lent.push_back(pool.acquire());
  // The relay GPU's own traffic now needs 4 slots' worth: relays may hold 4 at most.
  pool.set_owner_demand(4 * kSlot);
  EXPECT_EQ(pool.limit_bytes(), 4 * kSlot);
  EXPECT_EQ(pool.acquire(), nullptr);      // no new relay while over the limit
  EXPECT_EQ(pool.lent_bytes(), 6 * kSlot);  // pieces in flight finish
  for (int i = 0; i < 3; ++i) pool.release(lent[size_t(i)]);
  EXPECT_NE(pool.acquire(), nullptr);       // 3 + 1 = 4: allowed again
  EXPECT_EQ(pool.acquire(), nullptr);
  pool.set_owner_demand(8 * kSlot);          // the owner needs it all
  EXPECT_EQ(pool.limit_bytes(), 0u);
}

TEST(NetRelayPool, ThreadsNeverExceedTheCap) {
  std::vector<char> region(32 * kSlot);
  RelayPool pool(region.data(), region.size(), kSlot, 7 * kSlot);
  std::atomic<int> held{0}, most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        void* s = pool.acquire();
        if (!s) continue;
        int now = ++held;
        int prev = most.load();
        while (now > prev && !most.compare_exchange_weak(prev, now)) {}
        static_cast<char*>(s)[0] = 1;  // the memory is really there
        --held;
        pool.release(s);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_LE(most.load(), 7);
  EXPECT_EQ(pool.lent_bytes(), 0u);
}

}  // namespace
}  // namespace braid::net
