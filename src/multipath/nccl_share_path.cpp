#include "multipath/nccl_share_path.h"

#include <string>

namespace braid::multipath {

namespace {
Result cuda_check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Result::Success;
  return fail(Result::UnhandledCudaError, "multipath: %s: %s", what, cudaGetErrorString(e));
}
}  // namespace

NcclSharePath::~NcclSharePath() {
  if (scratch_ != nullptr) cudaFree(scratch_);
}

Result NcclSharePath::check(ncclResult_t r, const char* what) const {
  if (r == ncclSuccess) return Result::Success;
  const char* text = nccl_.ncclGetErrorString != nullptr ? nccl_.ncclGetErrorString(r) : "";
  return fail(static_cast<Result>(r), "multipath: NCCL's share (%s) failed: %s", what, text);
}

Result NcclSharePath::enqueue(const ShareCall& share, ShareRange range, cudaStream_t stream, bool* carried) {
  *carried = false;
  const nccl::Call& call = share.call;
  if (range.begin == 0 && range.count == call.count) BRAID_TRY(whole(call, stream));
  else if (range.count > 0) BRAID_TRY(strided(call, range, stream));
  *carried = true;
  return Result::Success;
}

Result NcclSharePath::strided(const nccl::Call& call, ShareRange range, cudaStream_t s) {
  const size_t esize = datatype_size(static_cast<DataType>(call.type));
  const size_t block = call.count * esize, skip = range.begin * esize;
  const auto* send = static_cast<const unsigned char*>(call.send);
  auto* recv = static_cast<unsigned char*>(call.recv);
  switch (call.collective()) {
    case Collective::AllReduce:
    case Collective::Broadcast:
    case Collective::Reduce: {
      nccl::Call part = call;
      part.send = send + skip;
      part.recv = recv + skip;
      part.count = range.count;
      return whole(part, s);
    }
    case Collective::AllGather:
    case Collective::ReduceScatter:
      if (copy_based_) return strided_copied(call, range, s);
      break;
    default:
      return fail(Result::InternalError, "multipath: %s is not split", std::string(collective_name(call.collective())).c_str());
  }
  if (call.collective() == Collective::AllGather) {
    unsigned char* mine = recv + static_cast<size_t>(rank_) * block + skip;
    if (mine != send + skip)
      BRAID_TRY(cuda_check(cudaMemcpyAsync(mine, send + skip, range.count * esize, cudaMemcpyDeviceToDevice, s),
                           "cudaMemcpyAsync (own block)"));
  }
  BRAID_TRY(check(nccl_.ncclGroupStart(), "ncclGroupStart"));
  Result r = Result::Success;
  if (call.collective() == Collective::AllGather) {
    for (int p = 0; p < nranks_ && r == Result::Success; ++p) {
      if (p == rank_) continue;
      r = check(nccl_.ncclSend(send + skip, range.count, call.type, p, comm_, s), "ncclSend");
      if (r == Result::Success)
        r = check(nccl_.ncclRecv(recv + static_cast<size_t>(p) * block + skip, range.count, call.type, p, comm_, s),
                  "ncclRecv");
    }
  } else {
    for (int root = 0; root < nranks_ && r == Result::Success; ++root)
      r = check(nccl_.ncclReduce(send + static_cast<size_t>(root) * block + skip, recv + skip, range.count, call.type,
                                 call.op, root, comm_, s),
                "ncclReduce");
  }
  const Result end = check(nccl_.ncclGroupEnd(), "ncclGroupEnd");
  return r != Result::Success ? r : end;
}

// The range of every block packed in scratch, NCCL's own collective on it, and a strided copy
// between scratch and the caller's blocks.
Result NcclSharePath::strided_copied(const nccl::Call& call, ShareRange range, cudaStream_t s) {
  const size_t esize = datatype_size(static_cast<DataType>(call.type));
  const size_t part = range.count * esize, block = call.count * esize, skip = range.begin * esize;
  const auto n = static_cast<size_t>(nranks_);
  if (part * n > scratch_bytes_) {
    // cudaFree and cudaMalloc wait for the device: no earlier share still uses the old buffer.
    if (scratch_ != nullptr) cudaFree(scratch_);
    scratch_ = nullptr;
    scratch_bytes_ = 0;
    BRAID_TRY(cuda_check(cudaMalloc(&scratch_, part * n), "cudaMalloc (NCCL share scratch)"));
    scratch_bytes_ = part * n;
  }
  // One copy per block (a handful): a 2D copy's pitch is limited, a block may be gigabytes.
  auto* scratch = static_cast<unsigned char*>(scratch_);
  const auto* send = static_cast<const unsigned char*>(call.send);
  auto* recv = static_cast<unsigned char*>(call.recv);
  if (call.collective() == Collective::AllGather) {
    BRAID_TRY(check(nccl_.ncclAllGather(send + skip, scratch_, range.count, call.type, comm_, s), "ncclAllGather"));
    for (size_t r = 0; r < n; ++r)
      BRAID_TRY(cuda_check(cudaMemcpyAsync(recv + r * block + skip, scratch + r * part, part, cudaMemcpyDeviceToDevice, s),
                           "cudaMemcpyAsync (a gathered range into its block)"));
    return Result::Success;
  }
  for (size_t r = 0; r < n; ++r)
    BRAID_TRY(cuda_check(cudaMemcpyAsync(scratch + r * part, send + r * block + skip, part, cudaMemcpyDeviceToDevice, s),
                         "cudaMemcpyAsync (a block's range into scratch)"));
  return check(nccl_.ncclReduceScatter(scratch_, recv + skip, range.count, call.type, call.op, comm_, s),
               "ncclReduceScatter");
}

Result NcclSharePath::whole(const nccl::Call& call, cudaStream_t s) {
  const size_t n = call.count;
  switch (call.collective()) {
    case Collective::AllReduce:
      return check(nccl_.ncclAllReduce(call.send, call.recv, n, call.type, call.op, comm_, s), "ncclAllReduce");
    case Collective::AllGather:
      return check(nccl_.ncclAllGather(call.send, call.recv, n, call.type, comm_, s), "ncclAllGather");
    case Collective::ReduceScatter:
      return check(nccl_.ncclReduceScatter(call.send, call.recv, n, call.type, call.op, comm_, s), "ncclReduceScatter");
    case Collective::Broadcast:
      return check(nccl_.ncclBroadcast(call.send, call.recv, n, call.type, call.root, comm_, s), "ncclBroadcast");
    case Collective::Reduce:
      return check(nccl_.ncclReduce(call.send, call.recv, n, call.type, call.op, call.root, comm_, s), "ncclReduce");
    default:
      return fail(Result::InternalError, "multipath: %s is not split", std::string(collective_name(call.collective())).c_str());
  }
}

}  // namespace braid::multipath
