// The settings one orchestrator runs by, read once when it is made: a communicator keeps the
// settings it was made with (a test's settings_reload applies to communicators made after it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "multipath/paths_admitted.h"

namespace braid::multipath {

struct OrchestratorOptions {
  bool nccl_share_by_copy = false;    // BRAID_SPLIT_NCCL_SHARE=copy
  std::string nvlink_path = "auto";   // BRAID_NVLINK_PATH: auto, copy or nccl
  int64_t split_min_bytes = 0;        // BRAID_SPLIT_MIN_BYTES (0: by the machine)
  bool async = true;                  // BRAID_ASYNC
  uint64_t settle_lag = 256;          // BRAID_SPLIT_SETTLE_LAG (1 without BRAID_ASYNC)
  std::string tuning_cache;           // BRAID_TUNING_CACHE (empty: none)
  std::string split_trace;            // BRAID_SPLIT_TRACE (empty: none)
  bool caller_profile = false;        // BRAID_CALLER_PROFILE
  size_t nvlink_copy_min_bytes = 0;   // BRAID_NVLINK_COPY_MIN_BYTES
  size_t nvlink_allreduce_min_bytes = 0;  // BRAID_NVLINK_ALLREDUCE_MIN_BYTES
  size_t nvlink_graph_min_bytes = 0;  // BRAID_NVLINK_GRAPH_MIN_BYTES
  double timeout = 30.0;              // BRAID_TIMEOUT, seconds

  static OrchestratorOptions from_settings();
  // The size from which the PCIe share takes a call: BRAID_SPLIT_MIN_BYTES, or by the machine.
  size_t pcie_share_min_bytes(bool nvlink) const;
  // The sizes from which each of braid's paths takes a call, by these options.
  PathThresholds thresholds(bool nvlink) const;
  // What a rank of `nranks` on a machine with or without NVLink knows for admit_paths (the view of
  // nvlink_path lives as long as these options).
  PathFacts facts(int nranks, bool nvlink) const;
};

}  // namespace braid::multipath
