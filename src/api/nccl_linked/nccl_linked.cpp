// braidCommInitFromNccl for programs that link NCCL (the C API's users, braid-bench, tests).
#include "api/from_nccl.h"
#include "nccl/linked.h"

extern "C" ncclResult_t braidCommInitFromNccl(braidComm_t* comm, ncclComm_t ncclComm) {
  return braid::api::finish(nullptr, braid::api::init_from_nccl(comm, ncclComm, braid::nccl::linked_calls()));
}
