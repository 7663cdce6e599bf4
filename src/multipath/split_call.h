// What braid's split needs to know of a call (nccl/call.h): its size and the buffers each rank
// uses (which collectives it splits: admission.h).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>

#include "common/types.h"
#include "multipath/admission.h"  // splittable
#include "nccl/call.h"

namespace braid::multipath {

// The collective's size as nccl-tests counts it: the whole gathered/scattered buffer for
// AllGather, ReduceScatter and AllToAll, the per-rank buffer otherwise.
size_t message_bytes(const nccl::Call& call, int nranks);
// Whether message_bytes fits in a size_t: NCCL checks no size, and a call whose bytes braid cannot
// count goes to NCCL alone. The call's type must be valid.
bool message_bytes_fit(const nccl::Call& call, int nranks);

// Which buffers a collective uses at `rank`: both, except a broadcast's send buffer and a reduce's
// receive buffer off the root (NCCL checks those at the root only).
struct BuffersUsed {
  bool send = true;
  bool recv = true;
};
BuffersUsed buffers_used(const nccl::Call& call, int rank);

// The bytes of each buffer a collective reads or writes at `rank` (0 for one it leaves alone, as
// buffers_used says). message_bytes_fit must hold.
struct BufferBytes {
  size_t send = 0;
  size_t recv = 0;
};
BufferBytes buffer_bytes(const nccl::Call& call, int nranks, int rank);

}  // namespace braid::multipath
