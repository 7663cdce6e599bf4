// One way a share of a split collective travels. The orchestrator cuts each call into ranges of
// elements of every block and hands each range to a path: NCCL or braid's NVLink copy-engine path
// today (braid's PCIe share it drives itself, through engine::Communicator's plan, issue and
// complete); NIC rails and GPU relays join by implementing this. NCCL's `struct ncclTransport` and
// gloo's `transport::Pair` play the same part there.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "common/result.h"
#include "common/types.h"
#include "multipath/split_call.h"
#include "reduce/reduce.h"

namespace braid::multipath {

// Elements [begin, begin + count) of every block of a call (NCCL's per-rank blocks).
struct ShareRange {
  size_t begin = 0;
  size_t count = 0;
};

// A split call with its operator resolved (the application may destroy a PreMulSum operator as
// soon as its call returns): `op` is the built-in operator or PreMulSum with `scalar` its host value.
struct ShareCall {
  nccl::Call call;
  RedOp op = RedOp::Sum;
  reduce::OpScalar scalar;
};

class SharePath {
 public:
  virtual ~SharePath() = default;
  // For logs and traces: "nccl", "copy engines".
  virtual const char* name() const = 0;
  // Whether it can carry a share of this collective with this operator at all.
  virtual bool carries(const ShareCall& share) const = 0;
  // Queues `range` of every block on `stream`, after the work already there; what is queued on
  // `stream` afterwards sees the share done. *carried false: nothing was queued (a buffer it cannot
  // reach), on every rank alike, and the caller gives the range to another path. Every rank calls
  // it at the same point with the same range.
  virtual Result enqueue(const ShareCall& share, ShareRange range, cudaStream_t stream, bool* carried) = 0;
};

}  // namespace braid::multipath
