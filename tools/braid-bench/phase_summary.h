// What the --phases run reports per phase, from the per-call times and splits alone (no GPU):
// the steady time, and how many calls the balancer took to get there, by time and by share.
#pragma once

#include <vector>

namespace braid::bench {

struct PhaseCall {
  int phase = 0;
  bool noise = false;
  double time_us = 0;
  double pcie_share = -1;  // -1: the call's split was not settled (the last two calls)
};

// The median time of the phase's last half.
double steady_time_us(const std::vector<PhaseCall>& calls, int phase);

// Calls after the start of phase `phase` until every later call of that phase stays within
// `tolerance` of the phase's steady time (a lone probe, one call in a window of 3, is allowed).
int calls_to_converge(const std::vector<PhaseCall>& calls, int phase, double tolerance);

// Calls after the start of phase `phase` until every later settled call's PCIe share stays within
// `tolerance` x the largest steady share of any phase (the quiet share) of this phase's steady
// share (the median share of its last half): with 0.2, back at 80% of the quiet share after
// interference, and down to probe-sized shares (1/64 < 0.2 x a quiet ~0.08) under it. The issue's
// "re-converges within 5 calls" read from the split trace.
int calls_to_settle_share(const std::vector<PhaseCall>& calls, int phase, double tolerance);

}  // namespace braid::bench
