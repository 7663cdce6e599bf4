// NIMBLE's router: capacity-normalised minimum-congestion multi-commodity routing over the
// candidate paths of route/paths.h, by multiplicative weights (docs/ROUTING.md).
//
// Built once per topology: paths and a compact index of the directed links they use are
// precomputed, and solve() allocates nothing once `out` has been sized by a first solve.
// Deterministic: fixed flow and path order, ties to the lowest path index, no threads, so every
// rank computing the same Traffic gets bit-identical fractions.
#pragma once

#include <vector>

#include "common/result.h"
#include "route/paths.h"
#include "route/traffic.h"
#include "topo/topology.h"

namespace braid::route {

struct RouterOptions {
  PathOptions paths;
  int rounds = 32;               // demand slices per flow: each flow is routed in 1/rounds pieces
  double alpha = 12.0;           // steepness of the exponential link cost
  int refine_rounds = 24;        // rounds moving shrinking steps from costly to cheap paths
  double refine_alpha = 48.0;    // steepness of the cost while refining
  double direct_threshold = 0;   // flows below this many bytes go on their first (direct) path
  double hysteresis = 0.05;      // keep the previous routing unless the new one is this much better
};

// Per flow (ordered pair with bytes), the fraction of its bytes on each of its paths.
struct Routing {
  std::vector<double> fraction;  // flat; Router::path_offset(src, dst) + path index
  double max_congestion = 0;     // max over directed links of load / capacity (seconds)
  bool valid = false;            // false until a solve filled it
  bool kept_previous = false;    // the last solve kept the previous routing (hysteresis)
};

class Router {
 public:
  Result init(const topo::Topology& t, const RouterOptions& opt = {});

  void set_options(const RouterOptions& opt) { opt_ = opt; }
  const RouterOptions& options() const { return opt_; }
  const PathSet& paths() const { return paths_; }
  int ranks() const { return paths_.ranks; }
  int path_offset(int src, int dst) const { return pair_begin_[size_t(src * paths_.ranks + dst)]; }
  int path_count(int src, int dst) const {
    const size_t i = size_t(src * paths_.ranks + dst);
    return pair_begin_[i + 1] - pair_begin_[i];
  }
  int total_paths() const { return pair_begin_.back(); }
  int link_count() const { return int(capacity_.size()); }

  // Routes `t` into `out`. When `out` holds a valid routing from an earlier solve, it is kept
  // (its congestion re-evaluated under `t`) unless the new routing's max congestion is lower
  // by more than options().hysteresis (a fraction of the old one).
  Result solve(const Traffic& t, Routing* out);

  // Max link utilisation (load / capacity) of `fraction` under traffic `t`.
  double congestion(const Traffic& t, const std::vector<double>& fraction);

 private:
  void route_mwu(const Traffic& t, std::vector<double>* fraction);
  void add_load(int path, double bytes, double k, double* worst);

  RouterOptions opt_;
  PathSet paths_;
  std::vector<int> pair_begin_;    // [pair] -> first path; size pairs + 1
  std::vector<int> path_begin_;    // [path] -> first entry in path_links_; size paths + 1
  std::vector<int> path_links_;    // compact directed-link ids
  std::vector<double> capacity_;   // [compact link] bytes/s
  std::vector<double> inv_cap_;
  // Scratch, sized by init().
  std::vector<double> load_;       // bytes per compact link
  std::vector<double> weight_;     // exponential cost per compact link
  std::vector<double> scratch_;    // fractions of a new solve
  std::vector<int> flows_;         // pairs with bytes above the threshold, this solve
};

}  // namespace braid::route
