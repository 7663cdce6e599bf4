#include "balance/hylink_balancer.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace braid::balance {

HyLinkBalancer::HyLinkBalancer(HyLinkParams params)
    : params_(params), alpha_(std::clamp(params.initial_alpha, 0.0, 1.0)), paid_(alpha_ > 0) {}

Shares HyLinkBalancer::shares() const {
  const double fractions[2] = {1.0 - alpha_, alpha_};
  return quantize_shares(fractions);
}

void HyLinkBalancer::observe(std::span<const double> path_seconds) {
  if (path_seconds.size() != 2) return;
  const double t_d = path_seconds[0];
  const double t_p = path_seconds[1];
  if (!(t_d >= 0) || !(t_p >= 0) || (t_d == 0 && t_p == 0)) return;  // nothing measured
  if (t_p == 0) {
    // PCIe carried nothing (r is infinite): probe it again after the backoff.
    if (++idle_calls_ < backoff_) return;
    idle_calls_ = 0;
    if (alpha_ < params_.probe_share) probe_next_ = true;
    alpha_ = std::max(alpha_, params_.probe_share);
    return;
  }
  idle_calls_ = 0;
  const double r = t_d / t_p;
  if (params_.latency_aware) learn_fixed_time(t_p, r > 1.0 - params_.gamma);
  if (r <= 1.0 - params_.gamma) {
    // A failed probe, or a share so small it pays the path's fixed latency for almost no data:
    // PCIe does not pay at this size now. Leave it and probe again later.
    const double decreased = params_.latency_aware ? balanced_share(t_d, t_p) : alpha_ * r;
    if (alpha_ <= params_.probe_share || decreased < params_.probe_share / 4) {
      alpha_ = 0;
      const int cap = !paid_ ? params_.unpaid_backoff
                      : congested(t_p) ? params_.congested_backoff
                                       : params_.max_backoff;
      backoff_ = std::min(backoff_ * 2, std::max(cap, 1));
    } else {
      alpha_ = decreased;
    }
  } else if (r >= 1.0 + params_.gamma) {
    backoff_ = 1;
    paid_ = true;
    alpha_ = alpha_ < params_.probe_share ? params_.probe_share
             : params_.latency_aware      ? balanced_share(t_d, t_p) * params_.lambda
                                          : alpha_ * r * params_.lambda;
  }
  alpha_ = std::clamp(alpha_, 0.0, 1.0);
  if (alpha_ * kShareUnits < 0.5) alpha_ = 0;  // would cut nothing: say so
}

void HyLinkBalancer::learn_fixed_time(double t_p, bool pcie_paid) {
  const double a = alpha_;
  line_fits_ = false;
  if (a <= 0 || a >= 1) return;
  // A line learned in another state of the machine (before interference started or stopped)
  // does not predict this call: step without it, but keep it for when that state returns.
  line_fits_ = std::abs(fixed_s_ + a * per_share_s_ - t_p) <= 0.25 * t_p;
  // Fit only calls where PCIe kept up: under interference that makes it the bottleneck the
  // balancer leaves PCIe whatever the line says, and a line fitted there would be the wrong one
  // to step by once the interference stops.
  if (!pcie_paid) return;
  const double a0 = last_alpha_, t0 = last_t_p_;
  last_alpha_ = a;
  last_t_p_ = t_p;
  if (a0 <= 0 || std::abs(a - a0) < 0.2 * std::max(a, a0)) return;
  // Two points of t_p = L + a*P. A fit that is not a plausible line (the machine changed between
  // the calls: interference started or stopped) keeps the previous estimate.
  const double per_share = (t_p - t0) / (a - a0);
  const double fixed = t_p - a * per_share;
  if (per_share > 0 && fixed >= 0 && fixed <= std::min(t_p, t0)) {
    fixed_s_ = fixed;
    per_share_s_ = per_share;
    line_fits_ = true;
  }
}

bool HyLinkBalancer::congested(double t_p) const {
  if (!params_.latency_aware || per_share_s_ <= 0) return false;  // no line to compare with
  return t_p > 2.0 * (fixed_s_ + alpha_ * per_share_s_);
}

double HyLinkBalancer::balanced_share(double t_d, double t_p) const {
  const double a = alpha_;
  if (a <= 0 || a >= 1) return a * (t_d / t_p);  // one path carried everything: no model
  const double fixed = line_fits_ ? std::min(fixed_s_, 0.9 * t_p) : 0.0;
  const double whole_nvlink = t_d / (1.0 - a);          // D: NVLink carrying the whole call
  const double whole_pcie = (t_p - fixed) / a;          // P: PCIe's data time for the whole call
  return std::max(0.0, (whole_nvlink - fixed) / (whole_nvlink + whole_pcie));
}

void HyLinkBalancer::on_issue() {
  if (!probe_next_) return;
  // The probe goes out on this call only; the next calls wait for its times with PCIe idle.
  probe_next_ = false;
  probe_outstanding_ = true;
  alpha_ = 0;
}

void HyLinkBalancer::observe_used(const Shares& used, std::span<const double> path_seconds) {
  if (path_seconds.size() != 2) return;
  if (path_seconds[1] == 0) {
    // The call carried nothing on PCIe. If a share (a probe, say) has been chosen or issued
    // since, this older call says nothing about it. Otherwise the probe clock advances.
    if (alpha_ == 0 && !probe_outstanding_ && !probe_next_) observe(path_seconds);
    return;
  }
  probe_outstanding_ = false;
  probe_next_ = false;
  // r relates the times to the share that produced them: apply the rule to that share. A call
  // made before the latest update would otherwise scale the updated alpha by a stale ratio.
  if (used.num_paths() == 2 && shares_valid(used)) alpha_ = used.fraction(1);
  observe(path_seconds);
}

void HyLinkBalancer::restore(const Shares& shares) {
  if (shares.num_paths() == 2 && shares_valid(shares)) alpha_ = shares.fraction(1);
  paid_ = paid_ || alpha_ > 0;  // a learned share (tuning cache) is one where PCIe paid
}

}  // namespace braid::balance
