// Failures injected on purpose, so tests can check that a failure at any step of setting up or
// running a collective reaches every rank and ends every wait (issue: "no hangs, ever").
// BRAID_FAULT=step@rank[#n] makes `rank` fail its n-th (default: first) pass through `step`;
// unset, every check is one relaxed load. Steps, in the order a collective meets them:
//   segments   rank 0 creating the shared segments, or another rank opening them
//   register   registering the shared segments with the device (after every rank attached)
//   barrier    a collective's meeting of the ranks
//   d2h, h2d, copy, reduce   issuing that device operation of a collective
#pragma once

#include <string_view>

#include "common/result.h"

namespace braid::engine {

enum class FaultStep { Segments, Register, Barrier, D2H, H2D, Copy, Reduce };

std::string_view fault_step_name(FaultStep step);

// Whether BRAID_FAULT asks `rank` to fail now at `step` (counts the passes).
bool fault_injected(FaultStep step, int rank);

// The failure to return when fault_injected() says so (InternalError, text naming the step).
Result injected_failure(FaultStep step, int rank);

}  // namespace braid::engine
