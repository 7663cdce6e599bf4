// NCCL connects a communicator's algorithms and peers at their first use (NCCL_RUNTIME_CONNECT,
// on by default), and some of those steps wait for the device. A share braid's progress thread
// queues runs while the caller's stream already waits for that very thread: on the one-GPU rig
// AllGather's first send/recv there hung so. The calling thread therefore queues the first call of
// each collective and size class itself (docs/MULTIPATH.md, "NCCL's share on the progress thread").
#pragma once

#include <cstddef>
#include <set>
#include <utility>

#include "common/types.h"

namespace braid::multipath {

class FirstUses {
 public:
  // Whether this is the first share of `collective` in the size class of `bytes` (bytes of the same
  // bit width: NCCL picks its algorithm and protocol by size). Every rank asks at the same calls
  // with the same arguments, so every rank gets the same answers.
  bool first(Collective collective, size_t bytes);

 private:
  std::set<std::pair<int, int>> seen_;
};

}  // namespace braid::multipath
