// The exchanges of ncclGather and ncclScatter as the routed exchange sees them
// (route/grouped_exchange.h): where each block sits, that every rank builds the same layout and
// plan from the same call, count 0, and which buffers a rank may pass (null where unused, in place
// on root) without a peer writing over what it still has to send.
#include <gtest/gtest.h>

#include <string>

#include "common.h"
#include "route/grouped_exchange.h"
#include "route/router.h"

namespace braid::route {
namespace {

TEST(CollectiveLayout, GatherSendsEveryRanksBlockToRootAtItsRankOffset) {
  for (int root : {0, 2, 4}) {
    SCOPED_TRACE("root " + std::to_string(root));
    const ExchangeLayout l = gather_layout(5, root, 1000, 4);
    EXPECT_EQ(l.ranks, 5);
    EXPECT_EQ(l.element_bytes, 4u);
    for (int s = 0; s < 5; ++s)
      for (int d = 0; d < 5; ++d) EXPECT_EQ(l.count(s, d), d == root ? 1000u : 0u) << s << " -> " << d;
    for (int r = 0; r < 5; ++r) {
      EXPECT_EQ(l.send_offset(r, root), 0u) << "rank " << r << " sends from the start of its buffer";
      EXPECT_EQ(l.recv_offset(r, root), size_t(r) * 4000u) << "root receives rank r's block at r x count";
      EXPECT_EQ(l.send_bytes(r), 4000u);
      EXPECT_EQ(l.recv_bytes(r), r == root ? 20000u : 0u);
    }
    EXPECT_EQ(largest_flow_bytes(l), 4000u);
  }
}

TEST(CollectiveLayout, ScatterSendsRootsBlockRToRankR) {
  for (int root : {0, 1, 3}) {
    SCOPED_TRACE("root " + std::to_string(root));
    const ExchangeLayout l = scatter_layout(4, root, 333, 2);
    for (int s = 0; s < 4; ++s)
      for (int d = 0; d < 4; ++d) EXPECT_EQ(l.count(s, d), s == root ? 333u : 0u) << s << " -> " << d;
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(l.send_offset(root, r), size_t(r) * 666u) << "root's block r at r x count";
      EXPECT_EQ(l.recv_offset(root, r), 0u) << "rank r receives at the start of its buffer";
      EXPECT_EQ(l.send_bytes(r), r == root ? 4u * 666u : 0u);
      EXPECT_EQ(l.recv_bytes(r), 666u);
    }
    EXPECT_EQ(largest_flow_bytes(l), 666u);
  }
}

TEST(CollectiveLayout, CountZeroIsAnExchangeOfNothing) {
  Router router;
  ASSERT_EQ(router.init(testing::mesh(4)), Result::Success);
  for (const ExchangeLayout& l : {gather_layout(4, 1, 0, 8), scatter_layout(4, 3, 0, 8), alltoall_layout(4, 0, 8)}) {
    for (int r = 0; r < 4; ++r) EXPECT_EQ(l.send_bytes(r) + l.recv_bytes(r), 0u);
    EXPECT_EQ(largest_flow_bytes(l), 0u);
    Routing routing;
    ExchangePlan plan;
    ASSERT_EQ(route_exchange(router, l, {}, &routing, &plan), Result::Success) << last_error();
    EXPECT_TRUE(plan.transfers.empty());
    EXPECT_EQ(relayed_ranges(plan), 0u);
    EXPECT_EQ(check_exchange_plan(plan), Result::Success) << last_error();
    for (int r = 0; r < 4; ++r) EXPECT_TRUE(packed_buffers_usable(l, r, nullptr, nullptr)) << "nothing to look at";
  }
}

// One n-GPU mesh whose link a-b is a quarter as wide: a gather to a (or a scatter from it) relays
// part of b's block through the other GPUs.
topo::Topology thin_link_mesh(int n, int a, int b) {
  topo::Topology t = testing::mesh(n);
  for (topo::Link& link : t.links)
    if ((link.a == 1 + a && link.b == 1 + b) || (link.a == 1 + b && link.b == 1 + a)) link.gbps_ab = link.gbps_ba = 25;
  return t;
}

// The drop-in never talks about the plan: every rank's router must reach the same one from the
// same calls. Four routers (four ranks) through the same run of gathers and scatters, roots and
// sizes changing (warm starts, hysteresis), agree transfer by transfer; the plans are proved and
// the thin link makes them relay.
TEST(CollectiveLayout, EveryRankBuildsTheSamePlanFromTheSameCalls) {
  const topo::Topology t = thin_link_mesh(4, 0, 2);
  std::vector<Router> routers(4);
  std::vector<Routing> routings(4);
  for (Router& r : routers) ASSERT_EQ(r.init(t), Result::Success) << last_error();
  struct Call {
    bool gather;
    int root;
    size_t count;
  };
  for (const Call& c : {Call{true, 0, 1 << 16}, Call{false, 0, 1 << 16}, Call{true, 2, 3 << 15}, Call{false, 2, 1 << 18},
                        Call{true, 0, 1 << 18}, Call{false, 1, 1 << 16}}) {
    SCOPED_TRACE(std::string(c.gather ? "gather" : "scatter") + " root " + std::to_string(c.root) + " count " +
                 std::to_string(c.count));
    std::vector<ExchangePlan> plans(4);
    for (int rank = 0; rank < 4; ++rank) {
      const ExchangeLayout l = c.gather ? gather_layout(4, c.root, c.count, 4) : scatter_layout(4, c.root, c.count, 4);
      ASSERT_EQ(route_exchange(routers[size_t(rank)], l, {}, &routings[size_t(rank)], &plans[size_t(rank)]),
                Result::Success)
          << last_error();
      EXPECT_EQ(l.counts, plans[0].layout.counts);
    }
    for (int rank = 1; rank < 4; ++rank) {
      EXPECT_EQ(plans[0].transfers, plans[size_t(rank)].transfers) << "rank " << rank;
      EXPECT_EQ(plans[0].scratch_bytes, plans[size_t(rank)].scratch_bytes) << "rank " << rank;
    }
    // Every transfer goes to root (gather) or comes from it (scatter).
    for (const Transfer& x : plans[0].transfers) EXPECT_EQ(c.gather ? x.dst : x.src, c.root);
    // The thin link 0-2 is a gather's or scatter's flow where root is 0 or 2.
    if (c.root != 1) {
      EXPECT_GT(relayed_ranges(plans[0]), 0u);
    }
  }
}

char g_memory[1 << 16];
char* at(size_t offset) { return g_memory + offset; }

TEST(CollectiveLayout, GatherBuffersNullWhereUnusedInPlaceOnRoot) {
  const int n = 4, root = 2;
  const size_t block = 100 * 4;
  const ExchangeLayout l = gather_layout(n, root, 100, 4);
  // Non-roots: only the send buffer is looked at; the receive pointer may be null or anything,
  // even the send buffer itself.
  EXPECT_TRUE(packed_buffers_usable(l, 0, at(0), nullptr));
  EXPECT_TRUE(packed_buffers_usable(l, 1, at(0), at(0)));
  EXPECT_FALSE(packed_buffers_usable(l, 1, nullptr, at(0))) << "a rank that sends needs its send buffer";
  // Root: out of place, and in place (sendbuff = recvbuff + root x count).
  EXPECT_TRUE(packed_buffers_usable(l, root, at(8192), at(0)));
  EXPECT_TRUE(packed_buffers_usable(l, root, at(0) + root * block, at(0)));
  EXPECT_TRUE(packed_buffers_usable(l, root, at(n * block), at(0))) << "just past the receive buffer";
  EXPECT_FALSE(packed_buffers_usable(l, root, at(8192), nullptr));
  EXPECT_FALSE(packed_buffers_usable(l, root, nullptr, at(0)));
  // Root's send buffer on another rank's block, or across two blocks: a peer writes it before root
  // has sent it.
  EXPECT_FALSE(packed_buffers_usable(l, root, at(0) + (root + 1) * block, at(0)));
  EXPECT_FALSE(packed_buffers_usable(l, root, at(0), at(0)));
  EXPECT_FALSE(packed_buffers_usable(l, root, at(0) + root * block + 4, at(0)));
  EXPECT_FALSE(packed_buffers_usable(l, root, at(0) + root * block - 4, at(0)));
}

TEST(CollectiveLayout, ScatterBuffersNullWhereUnusedInPlaceOnRoot) {
  const int n = 3;
  const size_t block = 64;
  for (int root : {0, 1}) {
    SCOPED_TRACE("root " + std::to_string(root));
    const ExchangeLayout l = scatter_layout(n, root, 8, 8);
    const int other = root == 0 ? 2 : 0;
    EXPECT_TRUE(packed_buffers_usable(l, other, nullptr, at(0))) << "a non-root's send buffer is never looked at";
    EXPECT_TRUE(packed_buffers_usable(l, other, at(0), at(0)));
    EXPECT_FALSE(packed_buffers_usable(l, other, nullptr, nullptr));
    EXPECT_TRUE(packed_buffers_usable(l, root, at(0), at(4096)));
    // In place: recvbuff = sendbuff + root x count.
    EXPECT_TRUE(packed_buffers_usable(l, root, at(0), at(0) + root * block));
    EXPECT_FALSE(packed_buffers_usable(l, root, at(0), at(0) + (root + 1) * block)) << "on another rank's block";
    EXPECT_FALSE(packed_buffers_usable(l, root, at(0), at(0) + root * block + 8));
    EXPECT_FALSE(packed_buffers_usable(l, root, nullptr, at(4096)));
  }
  // recvbuff = sendbuff is in place for root 0 only.
  EXPECT_TRUE(packed_buffers_usable(scatter_layout(n, 0, 8, 8), 0, at(0), at(0)));
  EXPECT_FALSE(packed_buffers_usable(scatter_layout(n, 1, 8, 8), 1, at(0), at(0)));
}

TEST(CollectiveLayout, AlltoAllInPlaceIsRefusedOutOfPlaceIsNot) {
  const ExchangeLayout l = alltoall_layout(3, 10, 4);
  for (int r = 0; r < 3; ++r) {
    EXPECT_FALSE(packed_buffers_usable(l, r, at(0), at(0))) << "rank " << r;
    EXPECT_FALSE(packed_buffers_usable(l, r, at(0), at(100))) << "overlapping by a few blocks";
    EXPECT_TRUE(packed_buffers_usable(l, r, at(0), at(120))) << "adjacent";
    EXPECT_TRUE(packed_buffers_usable(l, r, at(120), at(0)));
    EXPECT_FALSE(packed_buffers_usable(l, r, nullptr, at(0)));
  }
}

}  // namespace
}  // namespace braid::route
