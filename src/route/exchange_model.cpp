#include "route/exchange_model.h"

#include <algorithm>
#include <map>
#include <utility>

namespace braid::route {

namespace {

// Busy seconds per directed link, and the slowest path latency, as the flows are added.
class LinkLoads {
 public:
  explicit LinkLoads(const topo::Topology& t) : t_(t) {}

  void add(const std::vector<DirLink>& hops, double bytes) {
    if (bytes <= 0) return;
    double latency = 0;
    for (const DirLink& h : hops) {
      busy_[{h.link, h.forward}] += bytes / h.capacity;
      latency += t_.links[size_t(h.link)].latency_us * 1e-6;
    }
    latency_ = std::max(latency_, latency);
  }

  void finish(ExchangePrediction* out) const {
    *out = ExchangePrediction{};
    for (const auto& [link, seconds] : busy_) {
      if (seconds <= out->busiest_s) continue;
      const topo::Link& l = t_.links[size_t(link.first)];
      const int from = link.second ? l.a : l.b, to = link.second ? l.b : l.a;
      out->busiest_s = seconds;
      out->busiest = t_.nodes[size_t(from)].name + "->" + t_.nodes[size_t(to)].name;
    }
    out->latency_s = latency_;
    out->seconds = out->busiest_s + latency_;
  }

 private:
  const topo::Topology& t_;
  std::map<std::pair<int, bool>, double> busy_;  // ordered: ties resolve the same everywhere
  double latency_ = 0;
};

Result check_size(const topo::Topology& t, const Traffic& traffic) {
  if (traffic.ranks != t.gpu_count() || traffic.bytes.size() != size_t(traffic.ranks) * size_t(traffic.ranks))
    return fail(Result::InvalidArgument, "exchange model: traffic for %d ranks on a topology of %d GPUs",
                traffic.ranks, t.gpu_count());
  return Result::Success;
}

}  // namespace

Result predict_direct(const topo::Topology& t, const Traffic& traffic, ExchangePrediction* out) {
  BRAID_TRY(check_size(t, traffic));
  const std::vector<int> gpus = t.gpus();
  LinkLoads loads(t);
  for (int s = 0; s < traffic.ranks; ++s)
    for (int d = 0; d < traffic.ranks; ++d) {
      if (s == d || traffic.at(s, d) <= 0) continue;
      std::vector<DirLink> hops;
      for (const topo::Hop& h : t.route(gpus[size_t(s)], gpus[size_t(d)])) hops.push_back({h.link, h.forward, t.hop_gbps(h) * 1e9});
      if (hops.empty()) return fail(Result::InvalidArgument, "exchange model: no route from GPU %d to GPU %d", s, d);
      loads.add(hops, traffic.at(s, d));
    }
  loads.finish(out);
  return Result::Success;
}

Result predict_routed(const topo::Topology& t, const Router& router, const Traffic& traffic,
                      const Routing& routing, ExchangePrediction* out) {
  BRAID_TRY(check_size(t, traffic));
  if (router.ranks() != traffic.ranks || routing.fraction.size() != size_t(router.total_paths()))
    return fail(Result::InvalidArgument, "exchange model: routing does not match the router");
  LinkLoads loads(t);
  for (int s = 0; s < traffic.ranks; ++s)
    for (int d = 0; d < traffic.ranks; ++d) {
      if (s == d) continue;
      const std::vector<Path>& paths = router.paths().of(s, d);
      for (size_t p = 0; p < paths.size(); ++p)
        loads.add(paths[p].hops, traffic.at(s, d) * routing.fraction[size_t(router.path_offset(s, d)) + p]);
    }
  loads.finish(out);
  return Result::Success;
}

}  // namespace braid::route
