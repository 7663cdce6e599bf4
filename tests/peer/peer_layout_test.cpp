// The NVLink path's arithmetic and mapping policy, on CPU (the path itself runs on GPUs only).
#include "peer/mapping_cache.h"
#include "peer/peer_layout.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace braid::peer {
namespace {

// Every element of the share is reduced by exactly one rank, and every part but the last starts
// and ends on the alignment the kernel's wide accesses need.
TEST(PeerLayout, ReducePartsTileTheShareOnce) {
  for (int nranks : {1, 2, 3, 4, 7, 8})
    for (size_t esize : {1, 2, 4, 8})
      for (size_t elements : {size_t{0}, size_t{1}, size_t{255}, size_t{256}, size_t{4097}, size_t{1} << 20,
                              (size_t{1} << 20) + 13}) {
        std::vector<int> owner(elements, -1);
        for (int r = 0; r < nranks; ++r) {
          const ElementRange part = reduce_part(r, nranks, elements, esize);
          ASSERT_LE(part.begin + part.count, elements);
          EXPECT_EQ(part.begin * esize % kPartAlignBytes, 0u) << nranks << " ranks, rank " << r;
          for (size_t i = part.begin; i < part.begin + part.count; ++i) {
            ASSERT_EQ(owner[i], -1) << "element " << i << " reduced twice";
            owner[i] = r;
          }
        }
        for (size_t i = 0; i < elements; ++i) ASSERT_NE(owner[i], -1) << "element " << i << " reduced by none";
      }
}

TEST(PeerLayout, PulledPiecesFitTheScratch) {
  for (int nranks : {2, 3, 4, 8})
    for (size_t esize : {1, 2, 4, 8})
      for (int64_t scratch : {int64_t{64} << 20, int64_t{1} << 20, int64_t{4096}}) {
        const size_t piece = pull_piece_elements(nranks, esize, scratch);
        EXPECT_GT(piece, 0u);
        EXPECT_EQ(piece * esize % kPartAlignBytes, 0u);
        EXPECT_EQ(pull_slot_bytes(nranks, esize, scratch), static_cast<size_t>(nranks - 1) * piece * esize);
        // Two slots fit the budget, unless the budget is below one aligned piece per peer.
        if (static_cast<size_t>(scratch) >= 2 * static_cast<size_t>(nranks - 1) * kPartAlignBytes) {
          EXPECT_LE(2 * pull_slot_bytes(nranks, esize, scratch), static_cast<size_t>(scratch));
        }
      }
  // A budget of nothing still moves: one aligned piece.
  EXPECT_EQ(pull_piece_elements(2, 4, 0), kPartAlignBytes / 4);
  EXPECT_EQ(pull_piece_elements(2, 4, -5), kPartAlignBytes / 4);
}

// A fake "CUDA IPC": opening hands out distinct addresses and counts; closing records.
struct FakeIpc {
  std::vector<unsigned char> memory = std::vector<unsigned char>(1024);
  size_t next = 0, opens = 0, drains = 0;
  std::multiset<unsigned char*> closed;
  Result fail_next_open = Result::Success;
  MappingCache::Hooks hooks() {
    return {[this](const MappingCache::Key&, unsigned char** base) {
              if (fail_next_open != Result::Success) return std::exchange(fail_next_open, Result::Success);
              ++opens;
              *base = &memory[next++];
              return Result::Success;
            },
            [this](const MappingCache::Key&, unsigned char* base) { closed.insert(base); },
            [this] {
              ++drains;
              return Result::Success;
            }};
  }
};

MappingCache::Key key(uint64_t k) { return {static_cast<uint64_t>(AllocationKind::CudaIpc), k}; }

TEST(PeerMappingCache, OpensEachHandleOnceAndReusesIt) {
  FakeIpc ipc;
  MappingCache cache(4, ipc.hooks());
  unsigned char *a = nullptr, *b = nullptr, *again = nullptr;
  ASSERT_EQ(cache.get(key(1), 1, &a), Result::Success);
  ASSERT_EQ(cache.get(key(2), 1, &b), Result::Success);
  ASSERT_EQ(cache.get(key(1), 2, &again), Result::Success);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, again);
  EXPECT_EQ(ipc.opens, 2u);
  EXPECT_EQ(ipc.drains, 0u);
}

// Past capacity, what the latest two calls used stays mapped (their copies may be in flight until
// the drain, and the next call may use them again); older mappings are closed after the drain.
TEST(PeerMappingCache, BoundedClosingOnlyWhatRecentCallsDidNotUse) {
  FakeIpc ipc;
  MappingCache cache(3, ipc.hooks());
  unsigned char* base[6] = {};  // base[0]: key 6
  for (uint64_t call = 1; call <= 3; ++call) ASSERT_EQ(cache.get(key(call), call, &base[call]), Result::Success);
  EXPECT_EQ(cache.size(), 3u);
  ASSERT_EQ(cache.get(key(4), 4, &base[4]), Result::Success);  // over capacity: closes call 1's
  EXPECT_EQ(ipc.drains, 1u);
  EXPECT_EQ(ipc.closed, (std::multiset<unsigned char*>{base[1]}));
  EXPECT_EQ(cache.size(), 3u);
  // Call 5 reuses key 2, then opens key 5: keys 3 and 4 belong to the two calls before it, so
  // nothing closes and the cache goes over its capacity for now.
  unsigned char* reused = nullptr;
  ASSERT_EQ(cache.get(key(2), 5, &reused), Result::Success);
  EXPECT_EQ(reused, base[2]);
  ASSERT_EQ(cache.get(key(5), 5, &base[5]), Result::Success);
  EXPECT_EQ(ipc.closed, (std::multiset<unsigned char*>{base[1]}));
  EXPECT_EQ(cache.size(), 4u);
  // Call 6 opens key 6: key 3, last used three calls ago, closes; keys 2, 4 and 5 stay.
  ASSERT_EQ(cache.get(key(6), 6, &base[0]), Result::Success);
  EXPECT_EQ(ipc.closed, (std::multiset<unsigned char*>{base[1], base[3]}));
  EXPECT_EQ(ipc.drains, 3u);
  cache.close_all();
  EXPECT_EQ(ipc.closed.size(), 6u);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(PeerMappingCache, AFailedOpenCachesNothing) {
  FakeIpc ipc;
  MappingCache cache(2, ipc.hooks());
  unsigned char* base = nullptr;
  ipc.fail_next_open = Result::UnhandledCudaError;
  EXPECT_EQ(cache.get(key(7), 1, &base), Result::UnhandledCudaError);
  EXPECT_EQ(cache.size(), 0u);
  ASSERT_EQ(cache.get(key(7), 2, &base), Result::Success);
  EXPECT_EQ(ipc.opens, 1u);
}

// A peer that freed a buffer and made a new one at the same memory: CUDA refuses the new handle
// while the old mapping is open. The open is tried again once the mappings this call has not used
// are closed (after the drain); those this call uses stay.
TEST(PeerMappingCache, AFailedOpenIsRetriedAfterClosingWhatThisCallDoesNotUse) {
  FakeIpc ipc;
  MappingCache cache(8, ipc.hooks());
  unsigned char *old_scratch = nullptr, *this_call = nullptr, *fresh = nullptr;
  ASSERT_EQ(cache.get(key(1), 1, &old_scratch), Result::Success);
  ASSERT_EQ(cache.get(key(2), 2, &this_call), Result::Success);
  ipc.fail_next_open = Result::UnhandledCudaError;
  ASSERT_EQ(cache.get(key(3), 2, &fresh), Result::Success);
  EXPECT_EQ(ipc.closed, (std::multiset<unsigned char*>{old_scratch}));
  EXPECT_EQ(ipc.drains, 1u);
  EXPECT_EQ(cache.size(), 2u);
  // A second failure in a row is the call's: nothing more to close, so it fails.
  ipc.fail_next_open = Result::UnhandledCudaError;
  unsigned char* more = nullptr;
  EXPECT_EQ(cache.get(key(4), 2, &more), Result::UnhandledCudaError);
  EXPECT_EQ(ipc.closed.size(), 1u);
}

// A peer that is gone or does not answer (RemoteError) is not asked again: closing mappings here
// cannot bring it back, and asking twice would double the wait on a stopped one.
TEST(PeerMappingCache, AnOpenFailedByTheRemoteIsNotRetried) {
  FakeIpc ipc;
  MappingCache cache(8, ipc.hooks());
  unsigned char *old_buffer = nullptr, *fresh = nullptr;
  ASSERT_EQ(cache.get(key(1), 1, &old_buffer), Result::Success);
  ipc.fail_next_open = Result::RemoteError;
  EXPECT_EQ(cache.get(key(2), 2, &fresh), Result::RemoteError);
  EXPECT_TRUE(ipc.closed.empty());
  EXPECT_EQ(ipc.drains, 0u);
  EXPECT_EQ(ipc.opens, 1u);
}

// find() answers from what is open and opens nothing: the progress thread's way in (opening may
// wait for the whole device), with get() left to the calling thread.
TEST(PeerMappingCache, FindOpensNothing) {
  FakeIpc ipc;
  MappingCache cache(4, ipc.hooks());
  unsigned char *base = nullptr, *found = nullptr;
  EXPECT_FALSE(cache.find(key(1), 1, &found));
  EXPECT_EQ(ipc.opens, 0u);
  ASSERT_EQ(cache.get(key(1), 1, &base), Result::Success);
  EXPECT_TRUE(cache.find(key(1), 2, &found));
  EXPECT_EQ(found, base);
  EXPECT_EQ(ipc.opens, 1u);
}

// A mapping a CUDA graph captured stays open past the cache's capacity, whatever calls came since,
// until the graph lets go of it.
TEST(PeerMappingCache, APinnedMappingOutlivesEvictionUntilUnpinned) {
  FakeIpc ipc;
  auto pins = std::make_shared<MappingPins>();
  MappingCache::Hooks hooks = ipc.hooks();
  hooks.pinned = [pins](const MappingCache::Key& k) { return pins->pinned(k); };
  MappingCache cache(2, hooks);
  unsigned char *graphs = nullptr, *other = nullptr;
  ASSERT_EQ(cache.get(key(1), 1, &graphs), Result::Success);
  pins->pin({key(1)});
  for (uint64_t call = 2; call < 12; ++call) ASSERT_EQ(cache.get(key(100 + call), call, &other), Result::Success);
  EXPECT_EQ(ipc.closed.count(graphs), 0u);
  unsigned char* found = nullptr;
  EXPECT_TRUE(cache.find(key(1), 12, &found));
  pins->unpin({key(1)});
  EXPECT_FALSE(pins->pinned(key(1)));
  for (uint64_t call = 20; call < 24; ++call) ASSERT_EQ(cache.get(key(100 + call), call, &other), Result::Success);
  EXPECT_EQ(ipc.closed.count(graphs), 1u);
}

// Two graphs pinning one mapping: it stays pinned until both are gone.
TEST(PeerMappingCache, PinsCount) {
  MappingPins pins;
  pins.pin({key(1), key(2)});
  pins.pin({key(1)});
  pins.unpin({key(1), key(2)});
  EXPECT_TRUE(pins.pinned(key(1)));
  EXPECT_FALSE(pins.pinned(key(2)));
  pins.unpin({key(1)});
  EXPECT_FALSE(pins.pinned(key(1)));
}

// The captured calls' barriers (kGraphBarriers), as the GPU runs them: each rank raises a state on
// its flag and waits until every peer's flag has a bit of the pass mask. Ranks are threads with
// random delays; a call is replayed many times with the same values, as a graph's is. No rank
// may pass a barrier before every rank has reached it, and no rank may wait for ever.
TEST(PeerLayout, GraphBarriersHoldAcrossReplaysWithFixedValues) {
  for (int nranks : {2, 3, 8}) {
    constexpr int kReplays = 300;
    std::vector<std::atomic<uint64_t>> flags(nranks);
    // arrived[replay * 3 + step]: ranks that reached that barrier.
    std::vector<std::atomic<int>> arrived(kReplays * 3);
    std::atomic<int> early{0};
    std::vector<std::thread> ranks;
    for (int r = 0; r < nranks; ++r)
      ranks.emplace_back([&, r] {
        std::mt19937 random(r + 17);
        for (int replay = 0; replay < kReplays; ++replay)
          for (int step = 0; step < 3; ++step) {
            if (random() % 4 == 0) std::this_thread::yield();
            arrived[replay * 3 + step].fetch_add(1);
            flags[r].store(kGraphBarriers[step].state);
            for (int q = 0; q < nranks; ++q)
              while ((flags[q].load() & kGraphBarriers[step].pass_mask) == 0) std::this_thread::yield();
            if (arrived[replay * 3 + step].load() != nranks) early.fetch_add(1);
          }
      });
    for (std::thread& t : ranks) t.join();
    EXPECT_EQ(early.load(), 0) << nranks << " ranks";
  }
}

// A flag never raised passes no barrier, and a released one (all ones) passes every barrier.
TEST(PeerLayout, GraphBarriersStartClosedAndOpenWhenReleased) {
  for (const GraphBarrier& b : kGraphBarriers) {
    EXPECT_EQ(0u & b.pass_mask, 0u);
    EXPECT_NE((~0ull >> 1) & b.pass_mask, 0u);
  }
  // A peer at a barrier passes it; one still at the barrier before it does not.
  for (int step = 0; step < 3; ++step) {
    EXPECT_NE(kGraphBarriers[step].state & kGraphBarriers[step].pass_mask, 0u);
    EXPECT_EQ(kGraphBarriers[(step + 2) % 3].state & kGraphBarriers[step].pass_mask, 0u);
  }
}

}  // namespace
}  // namespace braid::peer
