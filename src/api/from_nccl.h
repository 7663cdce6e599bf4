// The one table of NCCL's entry points braid calls: a slot per function of api/nccl_functions.h,
// null where the NCCL at hand lacks it. The C API and braid-bench fill it from the NCCL they link
// (nccl_linked/), the drop-in libbraid.so from the real NCCL it forwards to (shim/real_nccl.h),
// so the layers that call NCCL (api, multipath, peer) link none themselves (two libnccl copies in
// one process would not share state).
#pragma once

#include <functional>

#include "api/comm.h"
#include "api/nccl_functions.h"

namespace braid::api {

struct NcclCalls {
  // (ncclResetDebugInit is deprecated in nccl.h, yet still NCCL's API.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#define BRAID_NCCL_SLOT(name) decltype(&::name) name = nullptr;
  BRAID_NCCL_FUNCTIONS(BRAID_NCCL_SLOT)
#undef BRAID_NCCL_SLOT
#pragma GCC diagnostic pop

  // What braid's bootstrap through NCCL needs (init_from_nccl, host_round_trip).
  bool can_bootstrap() const {
    return ncclCommCount && ncclCommUserRank && ncclCommCuDevice && ncclBroadcast;
  }
  // What a split call's NVLink share needs besides (multipath/).
  bool can_split() const {
    return can_bootstrap() && ncclAllReduce && ncclReduce && ncclAllGather && ncclReduceScatter && ncclSend && ncclRecv &&
           ncclGroupStart && ncclGroupEnd;
  }
};

// braidCommInitFromNccl through `nccl`: collective over the NCCL communicator's ranks. `options`:
// what braid's engine is made for (every rank passes the same).
Result init_from_nccl(braidComm_t* out, ncclComm_t comm, const NcclCalls& nccl,
                      engine::CommunicatorOptions options = {});
// The same from an id every rank already holds (engine::CommId bytes), with no NCCL call on `comm`
// but its queries: for a point that is not a collective call on it (the ranks of a send/recv group
// that met on the exchange board, engine/exchange_board.h).
Result init_from_nccl_with_id(braidComm_t* out, ncclComm_t comm, const NcclCalls& nccl, const uint8_t (&id)[16]);

// Small agreements between ranks (an id, a flag) travel through NCCL itself: copies host[0..bytes)
// to a device buffer of the current device, runs `collective` in place on it on a private stream,
// and copies the result back. `what` names the step in the error.
Result host_round_trip(void* host, size_t bytes, const NcclCalls& nccl, const char* what,
                       const std::function<ncclResult_t(void* buffer, cudaStream_t)>& collective);

// The table over the NCCL a program links (defined in braid_api_nccl, which links it): the
// bootstrap's and the split calls' slots.
NcclCalls linked_nccl_calls();

}  // namespace braid::api
