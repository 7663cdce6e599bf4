// How much braid's PCIe traffic slows NCCL: NCCL all_reduce timed alone, then timed again while
// braid's all_reduce runs back to back on other buffers (its own rank threads and streams).
#pragma once

#include <cstddef>

#include "measure.h"
#include "paths.h"

namespace braid::bench {

struct InterferenceRow {
  size_t bytes = 0;
  double nccl_alone_us = 0;
  double nccl_with_braid_us = 0;
  double slowdown_pct = 0;     // (with / alone - 1) * 100
  double braid_algbw = 0;      // braid's algbw meanwhile (GB/s)
  long braid_iters = 0;
};

InterferenceRow measure_interference(RankThreads& threads, BraidPath& braid, NcclPath& nccl,
                                     const Measure& nccl_layout, const Measure& braid_layout,
                                     const CaseSpec& spec, int warmup, int iters);

}  // namespace braid::bench
