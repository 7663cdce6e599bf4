// The fake NCCL of fake_nccl.h. Thread-safe, so it never adds a race of its own to a test.
#include "fake_nccl.h"

#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

// NCCL's opaque communicator, as the fake makes it.
struct ncclComm {
  int rank = 0;
  int nranks = 1;
  int device = 0;
  bool blocking = true;
  // Made inside a group: NCCL initialises it at the group's end and answers device 0 until then.
  bool initialised = true;
  int serial = 0;  // spreads operator values apart, as NCCL's mangling by the communicator does
  ncclResult_t async_error = ncclSuccess;
  std::vector<bool> op_slot_live;  // PreMulSum operator slots, reused lowest first
};

namespace {

// A 2.28 version no real NCCL has, so a test can tell which library answered.
constexpr int kFakeVersion = 22899;

std::mutex g_mutex;
std::vector<FakeNcclCall> g_calls;
int g_group_depth = 0;
int g_next_serial = 0;
std::vector<ncclComm*> g_made_in_group;  // under g_mutex
struct PendingThrow {
  std::string what;
  bool std_exception;
};
std::optional<PendingThrow> g_throw;

void throw_if_asked() {
  std::optional<PendingThrow> pending;
  {
    std::lock_guard lock(g_mutex);
    pending.swap(g_throw);
  }
  if (!pending) return;
  if (pending->std_exception) throw std::runtime_error(pending->what);
  throw 42;
}

ncclResult_t record(const char* api, const void* sendbuff, const void* recvbuff, size_t count, ncclDataType_t datatype,
                    ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  throw_if_asked();
  FakeNcclCall call{};
  std::strncpy(call.api, api, sizeof call.api - 1);
  call.sendbuff = sendbuff;
  call.recvbuff = recvbuff;
  call.count = count;
  call.datatype = static_cast<int>(datatype);
  call.op = static_cast<int>(op);
  call.root = root;
  call.comm = comm;
  call.stream = stream;
  std::lock_guard lock(g_mutex);
  g_calls.push_back(call);
  return ncclSuccess;
}

ncclResult_t make_comm(ncclComm_t* comm, int nranks, int rank, bool blocking) {
  throw_if_asked();
  if (comm == nullptr || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  auto* made = new ncclComm;
  made->rank = rank;
  made->nranks = nranks;
  made->device = rank;
  made->blocking = blocking;
  {
    std::lock_guard lock(g_mutex);
    made->serial = g_next_serial++;
    if (g_group_depth > 0) {
      made->initialised = false;
      g_made_in_group.push_back(made);
    }
  }
  *comm = made;
  // A non-blocking communicator answers as NCCL's does: ready later (ncclCommGetAsyncError).
  return blocking ? ncclSuccess : ncclInProgress;
}

int op_value(const ncclComm* comm, int slot) { return ncclNumOps + slot + 1000 * comm->serial; }

}  // namespace

extern "C" {

size_t fake_nccl_call_count() {
  std::lock_guard lock(g_mutex);
  return g_calls.size();
}

FakeNcclCall fake_nccl_call(size_t index) {
  std::lock_guard lock(g_mutex);
  return index < g_calls.size() ? g_calls[index] : FakeNcclCall{};
}

void fake_nccl_set_async_error(ncclComm_t comm, ncclResult_t error) { comm->async_error = error; }

void fake_nccl_throw_next(const char* what, bool std_exception) {
  std::lock_guard lock(g_mutex);
  g_throw = PendingThrow{what, std_exception};
}

// ---- versions, ids, errors ----

ncclResult_t pncclGetVersion(int* version) {
  throw_if_asked();
  if (version == nullptr) return ncclInvalidArgument;
  *version = kFakeVersion;
  return ncclSuccess;
}

ncclResult_t pncclGetUniqueId(ncclUniqueId* id) {
  throw_if_asked();
  if (id == nullptr) return ncclInvalidArgument;
  std::memset(id, 'f', sizeof *id);
  return ncclSuccess;
}

const char* pncclGetErrorString(ncclResult_t) {
  throw_if_asked();
  return "fake NCCL error string";
}

const char* pncclGetLastError(ncclComm_t) {
  throw_if_asked();
  return "fake NCCL last error";
}

void pncclResetDebugInit() { throw_if_asked(); }

// ---- communicators ----

ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId, int rank) {
  return make_comm(comm, nranks, rank, true);
}

ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId, int rank, ncclConfig_t* config) {
  return make_comm(comm, nranks, rank, config == nullptr || config->blocking != 0);
}

ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  throw_if_asked();
  {
    std::lock_guard lock(g_mutex);
    std::erase(g_made_in_group, comm);
  }
  delete comm;
  return ncclSuccess;
}

ncclResult_t pncclCommRevoke(ncclComm_t comm, int) {
  throw_if_asked();
  return comm == nullptr ? ncclInvalidArgument : ncclSuccess;
}

ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  throw_if_asked();
  if (comm == nullptr || error == nullptr) return ncclInvalidArgument;
  *error = comm->async_error;
  return ncclSuccess;
}

}  // extern "C"

namespace {
// As NCCL's ncclCommEnsureReady (src/init.cc): a query on a non-blocking communicator first asks
// the *public* ncclCommGetAsyncError whether it is ready, so an interposer (libbraid.so under
// LD_PRELOAD) gets that call too, from inside its own call into NCCL.
ncclResult_t ensure_ready(ncclComm_t comm) {
  if (comm->blocking) return ncclSuccess;
  ncclResult_t async = ncclSuccess;
  const ncclResult_t r = ncclCommGetAsyncError(comm, &async);
  if (r != ncclSuccess) return r;
  return async == ncclInProgress ? ncclInvalidArgument : async;
}
}  // namespace

extern "C" {

ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  throw_if_asked();
  if (const ncclResult_t r = ensure_ready(comm); r != ncclSuccess) return r;
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  throw_if_asked();
  if (const ncclResult_t r = ensure_ready(comm); r != ncclSuccess) return r;
  *device = comm->initialised ? comm->device : 0;
  return ncclSuccess;
}

ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  throw_if_asked();
  if (const ncclResult_t r = ensure_ready(comm); r != ncclSuccess) return r;
  *rank = comm->rank;
  return ncclSuccess;
}

// ---- reduction operators: values handed out again once destroyed, as NCCL's free list does ----

ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void*, ncclDataType_t, ncclScalarResidence_t, ncclComm_t comm) {
  throw_if_asked();
  if (op == nullptr || comm == nullptr) return ncclInvalidArgument;
  size_t slot = 0;
  while (slot < comm->op_slot_live.size() && comm->op_slot_live[slot]) ++slot;
  if (slot == comm->op_slot_live.size()) comm->op_slot_live.push_back(false);
  comm->op_slot_live[slot] = true;
  *op = static_cast<ncclRedOp_t>(op_value(comm, static_cast<int>(slot)));
  return ncclSuccess;
}

ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  throw_if_asked();
  if (comm == nullptr) return ncclInvalidArgument;
  const int slot = static_cast<int>(op) - op_value(comm, 0);
  if (slot < 0 || slot >= static_cast<int>(comm->op_slot_live.size()) || !comm->op_slot_live[slot])
    return ncclInvalidArgument;
  comm->op_slot_live[slot] = false;
  return ncclSuccess;
}

// ---- collectives and send/recv: recorded ----

ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                         int root, ncclComm_t comm, cudaStream_t stream) {
  return record("Reduce", sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  return record("Bcast", buff, buff, count, datatype, ncclSum, root, comm, stream);
}

ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                            ncclComm_t comm, cudaStream_t stream) {
  return record("Broadcast", sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                            ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return record("AllReduce", sendbuff, recvbuff, count, datatype, op, 0, comm, stream);
}

ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return record("ReduceScatter", sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream);
}

ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream) {
  return record("AllGather", sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm, stream);
}

ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  return record("AlltoAll", sendbuff, recvbuff, count, datatype, ncclSum, 0, comm, stream);
}

ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream) {
  return record("Gather", sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                          ncclComm_t comm, cudaStream_t stream) {
  return record("Scatter", sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream) {
  return record("Send", sendbuff, nullptr, count, datatype, ncclSum, peer, comm, stream);
}

ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream) {
  return record("Recv", nullptr, recvbuff, count, datatype, ncclSum, peer, comm, stream);
}

// ---- groups ----

ncclResult_t pncclGroupStart() {
  throw_if_asked();
  std::lock_guard lock(g_mutex);
  ++g_group_depth;
  return ncclSuccess;
}

ncclResult_t pncclGroupEnd() {
  throw_if_asked();
  std::lock_guard lock(g_mutex);
  if (g_group_depth == 0) return ncclInvalidUsage;
  if (--g_group_depth == 0) {
    for (ncclComm* made : g_made_in_group) made->initialised = true;
    g_made_in_group.clear();
  }
  return ncclSuccess;
}

}  // extern "C"
