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

// A call braid holds back inside a group: what it is, and the same call to NCCL alone.
template <typename Call>
struct Held {
  ncclComm_t comm = nullptr;
  Call call;
  cudaStream_t stream = nullptr;
  std::function<ncclResult_t()> to_nccl;
};
using HeldCollective = Held<nccl::Call>;

// Each held call to NCCL, in order, and the list emptied; the first error.
template <typename Call>
ncclResult_t each_to_nccl(std::vector<Held<Call>>& held) {
  ncclResult_t first = ncclSuccess;
  for (Held<Call>& h : held) {
    const ncclResult_t r = h.to_nccl();
    if (first == ncclSuccess && r != ncclSuccess) first = r;
  }
  held.clear();
  return first;
}

// The calling thread's held collectives (of its open outermost group).
std::vector<HeldCollective>& this_thread_held();

// Hands every held collective to NCCL (inside the still open group), in order; the first error.
ncclResult_t hand_held_to_nccl(std::vector<HeldCollective>& held);

// After the outermost ncclGroupEnd: splits each communicator's calls on a thread of its own
// (the calling thread takes the first), in the order they were made; the first error.
ncclResult_t split_held(std::vector<HeldCollective> held);

}  // namespace braid::shim
