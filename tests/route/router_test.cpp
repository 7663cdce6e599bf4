#include "route/router.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "common.h"

namespace braid::route {
namespace {

using testing::mesh;

TEST(RoutePaths, MeshHasDirectAndRelays) {
  PathSet ps;
  ASSERT_EQ(build_paths(mesh(4), {}, &ps), Result::Success);
  ASSERT_EQ(ps.ranks, 4);
  const auto& p = ps.of(0, 1);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].kind, PathKind::Direct);
  EXPECT_EQ(p[0].hops.size(), 1u);
  EXPECT_DOUBLE_EQ(p[0].hops[0].capacity, 100e9);
  EXPECT_EQ(p[1].kind, PathKind::Relay);
  EXPECT_EQ(p[1].hops.size(), 2u);
  PathSet direct_only;
  ASSERT_EQ(build_paths(mesh(4), {.relays = false}, &direct_only), Result::Success);
  EXPECT_EQ(direct_only.of(2, 3).size(), 1u);
}

TEST(RoutePaths, NimbleHasNicPathsBetweenServers) {
  topo::Topology t;
  ASSERT_EQ(topo::load_topology(testing::nimble_path(), &t), Result::Success) << last_error();
  PathSet ps;
  ASSERT_EQ(build_paths(t, {}, &ps), Result::Success) << last_error();
  ASSERT_EQ(ps.ranks, 8);
  EXPECT_EQ(ps.of(0, 1).size(), 3u);  // direct + 2 relays inside a server
  const auto& inter = ps.of(0, 5);
  ASSERT_EQ(inter.size(), 4u);        // one per rail
  for (const Path& p : inter) {
    EXPECT_EQ(p.kind, PathKind::Nic);
    EXPECT_GE(p.hops.size(), 4u);
  }
}

// n ranks, only src -> dst sends.
Traffic hot_pair(int n, int src, int dst, double bytes) {
  Traffic t(n);
  t.at(src, dst) = bytes;
  return t;
}

TEST(Router, HotPairSpreadsOverRelays) {
  Router r;
  ASSERT_EQ(r.init(mesh(4)), Result::Success);
  const Traffic t = hot_pair(4, 0, 1, 300e6);
  Routing out;
  ASSERT_EQ(r.solve(t, &out), Result::Success);
  const int o = r.path_offset(0, 1);
  ASSERT_EQ(r.path_count(0, 1), 3);
  for (int p = 0; p < 3; ++p) EXPECT_NEAR(out.fraction[size_t(o + p)], 1.0 / 3, 0.03) << p;
  // Optimum: 100 MB on each 100 GB/s link = 1 ms.
  EXPECT_NEAR(out.max_congestion, 1e-3, 0.03e-3);
}

TEST(Router, UniformAllToAllStaysMostlyDirect) {
  Router r;
  ASSERT_EQ(r.init(mesh(4)), Result::Success);
  Routing out;
  ASSERT_EQ(r.solve(testing::uniform(4, 100e6), &out), Result::Success);
  double direct = 0;
  for (int s = 0; s < 4; ++s)
    for (int d = 0; d < 4; ++d)
      if (s != d) direct += out.fraction[size_t(r.path_offset(s, d))];
  EXPECT_GT(direct / 12, 0.9);
  EXPECT_NEAR(out.max_congestion, 1e-3, 0.02e-3);
}

TEST(Router, Deterministic) {
  topo::Topology t;
  ASSERT_EQ(topo::load_topology(testing::nimble_path(), &t), Result::Success) << last_error();
  Router a, b;
  ASSERT_EQ(a.init(t), Result::Success);
  ASSERT_EQ(b.init(t), Result::Success);
  const Traffic tr = testing::zipf(8, 7);
  Routing ra, rb, rc;
  ASSERT_EQ(a.solve(tr, &ra), Result::Success);
  ASSERT_EQ(b.solve(testing::random_matrix(8, 1), &rb), Result::Success);  // b has history
  rb = Routing{};
  ASSERT_EQ(b.solve(tr, &rb), Result::Success);
  ASSERT_EQ(a.solve(tr, &rc), Result::Success);
  ASSERT_EQ(ra.fraction.size(), rb.fraction.size());
  EXPECT_EQ(std::memcmp(ra.fraction.data(), rb.fraction.data(), ra.fraction.size() * sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(ra.fraction.data(), rc.fraction.data(), ra.fraction.size() * sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(&ra.max_congestion, &rb.max_congestion, sizeof(double)), 0);
}

TEST(Router, FlowsBelowThresholdGoDirect) {
  Router r;
  RouterOptions opt;
  opt.direct_threshold = 1e6;
  ASSERT_EQ(r.init(mesh(4), opt), Result::Success);
  Traffic t(4);
  t.at(0, 1) = 0.5e6;  // small: direct even though it is the only flow
  t.at(2, 3) = 300e6;  // large: spread
  Routing out;
  ASSERT_EQ(r.solve(t, &out), Result::Success);
  EXPECT_EQ(out.fraction[size_t(r.path_offset(0, 1))], 1.0);
  EXPECT_EQ(out.fraction[size_t(r.path_offset(0, 1) + 1)], 0.0);
  EXPECT_LT(out.fraction[size_t(r.path_offset(2, 3))], 0.5);
}

TEST(Router, HysteresisKeepsPreviousUnlessMuchBetter) {
  Router r;
  RouterOptions opt;
  opt.hysteresis = 0.10;
  ASSERT_EQ(r.init(mesh(4), opt), Result::Success);
  Routing out;
  ASSERT_EQ(r.solve(testing::uniform(4, 100e6), &out), Result::Success);
  const std::vector<double> first = out.fraction;
  // Slightly different traffic: the old routing is within 10%, so it stays.
  Traffic t = testing::uniform(4, 100e6);
  t.at(0, 1) = 105e6;
  ASSERT_EQ(r.solve(t, &out), Result::Success);
  EXPECT_TRUE(out.kept_previous);
  EXPECT_EQ(out.fraction, first);
  EXPECT_NEAR(out.max_congestion, r.congestion(t, first), 1e-15);
  // A hot pair: the mostly-direct routing is far worse, so the new one replaces it.
  Traffic hot(4);
  hot.at(0, 1) = 300e6;
  ASSERT_EQ(r.solve(hot, &out), Result::Success);
  EXPECT_FALSE(out.kept_previous);
  EXPECT_NE(out.fraction, first);
  EXPECT_NEAR(out.max_congestion, 1e-3, 0.03e-3);
  // With no margin at all (hysteresis 0) a strictly better routing always wins.
  opt.hysteresis = 0;
  r.set_options(opt);
  ASSERT_EQ(r.solve(hot, &out), Result::Success);
  EXPECT_TRUE(out.kept_previous);  // same traffic: not strictly better
}

// After the first solve sized it, `out` is reused in place (solve allocates nothing).
TEST(Router, ReusesOutputStorage) {
  Router r;
  RouterOptions opt;
  opt.hysteresis = -1;  // always take the new routing
  ASSERT_EQ(r.init(mesh(4), opt), Result::Success);
  Routing out;
  ASSERT_EQ(r.solve(testing::uniform(4, 1e6), &out), Result::Success);
  const double* data = out.fraction.data();
  for (unsigned seed = 1; seed <= 4; ++seed) {
    ASSERT_EQ(r.solve(testing::random_matrix(4, seed), &out), Result::Success);
    EXPECT_FALSE(out.kept_previous);
    EXPECT_EQ(out.fraction.data(), data);
    for (int s = 0; s < 4; ++s)
      for (int d = 0; d < 4; ++d) {
        if (s == d) continue;
        double sum = 0;
        for (int p = 0; p < r.path_count(s, d); ++p) sum += out.fraction[size_t(r.path_offset(s, d) + p)];
        EXPECT_NEAR(sum, 1.0, 1e-12);
      }
  }
}

// Links the router drops as dominated (used only by paths through a link no wider) never set
// the max: its congestion equals the max over every directed link of every path.
TEST(Router, DroppedLinksNeverSetTheMax) {
  topo::Topology t;
  ASSERT_EQ(topo::load_topology(testing::nimble_path(), &t), Result::Success) << last_error();
  for (const topo::Topology& topo : {t, testing::cluster(4, 4)}) {
    Router r;
    ASSERT_EQ(r.init(topo), Result::Success);
    std::map<std::pair<int, bool>, double> load, capacity;
    for (const auto& pair : r.paths().pairs)
      for (const Path& p : pair)
        for (const DirLink& l : p.hops) capacity[{l.link, l.forward}] = l.capacity;
    EXPECT_LT(r.link_count(), int(capacity.size())) << topo.name;  // some were dropped
    const Traffic tr = testing::zipf(r.ranks(), 3, 2.0);
    Routing out;
    ASSERT_EQ(r.solve(tr, &out), Result::Success);
    for (int s = 0; s < r.ranks(); ++s)
      for (int d = 0; d < r.ranks(); ++d) {
        if (s == d) continue;
        for (int p = 0; p < r.path_count(s, d); ++p)
          for (const DirLink& l : r.paths().of(s, d)[size_t(p)].hops)
            load[{l.link, l.forward}] += tr.at(s, d) * out.fraction[size_t(r.path_offset(s, d) + p)];
      }
    double worst = 0;
    for (const auto& [link, bytes] : load) worst = std::max(worst, bytes / capacity[link]);
    EXPECT_NEAR(out.max_congestion, worst, worst * 1e-9) << topo.name;
  }
}

// Every pair gets a complete routing, idle ones included (on their first path), so a routing
// kept by hysteresis still carries a flow that starts later.
TEST(Router, IdlePairsAreRoutedToo) {
  Router r;
  ASSERT_EQ(r.init(mesh(4)), Result::Success);
  Traffic t = hot_pair(4, 0, 1, 300e6);
  Routing out;
  auto expect_complete = [&] {
    for (int s = 0; s < 4; ++s)
      for (int d = 0; d < 4; ++d) {
        if (s == d) continue;
        double sum = 0;
        for (int p = 0; p < r.path_count(s, d); ++p) sum += out.fraction[size_t(r.path_offset(s, d) + p)];
        EXPECT_NEAR(sum, 1.0, 1e-12) << s << "->" << d;
      }
  };
  ASSERT_EQ(r.solve(t, &out), Result::Success);
  expect_complete();
  EXPECT_EQ(out.fraction[size_t(r.path_offset(1, 0))], 1.0);
  // A new flow under the kept routing is counted, so the kept routing is not "better" by
  // ignoring it. 1 -> 0 uses the reverse of every link of 0 -> 1: both spread, 1 ms each.
  t.at(1, 0) = 300e6;
  ASSERT_EQ(r.solve(t, &out), Result::Success);
  expect_complete();
  EXPECT_NEAR(out.max_congestion, 1e-3, 0.03e-3);
}

// The previous routing is the start when the traffic moved little, not when it changed.
TEST(Router, WarmStartOnlyFromSimilarTraffic) {
  Router r;
  RouterOptions opt;
  opt.hysteresis = -1;
  ASSERT_EQ(r.init(mesh(8), opt), Result::Success);
  Routing out;
  const Traffic first = testing::zipf(8, 1);
  ASSERT_EQ(r.solve(first, &out), Result::Success);
  EXPECT_FALSE(out.warm);
  ASSERT_EQ(r.solve(testing::nudged(first, 20), &out), Result::Success);
  EXPECT_TRUE(out.warm);
  ASSERT_EQ(r.solve(testing::permutation(8, 2), &out), Result::Success);
  EXPECT_FALSE(out.warm);
  opt.warm_start = false;
  r.set_options(opt);
  ASSERT_EQ(r.solve(testing::nudged(testing::permutation(8, 2), 5), &out), Result::Success);
  EXPECT_FALSE(out.warm);
}

TEST(Router, RejectsWrongSize) {
  Router r;
  ASSERT_EQ(r.init(mesh(4)), Result::Success);
  Routing out;
  EXPECT_EQ(r.solve(Traffic(3), &out), Result::InvalidArgument);
}

}  // namespace
}  // namespace braid::route
