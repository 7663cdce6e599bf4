// Whether braid's progress thread may queue GPU work that a caller's stream already waits for.
//
// Two things in a process forbid it.
//
// CUDA spreads a process's streams over CUDA_DEVICE_MAX_CONNECTIONS hardware queues (8 unless set;
// Megatron-LM sets 1). An asynchronous split call queues the caller's join (a wait on braid's
// completion word) first and its PCIe share's work from the progress thread after. At one queue
// that hung DDP on 2x H200 at its first split call with a PCIe share, where 8 queues pass
// (bench/results/gpus2-connections/, docs/MULTIPATH.md, "The deadlock rule"). Below CUDA's
// default braid keeps every share on paths the calling thread queues whole (NCCL, the copy
// engines meeting on the calling thread), which wait only for work queued before them, as NCCL's
// kernels do.
//
// CUDA's lazy module loading (CUDA_MODULE_LOADING=LAZY, PyTorch's choice where the environment
// makes none): a kernel's first launch loads its module holding CUDA's context lock and waits for
// the device to go idle, while the device waits for work the progress thread can no longer queue
// behind that lock. FSDP2 with braid's PCIe share on its AllGathers stopped so on the one-GPU rig
// (docs/MULTIPATH.md, "The deadlock rule"). The drop-in leaves the application's choice alone; where
// the process loads lazily (CUDA's default), the PCIe share is off (paths_admitted.h).
#pragma once

#include "common/result.h"
#include "multipath/rank_agreement.h"

namespace braid::multipath {

// CUDA's default number of hardware queues, and the fewest at which braid's progress thread
// queues shares (the count every asynchronous split call was measured at).
inline constexpr int kDefaultCudaConnections = 8;

// The number of hardware queues a CUDA_DEVICE_MAX_CONNECTIONS value asks for: CUDA's default when
// unset (null), empty or not a positive number.
int cuda_connections(const char* value);

// What a rank's process says about queueing from the progress thread.
struct LaneQueueing {
  int connections = kDefaultCudaConnections;  // read by cuda_connections
  bool lazy_module_loading = false;
};

// Whether the progress thread may queue GPU work that callers' streams wait for.
inline bool progress_thread_may_queue(const LaneQueueing& process) {
  return process.connections >= kDefaultCudaConnections && !process.lazy_module_loading;
}

// Collective: *any is true on every rank when some rank's process forbids the progress thread to
// queue, so that every rank splits alike even where the ranks' environments differ.
Result any_rank_forbids_lane_queueing(const LaneQueueing& process, const WordExchange& exchange, bool* any);

}  // namespace braid::multipath
