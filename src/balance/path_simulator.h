// A model of the paths for tests, docs and braid-sim, not a measurement: a path's time for a call
// is latency + bytes / bandwidth (0 when it carries nothing), or, where a path has a measured
// curve, that curve's time for its bytes; an interference window scales one path's bandwidth for
// calls [begin, end).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "balance/shares.h"

namespace braid::balance {

struct SimPath {
  double latency_s = 0;
  double bandwidth_bytes_per_s = 1;
  // When set, the path's time for `bytes` (a measured curve, e.g. NCCL's); latency_s and
  // bandwidth_bytes_per_s are then unused, and interference scales the time instead.
  std::function<double(size_t bytes)> seconds_of_bytes = {};
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
  // The two-path split a balancer aims for on a quiet machine: the share of path 1 (in
  // kShareUnits) at which both paths finish together, i.e. the one whose call time is least.
  // Path 0 alone when giving path 1 even one unit makes the call slower.
  Shares equal_finish_shares(size_t bytes) const;

 private:
  std::vector<SimPath> paths_;
  std::vector<SimInterference> noise_;
};

}  // namespace braid::balance
