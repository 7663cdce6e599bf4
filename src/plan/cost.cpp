#include "plan/cost.h"

#include <algorithm>
#include <map>

#include "common/log.h"

namespace braid::plan {

namespace {

// Accumulates bytes per resource; resources are link directions, then NUMA memories, GPU
// memories and ranks' issue queues.
class Ledger {
 public:
  Ledger(const topo::Topology& t, int ranks, const CostOptions& o) : t_(t), options_(o) {
    numa_ids_ = t.numa_nodes();
    gpu_ids_ = t.gpus();
    link_bytes_.assign(t.links.size() * 2, 0);
    numa_mem_.assign(numa_ids_.size(), 0);
    gpu_mem_.assign(t.nodes.size(), 0);
    issue_.assign(static_cast<size_t>(ranks), 0);
  }

  // Returns the hop kinds used, for crossing counts.
  const std::vector<topo::Hop>& move(int from, int to, double bytes) {
    static const std::vector<topo::Hop> kEmpty;
    if (from < 0 || to < 0 || from == to) return kEmpty;
    auto key = std::make_pair(from, to);
    auto it = routes_.find(key);
    if (it == routes_.end()) it = routes_.emplace(key, t_.route(from, to)).first;
    for (const auto& h : it->second)
      link_bytes_[static_cast<size_t>(h.link) * 2 + (h.forward ? 0 : 1)] += bytes;
    return it->second;
  }
  void host_memory(int numa_index, double bytes) {
    if (numa_index >= 0 && static_cast<size_t>(numa_index) < numa_mem_.size()) numa_mem_[static_cast<size_t>(numa_index)] += bytes;
  }
  void gpu_memory(int gpu_node, double bytes) {
    if (gpu_node >= 0) gpu_mem_[static_cast<size_t>(gpu_node)] += bytes;
  }
  void issue(int rank) { issue_[static_cast<size_t>(rank)] += 1; }

  std::vector<ResourceUse> resources() const {
    std::vector<ResourceUse> out;
    for (size_t l = 0; l < t_.links.size(); ++l) {
      const auto& link = t_.links[l];
      const bool gpu_end = t_.nodes[static_cast<size_t>(link.a)].kind == topo::NodeKind::Gpu ||
                           t_.nodes[static_cast<size_t>(link.b)].kind == topo::NodeKind::Gpu;
      const bool both_ways = link_bytes_[l * 2] > 0 && link_bytes_[l * 2 + 1] > 0;
      for (int dir = 0; dir < 2; ++dir) {
        const double bytes = link_bytes_[l * 2 + static_cast<size_t>(dir)];
        if (bytes <= 0) continue;
        double gbps = dir == 0 ? link.gbps_ab : link.gbps_ba;
        // A GPU's PCIe link loses bandwidth per direction when it carries both at once.
        if (link.kind == topo::LinkKind::Pcie && gpu_end && both_ways && t_.pcie_both_ways_gbps > 0)
          gbps = std::min(gbps, t_.pcie_both_ways_gbps);
        const int from = dir == 0 ? link.a : link.b;
        const int to = dir == 0 ? link.b : link.a;
        out.push_back({link_kind(link.kind) + " " + t_.nodes[static_cast<size_t>(from)].name + "->" +
                           t_.nodes[static_cast<size_t>(to)].name,
                       bytes, gbps, 0});
      }
    }
    for (size_t i = 0; i < numa_mem_.size(); ++i) {
      if (numa_mem_[i] <= 0) continue;
      const auto& node = t_.nodes[static_cast<size_t>(numa_ids_[i])];
      const double gbps = node.memory_gbps > 0 ? node.memory_gbps : options_.default_host_memory_gbps;
      out.push_back({"mem " + node.name, numa_mem_[i], gbps, 0});
    }
    for (size_t g = 0; g < gpu_mem_.size(); ++g) {
      if (gpu_mem_[g] <= 0) continue;
      const auto& node = t_.nodes[g];
      const double gbps = node.memory_gbps > 0 ? node.memory_gbps : options_.default_gpu_memory_gbps;
      out.push_back({"gpu-mem " + node.name, gpu_mem_[g], gbps, 0});
    }
    for (auto& r : out) r.seconds = r.bytes / (r.gbps * 1e9);
    for (size_t r = 0; r < issue_.size(); ++r)
      if (issue_[r] > 0)
        out.push_back({"issue rank" + std::to_string(r), 0, 0, issue_[r] * options_.issue_us * 1e-6});
    return out;
  }

 private:
  static std::string link_kind(topo::LinkKind k) {
    switch (k) {
      case topo::LinkKind::Pcie: return "pcie";
      case topo::LinkKind::NvLink: return "nvlink";
      case topo::LinkKind::InterSocket: return "socket";
      case topo::LinkKind::Network: return "net";
    }
    return "link";
  }

  const topo::Topology& t_;
  const CostOptions& options_;
  std::vector<int> numa_ids_, gpu_ids_;
  std::vector<double> link_bytes_, numa_mem_, gpu_mem_, issue_;
  std::map<std::pair<int, int>, std::vector<topo::Hop>> routes_;
};

bool uses_kind(const topo::Topology& t, const std::vector<topo::Hop>& route, topo::LinkKind kind) {
  for (const auto& h : route)
    if (t.links[static_cast<size_t>(h.link)].kind == kind) return true;
  return false;
}

}  // namespace

Result estimate(const dsl::Program& program, const topo::Topology& topology, size_t count,
                DataType dtype, const CostOptions& options, ProgramCost* out) {
  if (out == nullptr) return fail(Result::InvalidArgument, "estimate: null result");
  if (program.ranks < 1 || program.chunks < 1 ||
      program.rank_instructions.size() != static_cast<size_t>(program.ranks))
    return fail(Result::InvalidArgument, "estimate: malformed program (ranks %d, chunks %d, %zu lists)",
                program.ranks, program.chunks, program.rank_instructions.size());
  ProgramCost cost;
  const int R = program.ranks;
  const auto rank_gpu = topo::rank_gpu(topology, R);
  const auto numa_ids = topology.numa_nodes();
  const auto gpus = topology.gpus();
  std::vector<int> gpu_position(topology.nodes.size(), 0);
  for (size_t i = 0; i < gpus.size(); ++i) gpu_position[static_cast<size_t>(gpus[i])] = static_cast<int>(i);
  const size_t per_gpu = std::max<size_t>(1, gpus.size());
  cost.uploads_per_gpu.assign(per_gpu, 0);
  cost.downloads_per_gpu.assign(per_gpu, 0);
  cost.upload_bytes_per_gpu.assign(per_gpu, 0);
  cost.download_bytes_per_gpu.assign(per_gpu, 0);

  const size_t elem = datatype_size(dtype);
  const double slot_bytes = static_cast<double>(dsl::max_chunk_elements(count, program.chunks) * elem);
  auto numa_node = [&](const dsl::Location& l) {
    return (l.numa >= 0 && static_cast<size_t>(l.numa) < numa_ids.size()) ? numa_ids[static_cast<size_t>(l.numa)] : -1;
  };

  Ledger ledger(topology, R, options);
  for (int r = 0; r < R; ++r) {
    const int gpu = rank_gpu[static_cast<size_t>(r)];
    const size_t gi = gpu >= 0 ? static_cast<size_t>(gpu_position[static_cast<size_t>(gpu)]) : 0;
    for (const auto& ins : program.rank_instructions[static_cast<size_t>(r)]) {
      ledger.issue(r);
      double bytes = slot_bytes;
      if (ins.src.is_device()) bytes = static_cast<double>(dsl::chunk_elements(count, program.chunks, ins.src.index).size() * elem);
      else if (ins.dst.is_device()) bytes = static_cast<double>(dsl::chunk_elements(count, program.chunks, ins.dst.index).size() * elem);
      switch (ins.op) {
        case dsl::Opcode::D2H:
          // DMA writes land in the slot's node memory; the host side is a shared resource too.
          ledger.move(gpu, numa_node(ins.dst), bytes);
          ledger.host_memory(ins.dst.numa, bytes);
          cost.uploads++;
          cost.uploads_per_gpu[gi]++;
          cost.upload_bytes_per_gpu[gi] += bytes;
          break;
        case dsl::Opcode::H2H: {
          const auto& route = ledger.move(numa_node(ins.src), numa_node(ins.dst), bytes);
          ledger.host_memory(ins.src.numa, bytes);
          ledger.host_memory(ins.dst.numa, bytes);
          if (uses_kind(topology, route, topo::LinkKind::InterSocket)) cost.inter_socket_crossings++;
          if (uses_kind(topology, route, topo::LinkKind::Network)) cost.network_crossings++;
          break;
        }
        case dsl::Opcode::H2D:
          ledger.move(numa_node(ins.src), gpu, bytes);
          ledger.host_memory(ins.src.numa, bytes);
          cost.downloads++;
          cost.downloads_per_gpu[gi]++;
          cost.download_bytes_per_gpu[gi] += bytes;
          break;
        case dsl::Opcode::Reduce:
          if (ins.dst.is_host()) {
            // The CPU reads both operands and writes the sum in the destination node's memory.
            if (ins.src.numa != ins.dst.numa) ledger.move(numa_node(ins.src), numa_node(ins.dst), bytes);
            ledger.host_memory(ins.dst.numa, 3 * bytes);
            cost.host_reduce_bytes += bytes;
          } else {
            ledger.move(numa_node(ins.src), gpu, bytes);
            ledger.host_memory(ins.src.numa, bytes);
            ledger.gpu_memory(gpu, 3 * bytes);
            cost.downloads++;
            cost.downloads_per_gpu[gi]++;
            cost.download_bytes_per_gpu[gi] += bytes;
          }
          break;
        case dsl::Opcode::Copy:
          ledger.gpu_memory(gpu, 2 * bytes);
          break;
      }
    }
  }
  cost.resources = ledger.resources();
  const ResourceUse* busiest = nullptr;
  const ResourceUse* busiest_data = nullptr;  // the busiest resource that moves bytes
  for (const auto& r : cost.resources) {
    if (busiest == nullptr || r.seconds > busiest->seconds) busiest = &r;
    if (r.bytes > 0 && (busiest_data == nullptr || r.seconds > busiest_data->seconds)) busiest_data = &r;
  }
  if (busiest != nullptr) {
    cost.transfer_seconds = busiest->seconds;
    cost.bottleneck = busiest->name;
  }
  BRAID_TRY(critical_path(program, &cost.critical_path));
  const double bottleneck_gbps = busiest_data != nullptr ? busiest_data->gbps : options.default_link_gbps;
  const double slice = std::min(static_cast<double>(options.slice_bytes), slot_bytes);
  cost.pipeline_seconds = cost.critical_path * (options.instruction_latency_us * 1e-6 + slice / (bottleneck_gbps * 1e9));
  cost.seconds = cost.transfer_seconds + cost.pipeline_seconds;
  *out = std::move(cost);
  return Result::Success;
}

std::vector<int> chunk_candidates(Collective collective, int ranks) {
  std::vector<int> c{1, 2, 4, ranks, 2 * ranks};
  std::vector<int> out;
  for (int x : c) {
    x = std::clamp(x, 1, 64);
    // AllToAll programs grow as ranks^2 x chunks; keep the candidates affordable.
    if (collective == Collective::AllToAll && x > 1 && static_cast<double>(ranks) * ranks * x > (1 << 17)) continue;
    if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result choose_plan(Collective collective, int ranks, const topo::Topology& topology, size_t bytes,
                   DataType dtype, const ChooseOptions& options, PlanChoice* out) {
  if (out == nullptr) return fail(Result::InvalidArgument, "choose_plan: null result");
  std::vector<ReducePlacement> placements;
  if (options.placement && *options.placement != ReducePlacement::Auto) placements = {*options.placement};
  else if (collective_reduces(collective)) placements = {ReducePlacement::Host, ReducePlacement::Device};
  else placements = {ReducePlacement::Host};
  const std::vector<int> chunk_list =
      options.chunks > 0 ? std::vector<int>{options.chunks} : chunk_candidates(collective, ranks);
  using Algorithm = GenerateOptions::Algorithm;
  if (options.algorithm == Algorithm::Auto)
    return fail(Result::InvalidArgument, "choose_plan: the algorithm to try is auto; leave it unset to try each");
  std::vector<Algorithm> algorithms;
  if (options.algorithm) algorithms = {*options.algorithm};
  else if (has_algorithm(collective, Algorithm::Ring)) algorithms = {Algorithm::Hierarchical, Algorithm::Ring};
  else algorithms = {Algorithm::Hierarchical};
  const size_t count = count_for_bytes(collective, ranks, bytes, dtype);
  bool found = false;
  PlanChoice best;
  for (Algorithm algorithm : algorithms) {
    for (ReducePlacement placement : placements) {
      // The ring reduces on the GPUs whatever the placement: priced once, as the device placement.
      if (algorithm == Algorithm::Ring && placements.size() > 1 && placement != ReducePlacement::Device) continue;
      for (int chunks : chunk_list) {
        GenerateOptions g;
        g.placement = placement;
        g.chunks = chunks;
        g.algorithm = algorithm;
        g.deterministic = options.deterministic;
        g.root = options.root;
        dsl::Program p;
        BRAID_TRY(generate(collective, ranks, topology, g, &p));
        ProgramCost c;
        BRAID_TRY(estimate(p, topology, count, dtype, options.cost, &c));
        BRAID_TRACE(Plan, "candidate %s %s placement=%s chunks=%d: %.3f us", std::string(collective_name(collective)).c_str(),
                    std::string(algorithm_name(algorithm)).c_str(), std::string(placement_name(placement)).c_str(), chunks,
                    c.seconds * 1e6);
        // Strictly better only: ties keep the earlier (hierarchical, host placement, fewer chunks).
        if (!found || c.seconds < best.seconds * (1 - 1e-9)) {
          best = {placement, algorithm, chunks, c.seconds};
          found = true;
        }
      }
    }
  }
  *out = best;
  return Result::Success;
}

Result choose_plan(Collective collective, int ranks, const topo::Topology& topology, size_t bytes,
                   DataType dtype, PlanChoice* out) {
  return choose_plan(collective, ranks, topology, bytes, dtype, ChooseOptions{}, out);
}

}  // namespace braid::plan
