// Bundled topology files, JSON round trips and malformed files, routes and rank placement.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "common/result.h"
#include "common/settings.h"
#include "topo/topology.h"

namespace braid::topo {
namespace {

void expect_same(const Topology& a, const Topology& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.description, b.description);
  EXPECT_EQ(a.host_memcpy_gbps, b.host_memcpy_gbps);
  EXPECT_EQ(a.pcie_both_ways_gbps, b.pcie_both_ways_gbps);
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node& x = a.nodes[i];
    const Node& y = b.nodes[i];
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.kind, y.kind) << x.name;
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.server, y.server) << x.name;
    EXPECT_EQ(x.numa, y.numa) << x.name;
    EXPECT_EQ(x.memory_gbps, y.memory_gbps) << x.name;
    EXPECT_EQ(x.cores, y.cores) << x.name;
    EXPECT_EQ(x.pci_bus_id, y.pci_bus_id) << x.name;
  }
  ASSERT_EQ(a.links.size(), b.links.size());
  for (size_t i = 0; i < a.links.size(); ++i) {
    const Link& x = a.links[i];
    const Link& y = b.links[i];
    EXPECT_EQ(x.a, y.a) << i;
    EXPECT_EQ(x.b, y.b) << i;
    EXPECT_EQ(x.kind, y.kind) << i;
    EXPECT_EQ(x.gbps_ab, y.gbps_ab) << i;
    EXPECT_EQ(x.gbps_ba, y.gbps_ba) << i;
    EXPECT_EQ(x.latency_us, y.latency_us) << i;
  }
}

Topology load(const std::string& name) {
  Topology t;
  EXPECT_EQ(load_topology(name, &t), Result::Success) << name << ": " << last_error();
  return t;
}

int node_id(const Topology& t, const std::string& name) {
  for (const Node& n : t.nodes)
    if (n.name == name) return n.id;
  ADD_FAILURE() << "no node " << name;
  return -1;
}

// The node names a route visits, starting at `from`.
std::vector<std::string> route_names(const Topology& t, const std::string& from, const std::string& to) {
  int at = node_id(t, from);
  std::vector<std::string> names = {from};
  for (const Hop& h : t.route(at, node_id(t, to))) {
    const Link& l = t.links[h.link];
    EXPECT_EQ(h.forward ? l.a : l.b, at) << "route not contiguous";
    at = h.forward ? l.b : l.a;
    names.push_back(t.nodes[at].name);
  }
  return names;
}

int count_kind(const Topology& t, NodeKind kind) {
  int n = 0;
  for (const Node& node : t.nodes) n += node.kind == kind;
  return n;
}

struct Expected {
  int gpus, numas, nics, servers;
};

const std::map<std::string, Expected> kBundled = {
    {"h200x2", {2, 1, 0, 1}},          {"h200x4", {4, 1, 0, 1}},
    {"h200x8", {8, 2, 8, 1}},          {"hylink-3090x4", {4, 2, 0, 1}},
    {"flexlink-h800x8", {8, 2, 8, 1}}, {"nimble-h100-2x4", {8, 4, 8, 2}},
    {"fuselink-2x8", {16, 4, 16, 2}},  {"pcie-8gpu-2socket", {8, 2, 0, 1}},
};

TEST(Bundled, EveryFileIsListed) {
  std::vector<std::string> names = bundled_topologies();
  for (const auto& [name, expected] : kBundled)
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
}

TEST(Bundled, LoadCheckRoundTripAndCounts) {
  for (const auto& [name, expected] : kBundled) {
    SCOPED_TRACE(name);
    Topology t = load(name);
    EXPECT_EQ(t.name, name);
    EXPECT_FALSE(t.description.empty());
    EXPECT_EQ(t.check(), Result::Success) << last_error();
    EXPECT_EQ(t.gpu_count(), expected.gpus);
    EXPECT_EQ(static_cast<int>(t.numa_nodes().size()), expected.numas);
    EXPECT_EQ(count_kind(t, NodeKind::Nic), expected.nics);
    int max_server = 0;
    for (const Node& n : t.nodes) max_server = std::max(max_server, n.server);
    EXPECT_EQ(max_server + 1, expected.servers);

    Topology again;
    std::string text = save_topology_json(t);
    ASSERT_EQ(load_topology_json(text, &again), Result::Success) << last_error();
    expect_same(t, again);
    EXPECT_EQ(save_topology_json(again), text);  // saving is stable

    // Every GPU reaches its NUMA node in one PCIe hop, or two through its PCIe switch.
    for (int gpu : t.gpus()) {
      std::vector<Hop> path = t.route(gpu, t.numa_of(gpu));
      ASSERT_FALSE(path.empty());
      EXPECT_LE(path.size(), 2u);
      for (const Hop& h : path) EXPECT_EQ(t.links[h.link].kind, LinkKind::Pcie);
      if (path.size() == 2) {
        const Link& first = t.links[path[0].link];
        EXPECT_EQ(t.nodes[path[0].forward ? first.b : first.a].kind, NodeKind::PcieSwitch);
      }
    }
  }
}

TEST(Bundled, H200Figures) {
  Topology t = load("h200x2");
  ASSERT_EQ(t.gpu_count(), 2);
  std::vector<Hop> p = t.route(t.gpus()[0], t.gpus()[1]);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(t.links[p[0].link].kind, LinkKind::NvLink);
  EXPECT_NEAR(t.hop_gbps(p[0]), 18 * 26.6, 1e-9);
  std::vector<Hop> down = t.route(t.numa_nodes()[0], t.gpus()[1]);
  ASSERT_EQ(down.size(), 1u);
  EXPECT_EQ(t.hop_gbps(down[0]), 55.0);
  EXPECT_EQ(t.pcie_both_ways_gbps, 38.0);
  EXPECT_EQ(t.nodes[t.numa_nodes()[0]].cores, 32);
  EXPECT_EQ(t.nodes[t.numa_nodes()[0]].memory_gbps, 150.0);
}

TEST(Route, HylinkGpuToGpuStagesThroughHosts) {
  Topology t = load("hylink-3090x4");
  EXPECT_EQ(route_names(t, "gpu0", "gpu1"), (std::vector<std::string>{"gpu0", "numa0", "gpu1"}));
  EXPECT_EQ(route_names(t, "gpu1", "gpu2"), (std::vector<std::string>{"gpu1", "numa0", "numa1", "gpu2"}));
  std::vector<Hop> across = t.route(node_id(t, "numa0"), node_id(t, "numa1"));
  ASSERT_EQ(across.size(), 1u);
  EXPECT_EQ(t.links[across[0].link].kind, LinkKind::InterSocket);
  EXPECT_EQ(t.hop_gbps(across[0]), 50.0);
}

TEST(Route, NumaToNumaCrossesInterSocketEverywhere) {
  for (const auto& [name, expected] : kBundled) {
    SCOPED_TRACE(name);
    Topology t = load(name);
    std::vector<int> numas = t.numa_nodes();
    if (numas.size() < 2) continue;
    std::vector<Hop> p = t.route(numas[0], numas[1]);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(t.links[p[0].link].kind, LinkKind::InterSocket);
  }
}

TEST(Route, CrossServerHostToHostUsesNicsAndNetwork) {
  Topology t = load("nimble-h100-2x4");
  std::vector<std::string> names = route_names(t, "numa0", "numa2");
  // numa -> switch -> nic -> network -> nic -> switch -> numa: 6 hops.
  ASSERT_EQ(names.size(), 7u);
  EXPECT_EQ(t.nodes[node_id(t, names[1])].kind, NodeKind::PcieSwitch);
  EXPECT_EQ(t.nodes[node_id(t, names[2])].kind, NodeKind::Nic);
  EXPECT_EQ(names[3], "network0");
  EXPECT_EQ(t.nodes[node_id(t, names[4])].kind, NodeKind::Nic);
  EXPECT_EQ(t.nodes[node_id(t, names[4])].server, 1);
  EXPECT_EQ(t.nodes[node_id(t, names[5])].kind, NodeKind::PcieSwitch);
  // Deterministic: the same route every time.
  EXPECT_EQ(route_names(t, "numa0", "numa2"), names);

  Topology f = load("fuselink-2x8");
  names = route_names(f, "numa1", "numa3");
  ASSERT_GE(names.size(), 5u);
  EXPECT_NE(std::find(names.begin(), names.end(), "network0"), names.end());
  int nics = 0;
  for (const std::string& n : names) nics += f.nodes[node_id(f, n)].kind == NodeKind::Nic;
  EXPECT_EQ(nics, 2);
}

TEST(Route, IntraServerPrefersHostOverNetworkLoop) {
  // gpu0 -> nic1 ties at 4 hops and 50 GB/s between the host path and a loop out through nic0
  // and the network; the lower latency keeps it inside the server.
  Topology t = load("nimble-h100-2x4");
  EXPECT_EQ(route_names(t, "gpu0", "nic1"),
            (std::vector<std::string>{"gpu0", "sw0", "numa0", "sw1", "nic1"}));
}

TEST(Route, NeverThroughAGpuOrSideways) {
  Topology t = load("nimble-h100-2x4");
  // Within a server, a NIC must not relay between switches: gpu0's data to numa1 goes by the
  // host, not through nic0.
  for (int from = 0; from < static_cast<int>(t.nodes.size()); ++from) {
    for (int to = 0; to < static_cast<int>(t.nodes.size()); ++to) {
      if (from == to) continue;
      std::vector<Hop> p = t.route(from, to);
      int at = from;
      for (size_t i = 0; i < p.size(); ++i) {
        const Link& l = t.links[p[i].link];
        at = p[i].forward ? l.b : l.a;
        if (i + 1 == p.size()) break;
        const Node& mid = t.nodes[at];
        ASSERT_NE(mid.kind, NodeKind::Gpu) << t.nodes[from].name << "->" << t.nodes[to].name;
        if (mid.kind == NodeKind::Nic) {
          bool touches_network = l.kind == LinkKind::Network || t.links[p[i + 1].link].kind == LinkKind::Network;
          ASSERT_TRUE(touches_network) << t.nodes[from].name << "->" << t.nodes[to].name;
        }
      }
      if (!p.empty()) {
        EXPECT_EQ(at, to);
      }
    }
  }
}

TEST(Route, TieBrokenByWidestBottleneck) {
  // Two 2-hop paths a -> x -> b (narrow) and a -> y -> b (wide), listed narrow first.
  const char* text = R"({"name":"tie","nodes":[
      {"name":"a","kind":"numa"},{"name":"b","kind":"numa"},
      {"name":"x","kind":"pcie_switch"},{"name":"y","kind":"pcie_switch"}],
    "links":[{"a":"a","b":"x","kind":"pcie","gbps_ab":10},{"a":"x","b":"b","kind":"pcie","gbps_ab":10},
             {"a":"a","b":"y","kind":"pcie","gbps_ab":30},{"a":"y","b":"b","kind":"pcie","gbps_ab":20,"gbps_ba":5}]})";
  Topology t;
  ASSERT_EQ(load_topology_json(text, &t), Result::Success) << last_error();
  EXPECT_EQ(route_names(t, "a", "b"), (std::vector<std::string>{"a", "y", "b"}));
  // Backwards y's 5 GB/s loses to x's 10.
  EXPECT_EQ(route_names(t, "b", "a"), (std::vector<std::string>{"b", "x", "a"}));
  EXPECT_TRUE(t.route(0, 0).empty());
  EXPECT_TRUE(t.route(0, 99).empty());
}

TEST(Ranks, Placement) {
  Topology hylink = load("hylink-3090x4");
  EXPECT_EQ(rank_numa(hylink, 4), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(rank_numa(hylink, 6), (std::vector<int>{0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(rank_gpu(hylink, 5), (std::vector<int>{hylink.gpus()[0], hylink.gpus()[1], hylink.gpus()[2],
                                                    hylink.gpus()[3], hylink.gpus()[0]}));
  Topology h200 = load("h200x2");
  EXPECT_EQ(rank_numa(h200, 6), std::vector<int>(6, 0));
  Topology flex = load("flexlink-h800x8");
  EXPECT_EQ(rank_numa(flex, 8), (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  Topology fuse = load("fuselink-2x8");
  std::vector<int> fuse_numa = rank_numa(fuse, 16);
  EXPECT_EQ(fuse_numa[0], 0);
  EXPECT_EQ(fuse_numa[4], 1);
  EXPECT_EQ(fuse_numa[8], 2);
  EXPECT_EQ(fuse_numa[15], 3);

  Topology cpu_only;
  ASSERT_EQ(load_topology_json(R"({"name":"c","nodes":[{"name":"numa0","kind":"numa"},
      {"name":"numa1","kind":"numa"}],"links":[{"a":"numa0","b":"numa1","kind":"inter_socket","gbps_ab":9}]})",
                               &cpu_only),
            Result::Success)
      << last_error();
  EXPECT_EQ(rank_numa(cpu_only, 3), std::vector<int>(3, 0));
  EXPECT_EQ(rank_gpu(cpu_only, 2), std::vector<int>(2, -1));
}

// Each bad file must fail with InvalidArgument and a message containing `needle`.
void expect_bad(const std::string& text, const std::string& needle) {
  Topology t;
  t.name = "untouched";
  EXPECT_EQ(load_topology_json(text, &t), Result::InvalidArgument) << text;
  std::string message = last_error();
  EXPECT_NE(message.find(needle), std::string::npos) << "message '" << message << "' lacks '" << needle << "'";
  EXPECT_EQ(t.name, "untouched");  // output untouched on failure
}

TEST(Json, MalformedFilesNameTheProblem) {
  expect_bad("{ not json", "not valid JSON");
  expect_bad("[]", "object");
  expect_bad(R"({"name":"x"})", "nodes");
  expect_bad(R"({"nodes":[{"name":"g","kind":"tpu"}]})", "unknown kind 'tpu'");
  expect_bad(R"({"nodes":[{"kind":"gpu"}]})", "'name'");
  expect_bad(R"({"nodes":[{"name":"n","kind":"numa"},{"name":"n","kind":"numa"}]})", "duplicate node name 'n'");
  expect_bad(R"({"nodes":[{"name":"g","kind":"gpu","numa":"nowhere"}]})", "unknown node 'nowhere'");
  expect_bad(R"({"nodes":[{"name":"s","kind":"pcie_switch"},{"name":"g","kind":"gpu","numa":"s"}]})",
             "not a numa node");
  expect_bad(R"({"nodes":[{"name":"n","kind":"numa","cores":-4}]})", "cores");
  expect_bad(R"({"nodes":[{"name":"n","kind":"numa","memory_gbps":"fast"}]})", "memory_gbps");
  expect_bad(R"({"nodes":[{"name":"n","kind":"numa"},{"name":"g","kind":"gpu","numa":"n"}],
      "links":[{"a":"g","b":"n","kind":"pcie","gbps_ab":-1}]})",
             "negative");
  expect_bad(R"({"nodes":[{"name":"n","kind":"numa"}],"links":[{"a":"n","b":"ghost","kind":"pcie","gbps_ab":1}]})",
             "unknown node 'ghost'");
  expect_bad(R"({"nodes":[{"name":"n","kind":"numa"},{"name":"m","kind":"numa"}],
      "links":[{"a":"n","b":"m","kind":"warp","gbps_ab":1}]})",
             "unknown kind 'warp'");
  expect_bad(R"({"nodes":[{"name":"n","kind":"numa"},{"name":"m","kind":"numa"}],
      "links":[{"a":"n","b":"m","kind":"pcie"}]})",
             "gbps_ab");
  expect_bad(R"({"nodes":[{"name":"n","kind":"numa"}],"links":[{"a":"n","b":"n","kind":"pcie","gbps_ab":1}]})",
             "itself");
  // A GPU with no way to its NUMA node fails check().
  expect_bad(R"({"nodes":[{"name":"n","kind":"numa"},{"name":"g","kind":"gpu","numa":"n"}]})", "gpu 'g'");
}

TEST(Json, CheckCatchesHandBuiltMistakes) {
  Topology t = load("h200x2");
  ASSERT_EQ(t.check(), Result::Success);
  Topology bad_id = t;
  bad_id.nodes[1].id = 7;
  EXPECT_EQ(bad_id.check(), Result::InvalidArgument);
  Topology bad_end = t;
  bad_end.links[0].b = 42;
  EXPECT_EQ(bad_end.check(), Result::InvalidArgument);
  Topology bad_cap = t;
  bad_cap.links[0].gbps_ba = -3;
  EXPECT_EQ(bad_cap.check(), Result::InvalidArgument);
  Topology cut = t;
  cut.links.erase(cut.links.begin());  // gpu0 loses its PCIe link; NVLink to gpu1 does not count
  EXPECT_EQ(cut.check(), Result::InvalidArgument);
  EXPECT_NE(std::string(last_error()).find("gpu0"), std::string::npos) << last_error();
}

TEST(Files, LoadByPathAndTopoDir) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("braid_topo_dir_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Topology t = load("hylink-3090x4");
  t.name = "my-machine";
  { std::ofstream(dir / "my-machine.json") << save_topology_json(t); }
  Topology by_path;
  ASSERT_EQ(load_topology((dir / "my-machine.json").string(), &by_path), Result::Success) << last_error();
  expect_same(t, by_path);

  ::setenv("BRAID_TOPO_DIR", dir.c_str(), 1);
  settings_reload();
  Topology by_name;
  EXPECT_EQ(load_topology("my-machine", &by_name), Result::Success) << last_error();
  expect_same(t, by_name);
  std::vector<std::string> names = bundled_topologies();
  EXPECT_NE(std::find(names.begin(), names.end(), "my-machine"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "h200x2"), names.end());
  ::unsetenv("BRAID_TOPO_DIR");
  settings_reload();

  Topology missing;
  EXPECT_EQ(load_topology("no-such-machine", &missing), Result::InvalidArgument);
  EXPECT_NE(std::string(last_error()).find("no-such-machine"), std::string::npos);
  EXPECT_EQ(load_topology("/nonexistent/x.json", &missing), Result::InvalidArgument);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace braid::topo
