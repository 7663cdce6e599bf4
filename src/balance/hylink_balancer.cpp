#include "balance/hylink_balancer.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace braid::balance {

HyLinkBalancer::HyLinkBalancer(HyLinkParams params)
    : params_(params), alpha_(std::clamp(params.initial_alpha, 0.0, 1.0)) {}

Shares HyLinkBalancer::shares() const {
  const double fractions[2] = {1.0 - alpha_, alpha_};
  return quantize_shares(fractions);
}

void HyLinkBalancer::observe(std::span<const double> path_seconds) {
  if (path_seconds.size() != 2) return;
  const double t_d = path_seconds[0];
  const double t_p = path_seconds[1];
  if (!(t_d >= 0) || !(t_p >= 0) || (t_d == 0 && t_p == 0)) return;  // nothing measured
  // t_p == 0: PCIe carried nothing, so the dedicated link is the whole time: r is infinite.
  const double r = t_p > 0 ? t_d / t_p : std::numeric_limits<double>::infinity();
  if (r <= 1.0 - params_.gamma) {
    alpha_ = alpha_ / 2;
  } else if (r >= 1.0 + params_.gamma) {
    if (alpha_ < params_.probe_share || !std::isfinite(r))
      alpha_ = std::max(alpha_, params_.probe_share);  // the probe: see the header
    else
      alpha_ = alpha_ * r * params_.lambda;
  }
  alpha_ = std::clamp(alpha_, 0.0, 1.0);
}

void HyLinkBalancer::restore(const Shares& shares) {
  if (shares.num_paths() == 2 && shares_valid(shares)) alpha_ = shares.fraction(1);
}

}  // namespace braid::balance
