// The real NCCL the drop-in forwards to, found once per process.
// braid calls NCCL's `pnccl*` aliases, which NCCL exports for every API: calling them never
// re-enters braid's own `nccl*` exports, however the application's symbols are bound.
#pragma once

#include <string>

#include "shim/nccl_functions.h"

namespace braid::shim {

struct RealNccl {
  bool found = false;
  std::string path;     // the file the entry points live in
  std::string how;      // how it was found, for the log
  int version = 0;      // its ncclGetVersion
  std::string failure;  // when not found: every place tried and why it failed

  // One slot per export: the real `p` entry point, or null where this NCCL lacks it.
  // (ncclResetDebugInit is deprecated in nccl.h, yet still NCCL's API: it is forwarded too.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#define BRAID_SHIM_SLOT(name) decltype(&::p##name) name = nullptr;
  BRAID_SHIM_NCCL_FUNCTIONS(BRAID_SHIM_SLOT)
#undef BRAID_SHIM_SLOT
#pragma GCC diagnostic pop
};

// Resolves on first use (thread-safe) in this order: BRAID_NCCL_LIBRARY (dlopen'ed privately,
// no fallback when set), the libnccl.so.2 the application already loaded, libnccl.so.2 from the
// loader's search path. A library whose entry points are braid's own is refused.
const RealNccl& real_nccl();

}  // namespace braid::shim
