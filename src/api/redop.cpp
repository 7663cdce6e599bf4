// PreMulSum operators of the C API: numbered from ncclNumOps per communicator, as NCCL does.
#include <cuda_runtime.h>

#include <mutex>

#include "api/comm.h"
#include "api/ops.h"
#include "common/types.h"

namespace braid::api {

Result resolve_op(braidComm* comm, ncclRedOp_t op, ncclDataType_t type, cudaStream_t stream,
                  RedOp* out, reduce::OpScalar* scalar) {
  const int raw = static_cast<int>(op);
  if (raw >= 0 && raw < ncclNumOps) {
    *out = static_cast<RedOp>(raw);
    return Result::Success;
  }
  BraidPreMulSumOp found;
  {
    std::lock_guard<std::mutex> lock(comm->mutex);
    const long index = static_cast<long>(raw) - ncclNumOps;
    if (raw < 0 || index >= static_cast<long>(comm->ops.size()) || !comm->ops[index].live)
      return fail(Result::InvalidArgument,
                  "reduction op %d is not built in and not a live PreMulSum op of this communicator", raw);
    found = comm->ops[index];
  }
  if (static_cast<int>(found.type) != static_cast<int>(type))
    return fail(Result::InvalidArgument, "PreMulSum op %d was made for %s but the data is %s", raw,
                std::string(datatype_name(found.type)).c_str(),
                datatype_valid(type) ? std::string(datatype_name(static_cast<DataType>(type))).c_str()
                                     : "an invalid type");
  if (found.on_device) {
    // NCCL reads a device scalar while the collective runs; braid reads it once the work before
    // the collective on `stream` is done (the host call blocks anyway).
    unsigned char bytes[8] = {};
    const size_t size = datatype_size(found.type);
    cudaError_t e = cudaMemcpyAsync(bytes, found.device_scalar, size, cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess)
      return fail(Result::UnhandledCudaError, "reading the PreMulSum scalar from device memory: %s",
                  cudaGetErrorString(e));
    *scalar = reduce::OpScalar::from_bytes(found.type, bytes);
  } else {
    *scalar = found.host_scalar;
  }
  *out = RedOp::PreMulSum;
  return Result::Success;
}

namespace {

Result create_premulsum(ncclRedOp_t* op, void* scalar, ncclDataType_t type,
                        ncclScalarResidence_t residence, braidComm* comm) {
  if (comm == nullptr) return fail(Result::InvalidArgument, "braidRedOpCreatePreMulSum: comm is null");
  if (op == nullptr) return fail(Result::InvalidArgument, "braidRedOpCreatePreMulSum: op is null");
  if (scalar == nullptr) return fail(Result::InvalidArgument, "braidRedOpCreatePreMulSum: scalar is null");
  if (!datatype_valid(type))
    return fail(Result::InvalidArgument, "braidRedOpCreatePreMulSum: invalid datatype %d", static_cast<int>(type));
  BraidPreMulSumOp made;
  made.live = true;
  made.type = static_cast<DataType>(type);
  if (residence == ncclScalarHostImmediate) {
    made.host_scalar = reduce::OpScalar::from_bytes(made.type, scalar);
  } else if (residence == ncclScalarDevice) {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, scalar) != cudaSuccess ||
        (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged)) {
      cudaGetLastError();
      return fail(Result::InvalidArgument,
                  "braidRedOpCreatePreMulSum: ncclScalarDevice but %p is not device memory", scalar);
    }
    made.on_device = true;
    made.device_scalar = scalar;
  } else {
    return fail(Result::InvalidArgument, "braidRedOpCreatePreMulSum: invalid residence %d",
                static_cast<int>(residence));
  }
  std::lock_guard<std::mutex> lock(comm->mutex);
  size_t index = 0;
  while (index < comm->ops.size() && comm->ops[index].live) ++index;  // reuse destroyed slots
  if (index == comm->ops.size()) comm->ops.push_back(made);
  else comm->ops[index] = made;
  *op = static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(index));
  return Result::Success;
}

Result destroy_op(ncclRedOp_t op, braidComm* comm) {
  if (comm == nullptr) return fail(Result::InvalidArgument, "braidRedOpDestroy: comm is null");
  const long index = static_cast<long>(op) - ncclNumOps;
  std::lock_guard<std::mutex> lock(comm->mutex);
  if (index < 0 || index >= static_cast<long>(comm->ops.size()) || !comm->ops[index].live)
    return fail(Result::InvalidArgument, "braidRedOpDestroy: op %d is not a live PreMulSum op of this communicator",
                static_cast<int>(op));
  comm->ops[index].live = false;
  return Result::Success;
}

}  // namespace
}  // namespace braid::api

extern "C" {

ncclResult_t braidRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, braidComm_t comm) {
  return braid::api::finish(comm, braid::api::create_premulsum(op, scalar, datatype, residence, comm));
}

ncclResult_t braidRedOpDestroy(ncclRedOp_t op, braidComm_t comm) {
  return braid::api::finish(comm, braid::api::destroy_op(op, comm));
}

}  // extern "C"
