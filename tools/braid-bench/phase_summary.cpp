#include "phase_summary.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace braid::bench {

namespace {

std::vector<double> phase_values(const std::vector<PhaseCall>& calls, int phase, bool shares) {
  std::vector<double> v;
  for (const auto& c : calls)
    if (c.phase == phase && (!shares || c.pcie_share >= 0)) v.push_back(shares ? c.pcie_share : c.time_us);
  return v;
}

double median_of_last_half(std::vector<double> v) {
  if (v.empty()) return 0;
  std::vector<double> tail(v.begin() + static_cast<long>(v.size() / 2), v.end());
  std::sort(tail.begin(), tail.end());
  return tail[tail.size() / 2];
}

}  // namespace

double steady_time_us(const std::vector<PhaseCall>& calls, int phase) {
  return median_of_last_half(phase_values(calls, phase, false));
}

int calls_to_converge(const std::vector<PhaseCall>& calls, int phase, double tolerance) {
  const std::vector<double> t = phase_values(calls, phase, false);
  const double steady = steady_time_us(calls, phase);
  // The median of each window of 3 calls: a lone probe (the balancer testing PCIe again, at
  // most one call in any 3) is not a failure to converge.
  auto window_ok = [&](size_t i) {
    double w[3] = {t[i], t[i + 1], t[i + 2]};
    std::sort(w, w + 3);
    return std::abs(w[1] - steady) <= tolerance * steady;
  };
  if (t.size() < 3) return 0;
  size_t k = t.size() - 2;
  while (k > 0 && window_ok(k - 1)) --k;
  return static_cast<int>(k);
}

int calls_to_settle_share(const std::vector<PhaseCall>& calls, int phase, double tolerance) {
  int phases = 0;
  for (const auto& c : calls) phases = std::max(phases, c.phase + 1);
  double quiet = 0;
  for (int p = 0; p < phases; ++p) quiet = std::max(quiet, median_of_last_half(phase_values(calls, p, true)));
  const std::vector<double> s = phase_values(calls, phase, true);
  const double steady = median_of_last_half(s);
  size_t k = s.size();
  while (k > 0 && std::abs(s[k - 1] - steady) <= tolerance * quiet) --k;
  return static_cast<int>(k);
}

}  // namespace braid::bench
