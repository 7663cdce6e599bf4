// The NCCL entry points braid's bootstrap through NCCL needs, as a table: the C API fills it from
// the NCCL it links (nccl_linked/), the drop-in libbraid.so from the real NCCL it forwards to, so
// the api layer itself links no NCCL (two libnccl copies in one process would not share state).
#pragma once

#include <nccl.h>

#include <functional>

#include "api/comm.h"

namespace braid::api {

struct NcclCalls {
  ncclResult_t (*comm_count)(const ncclComm_t, int*) = nullptr;
  ncclResult_t (*comm_user_rank)(const ncclComm_t, int*) = nullptr;
  ncclResult_t (*comm_cu_device)(const ncclComm_t, int*) = nullptr;
  ncclResult_t (*broadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                            cudaStream_t) = nullptr;
  const char* (*get_error_string)(ncclResult_t) = nullptr;
};

// braidCommInitFromNccl through `nccl`: collective over the NCCL communicator's ranks.
Result init_from_nccl(braidComm_t* out, ncclComm_t comm, const NcclCalls& nccl);

// Small agreements between ranks (an id, a flag) travel through NCCL itself: copies host[0..bytes)
// to a device buffer of the current device, runs `collective` in place on it on a private stream,
// and copies the result back. `what` names the step in the error.
Result host_round_trip(void* host, size_t bytes, const NcclCalls& nccl, const char* what,
                       const std::function<ncclResult_t(void* buffer, cudaStream_t)>& collective);

// The table over the NCCL a program links (defined in braid_api_nccl, which links it).
NcclCalls linked_nccl_calls();

}  // namespace braid::api
