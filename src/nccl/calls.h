// The one table of NCCL's entry points braid calls: a slot per function of nccl/functions.h,
// null where the NCCL at hand lacks it. The C API and braid-bench fill it from the NCCL they link
// (nccl/linked.h), the drop-in libbraid.so from the real NCCL it forwards to (nccl/real.h), so the
// layers that call NCCL (api, multipath, peer) link none themselves (two libnccl copies in one
// process would not share state).
#pragma once

#include "nccl/functions.h"

namespace braid::nccl {

struct NcclCalls {
  // (ncclResetDebugInit is deprecated in nccl.h, yet still NCCL's API.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#define BRAID_NCCL_SLOT(name) decltype(&::name) name = nullptr;
  BRAID_NCCL_FUNCTIONS(BRAID_NCCL_SLOT)
#undef BRAID_NCCL_SLOT
#pragma GCC diagnostic pop

  // What braid's bootstrap through NCCL needs (init_from_nccl, host_round_trip).
  bool can_bootstrap() const {
    return ncclCommCount && ncclCommUserRank && ncclCommCuDevice && ncclBroadcast;
  }
  // What a split call's NVLink share needs besides (multipath/).
  bool can_split() const {
    return can_bootstrap() && ncclAllReduce && ncclReduce && ncclAllGather && ncclReduceScatter && ncclSend && ncclRecv &&
           ncclGroupStart && ncclGroupEnd;
  }
};

}  // namespace braid::nccl
