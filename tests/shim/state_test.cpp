// braid's per-communicator side table and per-thread group state.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "shim/comm_table.h"
#include "shim/group_state.h"

namespace braid::shim {
namespace {

// Distinct fake handles: the table never dereferences a communicator.
ncclComm* fake_comm(uintptr_t n) { return reinterpret_cast<ncclComm*>(0x1000 + 16 * n); }

TEST(CommTable, InsertFindErase) {
  CommTable table;
  EXPECT_FALSE(table.find(fake_comm(1)).has_value());
  table.insert(fake_comm(1), CommState{2, 4, 3, true, nullptr});
  table.insert(fake_comm(2), CommState{0, 2, 0, true, nullptr});
  auto one = table.find(fake_comm(1));
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->rank, 2);
  EXPECT_EQ(one->nranks, 4);
  EXPECT_EQ(one->cuda_device, 3);
  EXPECT_EQ(one->braid_part, nullptr);
  EXPECT_TRUE(one->complete());
  EXPECT_EQ(table.size(), 2u);
  EXPECT_TRUE(table.erase(fake_comm(1)));
  EXPECT_FALSE(table.erase(fake_comm(1)));
  EXPECT_FALSE(table.find(fake_comm(1)).has_value());
  EXPECT_EQ(table.find(fake_comm(2))->nranks, 2);
  EXPECT_EQ(table.size(), 1u);
}

TEST(CommTable, ReusedAddressReplacesTheOldState) {
  CommTable table;
  table.insert(fake_comm(7), CommState{1, 2, 1, true, nullptr});
  table.insert(fake_comm(7), CommState{0, 8, 5, true, nullptr});
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.find(fake_comm(7))->nranks, 8);
}

TEST(CommTable, CompletesOnlyUnknownFields) {
  CommTable table;
  // A non-blocking init: rank and size known from the call, device not yet.
  table.insert(fake_comm(3), CommState{1, 4, -1, true, nullptr});
  EXPECT_FALSE(table.find(fake_comm(3))->complete());
  auto merged = table.complete_from(fake_comm(3), CommState{9, 9, 6, true, nullptr});
  ASSERT_TRUE(merged.has_value());
  EXPECT_EQ(merged->rank, 1);
  EXPECT_EQ(merged->nranks, 4);
  EXPECT_EQ(merged->cuda_device, 6);
  EXPECT_TRUE(table.find(fake_comm(3))->complete());
  EXPECT_FALSE(table.complete_from(fake_comm(4), CommState{0, 1, 0, true, nullptr}).has_value());
}

TEST(CommTable, ConcurrentThreadsKeepEveryEntry) {
  CommTable table;
  constexpr int kThreads = 8;
  constexpr int kPerThread = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&table, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const uintptr_t key = static_cast<uintptr_t>(t * kPerThread + i);
        table.insert(fake_comm(key), CommState{i, kPerThread, t, true, nullptr});
        // Every other entry goes away again, as a destroyed communicator does.
        if (i % 2 == 1) {
          EXPECT_TRUE(table.erase(fake_comm(key)));
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(table.size(), static_cast<size_t>(kThreads * kPerThread / 2));
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) {
      auto state = table.find(fake_comm(static_cast<uintptr_t>(t * kPerThread + i)));
      if (i % 2 == 1) {
        EXPECT_FALSE(state.has_value());
      } else {
        ASSERT_TRUE(state.has_value());
        EXPECT_EQ(state->rank, i);
        EXPECT_EQ(state->cuda_device, t);
      }
    }
  }
}

TEST(GroupState, CountsOnlyInsideTheOutermostGroup) {
  GroupState group;
  group.on_operation(true);  // outside a group: launched at once, not counted
  EXPECT_EQ(group.pending_collectives(), 0);
  group.on_start();
  group.on_operation(true);
  group.on_start();  // nested
  EXPECT_EQ(group.depth(), 2);
  group.on_operation(true);
  group.on_operation(false);
  EXPECT_FALSE(group.on_end());  // inner end launches nothing
  EXPECT_EQ(group.pending_collectives(), 2);
  group.on_operation(false);
  EXPECT_TRUE(group.on_end());
  EXPECT_FALSE(group.in_group());
  EXPECT_EQ(group.last_group_collectives(), 2);
  EXPECT_EQ(group.last_group_p2p(), 2);
  EXPECT_EQ(group.pending_collectives(), 0);
  EXPECT_EQ(group.pending_p2p(), 0);
}

TEST(GroupState, NewGroupStartsFromZeroAndUnmatchedEndIsHarmless) {
  GroupState group;
  EXPECT_FALSE(group.on_end());
  EXPECT_EQ(group.depth(), 0);
  group.on_start();
  group.on_operation(true);
  EXPECT_TRUE(group.on_end());
  group.on_start();
  EXPECT_EQ(group.pending_collectives(), 0);
  EXPECT_TRUE(group.on_end());
  EXPECT_EQ(group.last_group_collectives(), 0);
}

// A group may hold its collectives back only until something else arrives, and only outside
// groups nothing is held at all; the next outermost group starts holding again.
TEST(GroupState, DeferringLastsUntilTheGroupGetsSomethingElse) {
  GroupState group;
  EXPECT_FALSE(group.deferring());
  group.on_start();
  EXPECT_TRUE(group.deferring());
  group.on_start();  // nested: still the same outermost group
  group.on_operation(true);
  EXPECT_TRUE(group.deferring());
  group.stop_deferring();
  EXPECT_FALSE(group.deferring());
  EXPECT_FALSE(group.on_end());
  EXPECT_FALSE(group.deferring());
  EXPECT_TRUE(group.on_end());
  EXPECT_FALSE(group.deferring());
  group.on_start();
  EXPECT_TRUE(group.deferring());
  EXPECT_TRUE(group.on_end());
}

TEST(GroupState, EachThreadHasItsOwn) {
  this_thread_group().on_start();
  this_thread_group().on_operation(true);
  int other_depth = -1;
  int other_pending = -1;
  std::thread other([&] {
    other_depth = this_thread_group().depth();
    this_thread_group().on_start();
    this_thread_group().on_operation(true);
    this_thread_group().on_operation(true);
    other_pending = this_thread_group().pending_collectives();
    this_thread_group().on_end();
  });
  other.join();
  EXPECT_EQ(other_depth, 0);
  EXPECT_EQ(other_pending, 2);
  EXPECT_EQ(this_thread_group().depth(), 1);
  EXPECT_EQ(this_thread_group().pending_collectives(), 1);
  EXPECT_TRUE(this_thread_group().on_end());
  EXPECT_EQ(this_thread_group().last_group_collectives(), 1);
}

}  // namespace
}  // namespace braid::shim
