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
// - The decrease is alpha *= r instead of halving: halving throws away half of a share that was
//   nearly right when r is just below 1-gamma, and needs several calls to leave PCIe when
//   interference makes it 50x slower (r ~ 0.02; measured with braid-bench --phases).
#pragma once

#include "balance/balancer.h"

namespace braid::balance {

struct HyLinkParams {
  double gamma = 0.05;        // dead zone around r = 1
  double lambda = 0.97;       // damping of the proportional step
  double initial_alpha = 0.0; // the paper starts from the dedicated link alone
  double probe_share = 1.0 / 64;
  int max_backoff = 4;        // calls between probes at most: see docs/BALANCE.md
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

 private:
  HyLinkParams params_;
  double alpha_;
  int backoff_ = 1;
  int idle_calls_ = 0;
  bool probe_next_ = false;         // alpha_ is a probe share not yet issued
  bool probe_outstanding_ = false;  // a probe was issued; its times are not back yet
};

}  // namespace braid::balance
