// What a braidComm_t points to: the CUDA backend of this rank's device, the engine's
// communicator that drives it, the PreMulSum operators made on it and its last error.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "common/result.h"
#include "cuda/cuda_backend.h"
#include "engine/communicator.h"
#include "reduce/reduce.h"

// A PreMulSum operator created by braidRedOpCreatePreMulSum.
struct BraidPreMulSumOp {
  bool live = false;
  braid::DataType type = braid::DataType::Float32;
  bool on_device = false;           // ncclScalarDevice: read `device_scalar` per collective
  const void* device_scalar = nullptr;
  braid::reduce::OpScalar host_scalar;  // ncclScalarHostImmediate: read at creation
};

struct braidComm {
  int device = 0;
  int rank = 0;
  int nranks = 1;
  std::unique_ptr<braid::cuda::CudaBackend> backend;
  std::unique_ptr<braid::engine::Communicator> engine;
  // Dynamic ops: the ncclRedOp_t value ncclNumOps + i names ops[i] (as NCCL numbers them).
  std::vector<BraidPreMulSumOp> ops;
  std::mutex mutex;  // ops and last_error: a comm may be queried from another thread
  std::string last_error;
};

namespace braid::api {

// Converts for the C boundary (values are equal by design; static_asserts check it).
inline ncclResult_t to_nccl(Result r) { return static_cast<ncclResult_t>(r); }

// Records the thread's last error text on `comm` (when given) and converts the result.
ncclResult_t finish(braidComm* comm, Result r);

// This machine's topology (discovered once per process, or BRAID_TOPO_FILE's).
Result machine_topology(topo::Topology* out);

}  // namespace braid::api
