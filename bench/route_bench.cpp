// Router solve time (route/router.h): 8 GPUs (NVLink full mesh; NIMBLE's 2 x 4 H100 testbed) and
// 16 GPUs x 4 NICs (4 servers of 4 GPUs, an NVLink mesh in each, one NIC per GPU), on a
// random all-to-all matrix and on a Zipf-skewed one. The Router is built once; each iteration is
// one solve() with hysteresis off, so the full multiplicative-weights run is timed.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <random>
#include <string>

#include "route/router.h"

namespace {

using namespace braid;

topo::Topology mesh(int n) {
  topo::Topology t;
  t.nodes.push_back({0, topo::NodeKind::Numa, "numa0", 0, -1, 100, 8, ""});
  for (int i = 0; i < n; ++i) {
    t.nodes.push_back({1 + i, topo::NodeKind::Gpu, "gpu" + std::to_string(i), 0, 0, 1000, 0, ""});
    t.links.push_back({1 + i, 0, topo::LinkKind::Pcie, 53, 53, 1});
  }
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) t.links.push_back({1 + i, 1 + j, topo::LinkKind::NvLink, 120, 120, 0.5});
  return t;
}

// `servers` x `per` GPUs: NVLink mesh per server, each GPU and its NIC on one PCIe switch.
topo::Topology cluster(int servers, int per) {
  topo::Topology t;
  auto add = [&](topo::NodeKind k, const std::string& name, int server, int numa) {
    const int id = int(t.nodes.size());
    t.nodes.push_back({id, k, name, server, numa, 0, 0, ""});
    return id;
  };
  const int net = add(topo::NodeKind::Network, "network0", 0, -1);
  for (int s = 0; s < servers; ++s) {
    const int numa = add(topo::NodeKind::Numa, "numa" + std::to_string(s), s, -1);
    t.nodes[size_t(numa)].cores = 48, t.nodes[size_t(numa)].memory_gbps = 300;
    std::vector<int> gpus;
    for (int g = 0; g < per; ++g) {
      const std::string i = std::to_string(s * per + g);
      const int sw = add(topo::NodeKind::PcieSwitch, "sw" + i, s, numa);
      const int gpu = add(topo::NodeKind::Gpu, "gpu" + i, s, numa);
      const int nic = add(topo::NodeKind::Nic, "nic" + i, s, numa);
      t.links.push_back({sw, numa, topo::LinkKind::Pcie, 53, 53, 1});
      t.links.push_back({gpu, sw, topo::LinkKind::Pcie, 53, 53, 1});
      t.links.push_back({nic, sw, topo::LinkKind::Pcie, 50, 50, 1});
      t.links.push_back({nic, net, topo::LinkKind::Network, 50, 50, 3});
      gpus.push_back(gpu);
    }
    for (int a = 0; a < per; ++a)
      for (int b = a + 1; b < per; ++b) t.links.push_back({gpus[size_t(a)], gpus[size_t(b)], topo::LinkKind::NvLink, 120, 120, 0.5});
  }
  return t;
}

route::Traffic matrix(int n, bool zipf) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  route::Traffic t(n);
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) t.at(s, d) = 64e6 * (zipf ? 1.0 / (1 + d) : u(rng));
  return t;
}

void solve(benchmark::State& state, const topo::Topology& topo, bool zipf) {
  route::Router r;
  route::RouterOptions opt;
  opt.hysteresis = -1;  // never keep the previous routing: time the whole solve
  if (r.init(topo, opt) != Result::Success) {
    state.SkipWithError(last_error());
    return;
  }
  const route::Traffic t = matrix(r.ranks(), zipf);
  route::Routing out;
  r.solve(t, &out);  // sizes `out`
  for (auto _ : state) {
    r.solve(t, &out);
    benchmark::DoNotOptimize(out.max_congestion);
  }
  state.counters["paths"] = r.total_paths();
  state.counters["links"] = r.link_count();
}

void BM_Mesh8(benchmark::State& s) { solve(s, mesh(8), s.range(0)); }
void BM_Nimble2x4(benchmark::State& s) {
  topo::Topology t;
  if (topo::load_topology("nimble-h100-2x4", &t) != Result::Success) {
    s.SkipWithError(last_error());
    return;
  }
  solve(s, t, s.range(0));
}
void BM_Cluster16x4Nic(benchmark::State& s) { solve(s, cluster(4, 4), s.range(0)); }

BENCHMARK(BM_Mesh8)->ArgName("zipf")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Nimble2x4)->ArgName("zipf")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Cluster16x4Nic)->ArgName("zipf")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
