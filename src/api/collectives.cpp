// The collectives of the C API: check what the engine cannot see (the stream, where the buffers
// live), join the user's stream, then run the engine's collective on this rank's GPU.
#include <cuda_runtime.h>

#include <string>

#include "api/call.h"
#include "api/comm.h"
#include "api/ops.h"
#include "common/types.h"

namespace braid::api {

namespace {

// The call must be on the communicator's device and not under graph capture.
Result check_stream(braidComm* comm, const char* name, cudaStream_t stream) {
  if (cudaSetDevice(comm->device) != cudaSuccess)
    return fail(Result::UnhandledCudaError, "%s: cudaSetDevice(%d) failed", name, comm->device);
  // First: other stream queries are not allowed on a capturing stream and would invalidate it.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
    cudaGetLastError();
    return fail(Result::InvalidArgument, "%s: cannot query the stream's capture state", name);
  }
  if (capture != cudaStreamCaptureStatusNone)
    return fail(Result::InvalidUsage,
                "%s: CUDA graph capture is not supported (braid's host threads take part in every "
                "collective, which a graph replay cannot reproduce)", name);
  // The default streams belong to whichever device is current: the one just set.
  const bool default_stream = stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
  int stream_device = comm->device;
  if (!default_stream && cudaStreamGetDevice(stream, &stream_device) != cudaSuccess) {
    cudaGetLastError();
    return fail(Result::InvalidArgument, "%s: the stream is not a valid CUDA stream", name);
  }
  if (stream_device != comm->device)
    return fail(Result::InvalidArgument,
                "%s: the stream belongs to GPU %d but the communicator drives GPU %d", name,
                stream_device, comm->device);
  return Result::Success;
}

// Buffers must be memory the GPU of the communicator can address as device memory.
Result check_buffer(braidComm* comm, const char* name, const char* which, const void* p) {
  if (p == nullptr) return Result::Success;  // the engine decides whether null is allowed
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return fail(Result::InvalidArgument, "%s: %s %p is not memory CUDA knows", name, which, p);
  }
  if (a.type == cudaMemoryTypeManaged) return Result::Success;
  if (a.type != cudaMemoryTypeDevice)
    return fail(Result::InvalidArgument, "%s: %s %p is host memory; braid needs device buffers",
                name, which, p);
  if (a.device != comm->device)
    return fail(Result::InvalidArgument, "%s: %s %p is on GPU %d but the communicator drives GPU %d",
                name, which, p, a.device, comm->device);
  return Result::Success;
}

}  // namespace

Result run_collective(braidComm* comm, const Call& call, cudaStream_t stream, engine::BlockRange range) {
  const std::string name = "braid " + std::string(collective_name(call.collective));
  if (comm == nullptr) return fail(Result::InvalidArgument, "%s: comm is null", name.c_str());
  if (!comm->engine) return fail(Result::InvalidUsage, "%s: the communicator was aborted", name.c_str());
  if (!datatype_valid(call.type))
    return fail(Result::InvalidArgument, "%s: invalid datatype %d", name.c_str(), static_cast<int>(call.type));
  const bool rooted = call.collective == Collective::Broadcast || call.collective == Collective::Reduce;
  if (rooted && (call.root < 0 || call.root >= comm->nranks))
    return fail(Result::InvalidArgument, "%s: root %d out of range for %d ranks", name.c_str(),
                call.root, comm->nranks);
  BRAID_TRY(check_stream(comm, name.c_str(), stream));
  if (call.count > 0) {
    BRAID_TRY(check_buffer(comm, name.c_str(), "sendbuff", call.send));
    BRAID_TRY(check_buffer(comm, name.c_str(), "recvbuff", call.recv));
  }
  RedOp op = RedOp::Sum;
  reduce::OpScalar scalar;
  if (collective_reduces(call.collective))
    BRAID_TRY(resolve_op(comm, call.op, call.type, stream, &op, &scalar));
  return run_resolved(comm, call, op, op == RedOp::PreMulSum ? &scalar : nullptr, stream, range);
}

Result run_resolved(braidComm* comm, const Call& call, RedOp op, const reduce::OpScalar* scalar,
                    cudaStream_t stream, engine::BlockRange range) {
  if (comm == nullptr || !comm->engine) return fail(Result::InvalidUsage, "braid: the communicator was aborted");
  comm->backend->set_user_stream(stream);
  return comm->engine->collective_range(call.collective, call.send, call.recv, call.count,
                                        static_cast<DataType>(call.type), op, call.root, scalar, range);
}

namespace {

ncclResult_t api_call(braidComm* comm, const Call& call, cudaStream_t stream) {
  return finish(comm, run_collective(comm, call, stream));
}

}  // namespace
}  // namespace braid::api

using braid::Collective;
using braid::api::api_call;

extern "C" {

ncclResult_t braidAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                            ncclRedOp_t op, braidComm_t comm, cudaStream_t stream) {
  return api_call(comm, {Collective::AllReduce, sendbuff, recvbuff, count, datatype, op, 0}, stream);
}

ncclResult_t braidAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                            braidComm_t comm, cudaStream_t stream) {
  return api_call(comm, {Collective::AllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0}, stream);
}

ncclResult_t braidReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                ncclRedOp_t op, braidComm_t comm, cudaStream_t stream) {
  return api_call(comm, {Collective::ReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0}, stream);
}

ncclResult_t braidBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                            braidComm_t comm, cudaStream_t stream) {
  return api_call(comm, {Collective::Broadcast, sendbuff, recvbuff, count, datatype, ncclSum, root}, stream);
}

ncclResult_t braidReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                         ncclRedOp_t op, int root, braidComm_t comm, cudaStream_t stream) {
  return api_call(comm, {Collective::Reduce, sendbuff, recvbuff, count, datatype, op, root}, stream);
}

ncclResult_t braidAllToAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           braidComm_t comm, cudaStream_t stream) {
  return api_call(comm, {Collective::AllToAll, sendbuff, recvbuff, count, datatype, ncclSum, 0}, stream);
}

}  // extern "C"
