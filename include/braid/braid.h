/* braid's own C API for the PCIe path: NCCL-like communicators and collectives on device
 * buffers, usable without NVLink and without the NCCL drop-in. Results, data types, reduction
 * operators and scalar residences are NCCL's own types (nccl.h), with the same values.
 *
 * Stream semantics (docs/API.md): a collective is ordered after the work already queued on
 * `stream` (an event), and `stream` waits for braid's internal queues (events) before any later
 * work runs. The host call itself BLOCKS until this rank's part of the collective has been
 * issued and its host-side steps are done; it is not fire-and-forget like NCCL. Capturing a
 * collective into a CUDA graph is not supported (the call returns ncclInvalidUsage). */
#ifndef BRAID_BRAID_H_
#define BRAID_BRAID_H_

#include <cuda_runtime.h>
#include <nccl.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BRAID_UNIQUE_ID_BYTES 128

typedef struct braidComm* braidComm_t;
typedef struct {
  char internal[BRAID_UNIQUE_ID_BYTES];
} braidUniqueId;

/* A fresh random id; one rank makes it and hands it to all others (any way it likes). */
ncclResult_t braidGetUniqueId(braidUniqueId* uniqueId);

/* Collective over the `nranks` ranks (threads or processes of ONE machine): each calls it with
 * the same id and its own rank. The communicator drives the current CUDA device. */
ncclResult_t braidCommInitRank(braidComm_t* comm, int nranks, braidUniqueId commId, int rank);

/* Bootstraps through an existing NCCL communicator (collective over its ranks): rank 0 makes
 * the id and broadcasts it through NCCL; ranks and size are NCCL's. The new communicator drives
 * the NCCL communicator's device. */
ncclResult_t braidCommInitFromNccl(braidComm_t* comm, ncclComm_t ncclComm);

/* Waits for the communicator's queued work, then frees it. */
ncclResult_t braidCommDestroy(braidComm_t comm);
/* Stops every wait of the communicator on every rank (within about a second), then frees it. */
ncclResult_t braidCommAbort(braidComm_t comm);

ncclResult_t braidCommCount(const braidComm_t comm, int* count);
ncclResult_t braidCommUserRank(const braidComm_t comm, int* rank);
/* The CUDA device the communicator drives. */
ncclResult_t braidCommCuDevice(const braidComm_t comm, int* device);

const char* braidGetErrorString(ncclResult_t result);
/* The text of the last error on `comm` (or, for a null comm, of the calling thread). */
const char* braidGetLastError(braidComm_t comm);

/* PreMulSum: output = sum over ranks of (scalar * input). ncclScalarHostImmediate reads the
 * scalar now; ncclScalarDevice reads it from device memory at each collective. */
ncclResult_t braidRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, braidComm_t comm);
ncclResult_t braidRedOpDestroy(ncclRedOp_t op, braidComm_t comm);

/* Collectives. Counts follow NCCL: elements per rank for AllReduce/Broadcast/Reduce, the send
 * count for AllGather, the receive count for ReduceScatter, the count per peer for AllToAll. */
ncclResult_t braidAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, ncclRedOp_t op, braidComm_t comm,
                            cudaStream_t stream);
ncclResult_t braidAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                            ncclDataType_t datatype, braidComm_t comm, cudaStream_t stream);
ncclResult_t braidReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                ncclDataType_t datatype, ncclRedOp_t op, braidComm_t comm,
                                cudaStream_t stream);
ncclResult_t braidBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, int root, braidComm_t comm,
                            cudaStream_t stream);
ncclResult_t braidReduce(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, ncclRedOp_t op, int root, braidComm_t comm,
                         cudaStream_t stream);
ncclResult_t braidAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, braidComm_t comm, cudaStream_t stream);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* BRAID_BRAID_H_ */
