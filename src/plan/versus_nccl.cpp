#include "plan/versus_nccl.h"

#include <algorithm>
#include <cmath>

#include "balance/path_simulator.h"
#include "plan/cost.h"

namespace braid::plan {

namespace {

bool braid_splits(Collective c) {
  return c == Collective::AllReduce || c == Collective::AllGather || c == Collective::ReduceScatter;
}

const NcclRankScaling* scaling_of(const ModelParams& p, Collective c) {
  for (const auto& s : p.nccl_scaling)
    if (s.collective == c) return &s;
  return nullptr;
}

// Each GPU's NVLink rate per direction (the sum of its NVLink links); 0 without NVLink.
std::vector<double> nvlink_gbps_per_gpu(const topo::Topology& t) {
  std::vector<double> out;
  for (int g : t.gpus()) {
    double gbps = 0;
    for (const auto& l : t.links)
      if (l.kind == topo::LinkKind::NvLink && (l.a == g || l.b == g)) gbps += l.a == g ? l.gbps_ab : l.gbps_ba;
    out.push_back(gbps);
  }
  return out;
}

}  // namespace

Result check_calibrated_for(const Measurements& m, const topo::Topology& topology) {
  if (m.nccl_curves.empty()) return fail(Result::InvalidArgument, "model: no NCCL curve measured");
  topo::Topology measured;
  BRAID_TRY(load_machine(m.nccl_curves.front().machine, &measured));
  const double want = nvlink_gbps_per_gpu(measured).at(0);
  for (double gbps : nvlink_gbps_per_gpu(topology))
    if (std::abs(gbps - want) > 0.05 * want)
      return fail(Result::InvalidArgument,
                  "model: NCCL's curves were measured on GPUs with %.0f GB/s of NVLink; topology '%s' has a GPU "
                  "with %.0f: use h200x2, h200x4 or h200x8",
                  want, topology.name.c_str(), gbps);
  return Result::Success;
}

Result load_machine(const std::string& machine, topo::Topology* out) { return topo::load_topology(machine, out); }

Result VersusNcclModel::nccl_seconds(Collective collective, int ranks, double bytes, double* seconds,
                                     bool* measured) const {
  const NcclCurve* same = nullptr;
  const NcclCurve* nearest_below = nullptr;
  for (const auto& c : m_.nccl_curves) {
    if (c.collective != collective) continue;
    if (c.ranks == ranks) same = &c;
    if (c.ranks < ranks && (nearest_below == nullptr || c.ranks > nearest_below->ranks)) nearest_below = &c;
  }
  double busbw = 0;
  if (same != nullptr) {
    busbw = same->busbw_at(bytes);
  } else {
    // Another rank count: the nearest measured curve below at the same bytes per rank, scaled
    // by the fitted rank scaling of NCCL's asymptotic busbw.
    const NcclRankScaling* s = scaling_of(p_, collective);
    if (nearest_below == nullptr || s == nullptr)
      return fail(Result::InvalidArgument, "model: no NCCL curve for %s at %d ranks or below it",
                  std::string(collective_name(collective)).c_str(), ranks);
    busbw = nearest_below->busbw_at(bytes * nearest_below->ranks / ranks) * s->busbw(ranks) /
            s->busbw(nearest_below->ranks);
  }
  if (busbw <= 0) return fail(Result::InvalidArgument, "model: NCCL curve without busbw");
  *seconds = bytes * busbw_factor(collective, ranks) / (busbw * 1e9);
  if (measured != nullptr) *measured = same != nullptr;
  return Result::Success;
}

Result VersusNcclModel::pcie_algbw(Collective collective, int ranks, const topo::Topology& topology, double bytes,
                                   double* gbps) const {
  PlanChoice choice;
  BRAID_TRY(choose_plan(collective, ranks, topology, static_cast<size_t>(bytes), DataType::Float32, &choice));
  const double seconds = p_.facts.pcie_fixed_seconds + choice.seconds / p_.pcie_efficiency;
  *gbps = bytes / seconds / 1e9;
  return Result::Success;
}

Result VersusNcclModel::predict(Collective collective, int ranks, const topo::Topology& topology, double bytes,
                                Regime regime, VersusNccl* out) const {
  if (out == nullptr || bytes <= 0 || ranks < 2)
    return fail(Result::InvalidArgument, "model: needs a result, bytes > 0 and 2 ranks or more");
  VersusNccl v;
  BRAID_TRY(nccl_seconds(collective, ranks, bytes, &v.nccl_seconds, &v.nccl_measured));
  v.nccl_busbw = bytes * busbw_factor(collective, ranks) / v.nccl_seconds / 1e9;

  // What carries the NVLink share: braid's copy engines at two ranks above their thresholds
  // (BRAID_NVLINK_PATH=auto), NCCL everywhere else.
  const CalibrationFacts& f = p_.facts;
  v.copy_engines = ranks == 2 && ((collective == Collective::AllGather && bytes >= f.nvlink_copy_min_bytes) ||
                                  (collective == Collective::AllReduce && bytes >= f.nvlink_allreduce_min_bytes));
  const double peers = static_cast<double>(ranks - 1) / ranks;
  const double inbound_per_byte = collective == Collective::AllReduce ? 2 * peers : peers;
  std::string failure;
  auto nvlink_seconds = [&](size_t share_bytes) {
    if (share_bytes == 0) return 0.0;
    if (v.copy_engines)
      return p_.copy_engine_latency_s + share_bytes * inbound_per_byte / (p_.copy_engine_gbps * 1e9);
    double s = 0;
    if (nccl_seconds(collective, ranks, static_cast<double>(share_bytes), &s) != Result::Success) failure = last_error();
    return s;
  };

  if (!braid_splits(collective) || bytes < f.split_min_bytes) {
    v.braid_seconds = nvlink_seconds(static_cast<size_t>(bytes));
  } else {
    PlanChoice plan;
    BRAID_TRY(choose_plan(collective, ranks, topology, static_cast<size_t>(bytes), DataType::Float32, &plan));
    const double pcie_bytes_per_s = p_.pcie_efficiency * bytes / plan.seconds;
    const balance::PathSimulator paths(
        {balance::SimPath{.seconds_of_bytes = nvlink_seconds},
         balance::SimPath{.latency_s = f.pcie_fixed_seconds, .bandwidth_bytes_per_s = pcie_bytes_per_s}});
    const size_t n = static_cast<size_t>(bytes);
    const balance::Shares settled = paths.equal_finish_shares(n);
    const double settled_s = balance::PathSimulator::call_seconds(paths.path_seconds(0, n, settled));
    v.pcie_algbw = pcie_bytes_per_s / 1e9;
    if (regime == Regime::Settled) {
      v.braid_seconds = settled_s;
      v.pcie_share = settled.fraction(1);
    } else {
      const double probe[2] = {1 - f.probe_share, f.probe_share};
      const double probe_s =
          balance::PathSimulator::call_seconds(paths.path_seconds(0, n, balance::quantize_shares(probe)));
      v.braid_seconds = (1 - f.nccltests_split_fraction) * nvlink_seconds(n) + f.nccltests_split_fraction * probe_s;
      v.pcie_share = f.nccltests_split_fraction * f.probe_share;
    }
  }
  if (!failure.empty()) return fail(Result::InvalidArgument, "%s", failure.c_str());
  v.ratio = v.nccl_seconds / v.braid_seconds;
  *out = v;
  return Result::Success;
}

}  // namespace braid::plan
