// Routing: breadth-first search for the fewest hops, keeping among equally short paths the one
// with the widest bottleneck, then the lowest latency. GPUs never relay (a route through one would be a GPU relay, which
// is a path the planner chooses on purpose, not a wire). NICs relay only onto or off the network,
// so host-to-host traffic between servers goes numa -> nic -> network -> nic -> numa while no
// intra-server route sneaks through a NIC.
#include <algorithm>
#include <limits>

#include "topo/topology.h"

namespace braid::topo {
namespace {

// A search state: a node, and whether it was entered over a Network link (a NIC entered that way
// may pass the data on to its PCIe side).
struct State {
  int node = 0;
  bool via_network = false;
};

int state_index(const State& s) { return s.node * 2 + (s.via_network ? 1 : 0); }

bool may_leave(const Topology& t, const State& s, int start, const Link& next) {
  if (s.node == start) return true;
  switch (t.nodes[s.node].kind) {
    case NodeKind::Gpu:
      return false;
    case NodeKind::Nic:
      return s.via_network || next.kind == LinkKind::Network;
    default:
      return true;
  }
}

}  // namespace

std::vector<Hop> Topology::route(int from, int to) const {
  const int node_count = static_cast<int>(nodes.size());
  if (from < 0 || to < 0 || from >= node_count || to >= node_count || from == to) return {};

  // Links touching each node, in link order so ties resolve the same way every time.
  std::vector<std::vector<int>> incident(node_count);
  for (int i = 0; i < static_cast<int>(links.size()); ++i) {
    const Link& l = links[i];
    if (l.a < 0 || l.b < 0 || l.a >= node_count || l.b >= node_count || l.a == l.b) continue;
    incident[l.a].push_back(i);
    incident[l.b].push_back(i);
  }

  const int state_count = node_count * 2;
  std::vector<int> depth(state_count, -1);
  std::vector<double> bottleneck(state_count, 0);
  std::vector<double> latency(state_count, 0);
  std::vector<int> parent(state_count, -1);
  std::vector<Hop> parent_hop(state_count);

  State start{from, false};
  depth[state_index(start)] = 0;
  bottleneck[state_index(start)] = std::numeric_limits<double>::infinity();
  std::vector<State> level = {start};
  for (int d = 0; !level.empty(); ++d) {
    // Stop once the destination is reached: longer paths never win.
    if (depth[state_index({to, false})] >= 0 || depth[state_index({to, true})] >= 0) break;
    std::vector<State> next_level;
    for (const State& s : level) {
      if (s.node == to) continue;
      const int si = state_index(s);
      for (int li : incident[s.node]) {
        const Link& l = links[li];
        if (!may_leave(*this, s, from, l)) continue;
        Hop hop{li, l.a == s.node};
        double capacity = hop_gbps(hop);
        if (capacity <= 0) continue;
        State n{hop.forward ? l.b : l.a, l.kind == LinkKind::Network};
        const int ni = state_index(n);
        double width = std::min(bottleneck[si], capacity);
        double delay = latency[si] + l.latency_us;
        bool first = depth[ni] < 0;
        bool better = !first && depth[ni] == d + 1 &&
                      (width > bottleneck[ni] || (width == bottleneck[ni] && delay < latency[ni]));
        if (first || better) {
          depth[ni] = d + 1;
          bottleneck[ni] = width;
          latency[ni] = delay;
          parent[ni] = si;
          parent_hop[ni] = hop;
          if (first) next_level.push_back(n);
        }
      }
    }
    level = std::move(next_level);
  }

  int end = -1;
  for (bool via_network : {false, true}) {
    int i = state_index({to, via_network});
    if (depth[i] < 0) continue;
    if (end < 0 || depth[i] < depth[end] ||
        (depth[i] == depth[end] && (bottleneck[i] > bottleneck[end] ||
                                    (bottleneck[i] == bottleneck[end] && latency[i] < latency[end]))))
      end = i;
  }
  if (end < 0) return {};
  std::vector<Hop> path;
  for (int i = end; parent[i] >= 0; i = parent[i]) path.push_back(parent_hop[i]);
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace braid::topo
