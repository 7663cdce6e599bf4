// braid's communicator made over an NCCL communicator's ranks, through a table of NCCL's entry
// points (nccl/calls.h): braidCommInitFromNccl, the drop-in's and the tools'.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "api/comm.h"
#include "nccl/calls.h"

namespace braid::api {

// braidCommInitFromNccl through `nccl`: collective over the NCCL communicator's ranks. `options`:
// what braid's engine is made for (every rank passes the same).
Result init_from_nccl(braidComm_t* out, ncclComm_t comm, const nccl::NcclCalls& nccl,
                      engine::CommunicatorOptions options = {});
// The same from an id every rank already holds (engine::CommId bytes), with no NCCL call on `comm`
// but its queries: for a point that is not a collective call on it (the ranks of a send/recv group
// that met on the exchange board, engine/exchange_board.h).
Result init_from_nccl_with_id(braidComm_t* out, ncclComm_t comm, const nccl::NcclCalls& nccl, const uint8_t (&id)[16]);

// Small agreements between ranks (an id, a flag) travel through NCCL itself: copies host[0..bytes)
// to a device buffer of the current device, runs `collective` in place on it on a private stream,
// and copies the result back. `what` names the step in the error.
Result host_round_trip(void* host, size_t bytes, const nccl::NcclCalls& nccl, const char* what,
                       const std::function<ncclResult_t(void* buffer, cudaStream_t)>& collective);
// Every rank's `words` combined by the maximum (one NCCL all-reduce, host_round_trip): each rank
// learns every rank's answer, e.g. whether any refused. On the current device.
Result ranks_maximum(ncclComm_t comm, const nccl::NcclCalls& nccl, std::span<int32_t> words, const char* what);

}  // namespace braid::api
