// The split trace (BRAID_SPLIT_TRACE): rank 0 of each split communicator appends one JSON line per
// settled split call and one per call braid's paths take that went to NCCL, with the reason;
// `braid trace` reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "multipath/split_call.h"

namespace braid::multipath {

// What one split call did, for the log and the JSON trace.
struct SplitRecord {
  uint64_t call = 0;
  nccl::Call what;
  size_t bytes = 0;
  size_t nccl_elements = 0;  // the NVLink share: NCCL's, or the copy engines' when nvlink_copy
  bool nvlink_copy = false;
  size_t pcie_elements = 0;
  bool timed = false;       // the times below were measured (some split calls of each kind are)
  double nccl_seconds = 0;  // slowest rank's
  double pcie_seconds = 0;
  double next_pcie_share = 0;
  // This rank's calling thread inside the call (its host time): what braid made the application
  // wait, the NVLink path's per-call meeting with its peers included.
  double caller_seconds = 0;
};

class SplitTrace {
 public:
  SplitTrace() = default;
  ~SplitTrace();
  SplitTrace(const SplitTrace&) = delete;
  SplitTrace& operator=(const SplitTrace&) = delete;

  // Appends to `path` (empty: no trace). Every split communicator of every process may write the
  // same file: O_APPEND keeps each line whole.
  void open(const std::string& path);
  // Any thread: one fprintf per line, and stdio locks the FILE, so lines stay whole.
  void settled(const SplitRecord& r);
  void declined(const nccl::Call& call, int nranks, const char* reason);

 private:
  std::FILE* file_ = nullptr;
};

}  // namespace braid::multipath
