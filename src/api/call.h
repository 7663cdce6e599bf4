// One collective call of the C API, and running it on a range of every block (the PCIe share of
// a collective split across paths).
#pragma once

#include <cuda_runtime.h>

#include "api/comm.h"
#include "common/types.h"
#include "engine/communicator.h"

namespace braid::api {

struct Call {
  Collective collective;
  const void* send;
  void* recv;
  size_t count;
  ncclDataType_t type;
  ncclRedOp_t op;
  int root;
};

// Checks the call, joins `stream`, runs `range` of every block (all of it by default).
Result run_collective(braidComm* comm, const Call& call, cudaStream_t stream,
                      engine::BlockRange range = engine::BlockRange{});

// The same with the operator already resolved (`scalar` for PreMulSum): the drop-in runs its PCIe
// share later, on its progress thread, when the application may have destroyed the operator.
Result run_resolved(braidComm* comm, const Call& call, RedOp op, const reduce::OpScalar* scalar,
                    cudaStream_t stream, engine::BlockRange range);

}  // namespace braid::api
