#include "versus_nccl.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/result.h"
#include "common/sizes.h"
#include "plan/calibration.h"
#include "plan/versus_nccl.h"
#include "shape.h"
#include "topo/topology.h"

namespace braid::sim {

namespace {

// The stored measured ratio for this machine, rank count, collective and size, if any: a point
// at the size first, else a range that covers it.
const plan::MeasuredRatio* measured_for(const plan::Measurements& m, const std::string& machine, int ranks,
                                        Collective c, double bytes) {
  const plan::MeasuredRatio* range = nullptr;
  for (const auto& r : m.ratios) {
    if (r.machine != machine || r.ranks != ranks || r.collective != c || bytes < r.size_from || bytes > r.size_to)
      continue;
    if (r.size_from == r.size_to) return &r;
    if (range == nullptr) range = &r;
  }
  return range;
}

std::string ratio_text(const plan::MeasuredRatio& r) {
  char buf[32];
  if (r.ratio_low == r.ratio_high) std::snprintf(buf, sizeof buf, "%.2f", r.ratio_low);
  else std::snprintf(buf, sizeof buf, "%.2f-%.2f", r.ratio_low, r.ratio_high);
  return buf;
}

}  // namespace

int run_versus_nccl(const VersusNcclArgs& args) {
  const std::string path = args.calibration.empty() ? plan::default_measurements_path() : args.calibration;
  plan::Measurements m;
  plan::ModelParams params;
  topo::Topology t;
  if (plan::load_measurements(path, &m) != Result::Success || plan::fit_model(m, &params) != Result::Success ||
      topo::load_topology(args.topo, &t) != Result::Success || plan::check_calibrated_for(m, t) != Result::Success) {
    std::fprintf(stderr, "braid-sim versus-nccl: %s\n", last_error());
    return 2;
  }
  const int ranks = args.ranks > 0 ? args.ranks : t.gpu_count();
  const auto lo = parse_byte_size(args.min_bytes), hi = parse_byte_size(args.max_bytes);
  if (!lo || !hi || *lo == 0 || ranks < 2) {
    std::fprintf(stderr, "braid-sim versus-nccl: bad sizes (-b %s -e %s) or fewer than 2 ranks\n",
                 args.min_bytes.c_str(), args.max_bytes.c_str());
    return 2;
  }
  const plan::VersusNcclModel model(m, params);
  std::printf("# braid-sim versus-nccl: PREDICTED braid/NCCL busbw on %s, %d ranks: a model calibrated to "
              "measurements of %s (%s), not a measurement\n",
              t.name.c_str(), ranks, m.date_span().c_str(), path.c_str());
  std::printf("# fitted: braid's copy engines %.0f GB/s + %.1f us per call; its PCIe path at %.2f of the cost "
              "model's time + %.0f us per call\n",
              params.copy_engine_gbps, params.copy_engine_latency_s * 1e6, params.pcie_efficiency,
              params.facts.pcie_fixed_seconds * 1e6);
  for (const auto& s : params.nccl_scaling)
    std::printf("# fitted: NCCL %s busbw at 1 GiB = %.0f x (1 - %.3f / ranks) GB/s (%.0f at %d ranks)\n",
                bench::bench_name(s.collective).c_str(), s.b_inf_gbps, s.overhead, s.busbw(ranks), ranks);
  std::printf("# ratio = as nccl-tests measures it (%.1f%% of split calls carry a PCIe share); settled = every "
              "split call at the balancer's equal-finish split (long runs)\n",
              params.facts.nccltests_split_fraction * 100);
  std::printf("#%11s %14s %10s %9s %9s %6s %8s %6s %6s %10s  %s\n", "size", "collective", "nccl_busbw", "nccl(us)",
              "braid(us)", "ratio", "settled", "pcie%", "path", "measured", "date");
  nlohmann::json rows = nlohmann::json::array();
  for (const std::string& name : args.collectives) {
    const auto c = parse_collective(name);
    if (!c) {
      std::fprintf(stderr, "braid-sim versus-nccl: unknown collective %s\n", name.c_str());
      return 2;
    }
    for (size_t bytes = *lo; bytes <= *hi; bytes = static_cast<size_t>(bytes * args.factor)) {
      plan::VersusNccl quick, settled;
      if (model.predict(*c, ranks, t, bytes, plan::Regime::NcclTests, &quick) != Result::Success ||
          model.predict(*c, ranks, t, bytes, plan::Regime::Settled, &settled) != Result::Success) {
        std::fprintf(stderr, "braid-sim versus-nccl: %s\n", last_error());
        return 1;
      }
      const plan::MeasuredRatio* measured = measured_for(m, t.name, ranks, *c, bytes);
      const std::string path_name = quick.copy_engines ? "copy" : "nccl";
      std::printf(" %11zu %14s %10.1f %9.1f %9.1f %6.2f %8.2f %6.1f %6s %10s  %s\n", bytes,
                  bench::bench_name(*c).c_str(), quick.nccl_busbw, quick.nccl_seconds * 1e6,
                  quick.braid_seconds * 1e6, quick.ratio, settled.ratio, settled.pcie_share * 100, path_name.c_str(),
                  measured ? ratio_text(*measured).c_str() : "-", measured ? measured->date.c_str() : "");
      nlohmann::json row = {{"collective", bench::bench_name(*c)}, {"size", bytes}, {"type", "float"},
                            {"path", "braid-predicted"}, {"nvlink_path", path_name},
                            {"nccl_busbw", quick.nccl_busbw}, {"nccl_measured_curve", quick.nccl_measured},
                            {"nccl_time_us", quick.nccl_seconds * 1e6}, {"time_us", quick.braid_seconds * 1e6},
                            {"algbw", bytes / quick.braid_seconds / 1e9},
                            {"busbw", bytes / quick.braid_seconds / 1e9 * busbw_factor(*c, ranks)},
                            {"ratio", quick.ratio}, {"settled_time_us", settled.braid_seconds * 1e6},
                            {"settled_ratio", settled.ratio}, {"settled_pcie_share", settled.pcie_share},
                            {"measured", nullptr}};
      if (measured)
        row["measured"] = {{"ratio_low", measured->ratio_low}, {"ratio_high", measured->ratio_high},
                           {"date", measured->date}, {"source", measured->source}};
      rows.push_back(row);
      if (args.factor <= 1) break;
    }
  }
  if (!args.json_path.empty()) {
    std::ofstream f(args.json_path);
    f << nlohmann::json{{"tool", "braid-sim versus-nccl"}, {"predicted", true}, {"topology", t.name},
                        {"ranks", ranks}, {"calibration", path}, {"calibrated_to", m.date_span()},
                        {"model", {{"copy_engine_gbps", params.copy_engine_gbps},
                                   {"copy_engine_latency_us", params.copy_engine_latency_s * 1e6},
                                   {"pcie_efficiency", params.pcie_efficiency},
                                   {"pcie_fixed_us", params.facts.pcie_fixed_seconds * 1e6},
                                   {"nccltests_split_fraction", params.facts.nccltests_split_fraction}}},
                        {"rows", rows}}
             .dump(1)
      << "\n";
  }
  return 0;
}

}  // namespace braid::sim
