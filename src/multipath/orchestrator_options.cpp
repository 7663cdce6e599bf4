#include "multipath/orchestrator_options.h"

#include <algorithm>

#include "common/settings.h"
#include "common/sizes.h"

namespace braid::multipath {

OrchestratorOptions OrchestratorOptions::from_settings() {
  const Settings& s = settings();
  OrchestratorOptions o;
  // Both are Choice settings: the settings layer admits only their listed values.
  o.nccl_share_by_copy = s.split_nccl_share == "copy";
  o.nvlink_path = s.nvlink_path;
  o.split_min_bytes = s.split_min_bytes;
  o.async = s.async;
  // Without the progress thread every earlier call is settled already: no lag is needed.
  o.settle_lag = s.async ? static_cast<uint64_t>(std::max<int64_t>(1, s.split_settle_lag)) : uint64_t{1};
  o.tuning_cache = s.tuning_cache;
  o.split_trace = s.split_trace;
  o.caller_profile = s.caller_profile;
  o.nvlink_copy_min_bytes = byte_threshold(s.nvlink_copy_min_bytes);
  o.nvlink_allreduce_min_bytes = byte_threshold(s.nvlink_allreduce_min_bytes);
  o.nvlink_graph_min_bytes = byte_threshold(s.nvlink_graph_min_bytes);
  o.timeout = s.timeout;
  return o;
}

size_t OrchestratorOptions::pcie_share_min_bytes(bool nvlink) const {
  if (split_min_bytes > 0) return static_cast<size_t>(split_min_bytes);
  // Where the GPUs share NVLink, NCCL alone finishes a 64 MB all_reduce in 0.25 ms, about the PCIe
  // path's fixed latency (~0.23 ms on 2x H200), so only larger ones can gain (docs/PERFORMANCE.md).
  // Without NVLink, HyLink's S_min of 1 MB.
  return nvlink ? size_t{128} << 20 : size_t{1} << 20;
}

PathThresholds OrchestratorOptions::thresholds(bool nvlink) const {
  return {.pcie_share = pcie_share_min_bytes(nvlink),
          .copy_engines_gather = nvlink_copy_min_bytes,
          .copy_engines_reduce = nvlink_allreduce_min_bytes};
}

PathFacts OrchestratorOptions::facts(int nranks, bool nvlink) const {
  return {.nranks = nranks, .nvlink = nvlink, .nvlink_path = nvlink_path, .split_size_chosen = split_min_bytes > 0};
}

}  // namespace braid::multipath
