// Fixed shares: the baseline the adaptive balancers are compared with (HyLink's "fixed alpha").
#pragma once

#include "balance/balancer.h"

namespace braid::balance {

class StaticBalancer final : public Balancer {
 public:
  explicit StaticBalancer(Shares shares) : shares_(std::move(shares)) {}
  std::string_view name() const override { return "static"; }
  int num_paths() const override { return shares_.num_paths(); }
  Shares shares() const override { return shares_; }
  void observe(std::span<const double>) override {}
  void restore(const Shares&) override {}  // static means static: a cache does not move it
  std::unique_ptr<Balancer> clone() const override {
    return std::make_unique<StaticBalancer>(*this);
  }

 private:
  Shares shares_;
};

}  // namespace braid::balance
