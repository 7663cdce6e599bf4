// The balancer under changing PCIe load: one collective size called over phases with
// and without background PCIe traffic, each call timed on its own, with the split it used.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "measure.h"
#include "noise.h"
#include "phase_summary.h"
#include "paths.h"
#include "rank_threads.h"

namespace braid::bench {

struct Phase {
  bool noise = false;
  int calls = 0;
};

// "off:30,on:30,off:30".
std::optional<std::vector<Phase>> parse_phases(const std::string& text);

std::vector<PhaseCall> run_phases(RankThreads& threads, BraidPath& braid, const Measure& layout,
                                  const CaseSpec& spec, const std::vector<Phase>& phases, PcieNoise& noise);

}  // namespace braid::bench
