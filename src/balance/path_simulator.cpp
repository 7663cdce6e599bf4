#include "balance/path_simulator.h"

#include <algorithm>

namespace braid::balance {

std::vector<double> PathSimulator::path_seconds(int call, size_t bytes,
                                                const Shares& shares) const {
  std::vector<double> t(paths_.size(), 0.0);
  const std::vector<size_t> counts = split_elements(shares, bytes, 1);
  for (size_t p = 0; p < paths_.size() && p < counts.size(); ++p) {
    if (counts[p] == 0) continue;
    double scale = 1.0;
    for (const SimInterference& n : noise_)
      if (n.path == static_cast<int>(p) && call >= n.begin_call && call < n.end_call)
        scale *= n.bandwidth_scale;
    const SimPath& path = paths_[p];
    t[p] = path.seconds_of_bytes ? path.seconds_of_bytes(counts[p]) / scale
                                 : path.latency_s + static_cast<double>(counts[p]) / (path.bandwidth_bytes_per_s * scale);
  }
  return t;
}

double PathSimulator::call_seconds(const std::vector<double>& path_seconds) {
  return path_seconds.empty() ? 0.0 : *std::max_element(path_seconds.begin(), path_seconds.end());
}

Shares PathSimulator::equal_finish_shares(size_t bytes) const {
  Shares shares = dedicated_only(num_paths());
  if (num_paths() < 2) return shares;
  auto with_units = [&](uint32_t units) {
    Shares s = dedicated_only(num_paths());
    s.units[1] = units;
    s.units[kDedicatedPath] = kShareUnits - units;
    return s;
  };
  // Path 1's time grows and path 0's falls with path 1's units: find the first unit count at
  // which path 1 is the slower one; the best split is there or one unit below.
  uint32_t lo = 0, hi = kShareUnits;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    const auto t = path_seconds(0, bytes, with_units(mid));
    if (t[1] >= t[0]) hi = mid;
    else lo = mid + 1;
  }
  double best = call_seconds(path_seconds(0, bytes, shares));
  for (uint32_t u : {lo > 0 ? lo - 1 : 0u, lo}) {
    const Shares s = with_units(u);
    const double t = call_seconds(path_seconds(0, bytes, s));
    if (t < best * (1 - 1e-12)) {
      best = t;
      shares = s;
    }
  }
  return shares;
}

}  // namespace braid::balance
