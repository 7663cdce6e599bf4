#include "balance/flexlink_balancer.h"

#include <algorithm>

namespace braid::balance {

namespace {

struct SlowFast {
  int slow = -1;
  int fast = -1;
  int active = 0;
};

// Ties go to the lower path number so every replica picks the same pair.
SlowFast find_slowest_fastest(std::span<const double> t, const std::vector<bool>& active) {
  SlowFast sf;
  for (int p = 0; p < static_cast<int>(active.size()); ++p) {
    if (!active[p]) continue;
    ++sf.active;
    if (sf.slow < 0 || t[p] > t[sf.slow]) sf.slow = p;
    if (sf.fast < 0 || t[p] < t[sf.fast]) sf.fast = p;
  }
  return sf;
}

double imbalance(std::span<const double> t, const SlowFast& sf) {
  if (t[sf.fast] <= 0) return t[sf.slow] > 0 ? 1e300 : 0.0;
  return (t[sf.slow] - t[sf.fast]) / t[sf.fast];
}

}  // namespace

FlexLinkBalancer::FlexLinkBalancer(int num_paths, FlexLinkParams params)
    : params_(params), step_(std::max<uint32_t>(params.initial_step_units, 1)) {
  const size_t n = static_cast<size_t>(std::max(num_paths, 1));
  units_.assign(n, 0);
  active_.assign(n, true);
  window_sum_.assign(n, 0.0);
  // InitializeShares: NVLink dominant, each auxiliary path a small equal share.
  uint32_t aux = n > 1 ? std::min<uint32_t>(params.initial_aux_units, kShareUnits / n) : 0;
  for (size_t p = 1; p < n; ++p) units_[p] = aux;
  units_[kDedicatedPath] = kShareUnits - aux * static_cast<uint32_t>(n - 1);
}

void FlexLinkBalancer::move(int from, int to, uint32_t amount) {
  amount = std::min(amount, units_[from]);
  units_[from] -= amount;
  units_[to] += amount;
  if (units_[from] == 0) active_[from] = false;
}

void FlexLinkBalancer::observe(std::span<const double> path_seconds) {
  if (path_seconds.size() != units_.size()) return;
  for (double t : path_seconds)
    if (!(t >= 0)) return;  // NaN or negative: not a measurement
  if (stage1_)
    stage1_step(path_seconds);
  else
    stage2_step(path_seconds);
}

void FlexLinkBalancer::stage1_step(std::span<const double> t) {
  const SlowFast sf = find_slowest_fastest(t, active_);
  if (sf.active <= 1 || iterations_ >= params_.max_iterations) {
    stage1_ = false;  // only NVLink (or one path) left, or the iteration budget is spent
    return;
  }
  ++iterations_;
  if (imbalance(t, sf) < params_.convergence_threshold) {
    if (++stability_count_ >= params_.stability_required) stage1_ = false;
  } else {
    stability_count_ = 0;
    if (prev_slowest_ >= 0 && sf.slow != prev_slowest_) step_ = std::max<uint32_t>(step_ / 2, 1);
    const int target =
        (sf.slow != kDedicatedPath && active_[kDedicatedPath]) ? kDedicatedPath : sf.fast;
    move(sf.slow, target, step_);
    prev_slowest_ = sf.slow;
  }
  if (iterations_ >= params_.max_iterations) stage1_ = false;
  const SlowFast after = find_slowest_fastest(t, active_);
  if (after.active <= 1) stage1_ = false;
}

void FlexLinkBalancer::stage2_step(std::span<const double> t) {
  for (size_t p = 0; p < t.size(); ++p) window_sum_[p] += t[p];
  if (++window_calls_ < std::max(params_.window, 1)) return;
  std::vector<double> mean(t.size());
  for (size_t p = 0; p < t.size(); ++p) mean[p] = window_sum_[p] / window_calls_;
  std::fill(window_sum_.begin(), window_sum_.end(), 0.0);
  window_calls_ = 0;
  const SlowFast sf = find_slowest_fastest(mean, active_);
  if (sf.active <= 1 || imbalance(mean, sf) <= params_.runtime_threshold) return;
  const int target =
      (sf.slow != kDedicatedPath && active_[kDedicatedPath]) ? kDedicatedPath : sf.fast;
  move(sf.slow, target, params_.runtime_step_units);
}

void FlexLinkBalancer::restore(const Shares& shares) {
  if (shares.num_paths() != num_paths() || !shares_valid(shares)) return;
  units_ = shares.units;
  for (size_t p = 0; p < units_.size(); ++p) active_[p] = units_[p] > 0 || p == kDedicatedPath;
  stage1_ = false;  // learned shares replace the coarse tuning
  std::fill(window_sum_.begin(), window_sum_.end(), 0.0);
  window_calls_ = 0;
}

}  // namespace braid::balance
