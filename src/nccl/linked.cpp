#include "nccl/linked.h"

braid::nccl::NcclCalls braid::nccl::linked_calls() {
  NcclCalls calls;
  // Only what braid calls: the bootstrap's and the split calls' (an NCCL older than nccl.h may
  // lack others, and linking them would fail).
#define BRAID_TAKE(name) calls.name = ::name;
  BRAID_TAKE(ncclCommCount) BRAID_TAKE(ncclCommUserRank) BRAID_TAKE(ncclCommCuDevice)
  BRAID_TAKE(ncclGetErrorString) BRAID_TAKE(ncclBroadcast) BRAID_TAKE(ncclAllReduce) BRAID_TAKE(ncclReduce)
  BRAID_TAKE(ncclAllGather) BRAID_TAKE(ncclReduceScatter) BRAID_TAKE(ncclSend) BRAID_TAKE(ncclRecv)
  BRAID_TAKE(ncclGroupStart) BRAID_TAKE(ncclGroupEnd)
#undef BRAID_TAKE
  return calls;
}
