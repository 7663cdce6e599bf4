// Router solve time (route/router.h): 8 GPUs (NVLink full mesh; NIMBLE's 2 x 4 H100 testbed) and
// 16 GPUs x 4 NICs (4 servers of 4 GPUs, an NVLink mesh in each, one NIC per GPU), on a
// random all-to-all matrix and on a Zipf-skewed one. The Router is built once.
//  - cold: each iteration is a full solve from scratch (no warm start, hysteresis off);
//  - warm: iterations alternate between two matrices that differ by up to +-20% per flow (an MoE
//    layer's token counts from one step to the next), each solve starting from the previous
//    routing, as a training job's solves do.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <random>
#include <string>

#include "common.h"  // tests/route/common.h: the test topologies and matrices
#include "route/router.h"

namespace {

using namespace braid;

route::Traffic matrix(int n, bool zipf) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  route::Traffic t(n);
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) t.at(s, d) = 64e6 * (zipf ? 1.0 / (1 + d) : u(rng));
  return t;
}

void solve(benchmark::State& state, const topo::Topology& topo, bool zipf, bool warm = false) {
  route::Router r;
  route::RouterOptions opt;
  opt.hysteresis = -1;    // never keep the previous routing: time the whole solve
  opt.warm_start = warm;  // cold: from scratch every time
  if (r.init(topo, opt) != Result::Success) {
    state.SkipWithError(last_error());
    return;
  }
  const route::Traffic t = matrix(r.ranks(), zipf), t2 = route::testing::nudged(t, 20);
  route::Routing out;
  r.solve(t, &out);  // sizes `out`
  bool second = false;
  for (auto _ : state) {
    r.solve(warm && second ? t2 : t, &out);
    second = !second;
    benchmark::ClobberMemory();  // (DoNotOptimize on the double itself garbled it with this GCC)
  }
  state.counters["paths"] = r.total_paths();
  state.counters["links"] = r.link_count();
  state.counters["passes"] = out.passes;
  state.counters["max_ms"] = out.max_congestion * 1e3;
}

void BM_Mesh8(benchmark::State& s) { solve(s, route::testing::mesh(8, 120), s.range(0), s.range(1)); }
void BM_Nimble2x4(benchmark::State& s) {
  topo::Topology t;
  if (topo::load_topology("nimble-h100-2x4", &t) != Result::Success) {
    s.SkipWithError(last_error());
    return;
  }
  solve(s, t, s.range(0), s.range(1));
}
void BM_Cluster16x4Nic(benchmark::State& s) { solve(s, route::testing::cluster(4, 4), s.range(0), s.range(1)); }

BENCHMARK(BM_Mesh8)->ArgNames({"zipf", "warm"})->ArgsProduct({{0, 1}, {0, 1}})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Nimble2x4)->ArgNames({"zipf", "warm"})->ArgsProduct({{0, 1}, {0, 1}})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Cluster16x4Nic)->ArgNames({"zipf", "warm"})->ArgsProduct({{0, 1}, {0, 1}})->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
