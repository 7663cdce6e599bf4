// braidCommInitFromNccl for programs that link NCCL (the C API's users, braid-bench, tests).
#include "api/nccl_calls.h"

braid::api::NcclCalls braid::api::linked_nccl_calls() {
  NcclCalls calls;
  calls.comm_count = ncclCommCount;
  calls.comm_user_rank = ncclCommUserRank;
  calls.comm_cu_device = ncclCommCuDevice;
  calls.broadcast = ncclBroadcast;
  calls.get_error_string = ncclGetErrorString;
  return calls;
}

extern "C" ncclResult_t braidCommInitFromNccl(braidComm_t* comm, ncclComm_t ncclComm) {
  return braid::api::finish(nullptr, braid::api::init_from_nccl(comm, ncclComm, braid::api::linked_nccl_calls()));
}
