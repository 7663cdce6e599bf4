// Every NCCL function braid knows: all of nccl.h (NCCL 2.28) plus the two host functions of
// nccl_device/core.h that PyTorch 2.11 imports. The drop-in exports each of them; nccl.h is the
// ABI braid must match, so braid includes it rather than restating its types.
#pragma once

#include <nccl.h>

// nccl_device/core.h pulls in device code; these two host entry points only need its types
// as opaque pointers.
extern "C" {
struct ncclDevComm;
struct ncclDevCommRequirements;
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements* reqs, ncclDevComm* outDevComm);
ncclResult_t pncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements* reqs, ncclDevComm* outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm* devComm);
ncclResult_t pncclDevCommDestroy(ncclComm_t comm, const ncclDevComm* devComm);
}

// X(name) for each function `name`; the real NCCL's profiling entry point is `p` + name.
#define BRAID_NCCL_FUNCTIONS(X)                                                         \
  X(ncclMemAlloc) X(ncclMemFree) X(ncclGetVersion) X(ncclGetUniqueId)                        \
  X(ncclCommInitRankConfig) X(ncclCommInitRank) X(ncclCommInitAll) X(ncclCommFinalize)       \
  X(ncclCommDestroy) X(ncclCommAbort) X(ncclCommRevoke) X(ncclCommSplit) X(ncclCommShrink)   \
  X(ncclCommInitRankScalable) X(ncclGetErrorString) X(ncclGetLastError)                     \
  X(ncclResetDebugInit) X(ncclCommGetAsyncError) X(ncclCommCount) X(ncclCommCuDevice)        \
  X(ncclCommUserRank) X(ncclCommRegister) X(ncclCommDeregister) X(ncclCommWindowRegister)    \
  X(ncclCommWindowDeregister) X(ncclRedOpCreatePreMulSum) X(ncclRedOpDestroy) X(ncclReduce)  \
  X(ncclBcast) X(ncclBroadcast) X(ncclAllReduce) X(ncclReduceScatter) X(ncclAllGather)       \
  X(ncclAlltoAll) X(ncclGather) X(ncclScatter) X(ncclSend) X(ncclRecv) X(ncclGroupStart)     \
  X(ncclGroupEnd) X(ncclGroupSimulateEnd) X(ncclDevCommCreate) X(ncclDevCommDestroy)
