// HyLink's Algorithm 1 (section 3.2): alpha = PCIe share, r = t_d / t_p; halve alpha when
// r <= 1-gamma (PCIe is the bottleneck), alpha *= r*lambda when r >= 1+gamma (the dedicated link
// is), clamp to [0,1]. The S_min small-message rule is the SplitTable's (it never asks a
// balancer below split_min_bytes).
//
// Deviation: alpha*r*lambda is stuck at 0 once alpha is 0 (and 0*inf when t_p is 0). When the
// dedicated link is the bottleneck and alpha is below probe_share, alpha restarts at
// probe_share; the next call measures PCIe again and the proportional rule takes over.
#pragma once

#include "balance/balancer.h"

namespace braid::balance {

struct HyLinkParams {
  double gamma = 0.05;        // dead zone around r = 1
  double lambda = 0.97;       // damping of the proportional step
  double initial_alpha = 0.0; // the paper starts from the dedicated link alone
  double probe_share = 1.0 / 64;
};

class HyLinkBalancer final : public Balancer {
 public:
  explicit HyLinkBalancer(HyLinkParams params = {});
  std::string_view name() const override { return "hylink"; }
  int num_paths() const override { return 2; }
  Shares shares() const override;
  void observe(std::span<const double> path_seconds) override;
  void restore(const Shares& shares) override;
  std::unique_ptr<Balancer> clone() const override {
    return std::make_unique<HyLinkBalancer>(*this);
  }
  double alpha() const { return alpha_; }

 private:
  HyLinkParams params_;
  double alpha_;
};

}  // namespace braid::balance
