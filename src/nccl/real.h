// The real NCCL the drop-in forwards to, found once per process.
// braid calls NCCL's `pnccl*` aliases, which NCCL exports for every API: calling them never
// re-enters braid's own `nccl*` exports, however the application's symbols are bound.
#pragma once

#include <string>

#include "nccl/calls.h"

namespace braid::nccl {

// The real NCCL's entry points (NcclCalls, every slot filled that it has) and where they came from.
struct RealNccl : NcclCalls {
  bool found = false;
  std::string path;     // the file the entry points live in
  std::string how;      // how it was found, for the log
  int version = 0;      // its ncclGetVersion
  std::string failure;  // when not found: every place tried and why it failed
};

// Resolves on first use (thread-safe) in this order: BRAID_NCCL_LIBRARY (dlopen'ed privately,
// no fallback when set), the libnccl.so.2 the application already loaded, libnccl.so.2 from the
// loader's search path. A library whose entry points are braid's own is refused.
const RealNccl& real_nccl();

}  // namespace braid::nccl
