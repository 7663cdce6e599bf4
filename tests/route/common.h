// Topologies and traffic matrices shared by the route tests.
#pragma once

#include <cmath>
#include <algorithm>
#include <random>
#include <vector>
#include <string>

#include "route/traffic.h"
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

inline std::string nimble_path() { return std::string(BRAID_SOURCE_DIR) + "/topologies/nimble-h100-2x4.json"; }

inline Traffic uniform(int n, double bytes) {
  Traffic t(n);
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) t.at(s, d) = bytes;
  return t;
}

inline Traffic random_matrix(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Traffic t(n);
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) t.at(s, d) = u(rng) * 64e6;
  return t;
}

// Each destination's popularity follows Zipf(1.2); each source sends in proportion.
inline Traffic zipf(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  std::vector<int> rank(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) rank[size_t(i)] = i;
  std::shuffle(rank.begin(), rank.end(), rng);
  Traffic t(n);
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) t.at(s, d) = 64e6 * u(rng) / std::pow(double(rank[size_t(d)] + 1), 1.2);
  return t;
}

// MoE with one hot expert on rank `hot`: every rank sends most of its tokens there.
inline Traffic one_hot_expert(int n, int hot) {
  Traffic t(n);
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) t.at(s, d) = d == hot ? 128e6 : 8e6;
  return t;
}

// rank s sends only to perm[s].
inline Traffic permutation(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int> perm(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) perm[size_t(i)] = i;
  do std::shuffle(perm.begin(), perm.end(), rng);
  while ([&] { for (int i = 0; i < n; ++i) if (perm[size_t(i)] == i) return true; return false; }());
  Traffic t(n);
  for (int s = 0; s < n; ++s) t.at(s, perm[size_t(s)]) = 256e6;
  return t;
}

}  // namespace braid::route::testing
