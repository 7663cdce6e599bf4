#include "route/router.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <utility>

namespace braid::route {

namespace {

constexpr double kLn2 = 0.6931471805599453;

// 2^y, cheap and the same on every machine: the integer part goes into the exponent bits and
// 2^f on [0, 1) is the quadratic through (0, 1), (0.5, sqrt 2), (1, 2) (error < 0.3%). Only
// +, *, truncation and bit moves, no libm. Increasing and convex, which is what link costs need.
inline double exp2_fast(double y) {
  y = std::clamp(y, -1000.0, 1000.0) + 1024.0;
  const int64_t n = int64_t(y);  // y > 0: truncation is floor
  const double f = y - double(n);
  const double m = 1.0 + f * (0.6568542494923802 + 0.3431457505076198 * f);
  return std::bit_cast<double>(std::bit_cast<int64_t>(m) + ((n - 1024) << 52));
}

// log2(x) for x > 0, the inverse companion of exp2_fast: exponent bits plus a quadratic in the
// mantissa m on [1, 2) through (1, 0) and (2, 1) (error < 0.4%).
inline double log2_fast(double x) {
  const int64_t bits = std::bit_cast<int64_t>(x);
  const int64_t e = (bits >> 52) - 1023;
  const double m = std::bit_cast<double>((bits & ((int64_t(1) << 52) - 1)) | (int64_t(1023) << 52)) - 1.0;
  return double(e) + m * (1.3465 - 0.3465 * m);
}

}  // namespace

Result Router::init(const topo::Topology& t, const RouterOptions& opt) {
  opt_ = opt;
  BRAID_TRY(build_paths(t, opt.paths, &paths_));
  const int n = paths_.ranks;
  pair_begin_.assign(size_t(n) * size_t(n) + 1, 0);
  max_paths_ = 0;
  // Directed topology links -> ids, and each path as (link id, seconds per byte) hops: a hop's
  // capacity is the path's own view of the link (a relay hop may be charged more per byte).
  std::map<std::pair<int, bool>, int> index;
  std::vector<std::vector<std::pair<int, double>>> path_hops;
  for (size_t p = 0; p < paths_.pairs.size(); ++p) {
    pair_begin_[p + 1] = pair_begin_[p] + int(paths_.pairs[p].size());
    max_paths_ = std::max(max_paths_, int(paths_.pairs[p].size()));
    for (const Path& path : paths_.pairs[p]) {
      path_hops.emplace_back();
      for (const DirLink& l : path.hops) {
        auto it = index.emplace(std::make_pair(l.link, l.forward), int(index.size())).first;
        path_hops.back().push_back({it->second, 1.0 / l.capacity});
      }
    }
  }
  // A link that every path crossing it also crosses at a cost per byte no lower elsewhere (the
  // same or an earlier link) can never be the most loaded one: drop it from the solve. A NIC
  // path's PCIe and network segments collapse to the NIC's own link this way, which halves its
  // hops; the congestion stays exact (tested against all links).
  const size_t links = index.size(), paths = path_hops.size(), words = (paths + 63) / 64;
  std::vector<uint64_t> users(links * words, 0);
  std::vector<std::vector<int>> users_of(links);
  for (size_t p = 0; p < paths; ++p)
    for (const auto& [l, cost] : path_hops[p]) {
      users[size_t(l) * words + p / 64] |= uint64_t(1) << (p % 64);
      users_of[size_t(l)].push_back(int(p));
    }
  auto cost_on = [&](size_t p, size_t link) {
    for (const auto& [l, cost] : path_hops[p])
      if (size_t(l) == link) return cost;
    return 0.0;
  };
  std::vector<int> compact(links, -1);
  links_ = 0;
  for (size_t e = 0; e < links; ++e) {
    bool dominated = false;
    for (size_t f = 0; f < links && !dominated; ++f) {
      if (f == e) continue;
      bool subset = true;
      for (size_t w = 0; w < words && subset; ++w) subset = (users[e * words + w] & ~users[f * words + w]) == 0;
      if (!subset) continue;
      bool cheaper = true, equal = true;
      for (int p : users_of[e]) {
        const double ce = cost_on(size_t(p), e), cf = cost_on(size_t(p), f);
        cheaper &= ce <= cf;
        equal &= ce == cf;
      }
      dominated = cheaper && (!equal || f < e);
    }
    if (!dominated) compact[e] = links_++;
  }
  path_begin_.assign(1, 0);
  hop_link_.clear();
  hop_inv_cap_.clear();
  for (const auto& hops : path_hops) {
    for (const auto& [l, cost] : hops) {
      if (compact[size_t(l)] < 0) continue;
      hop_link_.push_back(compact[size_t(l)]);
      hop_inv_cap_.push_back(cost);
    }
    path_begin_.push_back(int(hop_link_.size()));
  }
  // Cuts for the lower bound (cut_bound): for each GPU, the links that the first hops of its
  // outgoing paths use, and those the last hops of its incoming paths use, each at its capacity.
  cut_begin_.assign(1, 0);
  cut_pair_.clear();
  cut_factor_.clear();
  cut_capacity_.clear();
  for (int v = 0; v < n; ++v) {
    for (const bool out : {true, false}) {
      std::vector<double> y(size_t(links_), 0.0);  // capacity of each link in the cut
      for (int o = 0; o < n; ++o) {
        if (o == v) continue;
        const size_t pair = size_t(out ? v * n + o : o * n + v);
        for (int p = pair_begin_[pair]; p < pair_begin_[pair + 1]; ++p) {
          const int h = out ? path_begin_[size_t(p)] : path_begin_[size_t(p) + 1] - 1;
          double& cap = y[size_t(hop_link_[size_t(h)])];
          cap = std::max(cap, 1.0 / hop_inv_cap_[size_t(h)]);
        }
      }
      double capacity = 0;
      for (double c : y) capacity += c;
      // Each pair's cheapest path across the cut, seconds per byte times capacity: at least
      // that much of the cut's capacity-seconds per byte of the pair, however it is routed.
      for (size_t pair = 0; pair + 1 < pair_begin_.size(); ++pair) {
        double cheapest = HUGE_VAL;
        for (int p = pair_begin_[pair]; p < pair_begin_[pair + 1]; ++p) {
          double cost = 0;
          for (int h = path_begin_[size_t(p)]; h < path_begin_[size_t(p) + 1]; ++h) cost += y[size_t(hop_link_[size_t(h)])] * hop_inv_cap_[size_t(h)];
          cheapest = std::min(cheapest, cost);
        }
        if (cheapest > 0 && cheapest < HUGE_VAL) cut_pair_.push_back(int(pair)), cut_factor_.push_back(cheapest);
      }
      cut_capacity_.push_back(capacity);
      cut_begin_.push_back(int(cut_pair_.size()));
    }
  }
  // Each path's cost at weight 1 on every hop, summed as first_routing sums its costs.
  path_floor_.assign(paths, 0.0);
  for (size_t p = 0; p < paths; ++p)
    for (int h = path_begin_[p]; h < path_begin_[p + 1]; ++h) path_floor_[p] += hop_inv_cap_[size_t(h)];
  // Each pair's paths' bottleneck capacities added up (what first_routing's bound divides by).
  pair_capacity_.assign(paths_.pairs.size(), 0.0);
  for (size_t pair = 0; pair < paths_.pairs.size(); ++pair) {
    for (int p = pair_begin_[pair]; p < pair_begin_[pair + 1]; ++p) {
      double widest_inv = 0;
      for (int h = path_begin_[size_t(p)]; h < path_begin_[size_t(p) + 1]; ++h) widest_inv = std::max(widest_inv, hop_inv_cap_[size_t(h)]);
      pair_capacity_[pair] += 1.0 / widest_inv;
    }
  }
  util_.assign(size_t(links_), 0.0);
  weight_.assign(size_t(links_), 0.0);
  scratch_.assign(size_t(total_paths()), 0.0);
  gradient_.assign(size_t(max_paths_), 0.0);
  curvature_.assign(size_t(max_paths_), 0.0);
  next_.assign(size_t(max_paths_), 0.0);
  flows_.reserve(paths_.pairs.size());
  return Result::Success;
}

double Router::max_util() const {
  // Four running maxima: one would wait on each comparison before the next.
  double m[4] = {0, 0, 0, 0};
  const size_t n = util_.size(), n4 = n & ~size_t(3);
  for (size_t e = 0; e < n4; e += 4)
    for (size_t j = 0; j < 4; ++j) m[j] = std::max(m[j], util_[e + j]);
  for (size_t e = n4; e < n; ++e) m[0] = std::max(m[0], util_[e]);
  return std::max(std::max(m[0], m[1]), std::max(m[2], m[3]));
}

// A lower bound on the optimum (the LP's max congestion over the same paths), from cuts: every
// byte of pair f crosses the cut's links on any of its paths, costing at least factor_f seconds x
// capacity per byte there (its cheapest path across the cut), so any routing loads the cut's
// links with at least sum_f bytes_f factor_f capacity-seconds, and its most loaded link is at
// least that over the cut's capacity. (The Lagrangian dual bound with prices on the cut's links
// only.) On a full mesh the busiest GPU's cut is the LP optimum for the random matrices measured.
double Router::cut_bound(const Traffic& t) const {
  double bound = 0;
  for (size_t c = 0; c + 1 < cut_begin_.size(); ++c) {
    double load = 0;
    for (int i = cut_begin_[c]; i < cut_begin_[c + 1]; ++i) load += t.bytes[size_t(cut_pair_[size_t(i)])] * cut_factor_[size_t(i)];
    bound = std::max(bound, load / cut_capacity_[c]);
  }
  return bound;
}

double Router::congestion(const Traffic& t, const std::vector<double>& fraction) {
  std::fill(util_.begin(), util_.end(), 0.0);
  const int n = paths_.ranks;
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      const double bytes = s == d ? 0.0 : t.at(s, d);
      if (bytes <= 0) continue;
      const size_t pair = size_t(s * n + d);
      for (int p = pair_begin_[pair]; p < pair_begin_[pair + 1]; ++p)
        if (fraction[size_t(p)] != 0) add_util(p, bytes * fraction[size_t(p)]);
    }
  }
  return max_util();
}

// Small flows and flows with a single path go on their first path (direct where there is one)
// and load the links first; the others are the flows the solver routes.
void Router::place_fixed_and_collect(const Traffic& t) {
  const int n = paths_.ranks;
  std::fill(scratch_.begin(), scratch_.end(), 0.0);
  std::fill(util_.begin(), util_.end(), 0.0);
  flows_.clear();
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      if (s == d) continue;
      const double bytes = t.at(s, d);
      const int pair = s * n + d;
      const int p0 = pair_begin_[size_t(pair)];
      if (bytes <= 0) {
        // Idle flows get their first path too, so that every routing covers every pair: one
        // kept by hysteresis must still carry a flow that starts later.
        scratch_[size_t(p0)] = 1.0;
      } else if (bytes < opt_.direct_threshold || pair_begin_[size_t(pair) + 1] - p0 == 1) {
        scratch_[size_t(p0)] = 1.0;
        add_util(p0, bytes);
      } else {
        flows_.push_back(pair);
      }
    }
  }
}

// Multiplicative weights over demand slices (NIMBLE Algorithm 1 / Garg-Koenemann style): in
// each round every flow places 1/rounds of its bytes on the path that is cheapest under the link
// costs 2^(alpha * utilisation / reference) per byte, and the costs of the links it used rise at
// once. `reference` is the utilisation the most loaded link is expected to reach by the end of
// the round, so alpha means the same at every scale of traffic. A coarse start for refine().
void Router::first_routing(const Traffic& t) {
  // A lower bound on the optimum, for the first round's reference: the pre-loaded links, and
  // for each flow its bytes over the sum of its paths' bottleneck capacities.
  double bound = max_util();
  for (int pair : flows_) bound = std::max(bound, t.bytes[size_t(pair)] / pair_capacity_[size_t(pair)]);
  const int rounds = std::max(1, opt_.rounds);
  const double slice = 1.0 / rounds;
  double worst = 0;
  for (int r = 0; r < rounds; ++r) {
    const double reference = std::max(bound * (r + 1) * slice, r == 0 ? 0.0 : worst * (r + 1) / r);
    const double k = opt_.alpha / reference;
    for (size_t e = 0; e < util_.size(); ++e) weight_[e] = exp2_fast(k * util_[e]);
    for (int pair : flows_) {
      int best = -1;
      double best_cost = HUGE_VAL;
      for (int p = pair_begin_[size_t(pair)]; p < pair_begin_[size_t(pair) + 1]; ++p) {
        // Every weight is at least 1 (utilisations are >= 0), so a path costs at least its
        // floor: one that cannot beat the cheapest so far is not summed (on a mesh with
        // light links, every relay once the direct path is priced).
        if (path_floor_[size_t(p)] >= best_cost) continue;
        double cost = 0;
        for (int h = path_begin_[size_t(p)]; h < path_begin_[size_t(p) + 1]; ++h) cost += weight_[size_t(hop_link_[size_t(h)])] * hop_inv_cap_[size_t(h)];
        if (cost < best_cost) best_cost = cost, best = p;
      }
      scratch_[size_t(best)] += slice;
      const double bytes = t.bytes[size_t(pair)] * slice;
      for (int h = path_begin_[size_t(best)]; h < path_begin_[size_t(best) + 1]; ++h) {
        const size_t e = size_t(hop_link_[size_t(h)]);
        util_[e] += bytes * hop_inv_cap_[size_t(h)];
        worst = std::max(worst, util_[e]);
        weight_[e] = exp2_fast(k * util_[e]);
      }
    }
  }
}

// The previous routing as the start (warm start). A flow it did not carry starts direct.
void Router::start_from(const Traffic& t, const std::vector<double>& previous) {
  for (int pair : flows_) {
    const int p0 = pair_begin_[size_t(pair)], p1 = pair_begin_[size_t(pair) + 1];
    double sum = 0;
    for (int p = p0; p < p1; ++p) sum += previous[size_t(p)];
    const double bytes = t.bytes[size_t(pair)];
    if (!(sum > 0.999 && sum < 1.001)) {
      scratch_[size_t(p0)] = 1.0;
      add_util(p0, bytes);
      continue;
    }
    for (int p = p0; p < p1; ++p) {
      scratch_[size_t(p)] = previous[size_t(p)] / sum;
      if (scratch_[size_t(p)] != 0) add_util(p, bytes * scratch_[size_t(p)]);
    }
  }
}

// Projected Newton passes on the soft-max  Phi = sum_e 2^(k * util_e),  k = alpha / max util.
// For one flow of B bytes the derivative of Phi along path p is ln2 k B * g_p and the second
// derivative (ln2 k B)^2 * q_p, with g_p = sum_{e in p} w_e / c_e, q_p = sum w_e / c_e^2,
// w_e = 2^(k util_e). Each flow in turn moves to the minimiser of that diagonal quadratic model
// on its simplex of fractions (Bertsekas-Gafni gradient projection; the multiplier mu found by
// dropping paths that would go negative), and the costs of the links it touched are updated at
// once. alpha grows refine_growth-fold each pass from refine_start to refine_alpha (a steep cost
// from the start takes tiny Newton steps); the passes stop when a full-steepness pass no longer
// lowers the max, or leaves it within bound_gap of the cut bound.
int Router::refine(const Traffic& t, bool warm) {
  double worst = max_util();
  // From a previous routing, which is close, steeper at once (log-domain steps are not limited
  // by the steepness; the gentle start helps from a poor first routing).
  double alpha = std::min(warm ? opt_.warm_alpha : opt_.refine_start, opt_.refine_alpha);
  int passes = 0;
  double* const g = gradient_.data();
  double* const r = curvature_.data();  // 1 / (ln2 k B q_p): how far a path moves per unit of gradient
  double* const next = next_.data();
  for (int pass = 0; pass < opt_.refine_rounds && worst > 0; ++pass) {
    const bool full = alpha >= opt_.refine_alpha;
    const double k = alpha / worst;
    for (size_t e = 0; e < util_.size(); ++e) weight_[e] = exp2_fast(k * util_[e]);
    // Links more than hot_span doublings of cost below the most loaded one cannot set the max:
    // a flow that uses none of the others has nothing to gain for it, and is left alone.
    const double hot = worst * (1 - opt_.hot_span / alpha);
    bool moved = false;
    for (int pair : flows_) {
      const int p0 = pair_begin_[size_t(pair)];
      const int np = pair_begin_[size_t(pair) + 1] - p0;
      double* const x = &scratch_[size_t(p0)];
      const double bytes = t.bytes[size_t(pair)];
      bool touches_hot = false;
      for (int i = 0; i < np && !touches_hot; ++i) {
        if (x[i] == 0) continue;
        for (int h = path_begin_[size_t(p0 + i)]; h < path_begin_[size_t(p0 + i) + 1]; ++h)
          touches_hot |= util_[size_t(hop_link_[size_t(h)])] > hot;
      }
      if (!touches_hot) continue;
      double cheapest = HUGE_VAL, dearest_used = -HUGE_VAL;  // log2 of marginal costs
      for (int i = 0; i < np; ++i) {
        double gi = 0, qi = 0;
        for (int h = path_begin_[size_t(p0 + i)]; h < path_begin_[size_t(p0 + i) + 1]; ++h) {
          const double wc = weight_[size_t(hop_link_[size_t(h)])] * hop_inv_cap_[size_t(h)];
          gi += wc;
          qi += wc * hop_inv_cap_[size_t(h)];
        }
        g[i] = log2_fast(gi);
        r[i] = opt_.refine_damping * gi / (k * bytes * qi);
        cheapest = std::min(cheapest, g[i]);
        if (x[i] > 0) dearest_used = std::max(dearest_used, g[i]);
      }
      // Balanced: the marginal costs of the used paths are within 0.1% (in log2) of the
      // cheapest, a utilisation difference of 0.1% / alpha of the max.
      if (dearest_used - cheapest < 1e-3) continue;
      // Minimiser of the model on the simplex: next_i = max(0, x_i + (mu - g_i) r_i) with
      // sum next = 1; paths that would go negative are dropped (next = -1 marks them) and mu
      // recomputed over the rest, at most np times.
      for (int i = 0; i < np; ++i) next[i] = 0;
      for (int round = 0; round < np; ++round) {
        double sr = 0, sx = 0, sgr = 0;
        for (int i = 0; i < np; ++i)
          if (next[i] >= 0) sr += r[i], sx += x[i], sgr += g[i] * r[i];
        const double mu = (1.0 - sx + sgr) / sr;
        bool dropped = false;
        for (int i = 0; i < np; ++i) {
          if (next[i] < 0) continue;
          next[i] = x[i] + (mu - g[i]) * r[i];
          if (next[i] < 0) next[i] = -1, dropped = true;
        }
        if (!dropped) break;
      }
      double largest = 0;
      for (int i = 0; i < np; ++i) largest = std::max(largest, std::abs(std::max(next[i], 0.0) - x[i]));
      if (largest < 1e-4) continue;  // not worth touching the links
      moved = true;
      for (int i = 0; i < np; ++i) {
        const double to = std::max(next[i], 0.0);
        if (to == x[i]) continue;
        add_util(p0 + i, (to - x[i]) * bytes);
        x[i] = to;
        for (int h = path_begin_[size_t(p0 + i)]; h < path_begin_[size_t(p0 + i) + 1]; ++h) {
          const size_t e = size_t(hop_link_[size_t(h)]);
          weight_[e] = exp2_fast(k * util_[e]);
        }
      }
    }
    ++passes;
    const double now = max_util();
    const bool stalled = worst - now < opt_.tolerance * worst;
    worst = now;
    if (full && stalled) break;
    // A slow tail (a random matrix on a full mesh) ends once the max is provably close enough.
    if (full && passes >= opt_.bound_after && now <= (1 + opt_.bound_gap) * bound_) break;
    // Every flow balanced at this steepness: go straight to the full one.
    alpha = moved ? std::min(alpha * opt_.refine_growth, opt_.refine_alpha) : opt_.refine_alpha;
  }
  return passes;
}

int Router::route(const Traffic& t, const std::vector<double>* previous) {
  place_fixed_and_collect(t);
  bound_ = cut_bound(t);
  if (flows_.empty()) return 0;
  if (previous) {
    start_from(t, *previous);
  } else {
    first_routing(t);
  }
  const int passes = refine(t, previous != nullptr);
  // Drop the dust Newton steps leave on paths (a byte range of a few bytes is not worth a
  // transfer) and renormalise each flow; the link utilisations follow.
  for (int pair : flows_) {
    const int p0 = pair_begin_[size_t(pair)], p1 = pair_begin_[size_t(pair) + 1];
    double sum = 0;
    bool dust = false;
    for (int p = p0; p < p1; ++p) {
      const double x = scratch_[size_t(p)];
      const bool small = x < 1e-4;  // without a branch: which paths are dust is hard to predict
      dust |= small & (x != 0);
      sum += small ? 0.0 : x;
    }
    if (!dust && sum == 1.0) continue;
    const double bytes = t.bytes[size_t(pair)];
    for (int p = p0; p < p1; ++p) {
      const double x = scratch_[size_t(p)], to = x < 1e-4 ? 0.0 : x / sum;
      if (to != x) add_util(p, (to - x) * bytes), scratch_[size_t(p)] = to;
    }
  }
  return passes;
}

Result Router::solve(const Traffic& t, Routing* out) {
  if (t.ranks != paths_.ranks || t.bytes.size() != size_t(t.ranks) * size_t(t.ranks)) {
    return fail(Result::InvalidArgument, "route: traffic for %d ranks, router has %d", t.ranks, paths_.ranks);
  }
  const bool have_previous = out->valid && out->fraction.size() == size_t(total_paths());
  bool warm = have_previous && opt_.warm_start && out->traffic.bytes.size() == t.bytes.size();
  if (warm) {
    double changed = 0, total = 0;
    for (size_t i = 0; i < t.bytes.size(); ++i) changed += std::abs(t.bytes[i] - out->traffic.bytes[i]), total += t.bytes[i];
    warm = changed <= opt_.warm_change * total;
  }
  const int passes = route(t, warm ? &out->fraction : nullptr);
  out->warm = warm;
  out->lower_bound = bound_;
  const double fresh = max_util();
  out->passes = passes;
  // Any routing's max is at least bound_, the previous one's too: a new max that far below the
  // bound wins without evaluating the previous routing (only with a negative hysteresis, "always
  // take the new routing"; the margin covers rounding).
  const bool wins_anyway = fresh < bound_ * (1.0 - opt_.hysteresis) * (1 - 1e-9);
  if (have_previous && !wins_anyway) {
    const double old = congestion(t, out->fraction);
    if (!(fresh < old * (1.0 - opt_.hysteresis))) {
      out->max_congestion = old;
      out->kept_previous = true;
      return Result::Success;
    }
  }
  if (out->fraction.size() != scratch_.size()) out->fraction.resize(scratch_.size());  // first solve only
  std::copy(scratch_.begin(), scratch_.end(), out->fraction.begin());
  out->max_congestion = fresh;
  out->traffic.ranks = t.ranks;
  out->traffic.bytes.assign(t.bytes.begin(), t.bytes.end());  // same size after the first solve
  out->valid = true;
  out->kept_previous = false;
  return Result::Success;
}

}  // namespace braid::route
