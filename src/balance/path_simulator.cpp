#include "balance/path_simulator.h"

#include <algorithm>

namespace braid::balance {

std::vector<double> PathSimulator::path_seconds(int call, size_t bytes,
                                                const Shares& shares) const {
  std::vector<double> t(paths_.size(), 0.0);
  const std::vector<size_t> counts = split_elements(shares, bytes, 1);
  for (size_t p = 0; p < paths_.size() && p < counts.size(); ++p) {
    if (counts[p] == 0) continue;
    double bw = paths_[p].bandwidth_bytes_per_s;
    for (const SimInterference& n : noise_)
      if (n.path == static_cast<int>(p) && call >= n.begin_call && call < n.end_call)
        bw *= n.bandwidth_scale;
    t[p] = paths_[p].latency_s + static_cast<double>(counts[p]) / bw;
  }
  return t;
}

double PathSimulator::call_seconds(const std::vector<double>& path_seconds) {
  return path_seconds.empty() ? 0.0 : *std::max_element(path_seconds.begin(), path_seconds.end());
}

}  // namespace braid::balance
