// A routed all-to-allv as byte ranges (route/exchange_plan.h): how a routing becomes ranges,
// and that check_exchange_plan() rejects every way a plan can be wrong.
#include "route/exchange_plan.h"

#include <gtest/gtest.h>

#include "common.h"

namespace braid::route {
namespace {

// 4 ranks on a mesh, only 0 -> 1 sends `count` 4-byte elements.
struct HotPair {
  Router router;
  ExchangeLayout layout;
  Routing routing;
  explicit HotPair(size_t count) {
    EXPECT_EQ(router.init(testing::mesh(4)), Result::Success);
    layout.ranks = 4;
    layout.element_bytes = 4;
    layout.counts.assign(16, 0);
    layout.counts[1] = count;
    Traffic t(4);
    t.at(0, 1) = double(count * 4);
    EXPECT_EQ(router.solve(t, &routing), Result::Success);
  }
};

TEST(ExchangePlan, HotPairSplitsIntoDirectAndRelayRangesInOrder) {
  HotPair h(300001);
  ExchangePlan plan;
  ASSERT_EQ(build_exchange_plan(h.router, h.routing, h.layout, {}, &plan), Result::Success) << last_error();
  ASSERT_EQ(plan.transfers.size(), 3u);
  size_t next = 0;
  for (const Transfer& t : plan.transfers) {
    EXPECT_EQ(t.src, 0);
    EXPECT_EQ(t.dst, 1);
    EXPECT_EQ(t.begin, next);  // consecutive ranges of the block
    EXPECT_NEAR(double(t.bytes), 300001.0 * 4 / 3, 300001.0 * 4 * 0.03);
    next += t.bytes;
  }
  EXPECT_EQ(next, 300001u * 4);
  EXPECT_EQ(plan.transfers[0].via, -1);
  EXPECT_EQ(plan.transfers[1].via, 2);
  EXPECT_EQ(plan.transfers[2].via, 3);
  EXPECT_EQ(plan.scratch_bytes[2], plan.transfers[1].bytes);
  EXPECT_EQ(plan.scratch_bytes[0], 0u);
}

TEST(ExchangePlan, SmallRangesStayDirect) {
  HotPair h(1000);  // thirds of 4000 bytes: under the 4096-byte minimum
  ExchangePlan plan;
  ASSERT_EQ(build_exchange_plan(h.router, h.routing, h.layout, {}, &plan), Result::Success);
  ASSERT_EQ(plan.transfers.size(), 1u);
  EXPECT_EQ(plan.transfers[0].via, -1);
  EXPECT_EQ(plan.transfers[0].bytes, 4000u);
}

TEST(ExchangePlan, NicPathsAreCarriedDirect) {
  topo::Topology t;
  ASSERT_EQ(topo::load_topology(testing::nimble_path(), &t), Result::Success);
  Router r;
  ASSERT_EQ(r.init(t), Result::Success);
  ExchangeLayout layout{8, 2, std::vector<size_t>(64, 100000)};
  Routing routing;
  Traffic bytes(8);
  for (size_t i = 0; i < 64; ++i) bytes.bytes[i] = 200000;
  ASSERT_EQ(r.solve(bytes, &routing), Result::Success);
  ExchangePlan plan;
  ASSERT_EQ(build_exchange_plan(r, routing, layout, {}, &plan), Result::Success) << last_error();
  size_t between_servers = 0;
  for (const Transfer& tr : plan.transfers) {
    if (t.nodes[size_t(t.gpus()[size_t(tr.src)])].server == t.nodes[size_t(t.gpus()[size_t(tr.dst)])].server) continue;
    EXPECT_EQ(tr.via, -1);
    ++between_servers;
  }
  EXPECT_GE(between_servers, 32u);
}

TEST(ExchangePlan, CheckRejectsBrokenPlans) {
  HotPair h(300001);
  ExchangePlan good;
  ASSERT_EQ(build_exchange_plan(h.router, h.routing, h.layout, {}, &good), Result::Success);
  auto rejects = [&](auto&& breakage, const char* what) {
    ExchangePlan p = good;
    breakage(p);
    EXPECT_EQ(check_exchange_plan(p), Result::InvalidArgument) << what;
  };
  rejects([](ExchangePlan& p) { p.transfers[1].bytes -= 4; }, "a gap in the receive buffer");
  rejects([](ExchangePlan& p) { p.transfers[1].begin -= 4; }, "two ranges writing one byte");
  rejects([](ExchangePlan& p) { p.transfers[2].bytes += 4; }, "a range past its block");
  rejects([](ExchangePlan& p) { p.transfers[1].begin += 1, p.transfers[0].bytes += 1; }, "a range not of whole elements");
  rejects([](ExchangePlan& p) { p.transfers[1].via = 1; }, "a relay through the receiver");
  rejects([](ExchangePlan& p) { p.transfers[2].via = 2, p.scratch_bytes[2] += p.transfers[2].bytes; }, "two ranges in one scratch range");
  rejects([](ExchangePlan& p) { p.scratch_bytes[2] -= 4; }, "scratch too small");
  rejects([](ExchangePlan& p) { p.transfers.pop_back(); }, "a range never sent");
}

// The drop-in proves the plan of every routed call, so the proof must cost the ranges, not the
// bytes: a check that kept a map per byte (it did, and took 15 ms per 4 MB all-to-all on two H100s)
// could not even allocate one for blocks of 16 GiB.
TEST(ExchangePlan, ProofOfAHugeExchangeNeedsNoMapPerByte) {
  HotPair h(size_t(1) << 32);  // 16 GiB from rank 0 to rank 1
  ExchangePlan plan;
  ASSERT_EQ(build_exchange_plan(h.router, h.routing, h.layout, {}, &plan), Result::Success) << last_error();
  EXPECT_GT(plan.transfers.size(), 1u);
  ExchangePlan gap = plan;
  gap.transfers.back().bytes -= 4;
  EXPECT_EQ(check_exchange_plan(gap), Result::InvalidArgument);
}

}  // namespace
}  // namespace braid::route
