// One interface for every way of choosing shares: observe the per-path times of the call made
// with shares(), then shares() is the split of the next call. observe() must be a pure function
// of the balancer's state and its input (no clocks, no randomness): that is what lets every rank
// keep an identical replica once they feed it identical (all-gathered, reduced) times.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "balance/shares.h"
#include "common/result.h"

namespace braid::balance {

class Balancer {
 public:
  virtual ~Balancer() = default;
  virtual std::string_view name() const = 0;
  virtual int num_paths() const = 0;
  virtual Shares shares() const = 0;
  // Seconds each path took in the call made with shares(); 0 for a path that carried nothing.
  virtual void observe(std::span<const double> path_seconds) = 0;
  // The same for a call made with `used`, which may be older shares than shares() (a caller that
  // learns a call's times only after deciding the next call's split). By default a balancer
  // learns only from calls made with its current shares; HyLink's rule is proportional to the
  // share used, so it restarts from `used`.
  virtual void observe_used(const Shares& used, std::span<const double> path_seconds) {
    if (used == shares()) observe(path_seconds);
  }
  // A call is about to be made with shares() (callers that learn its times only later tell the
  // balancer, so a one-off choice such as a probe is not repeated before its result is known).
  virtual void on_issue() {}
  // Starts from shares learned earlier (tuning cache) instead of the balancer's own start.
  virtual void restore(const Shares& shares) = 0;
  virtual std::unique_ptr<Balancer> clone() const = 0;
};

// "hylink", "flexlink" or "static". static_share is the total share of the non-dedicated paths
// for "static" (spread evenly over them). HyLink needs exactly 2 paths.
Result make_balancer(std::string_view kind, int num_paths, double static_share,
                     std::unique_ptr<Balancer>* out);

// The same from BRAID_BALANCER and BRAID_STATIC_SHARE.
Result make_balancer_from_settings(int num_paths, std::unique_ptr<Balancer>* out);

}  // namespace braid::balance
