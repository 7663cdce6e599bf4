// One NCCL call as the application made it: the drop-in's descriptor from its export on, as
// NCCL's ncclInfo is NCCL's. It is checked as NCCL checks it (shim/arguments.h), decided
// (multipath/admission.h), split across paths (multipath/) and handed to the engine, never
// repacked on the way.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>

#include "common/types.h"

namespace braid::nccl {

// The entry points that take a call (ncclBcast is NCCL's Broadcast).
enum class Operation : uint8_t { AllReduce, Reduce, Broadcast, AllGather, ReduceScatter, AlltoAll, Gather, Scatter, Send, Recv };

// The name NCCL's texts give the operation: "AllReduce", "Send", ...
const char* operation_name(Operation operation);
// The operation braid's collective is (the tools build calls from braid's names).
Operation operation_of(Collective collective);

struct Call {
  Operation operation = Operation::AllReduce;
  const void* send = nullptr;  // null for a ncclRecv; a ncclSend's buffer is `recv`, as in ncclInfo
  void* recv = nullptr;
  // NCCL's: per rank, the send count (AllGather), the receive count (ReduceScatter)
  size_t count = 0;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;  // ncclSum where the API takes none, as NCCL fills it in
  int root = 0;              // the root, a send/recv's peer; 0 where the API takes none
  ncclComm_t comm = nullptr;

  // braid's name for the collective (the engine's, the planner's, the balancer's). Gather, scatter
  // and send/recv are exchanges, which braid's engine knows as AllToAll's family.
  Collective collective() const;
};

}  // namespace braid::nccl
