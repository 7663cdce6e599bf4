// The balancer under changing PCIe load (issue 5): one collective size called over phases with
// and without background PCIe traffic, each call timed on its own, with the split it used.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "measure.h"
#include "noise.h"
#include "paths.h"
#include "rank_threads.h"

namespace braid::bench {

struct Phase {
  bool noise = false;
  int calls = 0;
};

// "off:30,on:30,off:30".
std::optional<std::vector<Phase>> parse_phases(const std::string& text);

struct PhaseCall {
  int phase = 0;
  bool noise = false;
  double time_us = 0;
  double pcie_share = -1;  // -1: the call's split was not settled (the last two calls)
};

std::vector<PhaseCall> run_phases(RankThreads& threads, BraidPath& braid, const Measure& layout,
                                  const CaseSpec& spec, const std::vector<Phase>& phases, PcieNoise& noise);

// Calls after the start of phase `phase` until every later call of that phase stays within
// `tolerance` of the phase's median time (its last half): the re-convergence the issue asks for.
int calls_to_converge(const std::vector<PhaseCall>& calls, int phase, double tolerance);
// The median time of the phase's last half.
double steady_time_us(const std::vector<PhaseCall>& calls, int phase);

}  // namespace braid::bench
