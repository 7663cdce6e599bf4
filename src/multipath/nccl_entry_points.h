// The NCCL entry points the orchestrator drives its NVLink share with. The drop-in fills them
// from the real NCCL it forwards to (never its own exports), braid-bench from the NCCL it links.
#pragma once

#include <nccl.h>

#include "api/nccl_calls.h"

namespace braid::multipath {

struct NcclEntryPoints {
  api::NcclCalls bootstrap;  // count, rank, device, broadcast, error strings
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclReduce) reduce = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclReduceScatter) reduce_scatter = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;

  bool complete() const {
    return bootstrap.comm_count && bootstrap.comm_user_rank && bootstrap.comm_cu_device &&
           bootstrap.broadcast && all_reduce && reduce && all_gather && reduce_scatter && send && recv && group_start && group_end;
  }
};

}  // namespace braid::multipath
