#include "route/paths.h"

#include <algorithm>
#include <string>

namespace braid::route {

namespace {

DirLink dir_link(const topo::Topology& t, const topo::Hop& h) {
  const topo::Link& l = t.links[size_t(h.link)];
  return DirLink{h.link, h.forward, (h.forward ? l.gbps_ab : l.gbps_ba) * 1e9};
}

// Direct links between nodes a and b, as directed a -> b (several where parallel links exist).
std::vector<DirLink> direct_links(const topo::Topology& t, int a, int b) {
  std::vector<DirLink> out;
  for (size_t i = 0; i < t.links.size(); ++i) {
    const topo::Link& l = t.links[i];
    if (l.a == a && l.b == b && l.gbps_ab > 0) out.push_back({int(i), true, l.gbps_ab * 1e9});
    if (l.b == a && l.a == b && l.gbps_ba > 0) out.push_back({int(i), false, l.gbps_ba * 1e9});
  }
  return out;
}

void append_route(const topo::Topology& t, int from, int to, std::vector<DirLink>* hops) {
  for (const topo::Hop& h : t.route(from, to)) hops->push_back(dir_link(t, h));
}

}  // namespace

Result build_paths(const topo::Topology& t, const PathOptions& opt, PathSet* out) {
  const std::vector<int> gpus = t.gpus();
  const int n = int(gpus.size());
  out->ranks = n;
  out->pairs.assign(size_t(n) * size_t(n), {});

  // NICs per server, in node order, and for each the GPU nearest it (fewest hops, lowest id).
  std::vector<std::vector<int>> server_nics;
  std::vector<int> nic_gpu(t.nodes.size(), -1);
  if (opt.nics) {
    for (const topo::Node& node : t.nodes) {
      if (node.kind != topo::NodeKind::Nic) continue;
      if (size_t(node.server) >= server_nics.size()) server_nics.resize(size_t(node.server) + 1);
      server_nics[size_t(node.server)].push_back(node.id);
      size_t best = SIZE_MAX;
      for (int g : gpus) {
        if (t.nodes[size_t(g)].server != node.server) continue;
        size_t hops = t.route(g, node.id).size();
        if (hops > 0 && hops < best) best = hops, nic_gpu[size_t(node.id)] = g;
      }
    }
  }

  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      if (s == d) continue;
      std::vector<Path>& paths = out->pairs[size_t(s * n + d)];
      const int gs = gpus[size_t(s)], gd = gpus[size_t(d)];
      for (const DirLink& l : direct_links(t, gs, gd)) paths.push_back({PathKind::Direct, {l}});
      if (opt.relays) {
        int relays = 0;
        for (int k = 0; k < n; ++k) {
          if (k == s || k == d) continue;
          if (opt.max_relays >= 0 && relays >= opt.max_relays) break;
          const int gk = gpus[size_t(k)];
          const auto first = direct_links(t, gs, gk), second = direct_links(t, gk, gd);
          if (first.empty() || second.empty()) continue;
          // Parallel links: the widest of each hop (relays are for spreading, not parallelism).
          auto widest = [](const std::vector<DirLink>& v) {
            return *std::max_element(v.begin(), v.end(),
                                     [](const DirLink& a, const DirLink& b) { return a.capacity < b.capacity; });
          };
          Path relay{PathKind::Relay, {widest(first), widest(second)}, k};
          for (DirLink& hop : relay.hops) hop.capacity *= opt.relay_efficiency;
          paths.push_back(std::move(relay));
          ++relays;
        }
      }
      const int ss = t.nodes[size_t(gs)].server, sd = t.nodes[size_t(gd)].server;
      if (opt.nics && ss != sd && size_t(std::max(ss, sd)) < server_nics.size()) {
        const auto& a = server_nics[size_t(ss)];
        const auto& b = server_nics[size_t(sd)];
        for (size_t i = 0; i < a.size(); ++i) {
          for (size_t j = 0; j < b.size(); ++j) {
            if (a.size() == b.size() && i != j) continue;  // rail-matched
            Path p{PathKind::Nic, {}};
            // Out: over NVLink to the GPU beside the NIC where that is a direct link.
            int out_gpu = nic_gpu[size_t(a[i])];
            if (out_gpu >= 0 && out_gpu != gs && !direct_links(t, gs, out_gpu).empty()) {
              p.hops.push_back(direct_links(t, gs, out_gpu)[0]);
            } else {
              out_gpu = gs;
            }
            append_route(t, out_gpu, a[i], &p.hops);
            append_route(t, a[i], b[j], &p.hops);
            int in_gpu = nic_gpu[size_t(b[j])];
            const bool relay_in = in_gpu >= 0 && in_gpu != gd && !direct_links(t, in_gpu, gd).empty();
            if (!relay_in) in_gpu = gd;
            append_route(t, b[j], in_gpu, &p.hops);
            if (relay_in) p.hops.push_back(direct_links(t, in_gpu, gd)[0]);
            paths.push_back(std::move(p));
          }
        }
      }
      if (paths.empty()) {
        Path p{PathKind::Default, {}};
        append_route(t, gs, gd, &p.hops);
        if (p.hops.empty()) {
          return fail(Result::InvalidArgument, "route: no path from %s to %s",
                      t.nodes[size_t(gs)].name.c_str(), t.nodes[size_t(gd)].name.c_str());
        }
        paths.push_back(std::move(p));
      }
    }
  }
  return Result::Success;
}

}  // namespace braid::route
