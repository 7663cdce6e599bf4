// A model of the paths for tests and docs, not a measurement: a path's time for a call is
// latency + bytes / bandwidth (0 when it carries nothing); an interference window scales one
// path's bandwidth for calls [begin, end).
#pragma once

#include <cstddef>
#include <vector>

#include "balance/shares.h"

namespace braid::balance {

struct SimPath {
  double latency_s;
  double bandwidth_bytes_per_s;
};

struct SimInterference {
  int path = 1;
  int begin_call = 0;
  int end_call = 0;
  double bandwidth_scale = 1.0;
};

class PathSimulator {
 public:
  explicit PathSimulator(std::vector<SimPath> paths, std::vector<SimInterference> noise = {})
      : paths_(std::move(paths)), noise_(std::move(noise)) {}

  int num_paths() const { return static_cast<int>(paths_.size()); }
  // Per-path seconds of call number `call` moving `bytes` split by `shares`.
  std::vector<double> path_seconds(int call, size_t bytes, const Shares& shares) const;
  // The call's time: the slowest path.
  static double call_seconds(const std::vector<double>& path_seconds);

 private:
  std::vector<SimPath> paths_;
  std::vector<SimInterference> noise_;
};

}  // namespace braid::balance
