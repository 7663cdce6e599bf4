// HyLink's Algorithm 1 (section 3.2): alpha = PCIe share, r = t_d / t_p; halve alpha when
// r <= 1-gamma (PCIe is the bottleneck), alpha *= r*lambda when r >= 1+gamma (the dedicated link
// is), clamp to [0,1]. The S_min small-message rule is the SplitTable's (it never asks a
// balancer below split_min_bytes).
//
// Deviations (docs/BALANCE.md), all measured on 2x H200 where NVLink is ~10x PCIe:
// - alpha*r*lambda is stuck at 0 once alpha is 0 (and 0*inf when t_p is 0). When PCIe carried
//   nothing, alpha restarts at probe_share, but only after `backoff` such calls; a probe that
//   fails (r <= 1-gamma at alpha <= probe_share) sets alpha to 0 and doubles the backoff (up to
//   max_backoff), a call where PCIe pays (r >= 1+gamma) resets it to 1. The paper's rule probes
//   on every other call, and each probe pays the PCIe path's fixed latency (~0.2 ms here).
//   Until PCIe has paid once at this size the backoff grows to unpaid_backoff instead: where
//   braid's own NVLink path leaves PCIe nothing to gain (256 MB all_reduce, docs/PERFORMANCE.md) a probe every
//   few calls was pure cost, and under PCIe bursts each one cost 60x a call.
// - The decrease is alpha *= r instead of halving: halving throws away half of a share that was
//   nearly right when r is just below 1-gamma, and needs several calls to leave PCIe when
//   interference makes it 50x slower (r ~ 0.02; measured with braid-bench --phases).
// - latency_aware: alpha*r ignores the PCIe share's fixed cost (~0.2 ms on the H200 against
//   ~0.9 ms for a 256 MB call), so after a probe it grows by a fraction of the gap per step. The
//   step instead solves (1-a)*D = L + a*P for a, with D and P scaled from the call's times and
//   L fitted from the last two calls at shares at least 20% apart.
#pragma once

#include "balance/balancer.h"

namespace braid::balance {

struct HyLinkParams {
  double gamma = 0.05;        // dead zone around r = 1
  double lambda = 0.97;       // damping of the proportional step
  double initial_alpha = 0.0; // the paper starts from the dedicated link alone
  double probe_share = 1.0 / 64;
  int max_backoff = 4;        // calls between probes at most: see docs/BALANCE.md
  // ... when the failed probe found PCIe congested (far slower than its learned line): the
  // congestion may end at any call, so look again soon.
  int congested_backoff = 1;
  // ... while PCIe has not paid at this size yet (no call with r >= 1+gamma): there is no share to
  // come back to, so probes only check whether the machine changed, and each one costs a call
  // (docs/PERFORMANCE.md: 0.1 ms of a 0.77 ms 256 MB all_reduce when quiet, 55 ms under PCIe bursts).
  int unpaid_backoff = 64;
  // Step to where the paths' times meet under "PCIe time = fixed + share x per-share time", with
  // the fixed part learned from two recent calls at different shares (see docs/BALANCE.md).
  bool latency_aware = true;
};

class HyLinkBalancer final : public Balancer {
 public:
  explicit HyLinkBalancer(HyLinkParams params = {});
  std::string_view name() const override { return "hylink"; }
  int num_paths() const override { return 2; }
  Shares shares() const override;
  void observe(std::span<const double> path_seconds) override;
  void observe_used(const Shares& used, std::span<const double> path_seconds) override;
  void on_issue() override;
  void restore(const Shares& shares) override;
  std::unique_ptr<Balancer> clone() const override {
    return std::make_unique<HyLinkBalancer>(*this);
  }
  double alpha() const { return alpha_; }
  // PCIe's fixed time per call as last learned (0 until two calls at different shares agree).
  double fixed_seconds() const { return fixed_s_; }

 private:
  // The share at which t_d and t_p meet, from a call at `alpha` that took t_d and t_p.
  double balanced_share(double t_d, double t_p) const;
  void learn_fixed_time(double t_p, bool pcie_paid);
  // Whether a call at alpha_ that took t_p on PCIe ran far slower than the learned line says.
  bool congested(double t_p) const;

  HyLinkParams params_;
  double alpha_;
  int backoff_ = 1;
  bool paid_ = false;               // some call at this size had PCIe pay (r >= 1+gamma)
  int idle_calls_ = 0;
  bool probe_next_ = false;         // alpha_ is a probe share not yet issued
  bool probe_outstanding_ = false;  // a probe was issued; its times are not back yet
  double fixed_s_ = 0;              // learned line of the PCIe share: t_p = fixed + a * per_share
  double per_share_s_ = 0;
  bool line_fits_ = false;          // the line predicts the call being observed
  double last_alpha_ = 0;           // the previous call with PCIe busy: its share and time
  double last_t_p_ = 0;
};

}  // namespace braid::balance
