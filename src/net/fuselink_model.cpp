#include "net/fuselink_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "net/nic_affinity.h"

namespace braid::net {

namespace {

// One server's GPUs and usable NICs, and who owns which NIC.
struct Server {
  std::vector<int> gpu_node;      // node id of GPU i
  std::vector<int> nic_node;      // node id of usable NIC k
  std::vector<int> nic_owner;     // GPU index whose direct NIC k is
  std::vector<int> direct_nic;    // GPU i's direct NIC (-1: none usable)
};

Result describe_server(const topo::Topology& t, int server, int nics_per_server, Server* out) {
  for (int id : t.gpus())
    if (t.nodes[size_t(id)].server == server) out->gpu_node.push_back(id);
  out->direct_nic.assign(out->gpu_node.size(), -1);
  for (const NicAffinity& a : nic_affinity(t, server)) {
    if (nics_per_server > 0 && int(out->nic_node.size()) >= nics_per_server) break;
    auto node = std::find_if(t.nodes.begin(), t.nodes.end(), [&](const topo::Node& n) { return n.name == a.nic_name; });
    if (node == t.nodes.end() || a.gpu < 0) return fail(Result::InvalidArgument, "NIC %s serves no GPU", a.nic_name.c_str());
    const int k = int(out->nic_node.size());
    out->nic_node.push_back(node->id);
    out->nic_owner.push_back(a.gpu);
    if (out->direct_nic[size_t(a.gpu)] < 0) out->direct_nic[size_t(a.gpu)] = k;
  }
  if (out->gpu_node.empty() || out->nic_node.empty())
    return fail(Result::InvalidArgument, "server %d of %s has no GPU or no NIC", server, t.name.c_str());
  return Result::Success;
}

// A subflow's use of the directed links: key (link * 2 + backward) -> bytes per byte carried.
using Usage = std::map<int, double>;

void add_route(const topo::Topology& t, int from, int to, double coef, Usage* u) {
  for (const topo::Hop& h : t.route(from, to)) (*u)[h.link * 2 + (h.forward ? 0 : 1)] += coef;
}

// Max-min fair rates (bytes/s) of subflows over directed links (progressive filling).
std::vector<double> fair_rates(const topo::Topology& t, const std::vector<Usage>& flows) {
  std::map<int, double> left, capacity;
  for (const Usage& u : flows)
    for (const auto& [key, coef] : u) {
      const topo::Link& l = t.links[size_t(key / 2)];
      capacity.emplace(key, (key % 2 == 0 ? l.gbps_ab : l.gbps_ba) * 1e9);
      left.emplace(key, capacity[key]);
    }
  std::vector<double> rate(flows.size(), 0);
  std::vector<bool> frozen(flows.size(), false);
  for (size_t round = 0; round <= flows.size(); ++round) {
    std::map<int, double> weight;
    for (size_t f = 0; f < flows.size(); ++f)
      if (!frozen[f])
        for (const auto& [key, coef] : flows[f]) weight[key] += coef;
    if (weight.empty()) break;
    double step = std::numeric_limits<double>::infinity();
    for (const auto& [key, w] : weight) step = std::min(step, left[key] / w);
    for (size_t f = 0; f < flows.size(); ++f)
      if (!frozen[f]) rate[f] += step;
    for (const auto& [key, w] : weight) left[key] -= step * w;
    for (size_t f = 0; f < flows.size(); ++f)
      if (!frozen[f])
        for (const auto& [key, coef] : flows[f])
          if (left[key] <= 1e-9 * capacity[key]) frozen[f] = true;  // the link is full
  }
  return rate;
}

}  // namespace

Result simulate_fuselink(const topo::Topology& t, const std::vector<ModelRequest>& requests, NicPolicy policy,
                         const FuseLinkModelOptions& options, ModelResult* out) {
  Server tx, rx;
  BRAID_TRY(describe_server(t, 0, options.nics_per_server, &tx));
  BRAID_TRY(describe_server(t, 1, options.nics_per_server, &rx));
  if (options.relay_efficiency <= 0 || options.relay_efficiency > 1)
    return fail(Result::InvalidArgument, "relay efficiency %g is not in (0, 1]", options.relay_efficiency);
  const double relay_cost = 1 / options.relay_efficiency;
  const size_t gpus = std::min(tx.gpu_node.size(), rx.gpu_node.size());
  for (const ModelRequest& r : requests)
    for (int g : r.gpus)
      if (g < 0 || size_t(g) >= gpus || tx.direct_nic[size_t(g)] < 0 || rx.direct_nic[size_t(g)] < 0)
        return fail(Result::InvalidArgument, "GPU %d has no usable direct NIC on both servers", g);

  // Each queue's requests in arrival order; the head is the one that may run.
  std::map<int, std::vector<size_t>> queues;
  for (size_t i = 0; i < requests.size(); ++i) queues[requests[i].queue].push_back(i);
  for (auto& [q, list] : queues)
    std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) { return requests[a].arrival_s < requests[b].arrival_s; });
  std::map<int, size_t> head;
  std::vector<std::vector<double>> remaining(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) remaining[i].assign(requests[i].gpus.size(), requests[i].bytes_per_gpu);
  out->finish_s.assign(requests.size(), 0);
  out->makespan_s = 0;
  out->max_nics_used = 0;

  double now = 0;
  size_t finished = 0;
  for (size_t step = 0; finished < requests.size(); ++step) {
    if (step > 100 * requests.size() + 1000) return fail(Result::InternalError, "the model does not progress");
    // Running requests, and which GPUs send (server 0) and receive (server 1) now.
    std::vector<size_t> running;
    double next_arrival = std::numeric_limits<double>::infinity();
    for (auto& [q, list] : queues) {
      size_t& h = head[q];
      while (h < list.size() && std::all_of(remaining[list[h]].begin(), remaining[list[h]].end(), [](double b) { return b <= 0; })) {
        out->finish_s[list[h]] = std::max(now, requests[list[h]].arrival_s);
        ++finished, ++h;
      }
      if (h == list.size()) continue;
      if (requests[list[h]].arrival_s <= now) running.push_back(list[h]);
      else next_arrival = std::min(next_arrival, requests[list[h]].arrival_s);
    }
    if (running.empty()) {
      if (finished == requests.size()) break;
      now = next_arrival;
      continue;
    }
    std::vector<bool> sending(gpus, false), receiving(gpus, false);
    for (size_t r : running)
      for (size_t j = 0; j < requests[r].gpus.size(); ++j)
        if (remaining[r][j] > 0) sending[size_t(requests[r].gpus[j])] = receiving[size_t(requests[r].gpus[j])] = true;

    // Subflows: (request, GPU slot) and its links.
    std::vector<Usage> flows;
    std::vector<std::pair<size_t, size_t>> owner;
    for (size_t r : running)
      for (size_t j = 0; j < requests[r].gpus.size(); ++j) {
        if (remaining[r][j] <= 0) continue;
        const int g = requests[r].gpus[j];
        std::vector<int> a{tx.direct_nic[size_t(g)]}, b{rx.direct_nic[size_t(g)]};
        if (policy == NicPolicy::FuseLink) {
          for (int k = 0; k < int(tx.nic_node.size()); ++k)
            if (k != a[0] && !sending[size_t(tx.nic_owner[size_t(k)])]) a.push_back(k);
          for (int k = 0; k < int(rx.nic_node.size()); ++k)
            if (k != b[0] && !receiving[size_t(rx.nic_owner[size_t(k)])]) b.push_back(k);
        }
        const size_t pairs = std::max(a.size(), b.size());
        out->max_nics_used = std::max(out->max_nics_used, int(pairs));
        for (size_t x = 0; x < pairs; ++x) {
          const int sa = a[x % a.size()], rb = b[x % b.size()];
          Usage u;
          const int relay_tx = tx.nic_owner[size_t(sa)], relay_rx = rx.nic_owner[size_t(rb)];
          if (relay_tx != g) add_route(t, tx.gpu_node[size_t(g)], tx.gpu_node[size_t(relay_tx)], relay_cost, &u);
          add_route(t, tx.gpu_node[size_t(relay_tx)], tx.nic_node[size_t(sa)], 1, &u);
          add_route(t, tx.nic_node[size_t(sa)], rx.nic_node[size_t(rb)], 1, &u);
          add_route(t, rx.nic_node[size_t(rb)], rx.gpu_node[size_t(relay_rx)], 1, &u);
          if (relay_rx != g) add_route(t, rx.gpu_node[size_t(relay_rx)], rx.gpu_node[size_t(g)], relay_cost, &u);
          flows.push_back(std::move(u));
          owner.emplace_back(r, j);
        }
      }
    const std::vector<double> rate = fair_rates(t, flows);
    std::map<std::pair<size_t, size_t>, double> total;
    for (size_t f = 0; f < flows.size(); ++f) total[owner[f]] += rate[f];

    double dt = next_arrival - now;
    for (const auto& [slot, bytes_per_s] : total)
      if (bytes_per_s > 0) dt = std::min(dt, remaining[slot.first][slot.second] / bytes_per_s);
    if (!std::isfinite(dt)) return fail(Result::InternalError, "no flow can move (a link of no capacity?)");
    for (const auto& [slot, bytes_per_s] : total) {
      double& left = remaining[slot.first][slot.second];
      left -= bytes_per_s * dt;
      if (left <= 1e-9 * requests[slot.first].bytes_per_gpu + 1e-3) left = 0;
    }
    now += dt;
  }
  for (double f : out->finish_s) out->makespan_s = std::max(out->makespan_s, f);
  return Result::Success;
}

}  // namespace braid::net
