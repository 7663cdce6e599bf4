// Topologies and traffic matrices shared by the route tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>
#include <string>

#include "route/matrices.h"
#include "topo/topology.h"

namespace braid::route::testing {

// n GPUs, every pair joined by one link of `gbps` each way, on one NUMA node.
inline topo::Topology mesh(int n, double gbps = 100) {
  topo::Topology t;
  t.name = "mesh" + std::to_string(n);
  t.nodes.push_back({0, topo::NodeKind::Numa, "numa0", 0, -1, 100, 8, ""});
  for (int i = 0; i < n; ++i) {
    const int id = int(t.nodes.size());
    t.nodes.push_back({id, topo::NodeKind::Gpu, "gpu" + std::to_string(i), 0, 0, 1000, 0, ""});
    t.links.push_back({id, 0, topo::LinkKind::Pcie, 25, 25, 1});
  }
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) t.links.push_back({1 + i, 1 + j, topo::LinkKind::NvLink, gbps, gbps, 0.5});
  return t;
}

// `servers` x `per` GPUs: an NVLink mesh of `gbps` per server, each GPU and its NIC (50 GB/s)
// on one PCIe switch, all NICs joined by one network node.
inline topo::Topology cluster(int servers, int per, double gbps = 120) {
  topo::Topology t;
  t.name = "cluster" + std::to_string(servers) + "x" + std::to_string(per);
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
      for (int b = a + 1; b < per; ++b)
        t.links.push_back({gpus[size_t(a)], gpus[size_t(b)], topo::LinkKind::NvLink, gbps, gbps, 0.5});
  }
  return t;
}

inline std::string nimble_path() { return std::string(BRAID_SOURCE_DIR) + "/topologies/nimble-h100-2x4.json"; }

// The traffic matrices of route/matrices.h, under the names the tests use.
using route::nudged;
using route::one_hot_expert;
using route::permutation;
using route::random_matrix;
using route::uniform;
using route::zipf;

}  // namespace braid::route::testing
