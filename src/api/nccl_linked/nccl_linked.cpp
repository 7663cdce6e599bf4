// braidCommInitFromNccl for programs that link NCCL (the C API's users, braid-bench, tests).
#include "api/nccl_calls.h"

extern "C" ncclResult_t braidCommInitFromNccl(braidComm_t* comm, ncclComm_t ncclComm) {
  braid::api::NcclCalls calls;
  calls.comm_count = ncclCommCount;
  calls.comm_user_rank = ncclCommUserRank;
  calls.comm_cu_device = ncclCommCuDevice;
  calls.broadcast = ncclBroadcast;
  calls.get_error_string = ncclGetErrorString;
  return braid::api::finish(nullptr, braid::api::init_from_nccl(comm, ncclComm, calls));
}
