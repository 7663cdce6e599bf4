// Whether braid's progress thread may queue GPU work that a caller's stream already waits for.
//
// CUDA spreads a process's streams over CUDA_DEVICE_MAX_CONNECTIONS hardware queues (8 unless set;
// Megatron-LM sets 1). An asynchronous split call queues the caller's join (a wait on braid's
// completion word) first and its PCIe share's work from the progress thread after. At one queue
// that hung DDP on 2x H200 at its first split call with a PCIe share, where 8 queues pass
// (bench/results/gpus2-connections/, docs/MULTIPATH.md "Few hardware queues"). Below CUDA's
// default braid keeps every share on paths the calling thread queues whole (NCCL, the copy
// engines meeting on the calling thread), which wait only for work queued before them, as NCCL's
// kernels do.
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

// Whether the progress thread may queue GPU work that callers' streams wait for at `connections`.
inline bool progress_thread_may_queue(int connections) { return connections >= kDefaultCudaConnections; }

// Collective: *any is true on every rank when some rank's `connections` (this rank's, read by
// cuda_connections) are too few for the progress thread, so that every rank splits alike even
// where the ranks' environments differ.
Result any_rank_has_few_queues(int connections, const WordExchange& exchange, bool* any);

}  // namespace braid::multipath
