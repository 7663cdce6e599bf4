// NIMBLE's router: capacity-normalised minimum-congestion multi-commodity routing over the
// candidate paths of route/paths.h (docs/ROUTING.md): a few multiplicative-weights rounds for a
// first routing, then projected Newton passes on an exponential soft-max of link utilisation
// whose steepness grows each pass, stopping once the most loaded link stops improving or a cut
// lower bound on the optimum proves it close enough.
//
// Built once per topology: paths and a compact index of the directed links they use are
// precomputed, and solve() allocates nothing once `out` has been sized by a first solve.
// Deterministic: fixed flow and path order, ties to the lowest path index, no threads and no libm
// in the solve, so every rank computing the same Traffic (after the same history, see
// RouterOptions::warm_start) gets bit-identical fractions.
#pragma once

#include <vector>

#include "common/result.h"
#include "route/paths.h"
#include "route/traffic.h"
#include "topo/topology.h"

namespace braid::route {

struct RouterOptions {
  PathOptions paths;
  int rounds = 1;                // multiplicative-weights slices for the first routing
  double alpha = 8.0;            // steepness of the exponential link cost in those rounds
  int refine_rounds = 12;        // at most this many Newton passes
  double refine_start = 16.0;    // steepness of the first Newton pass ...
  double refine_growth = 4.0;    // ... times this each pass ...
  double refine_alpha = 128.0;   // ... up to this
  double refine_damping = 1.0;   // fraction of each Newton step taken
  double hot_span = 4.0;         // flows on no link within 2^-hot_span of the max cost stay put
  double tolerance = 2e-4;       // stop when a pass at full steepness lowers the max by less (relative)
  // Also stop after a pass at full steepness, from the bound_after-th pass on, once the max is
  // within bound_gap (relative) of a lower bound on the optimum: the most any GPU must send or
  // receive over the capacity of its first or last hops (see Router::cut_bound).
  double bound_gap = 0.02;
  int bound_after = 3;
  double direct_threshold = 0;   // flows below this many bytes go on their first (direct) path
  double hysteresis = 0.05;      // keep the previous routing unless the new one is this much better
  // Start from the previous routing in `out` (when valid) instead of the multiplicative-weights
  // rounds, when the traffic moved by at most warm_change (sum |new - old| / sum new) since.
  // All ranks solve the same sequence of matrices, so they still agree bit for bit.
  bool warm_start = true;
  double warm_change = 0.5;
  double warm_alpha = 32.0;      // steepness of a warm start's first Newton pass
};

// Per flow (ordered pair with bytes), the fraction of its bytes on each of its paths.
struct Routing {
  std::vector<double> fraction;  // flat; Router::path_offset(src, dst) + path index
  double max_congestion = 0;     // max over directed links of load / capacity (seconds)
  double lower_bound = 0;        // no routing of this traffic over these paths does better
  bool valid = false;            // false until a solve filled it
  bool kept_previous = false;    // the last solve kept the previous routing (hysteresis)
  int passes = 0;                // Newton passes the last solve ran (for benchmarks and tests)
  bool warm = false;             // the last solve started from the previous routing
  Traffic traffic;               // the matrix `fraction` was solved for
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
  int link_count() const { return links_; }  // directed links the solve tracks

  // Routes `t` into `out`. When `out` holds a valid routing from an earlier solve, it is kept
  // (its congestion re-evaluated under `t`) unless the new routing's max congestion is lower
  // by more than options().hysteresis (a fraction of the old one).
  Result solve(const Traffic& t, Routing* out);

  // Max link utilisation (load / capacity) of `fraction` under traffic `t`.
  double congestion(const Traffic& t, const std::vector<double>& fraction);

 private:
  // Fills scratch_ and util_; returns the Newton passes run.
  int route(const Traffic& t, const std::vector<double>* previous);
  void place_fixed_and_collect(const Traffic& t);
  void first_routing(const Traffic& t);
  void start_from(const Traffic& t, const std::vector<double>& previous);
  int refine(const Traffic& t, bool warm);
  double max_util() const;
  double cut_bound(const Traffic& t) const;
  void add_util(int path, double bytes) {
    for (int h = path_begin_[size_t(path)]; h < path_begin_[size_t(path) + 1]; ++h)
      util_[size_t(hop_link_[size_t(h)])] += bytes * hop_inv_cap_[size_t(h)];
  }

  RouterOptions opt_;
  PathSet paths_;
  std::vector<int> pair_begin_;       // [pair] -> first path; size pairs + 1
  std::vector<int> path_begin_;       // [path] -> first hop; size paths + 1
  std::vector<int> hop_link_;         // [hop] compact directed-link id
  std::vector<double> hop_inv_cap_;   // [hop] seconds per byte on that link for this path
  int links_ = 0;                     // compact links (dominated ones dropped)
  int max_paths_ = 0;                 // most paths of one pair
  std::vector<double> pair_capacity_; // [pair] sum of its paths' bottleneck capacities
  std::vector<double> path_floor_;    // [path] sum of its hops' seconds per byte
  // Cuts for the lower bound: per cut, [cut_begin_[c], cut_begin_[c + 1]) of (pair, bytes factor)
  // and the cut's total capacity.
  std::vector<int> cut_begin_, cut_pair_;
  std::vector<double> cut_factor_, cut_capacity_;
  double bound_ = 0;                  // cut_bound() of this solve's traffic
  // Scratch, sized by init().
  std::vector<double> util_;          // seconds busy per compact link (load / capacity)
  std::vector<double> weight_;        // exponential cost per compact link
  std::vector<double> scratch_;       // fractions of a new solve
  std::vector<double> gradient_, curvature_, next_;  // per path of the flow being refined
  std::vector<int> flows_;            // pairs with bytes above the threshold, this solve
};

}  // namespace braid::route
