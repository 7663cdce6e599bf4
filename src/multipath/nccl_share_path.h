// NCCL as a path: a range of every block through the real NCCL's own calls, straight into the
// caller's buffers. One-block collectives (AllReduce, Broadcast, Reduce) call NCCL on the range.
// AllGather and ReduceScatter blocks are strided, which NCCL's own AllGather/ReduceScatter cannot
// address: point-to-point sends (AllGather) and one Reduce per block (ReduceScatter) land the range
// in place with no extra device copy; BRAID_SPLIT_NCCL_SHARE=copy runs NCCL's own collective on a
// packed scratch buffer instead, with a device copy per block. The whole call is NCCL's own call.
#pragma once

#include <nccl.h>

#include "api/from_nccl.h"
#include "multipath/share_path.h"

namespace braid::multipath {

class NcclSharePath final : public SharePath {
 public:
  NcclSharePath(ncclComm_t comm, const nccl::NcclCalls& nccl, int rank, int nranks, bool copy_based)
      : comm_(comm), nccl_(nccl), rank_(rank), nranks_(nranks), copy_based_(copy_based) {}
  ~NcclSharePath() override;
  NcclSharePath(const NcclSharePath&) = delete;
  NcclSharePath& operator=(const NcclSharePath&) = delete;

  const char* name() const override { return "nccl"; }
  bool carries(const ShareCall& share) const override { return splittable(share.call.collective()); }
  Result enqueue(const ShareCall& share, ShareRange range, cudaStream_t stream, bool* carried) override;

 private:
  Result whole(const nccl::Call& call, cudaStream_t s);
  Result strided(const nccl::Call& call, ShareRange range, cudaStream_t s);
  Result strided_copied(const nccl::Call& call, ShareRange range, cudaStream_t s);
  Result check(ncclResult_t r, const char* what) const;

  ncclComm_t comm_;
  nccl::NcclCalls nccl_;
  int rank_, nranks_;
  bool copy_based_;          // BRAID_SPLIT_NCCL_SHARE=copy
  void* scratch_ = nullptr;  // the packed ranges of the copy-based share
  size_t scratch_bytes_ = 0;
};

}  // namespace braid::multipath
