// FlexLink's two-stage tuner (section 3.2). Stage 1 is its Algorithm 1, one iteration per
// observed call: find the slowest and fastest active paths; when the imbalance
// (T_slow - T_fast) / T_fast is below convergence_threshold for stability_required calls in a
// row, stop; otherwise move min(step, share of slowest) from the slowest path to NVLink (or,
// when NVLink is the slowest, to the fastest path), halving step (never below 1 unit) when the
// bottleneck path changes; a path whose share reaches 0 is deactivated. Stage 1 also ends after
// max_iterations or when NVLink is the only active path. Stage 2: every `window` calls, the mean
// time per active path over the window; when (slowest - fastest) / fastest exceeds
// runtime_threshold, runtime_step units move from the slowest to NVLink (to the fastest path
// when NVLink is the slowest).
#pragma once

#include <cstdint>
#include <vector>

#include "balance/balancer.h"

namespace braid::balance {

struct FlexLinkParams {
  uint32_t initial_aux_units = 128;   // each non-NVLink path starts at 1/8 (NVLink dominant)
  uint32_t initial_step_units = 32;   // 1/32 of the message
  double convergence_threshold = 0.05;
  int stability_required = 3;
  int max_iterations = 100;
  int window = 10;                    // the paper's "last 10 collective calls"
  double runtime_threshold = 0.05;
  uint32_t runtime_step_units = 2;    // 1/512 per window: see docs/BALANCE.md
};

class FlexLinkBalancer final : public Balancer {
 public:
  FlexLinkBalancer(int num_paths, FlexLinkParams params = {});
  std::string_view name() const override { return "flexlink"; }
  int num_paths() const override { return static_cast<int>(units_.size()); }
  Shares shares() const override { return Shares{units_}; }
  void observe(std::span<const double> path_seconds) override;
  void restore(const Shares& shares) override;
  std::unique_ptr<Balancer> clone() const override {
    return std::make_unique<FlexLinkBalancer>(*this);
  }
  bool in_stage1() const { return stage1_; }
  int stage1_iterations() const { return iterations_; }

 private:
  void stage1_step(std::span<const double> t);
  void stage2_step(std::span<const double> t);
  void move(int from, int to, uint32_t amount);

  FlexLinkParams params_;
  std::vector<uint32_t> units_;
  std::vector<bool> active_;
  bool stage1_ = true;
  int iterations_ = 0;
  uint32_t step_;
  int stability_count_ = 0;
  int prev_slowest_ = -1;
  std::vector<double> window_sum_;
  int window_calls_ = 0;
};

}  // namespace braid::balance
