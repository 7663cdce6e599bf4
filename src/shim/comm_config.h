// Whether NCCL makes a communicator blocking, as braid records it (CommState::blocking): braid
// does not split on a non-blocking one.
#pragma once

#include <nccl.h>

#include "shim/comm_table.h"

namespace braid::shim {

// Whether NCCL makes the communicator blocking, as its envConfigOverride (src/init.cc, 2.28) decides:
// NCCL_COMM_BLOCKING (`env_blocking`, null when unset; read after NCCL's call, which has put its
// config files' values into the environment) at 0 or 1 wins over any config; then the
// call's config where it sets `blocking`; then, for a split or shrink without a config, the
// parent's (`parent`: its recorded state, if braid knows it); else NCCL's default, blocking.
bool made_blocking(const ncclConfig_t* given, const CommState* parent, const char* env_blocking);

}  // namespace braid::shim
