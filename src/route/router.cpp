#include "route/router.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace braid::route {

namespace {

// exp(y) for y >= 0 as (1 + y/1024)^1024: ten squarings, only + and *, so the same on every libm
// and far cheaper than std::exp. It underestimates exp but is convex and increasing, which is
// all the multiplicative weights need.
inline double fast_exp(double y) {
  double x = 1.0 + y * (1.0 / 1024);
  x *= x, x *= x, x *= x, x *= x, x *= x, x *= x, x *= x, x *= x, x *= x, x *= x;
  return x;
}

}  // namespace

Result Router::init(const topo::Topology& t, const RouterOptions& opt) {
  opt_ = opt;
  BRAID_TRY(build_paths(t, opt.paths, &paths_));
  const int n = paths_.ranks;
  pair_begin_.assign(size_t(n) * size_t(n) + 1, 0);
  path_begin_.assign(1, 0);
  path_links_.clear();
  capacity_.clear();
  std::map<std::pair<int, bool>, int> index;  // directed topology link -> compact id
  for (size_t p = 0; p < paths_.pairs.size(); ++p) {
    pair_begin_[p + 1] = pair_begin_[p] + int(paths_.pairs[p].size());
    for (const Path& path : paths_.pairs[p]) {
      for (const DirLink& l : path.hops) {
        auto [it, added] = index.emplace(std::make_pair(l.link, l.forward), int(capacity_.size()));
        if (added) capacity_.push_back(l.capacity);
        path_links_.push_back(it->second);
      }
      path_begin_.push_back(int(path_links_.size()));
    }
  }
  inv_cap_.resize(capacity_.size());
  for (size_t i = 0; i < capacity_.size(); ++i) inv_cap_[i] = 1.0 / capacity_[i];
  load_.assign(capacity_.size(), 0.0);
  weight_.assign(capacity_.size(), 0.0);
  scratch_.assign(size_t(total_paths()), 0.0);
  flows_.reserve(paths_.pairs.size());
  return Result::Success;
}

double Router::congestion(const Traffic& t, const std::vector<double>& fraction) {
  std::fill(load_.begin(), load_.end(), 0.0);
  const int n = paths_.ranks;
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      const double bytes = s == d ? 0.0 : t.at(s, d);
      if (bytes <= 0) continue;
      const size_t pair = size_t(s * n + d);
      for (int p = pair_begin_[pair]; p < pair_begin_[pair + 1]; ++p) {
        const double b = bytes * fraction[size_t(p)];
        if (b == 0) continue;
        for (int i = path_begin_[size_t(p)]; i < path_begin_[size_t(p) + 1]; ++i) load_[size_t(path_links_[size_t(i)])] += b;
      }
    }
  }
  double worst = 0;
  for (size_t e = 0; e < load_.size(); ++e) worst = std::max(worst, load_[e] * inv_cap_[e]);
  return worst;
}

// Multiplicative weights over demand slices (NIMBLE Algorithm 1 / Garg-Koenemann style): in
// each of `rounds` rounds every flow places 1/rounds of its bytes on the path that is cheapest
// under the link costs exp(alpha * utilisation / reference) / capacity, and the costs of the
// links it used rise at once. `reference` is the utilisation the most loaded link is expected to
// reach by the end of the round, so alpha means the same at every scale of traffic.
void Router::route_mwu(const Traffic& t, std::vector<double>* fraction) {
  const int n = paths_.ranks;
  std::fill(fraction->begin(), fraction->end(), 0.0);
  std::fill(load_.begin(), load_.end(), 0.0);
  flows_.clear();
  // Small flows go on their first path (direct where there is one) and load the links first.
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      const double bytes = s == d ? 0.0 : t.at(s, d);
      if (bytes <= 0) continue;
      const int pair = s * n + d;
      const int p0 = pair_begin_[size_t(pair)];
      if (bytes < opt_.direct_threshold || pair_begin_[size_t(pair) + 1] - p0 == 1) {
        (*fraction)[size_t(p0)] = 1.0;
        for (int i = path_begin_[size_t(p0)]; i < path_begin_[size_t(p0) + 1]; ++i) load_[size_t(path_links_[size_t(i)])] += bytes;
      } else {
        flows_.push_back(pair);
      }
    }
  }
  if (flows_.empty()) return;
  // A lower bound on the optimum, for the first round's reference: the pre-loaded links, and
  // for each flow its bytes over the sum of its paths' bottleneck capacities.
  double bound = 0;
  for (size_t e = 0; e < load_.size(); ++e) bound = std::max(bound, load_[e] * inv_cap_[e]);
  for (int pair : flows_) {
    double cap = 0;
    for (int p = pair_begin_[size_t(pair)]; p < pair_begin_[size_t(pair) + 1]; ++p) {
      double bottleneck = HUGE_VAL;
      for (int i = path_begin_[size_t(p)]; i < path_begin_[size_t(p) + 1]; ++i) bottleneck = std::min(bottleneck, capacity_[size_t(path_links_[size_t(i)])]);
      cap += bottleneck;
    }
    bound = std::max(bound, t.bytes[size_t(pair)] / cap);
  }
  const int rounds = std::max(1, opt_.rounds);
  const double slice = 1.0 / rounds;
  double worst = 0;  // max utilisation so far
  for (int r = 0; r < rounds; ++r) {
    // Expected max utilisation at the end of this round.
    const double reference = std::max(bound * (r + 1) * slice, r == 0 ? 0.0 : worst * (r + 1) / r);
    const double k = opt_.alpha / reference;
    for (size_t e = 0; e < load_.size(); ++e) weight_[e] = fast_exp(k * load_[e] * inv_cap_[e]) * inv_cap_[e];
    for (int pair : flows_) {
      const double bytes = t.bytes[size_t(pair)] * slice;
      int best = -1;
      double best_cost = HUGE_VAL;
      for (int p = pair_begin_[size_t(pair)]; p < pair_begin_[size_t(pair) + 1]; ++p) {
        double cost = 0;
        for (int i = path_begin_[size_t(p)]; i < path_begin_[size_t(p) + 1]; ++i) cost += weight_[size_t(path_links_[size_t(i)])];
        if (cost < best_cost) best_cost = cost, best = p;
      }
      (*fraction)[size_t(best)] += slice;
      add_load(best, bytes, k, &worst);
    }
  }
  // Refinement: rounds of moving a shrinking step of each flow from its costliest used path to
  // its cheapest one, under steeper costs (the slices above leave a quantisation error of up to
  // 1/rounds per flow and a soft-max that is loose at the top).
  const int refine = std::max(0, opt_.refine_rounds);
  for (int r = 0; r < refine; ++r) {
    worst = 0;
    for (size_t e = 0; e < load_.size(); ++e) worst = std::max(worst, load_[e] * inv_cap_[e]);
    const double k = opt_.refine_alpha / worst;
    for (size_t e = 0; e < load_.size(); ++e) weight_[e] = fast_exp(k * load_[e] * inv_cap_[e]) * inv_cap_[e];
    const double step = slice * std::pow(0.5, double(r) * 4 / refine);
    for (int pair : flows_) {
      int cheap = -1, dear = -1;
      double cheap_cost = HUGE_VAL, dear_cost = -1;
      for (int p = pair_begin_[size_t(pair)]; p < pair_begin_[size_t(pair) + 1]; ++p) {
        double cost = 0;
        for (int i = path_begin_[size_t(p)]; i < path_begin_[size_t(p) + 1]; ++i) cost += weight_[size_t(path_links_[size_t(i)])];
        if (cost < cheap_cost) cheap_cost = cost, cheap = p;
        if ((*fraction)[size_t(p)] > 0 && cost > dear_cost) dear_cost = cost, dear = p;
      }
      if (dear == cheap || !(cheap_cost < dear_cost)) continue;
      const double moved = std::min(step, (*fraction)[size_t(dear)]);
      const double bytes = t.bytes[size_t(pair)] * moved;
      (*fraction)[size_t(dear)] -= moved;
      (*fraction)[size_t(cheap)] += moved;
      add_load(dear, -bytes, k, &worst);
      add_load(cheap, bytes, k, &worst);
    }
  }
}

void Router::add_load(int path, double bytes, double k, double* worst) {
  for (int i = path_begin_[size_t(path)]; i < path_begin_[size_t(path) + 1]; ++i) {
    const size_t e = size_t(path_links_[size_t(i)]);
    load_[e] += bytes;
    const double u = load_[e] * inv_cap_[e];
    *worst = std::max(*worst, u);
    weight_[e] = fast_exp(k * u) * inv_cap_[e];
  }
}

Result Router::solve(const Traffic& t, Routing* out) {
  if (t.ranks != paths_.ranks || t.bytes.size() != size_t(t.ranks) * size_t(t.ranks)) {
    return fail(Result::InvalidArgument, "route: traffic for %d ranks, router has %d", t.ranks, paths_.ranks);
  }
  const bool have_previous = out->valid && out->fraction.size() == size_t(total_paths());
  route_mwu(t, &scratch_);
  const double fresh = congestion(t, scratch_);
  if (have_previous) {
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
  out->valid = true;
  out->kept_previous = false;
  return Result::Success;
}

}  // namespace braid::route
