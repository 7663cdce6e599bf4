// Recognising an exchange from grouped ncclSend/ncclRecv calls (route/grouped_exchange.h): NCCL's
// matching rule (the k-th send to a peer matches that peer's k-th receive), and every way a group
// can fail to match is refused by every rank alike.
#include "route/grouped_exchange.h"

#include <gtest/gtest.h>

#include <string>

#include "route/router.h"
#include "common.h"

namespace braid::route {
namespace {

char g_buffers[64][16];  // distinct addresses for the calls' buffers
void* buf(int i) { return g_buffers[i]; }

PeerCall send(int peer, size_t bytes, int b = 0) { return {PeerCall::Send, peer, buf(b), bytes}; }
PeerCall recv(int peer, size_t bytes, int b = 0) { return {PeerCall::Recv, peer, buf(b), bytes}; }

// Every rank's calls through sort/summarize, then the agreement over all summaries.
Result agree(const std::vector<std::vector<PeerCall>>& calls, ExchangeLayout* layout) {
  const int n = int(calls.size());
  std::vector<uint64_t> all;
  for (int r = 0; r < n; ++r) {
    RankFlows flows;
    const Result sorted = sort_into_flows(r, n, calls[size_t(r)], &flows);
    if (sorted != Result::Success) return sorted;
    const std::vector<uint64_t> mine = summarize(flows);
    EXPECT_EQ(mine.size(), size_t(n) * kSummaryWords);
    all.insert(all.end(), mine.begin(), mine.end());
  }
  return agree_on_exchange(n, all, layout);
}

TEST(GroupedExchange, SeveralSendsToOnePeerAreFlowsInCallOrder) {
  RankFlows flows;
  ASSERT_EQ(sort_into_flows(0, 3, {send(1, 100, 1), recv(2, 7, 2), send(2, 5, 3), send(1, 300, 4), recv(2, 9, 5)}, &flows),
            Result::Success);
  ASSERT_EQ(flows.sends[1].size(), 2u);
  EXPECT_EQ(flows.sends[1][0].data, buf(1));
  EXPECT_EQ(flows.sends[1][0].bytes, 100u);
  EXPECT_EQ(flows.sends[1][1].data, buf(4));
  EXPECT_EQ(flows.sends[1][1].bytes, 300u);
  ASSERT_EQ(flows.recvs[2].size(), 2u);
  EXPECT_EQ(flows.recvs[2][1].data, buf(5));
  EXPECT_TRUE(flows.sends[0].empty());

  ExchangeLayout layout;
  ASSERT_EQ(agree({{send(1, 100), send(1, 300)}, {recv(0, 100), recv(0, 300)}, {}}, &layout), Result::Success) << last_error();
  EXPECT_EQ(layout.ranks, 3);
  EXPECT_EQ(layout.element_bytes, 1u);
  EXPECT_EQ(layout.block_bytes(0, 1), 400u);  // the pair's block: its flows one after another
  EXPECT_EQ(layout.block_bytes(1, 0), 0u);
  EXPECT_EQ(largest_flow_bytes(layout), 400u);
}

TEST(GroupedExchange, SelfSendsMatchTheRanksOwnReceives) {
  ExchangeLayout layout;
  ASSERT_EQ(agree({{send(0, 64), recv(0, 64), send(1, 8)}, {recv(0, 8)}}, &layout), Result::Success) << last_error();
  EXPECT_EQ(layout.block_bytes(0, 0), 64u);
  EXPECT_EQ(largest_flow_bytes(layout), 8u) << "a rank's own block is no flow between GPUs";
  EXPECT_EQ(agree({{send(0, 64), recv(0, 32)}, {}}, &layout), Result::InvalidArgument);
}

TEST(GroupedExchange, EmptyCallsKeepTheirPlaceInTheMatching) {
  ExchangeLayout layout;
  // 0 bytes then 10 on both ends: they match flow by flow.
  ASSERT_EQ(agree({{send(1, 0), send(1, 10)}, {recv(0, 0), recv(0, 10)}}, &layout), Result::Success) << last_error();
  EXPECT_EQ(layout.block_bytes(0, 1), 10u);
  // An empty send the peer never receives: the totals agree, the calls do not.
  EXPECT_EQ(agree({{send(1, 0), send(1, 10)}, {recv(0, 10)}}, &layout), Result::InvalidArgument);
  EXPECT_NE(std::string(last_error()).find("call by call"), std::string::npos) << last_error();
  // A group of empty calls only is an exchange of nothing.
  ASSERT_EQ(agree({{send(1, 0)}, {recv(0, 0)}}, &layout), Result::Success);
  EXPECT_EQ(largest_flow_bytes(layout), 0u);
}

TEST(GroupedExchange, MixedDatatypesMatchByBytes) {
  // 8 floats sent, 32 int8 received, then 3 doubles against 6 halves... as NCCL moves bytes.
  ExchangeLayout layout;
  ASSERT_EQ(agree({{send(1, 8 * 4), send(1, 3 * 8)}, {recv(0, 32 * 1), recv(0, 12 * 2)}}, &layout), Result::Success)
      << last_error();
  EXPECT_EQ(layout.block_bytes(0, 1), 56u);
}

TEST(GroupedExchange, MismatchedSizesAreRefusedNamingThePair) {
  ExchangeLayout layout;
  EXPECT_EQ(agree({{send(2, 4096)}, {}, {recv(0, 2048)}}, &layout), Result::InvalidArgument);
  const std::string text = last_error();
  EXPECT_NE(text.find("rank 0 sends rank 2 4096 bytes"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 2 receives 2048 bytes"), std::string::npos) << text;
  // Same total, sizes swapped: the k-th send does not match the k-th receive.
  EXPECT_EQ(agree({{send(1, 10), send(1, 20)}, {recv(0, 20), recv(0, 10)}}, &layout), Result::InvalidArgument);
  // A send with no receive at all.
  EXPECT_EQ(agree({{send(1, 10)}, {}}, &layout), Result::InvalidArgument);
  // A peer outside the communicator.
  RankFlows flows;
  EXPECT_EQ(sort_into_flows(0, 2, {send(2, 1)}, &flows), Result::InvalidArgument);
  EXPECT_EQ(sort_into_flows(0, 2, {recv(-1, 1)}, &flows), Result::InvalidArgument);
  // Summaries of the wrong size.
  EXPECT_EQ(agree_on_exchange(2, std::vector<uint64_t>(3), &layout), Result::InvalidArgument);
}

TEST(GroupedExchange, AlltoAllLayoutIsPackedWithEqualCounts) {
  const ExchangeLayout l = alltoall_layout(4, 1000, 4);
  EXPECT_EQ(l.block_bytes(2, 3), 4000u);
  EXPECT_EQ(l.send_offset(1, 2), 8000u);
  EXPECT_EQ(l.recv_offset(3, 0), 12000u);
  EXPECT_EQ(largest_flow_bytes(l), 4000u);
}

TEST(GroupedExchange, RelayedRangesCountOnlyRelays) {
  Router router;
  ASSERT_EQ(router.init(testing::mesh(4)), Result::Success);
  ExchangeLayout layout{4, 1, std::vector<size_t>(16, 0)};
  layout.counts[1] = 8 << 20;  // one hot pair: relays pay
  Traffic t(4);
  t.at(0, 1) = double(8 << 20);
  Routing routing;
  ASSERT_EQ(router.solve(t, &routing), Result::Success);
  ExchangePlan plan;
  ASSERT_EQ(build_exchange_plan(router, routing, layout, {}, &plan), Result::Success) << last_error();
  EXPECT_EQ(relayed_ranges(plan), 2u);
  // A uniform exchange keeps every flow direct on a mesh.
  ExchangeLayout uniform = alltoall_layout(4, 1 << 20, 1);
  Traffic u(4);
  for (double& b : u.bytes) b = double(1 << 20);
  Routing flat;
  ASSERT_EQ(router.solve(u, &flat), Result::Success);
  ASSERT_EQ(build_exchange_plan(router, flat, uniform, {}, &plan), Result::Success) << last_error();
  EXPECT_EQ(relayed_ranges(plan), 0u);
}

TEST(GroupedExchange, TopologyForRanksKeepsTheFirstGpus) {
  topo::Topology t;
  ASSERT_EQ(topo::load_topology(std::string(BRAID_SOURCE_DIR) + "/topologies/nimble-h100-2x4.json", &t), Result::Success)
      << last_error();
  topo::Topology four;
  ASSERT_EQ(topology_for_ranks(t, 4, &four), Result::Success) << last_error();
  EXPECT_EQ(four.gpu_count(), 4);
  // The first server's NVLink mesh: every pair of the 4 ranks has two relays.
  Router router;
  ASSERT_EQ(router.init(four), Result::Success) << last_error();
  EXPECT_EQ(router.ranks(), 4);
  int relays = 0;
  for (const Path& p : router.paths().of(0, 1)) relays += p.kind == PathKind::Relay ? 1 : 0;
  EXPECT_EQ(relays, 2);
  EXPECT_EQ(topology_for_ranks(t, 9, &four), Result::InvalidArgument);
}

// The rig's route suite routes on bench/rig/route-mesh4.json: a uniform all-to-all (ncclAlltoAll)
// must relay there at 4 ranks, or the suite would exercise no relay.
TEST(GroupedExchange, RigMeshRelaysAUniformAlltoAll) {
  topo::Topology t, four;
  ASSERT_EQ(topo::load_topology(std::string(BRAID_SOURCE_DIR) + "/bench/rig/route-mesh4.json", &t), Result::Success)
      << last_error();
  for (int n : {2, 3, 4}) {
    ASSERT_EQ(topology_for_ranks(t, n, &four), Result::Success) << last_error();
    Router router;
    RouterOptions options;
    options.direct_threshold = double(1 << 20);
    ASSERT_EQ(router.init(four, options), Result::Success) << last_error();
    Routing routing;
    ExchangePlan plan;
    ASSERT_EQ(route_exchange(router, alltoall_layout(n, 16 << 20, 4), {}, &routing, &plan), Result::Success)
        << last_error();
    if (n == 2) EXPECT_EQ(relayed_ranges(plan), 0u) << "two ranks have no third GPU to relay through";
    else EXPECT_GT(relayed_ranges(plan), 0u) << n << " ranks";
  }
}

// The drop-in never talks about the plan: each rank's router must reach the same one from the same
// calls. Two routers (two ranks) through the same run of all-to-alls, sizes changing (warm starts,
// hysteresis), must agree transfer by transfer.
TEST(GroupedExchange, RanksMakingTheSameCallsBuildTheSamePlans) {
  topo::Topology t, four;
  ASSERT_EQ(topo::load_topology(std::string(BRAID_SOURCE_DIR) + "/bench/rig/route-mesh4.json", &t), Result::Success);
  ASSERT_EQ(topology_for_ranks(t, 4, &four), Result::Success);
  Router a, b;
  ASSERT_EQ(a.init(four), Result::Success);
  ASSERT_EQ(b.init(four), Result::Success);
  Routing ra, rb;
  for (size_t count : {size_t(1) << 18, size_t(1) << 20, size_t(3) << 19, size_t(1) << 22, size_t(1) << 20}) {
    ExchangePlan pa, pb;
    ASSERT_EQ(route_exchange(a, alltoall_layout(4, count, 2), {}, &ra, &pa), Result::Success) << last_error();
    ASSERT_EQ(route_exchange(b, alltoall_layout(4, count, 2), {}, &rb, &pb), Result::Success) << last_error();
    EXPECT_EQ(pa.transfers, pb.transfers) << "count " << count;
    EXPECT_EQ(pa.scratch_bytes, pb.scratch_bytes);
    EXPECT_GT(relayed_ranges(pa), 0u);
  }
}

}  // namespace
}  // namespace braid::route
