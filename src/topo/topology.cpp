// Topology queries, the graph check and the rank -> GPU / NUMA placement.
#include "topo/topology.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "topo/names.h"

namespace braid::topo {

std::vector<int> Topology::gpus() const {
  std::vector<int> ids;
  for (const Node& n : nodes)
    if (n.kind == NodeKind::Gpu) ids.push_back(n.id);
  return ids;
}

std::vector<int> Topology::numa_nodes() const {
  std::vector<int> ids;
  for (const Node& n : nodes)
    if (n.kind == NodeKind::Numa) ids.push_back(n.id);
  return ids;
}

int Topology::gpu_count() const { return static_cast<int>(gpus().size()); }

bool Topology::has_nvlink() const {
  return std::any_of(links.begin(), links.end(), [](const Link& l) { return l.kind == LinkKind::NvLink; });
}

int Topology::numa_of(int node) const {
  if (node < 0 || node >= static_cast<int>(nodes.size())) return -1;
  const Node& n = nodes[node];
  if (n.kind == NodeKind::Numa) return n.id;
  if (n.numa >= 0) return n.numa;
  // Not declared: the NUMA node of the same server that the fewest hops reach.
  int best = -1;
  size_t best_hops = 0;
  for (int numa : numa_nodes()) {
    if (nodes[numa].server != n.server) continue;
    std::vector<Hop> path = route(node, numa);
    if (path.empty()) continue;
    if (best < 0 || path.size() < best_hops) {
      best = numa;
      best_hops = path.size();
    }
  }
  return best;
}

int Topology::numa_index(int numa_node_id) const {
  std::vector<int> numas = numa_nodes();
  for (size_t i = 0; i < numas.size(); ++i)
    if (numas[i] == numa_node_id) return static_cast<int>(i);
  return -1;
}

double Topology::hop_gbps(const Hop& h) const {
  if (h.link < 0 || h.link >= static_cast<int>(links.size())) return 0;
  const Link& l = links[h.link];
  return h.forward ? l.gbps_ab : l.gbps_ba;
}

namespace {

bool finite_non_negative(double v) { return std::isfinite(v) && v >= 0; }

}  // namespace

Result Topology::check() const {
  const int node_count = static_cast<int>(nodes.size());
  std::set<std::string> names;
  for (int i = 0; i < node_count; ++i) {
    const Node& n = nodes[i];
    if (n.id != i)
      return fail(Result::InvalidArgument, "topology '%s': node '%s' has id %d but sits at position %d",
                  name.c_str(), n.name.c_str(), n.id, i);
    if (n.name.empty())
      return fail(Result::InvalidArgument, "topology '%s': node %d has an empty name", name.c_str(), i);
    if (!names.insert(n.name).second)
      return fail(Result::InvalidArgument, "topology '%s': duplicate node name '%s'", name.c_str(),
                  n.name.c_str());
    if (n.server < 0)
      return fail(Result::InvalidArgument, "topology '%s': node '%s' has negative server %d",
                  name.c_str(), n.name.c_str(), n.server);
    if (!finite_non_negative(n.memory_gbps))
      return fail(Result::InvalidArgument, "topology '%s': node '%s' has invalid memory_gbps %g",
                  name.c_str(), n.name.c_str(), n.memory_gbps);
    if (n.cores < 0)
      return fail(Result::InvalidArgument, "topology '%s': node '%s' has negative cores %d",
                  name.c_str(), n.name.c_str(), n.cores);
    if (n.numa != -1) {
      if (n.numa < 0 || n.numa >= node_count || nodes[n.numa].kind != NodeKind::Numa)
        return fail(Result::InvalidArgument, "topology '%s': node '%s' has numa %d, which is not a numa node",
                    name.c_str(), n.name.c_str(), n.numa);
      if (n.kind == NodeKind::Numa && n.numa != n.id)
        return fail(Result::InvalidArgument, "topology '%s': numa node '%s' names another numa node",
                    name.c_str(), n.name.c_str());
    }
  }
  for (size_t i = 0; i < links.size(); ++i) {
    const Link& l = links[i];
    if (l.a < 0 || l.a >= node_count || l.b < 0 || l.b >= node_count)
      return fail(Result::InvalidArgument, "topology '%s': link %zu has an end outside the %d nodes",
                  name.c_str(), i, node_count);
    const char* a = nodes[l.a].name.c_str();
    const char* b = nodes[l.b].name.c_str();
    if (l.a == l.b)
      return fail(Result::InvalidArgument, "topology '%s': link %zu joins '%s' to itself", name.c_str(), i, a);
    if (!finite_non_negative(l.gbps_ab) || !finite_non_negative(l.gbps_ba))
      return fail(Result::InvalidArgument, "topology '%s': link %s-%s has a negative or invalid capacity",
                  name.c_str(), a, b);
    if (l.gbps_ab == 0 && l.gbps_ba == 0)
      return fail(Result::InvalidArgument, "topology '%s': link %s-%s has no capacity either way",
                  name.c_str(), a, b);
    if (!finite_non_negative(l.latency_us))
      return fail(Result::InvalidArgument, "topology '%s': link %s-%s has an invalid latency_us",
                  name.c_str(), a, b);
  }
  if (!finite_non_negative(host_memcpy_gbps) || !finite_non_negative(pcie_both_ways_gbps))
    return fail(Result::InvalidArgument, "topology '%s': host_memcpy_gbps / pcie_both_ways_gbps must be >= 0",
                name.c_str());
  for (int gpu : gpus()) {
    int numa = numa_of(gpu);
    if (numa < 0)
      return fail(Result::InvalidArgument, "topology '%s': gpu '%s' reaches no numa node", name.c_str(),
                  nodes[gpu].name.c_str());
    if (route(gpu, numa).empty() || route(numa, gpu).empty())
      return fail(Result::InvalidArgument, "topology '%s': gpu '%s' has no route to and from its numa node '%s'",
                  name.c_str(), nodes[gpu].name.c_str(), nodes[numa].name.c_str());
  }
  return Result::Success;
}

std::vector<int> rank_gpu(const Topology& t, int ranks) {
  std::vector<int> gpus = t.gpus();
  std::vector<int> out(ranks > 0 ? ranks : 0, -1);
  if (gpus.empty()) return out;
  for (size_t r = 0; r < out.size(); ++r) out[r] = gpus[r % gpus.size()];
  return out;
}

std::vector<int> rank_numa(const Topology& t, int ranks) {
  std::vector<int> gpu_of_rank = rank_gpu(t, ranks);
  std::vector<int> out(gpu_of_rank.size(), 0);
  for (size_t r = 0; r < out.size(); ++r) {
    if (gpu_of_rank[r] < 0) continue;
    int index = t.numa_index(t.numa_of(gpu_of_rank[r]));
    out[r] = index < 0 ? 0 : index;
  }
  return out;
}

}  // namespace braid::topo
