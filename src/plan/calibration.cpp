#include "plan/calibration.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "plan/versus_nccl.h"

namespace braid::plan {

namespace {

using nlohmann::json;

Result read_collective(const json& j, const std::string& where, Collective* out) {
  const auto c = parse_collective(j.value("collective", std::string()));
  if (!c) return fail(Result::InvalidArgument, "%s: unknown collective '%s'", where.c_str(),
                      j.value("collective", std::string()).c_str());
  *out = *c;
  return Result::Success;
}

// The fields every measurement has: which machine, how many ranks, which collective.
template <typename Measurement>
Result read_case(const json& j, const std::string& where, Measurement* out) {
  out->machine = j.value("machine", std::string());
  out->ranks = j.value("ranks", 0);
  return read_collective(j, where, &out->collective);
}

Result read_ratio(const json& j, const std::string& where, MeasuredRatio* out) {
  MeasuredRatio r;
  BRAID_TRY(read_case(j, where, &r));
  r.size_from = j.contains("size") ? j["size"].get<double>() : j.value("size_from", 0.0);
  r.size_to = j.contains("size") ? j["size"].get<double>() : j.value("size_to", 0.0);
  r.ratio_low = j.contains("ratio") ? j["ratio"].get<double>() : j.value("ratio_low", 0.0);
  r.ratio_high = j.contains("ratio") ? j["ratio"].get<double>() : j.value("ratio_high", 0.0);
  r.nccl_busbw = j.value("nccl_busbw", 0.0);
  r.date = j.value("date", std::string());
  r.source = j.value("source", std::string());
  if (r.machine.empty() || r.ranks < 2 || r.size_from <= 0 || r.size_to < r.size_from || r.ratio_low <= 0 ||
      r.ratio_high < r.ratio_low)
    return fail(Result::InvalidArgument, "%s: a ratio needs machine, ranks >= 2, sizes and ratios", where.c_str());
  *out = std::move(r);
  return Result::Success;
}

// Weighted least squares of y = a + b x, weights w.
void fit_line(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& w, double* a,
              double* b) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sw += w[i];
    sx += w[i] * x[i];
    sy += w[i] * y[i];
    sxx += w[i] * x[i] * x[i];
    sxy += w[i] * x[i] * y[i];
  }
  const double det = sw * sxx - sx * sx;
  *b = det != 0 ? (sw * sxy - sx * sy) / det : 0;
  *a = sw != 0 ? (sy - *b * sx) / sw : 0;
}

// Bytes each GPU receives over NVLink on braid's copy-engine path: AllGather pulls the peers'
// blocks; AllReduce pulls the peers' parts of its own slice, then the peers' reduced slices.
double copy_engine_inbound_bytes(Collective c, int ranks, double bytes) {
  const double peers = static_cast<double>(ranks - 1) / ranks;
  return c == Collective::AllReduce ? 2 * bytes * peers : bytes * peers;
}

}  // namespace

double NcclCurve::busbw_at(double bytes) const {
  if (sizes.empty()) return 0;
  if (bytes <= sizes.front()) return busbw.front();
  if (bytes >= sizes.back()) return busbw.back();
  const size_t hi = static_cast<size_t>(std::upper_bound(sizes.begin(), sizes.end(), bytes) - sizes.begin());
  const size_t lo = hi - 1;
  const double f = std::log(bytes / sizes[lo]) / std::log(sizes[hi] / sizes[lo]);
  return busbw[lo] + f * (busbw[hi] - busbw[lo]);
}

std::string Measurements::date_span() const {
  std::vector<std::string> dates;
  for (const auto& r : ratios)
    if (!r.date.empty()) dates.push_back(r.date);
  if (dates.empty()) return "unknown dates";
  std::sort(dates.begin(), dates.end());
  return dates.front() == dates.back() ? dates.front() : dates.front() + " to " + dates.back();
}

Result load_measurements(const std::string& path, Measurements* out) {
  std::ifstream f(path);
  if (!f) return fail(Result::InvalidArgument, "calibration: cannot read %s", path.c_str());
  json doc;
  try {
    doc = json::parse(f);
  } catch (const json::exception& e) {
    return fail(Result::InvalidArgument, "calibration: %s is not JSON: %s", path.c_str(), e.what());
  }
  Measurements m;
  m.path = path;
  try {
    for (const auto& j : doc.at("points")) {
      MeasuredRatio r;
      BRAID_TRY(read_ratio(j, path + " points", &r));
      m.ratios.push_back(std::move(r));
    }
    for (const auto& j : doc.value("other_runs", json::array())) {
      MeasuredRatio r;
      BRAID_TRY(read_ratio(j, path + " other_runs", &r));
      m.other_runs.push_back(std::move(r));
    }
    for (const auto& j : doc.at("nccl_curves")) {
      NcclCurve c;
      BRAID_TRY(read_case(j, path + " nccl_curves", &c));
      c.sizes = j.at("size").get<std::vector<double>>();
      c.busbw = j.at("busbw").get<std::vector<double>>();
      c.source = j.value("source", std::string());
      if (c.sizes.empty() || c.sizes.size() != c.busbw.size() || !std::is_sorted(c.sizes.begin(), c.sizes.end()))
        return fail(Result::InvalidArgument, "calibration %s: a curve needs ascending sizes, one busbw each", path.c_str());
      m.nccl_curves.push_back(std::move(c));
    }
    for (const auto& j : doc.at("pcie_alone")) {
      PcieAloneMeasurement p;
      BRAID_TRY(read_case(j, path + " pcie_alone", &p));
      p.size = j.at("size").get<double>();
      p.algbw = j.at("algbw").get<double>();
      p.date = j.value("date", std::string());
      p.source = j.value("source", std::string());
      m.pcie_alone.push_back(std::move(p));
    }
    const json& facts = doc.at("facts");
    m.facts.pcie_fixed_seconds = facts.at("pcie_fixed_us").get<double>() * 1e-6;
    m.facts.nccltests_split_fraction =
        facts.at("split_calls_with_pcie_share").get<double>() / facts.at("split_calls_counted").get<double>();
    m.facts.probe_share = facts.at("probe_share").get<double>();
    m.facts.split_min_bytes = facts.at("split_min_bytes").get<double>();
    m.facts.nvlink_copy_min_bytes = facts.at("nvlink_copy_min_bytes").get<double>();
    m.facts.nvlink_allreduce_min_bytes = facts.at("nvlink_allreduce_min_bytes").get<double>();
  } catch (const json::exception& e) {
    return fail(Result::InvalidArgument, "calibration %s: %s", path.c_str(), e.what());
  }
  *out = std::move(m);
  return Result::Success;
}

std::string default_measurements_path() {
  namespace fs = std::filesystem;
  std::error_code ec;
  // The pip package puts it beside the tools: <prefix>/bin/braid-sim, <prefix>/calibration/.
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "calibration" / "h200-measured.json";
    if (fs::is_regular_file(installed, ec)) return installed.string();
  }
  return std::string(BRAID_CALIBRATION_DIR) + "/h200-measured.json";
}

Result fit_model(const Measurements& m, ModelParams* out) {
  if (out == nullptr) return fail(Result::InvalidArgument, "fit_model: null result");
  ModelParams p;
  p.facts = m.facts;

  // NCCL's rank scaling, per collective, from the largest size of two measured rank counts.
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter}) {
    std::vector<const NcclCurve*> curves;
    for (const auto& curve : m.nccl_curves)
      if (curve.collective == c) curves.push_back(&curve);
    std::sort(curves.begin(), curves.end(), [](auto* a, auto* b) { return a->ranks < b->ranks; });
    if (curves.size() < 2 || curves.front()->ranks == curves.back()->ranks) continue;
    const double n1 = curves.front()->ranks, n2 = curves.back()->ranks;
    const double b1 = curves.front()->busbw.back(), b2 = curves.back()->busbw.back();
    // b1 = B(1 - c/n1), b2 = B(1 - c/n2)  =>  c = (b2 - b1) / (b2/n1 - b1/n2)
    NcclRankScaling s;
    s.collective = c;
    s.overhead = (b2 - b1) / (b2 / n1 - b1 / n2);
    s.b_inf_gbps = b2 / (1 - s.overhead / n2);
    p.nccl_scaling.push_back(s);
  }

  // The copy-engine path: t = latency + inbound / rate over the two-rank calls it carried (in
  // nccl-tests almost no call has a PCIe share, so braid's time is that path's), relative errors.
  std::vector<double> x, y, w;
  for (const auto& r : m.ratios) {
    if (r.ranks != 2 || r.size_from != r.size_to || r.nccl_busbw <= 0) continue;
    const bool copy = (r.collective == Collective::AllGather && r.size_from >= m.facts.nvlink_copy_min_bytes) ||
                      (r.collective == Collective::AllReduce && r.size_from >= m.facts.nvlink_allreduce_min_bytes);
    if (!copy) continue;
    const double nccl_s = r.size_from * busbw_factor(r.collective, r.ranks) / (r.nccl_busbw * 1e9);
    const double braid_s = nccl_s / (0.5 * (r.ratio_low + r.ratio_high));
    x.push_back(copy_engine_inbound_bytes(r.collective, r.ranks, r.size_from));
    y.push_back(braid_s);
    w.push_back(1 / (braid_s * braid_s));
  }
  if (x.size() < 2) return fail(Result::InvalidArgument, "fit_model: fewer than two calls on braid's copy-engine path");
  double latency = 0, seconds_per_byte = 0;
  fit_line(x, y, w, &latency, &seconds_per_byte);
  if (seconds_per_byte <= 0) return fail(Result::InvalidArgument, "fit_model: copy-engine fit gave no rate");
  p.copy_engine_gbps = 1 / seconds_per_byte / 1e9;
  p.copy_engine_latency_s = std::max(0.0, latency);

  // The PCIe path's efficiency: the geometric mean of measured / cost-model algbw.
  p.pcie_efficiency = 1;
  const VersusNcclModel unscaled(m, p);
  double log_sum = 0;
  int n = 0;
  for (const auto& a : m.pcie_alone) {
    topo::Topology t;
    BRAID_TRY(load_machine(a.machine, &t));
    double modelled = 0;
    BRAID_TRY(unscaled.pcie_algbw(a.collective, a.ranks, t, a.size, &modelled));
    if (modelled <= 0) continue;
    log_sum += std::log(a.algbw / modelled);
    ++n;
  }
  if (n == 0) return fail(Result::InvalidArgument, "fit_model: no PCIe-path-alone measurement");
  p.pcie_efficiency = std::exp(log_sum / n);
  *out = std::move(p);
  return Result::Success;
}

}  // namespace braid::plan
