// Splitting inside NCCL groups (BRAID_SPLIT_GROUPS): one thread driving several GPUs issues one
// collective per communicator inside a group, and NCCL launches them all at the outermost
// ncclGroupEnd. braid's share of one rank blocks the host until its peers take part, so the
// calls cannot be split one after another on the calling thread. Instead they are held back
// while the group holds nothing else, and after the (then empty) NCCL group ends, each
// communicator's calls are split on a thread of its own, all at once. A group that gets anything
// else (send/recv, a collective braid would not split) hands the held calls to NCCL inside the
// group, in their order, and goes to NCCL alone.
#pragma once

#include <nccl.h>

#include <functional>
#include <vector>

#include "multipath/split_call.h"

namespace braid::shim {

struct HeldCollective {
  ncclComm_t comm = nullptr;
  multipath::SplitCall call;
  cudaStream_t stream = nullptr;
  std::function<ncclResult_t()> to_nccl;  // the same call to NCCL alone
};

// The calling thread's held collectives (of its open outermost group).
std::vector<HeldCollective>& this_thread_held();

// Hands every held collective to NCCL (inside the still open group), in order; the first error.
ncclResult_t hand_held_to_nccl(std::vector<HeldCollective>& held);

// After the outermost ncclGroupEnd: splits each communicator's calls on a thread of its own
// (the calling thread takes the first), in the order they were made; the first error.
ncclResult_t split_held(std::vector<HeldCollective> held);

}  // namespace braid::shim
