// Communicator life cycle of the C API: unique ids, creation (own id or through NCCL),
// destruction, abort and queries.
#include <cuda_runtime.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <optional>

#include "api/comm.h"
#include "api/from_nccl.h"
#include "common/log.h"
#include "common/settings.h"
#include "common/types.h"
#include "topo/topology.h"

static_assert(static_cast<int>(braid::Result::InvalidArgument) == ncclInvalidArgument);
static_assert(static_cast<int>(braid::Result::RemoteError) == ncclRemoteError);
static_assert(static_cast<int>(braid::Result::InProgress) == ncclInProgress);
static_assert(static_cast<int>(braid::DataType::Bfloat16) == ncclBfloat16);
static_assert(static_cast<int>(braid::DataType::Float8e5m2) == ncclFloat8e5m2);
static_assert(static_cast<int>(braid::RedOp::Avg) == ncclAvg);
static_assert(static_cast<int>(braid::RedOp::PreMulSum) == ncclNumOps);

namespace braid::api {

namespace {

// The unique id: a tag (so a zeroed or foreign id is caught) and the engine's CommId.
constexpr char kIdTag[8] = {'b', 'r', 'a', 'i', 'd', 'i', 'd', '1'};
static_assert(sizeof(kIdTag) + sizeof(engine::CommId::bytes) <= BRAID_UNIQUE_ID_BYTES);

}  // namespace

// Discovery reads sysfs and NVML: do it once per process, not once per rank thread.
Result machine_topology(topo::Topology* out) {
  static std::mutex mutex;
  static std::optional<topo::Topology> cached;
  std::lock_guard<std::mutex> lock(mutex);
  if (!cached) {
    topo::Topology t;
    const std::string& file = settings().topo_file;
    BRAID_TRY(file.empty() ? topo::discover_topology(&t) : topo::load_topology(file, &t));
    BRAID_INFO(Init, "topology %s (%s) with %d GPUs", t.name.c_str(),
               file.empty() ? "discovered" : file.c_str(), t.gpu_count());
    cached = std::move(t);
  }
  *out = *cached;
  return Result::Success;
}

namespace {

Result cuda_check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Result::Success;
  return fail(Result::UnhandledCudaError, "%s: %s", what, cudaGetErrorString(e));
}

Result nccl_check(const nccl::NcclCalls& nccl, ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return Result::Success;
  return fail(static_cast<Result>(r), "%s (through NCCL): %s", what,
              nccl.ncclGetErrorString != nullptr ? nccl.ncclGetErrorString(r) : "no error text");
}

Result init_rank(braidComm_t* out, int nranks, const braidUniqueId& id, int rank,
                 engine::CommunicatorOptions options = {}) {
  if (out == nullptr) return fail(Result::InvalidArgument, "braidCommInitRank: comm pointer is null");
  *out = nullptr;
  if (nranks < 1) return fail(Result::InvalidArgument, "braidCommInitRank: nranks %d < 1", nranks);
  if (rank < 0 || rank >= nranks)
    return fail(Result::InvalidArgument, "braidCommInitRank: rank %d out of range for %d ranks",
                rank, nranks);
  if (std::memcmp(id.internal, kIdTag, sizeof kIdTag) != 0)
    return fail(Result::InvalidArgument,
                "braidCommInitRank: the unique id was not made by braidGetUniqueId");
  engine::CommId comm_id;
  std::memcpy(comm_id.bytes, id.internal + sizeof kIdTag, sizeof comm_id.bytes);

  int device = 0;
  BRAID_TRY(cuda_check(cudaGetDevice(&device), "braidCommInitRank: cudaGetDevice"));
  log_set_device(device);
  topo::Topology topology;
  BRAID_TRY(machine_topology(&topology));

  auto comm = std::make_unique<braidComm>();
  comm->device = device;
  comm->rank = rank;
  comm->nranks = nranks;
  comm->backend = std::make_unique<cuda::CudaBackend>(device);
  if (!comm->backend->ok()) {
    std::string text;
    const Result r = comm->backend->status(&text);
    return fail(r == Result::Success ? Result::UnhandledCudaError : r,
                "braidCommInitRank: CUDA backend on GPU %d failed: %s", device, text.c_str());
  }
  BRAID_TRY(engine::Communicator::create(comm_id, rank, nranks, topology, comm->backend.get(),
                                         &comm->engine, options));
  BRAID_INFO(Init, "braidCommInitRank: rank %d/%d on GPU %d ready", rank, nranks, device);
  *out = comm.release();
  return Result::Success;
}

}  // namespace

Result host_round_trip(void* host, size_t bytes, const nccl::NcclCalls& nccl, const char* what,
                       const std::function<ncclResult_t(void* buffer, cudaStream_t)>& collective) {
  void* buffer = nullptr;
  cudaStream_t stream = nullptr;
  Result r = cuda_check(cudaMalloc(&buffer, bytes), "cudaMalloc (round trip through NCCL)");
  if (r == Result::Success)
    r = cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  if (r == Result::Success)
    r = cuda_check(cudaMemcpyAsync(buffer, host, bytes, cudaMemcpyHostToDevice, stream),
                   "cudaMemcpyAsync (round trip through NCCL)");
  if (r == Result::Success) r = nccl_check(nccl, collective(buffer, stream), what);
  if (r == Result::Success)
    r = cuda_check(cudaMemcpyAsync(host, buffer, bytes, cudaMemcpyDeviceToHost, stream),
                   "cudaMemcpyAsync (round trip through NCCL)");
  if (r == Result::Success) r = cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  if (stream != nullptr) cudaStreamDestroy(stream);
  if (buffer != nullptr) cudaFree(buffer);
  return r;
}

Result ranks_maximum(ncclComm_t comm, const nccl::NcclCalls& nccl, std::span<int32_t> words, const char* what) {
  return host_round_trip(words.data(), words.size_bytes(), nccl, what, [&](void* buffer, cudaStream_t stream) {
    return nccl.ncclAllReduce(buffer, buffer, words.size(), ncclInt32, ncclMax, comm, stream);
  });
}

namespace {

// braid's communicator beside `nccl`: from `given` (an engine::CommId every rank holds), else from an
// id rank 0 makes and broadcasts through NCCL.
Result init_through_nccl(braidComm_t* out, ncclComm_t nccl, const nccl::NcclCalls& calls, const uint8_t (*given)[16],
                         engine::CommunicatorOptions options) {
  if (!calls.can_bootstrap())
    return fail(Result::InternalError, "braidCommInitFromNccl: NCCL entry points missing");
  if (out == nullptr) return fail(Result::InvalidArgument, "braidCommInitFromNccl: comm pointer is null");
  *out = nullptr;
  if (nccl == nullptr) return fail(Result::InvalidArgument, "braidCommInitFromNccl: NCCL communicator is null");
  int nranks = 0, rank = 0, device = 0;
  BRAID_TRY(nccl_check(calls, calls.ncclCommCount(nccl, &nranks), "ncclCommCount"));
  BRAID_TRY(nccl_check(calls, calls.ncclCommUserRank(nccl, &rank), "ncclCommUserRank"));
  BRAID_TRY(nccl_check(calls, calls.ncclCommCuDevice(nccl, &device), "ncclCommCuDevice"));
  int previous = 0;
  BRAID_TRY(cuda_check(cudaGetDevice(&previous), "cudaGetDevice"));
  BRAID_TRY(cuda_check(cudaSetDevice(device), "cudaSetDevice"));

  braidUniqueId id{};
  Result r = Result::Success;
  if (given != nullptr) {
    std::memcpy(id.internal, kIdTag, sizeof kIdTag);
    std::memcpy(id.internal + sizeof kIdTag, *given, sizeof *given);
  } else {
    if (rank == 0) {
      const ncclResult_t made = braidGetUniqueId(&id);
      if (made != ncclSuccess) return static_cast<Result>(made);
    }
    r = host_round_trip(&id, sizeof id, calls, "ncclBroadcast of the unique id",
                        [&](void* buffer, cudaStream_t stream) {
                          return calls.ncclBroadcast(buffer, buffer, sizeof id, ncclUint8, 0, nccl, stream);
                        });
  }
  if (r == Result::Success) r = init_rank(out, nranks, id, rank, options);
  cudaSetDevice(previous);
  return r;
}

}  // namespace

Result init_from_nccl(braidComm_t* out, ncclComm_t nccl, const nccl::NcclCalls& calls, engine::CommunicatorOptions options) {
  return init_through_nccl(out, nccl, calls, nullptr, options);
}

Result init_from_nccl_with_id(braidComm_t* out, ncclComm_t nccl, const nccl::NcclCalls& calls, const uint8_t (&id)[16]) {
  return init_through_nccl(out, nccl, calls, &id, {});
}

ncclResult_t finish(braidComm* comm, Result r) {
  if (r != Result::Success && comm != nullptr) {
    std::lock_guard<std::mutex> lock(comm->mutex);
    comm->last_error = last_error();
  }
  return to_nccl(r);
}

}  // namespace braid::api

using braid::Result;
using braid::fail;
using braid::api::finish;

extern "C" {

ncclResult_t braidGetUniqueId(braidUniqueId* id) {
  if (id == nullptr) return finish(nullptr, fail(Result::InvalidArgument, "braidGetUniqueId: id is null"));
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, braid::api::kIdTag, sizeof braid::api::kIdTag);
  const braid::engine::CommId random = braid::engine::CommId::random();
  std::memcpy(id->internal + sizeof braid::api::kIdTag, random.bytes, sizeof random.bytes);
  return ncclSuccess;
}

ncclResult_t braidCommInitRank(braidComm_t* comm, int nranks, braidUniqueId commId, int rank) {
  return finish(nullptr, braid::api::init_rank(comm, nranks, commId, rank));
}

ncclResult_t braidCommDestroy(braidComm_t comm) {
  if (comm == nullptr) return finish(nullptr, fail(Result::InvalidArgument, "braidCommDestroy: comm is null"));
  cudaSetDevice(comm->device);
  // The engine first: it unregisters host memory after the backend's queues drained.
  comm->engine.reset();
  comm->backend.reset();
  delete comm;
  return ncclSuccess;
}

ncclResult_t braidCommAbort(braidComm_t comm) {
  if (comm == nullptr) return finish(nullptr, fail(Result::InvalidArgument, "braidCommAbort: comm is null"));
  if (comm->engine) comm->engine->abort();
  return braidCommDestroy(comm);
}

ncclResult_t braidCommCount(const braidComm_t comm, int* count) {
  if (comm == nullptr || count == nullptr)
    return finish(comm, fail(Result::InvalidArgument, "braidCommCount: %s is null", comm == nullptr ? "comm" : "count"));
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t braidCommUserRank(const braidComm_t comm, int* rank) {
  if (comm == nullptr || rank == nullptr)
    return finish(comm, fail(Result::InvalidArgument, "braidCommUserRank: %s is null", comm == nullptr ? "comm" : "rank"));
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t braidCommCuDevice(const braidComm_t comm, int* device) {
  if (comm == nullptr || device == nullptr)
    return finish(comm, fail(Result::InvalidArgument, "braidCommCuDevice: %s is null", comm == nullptr ? "comm" : "device"));
  *device = comm->device;
  return ncclSuccess;
}

const char* braidGetErrorString(ncclResult_t result) {
  return braid::result_string(static_cast<Result>(result));
}

const char* braidGetLastError(braidComm_t comm) {
  if (comm == nullptr) return braid::last_error();
  // The text lives in the comm; it stays valid until the next error on it.
  std::lock_guard<std::mutex> lock(comm->mutex);
  return comm->last_error.c_str();
}

}  // extern "C"
