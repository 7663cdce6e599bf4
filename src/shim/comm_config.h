// The config NCCL makes a communicator with, as braid records it (CommState::config) so that the
// communicator braid's progress thread splits from it gets the same (multipath/lane_comm_config.h).
#pragma once

#include <nccl.h>

#include <memory>

#include "multipath/nccl_config_copy.h"
#include "shim/comm_table.h"

namespace braid::shim {

// `given` where the call passed one (copied: the application may free it and its strings); else,
// for a split or shrink, the parent's record (`parent`: its state, if braid knows it; NCCL copies
// the parent's config); else null (NCCL's defaults: ncclCommInitRank, ncclCommInitAll, or a null
// config).
std::shared_ptr<const multipath::NcclConfigCopy> config_to_record(const ncclConfig_t* given, const CommState* parent);

// Whether NCCL makes the communicator blocking, as its envConfigOverride (src/init.cc, 2.28) decides:
// NCCL_COMM_BLOCKING (`env_blocking`, null when unset; read after NCCL's call, which has put its
// config files' values into the environment) at 0 or 1 wins over any config; then the
// call's config where it sets `blocking`; then, for a split or shrink without a config, the
// parent's (`parent`: its recorded state, if braid knows it); else NCCL's default, blocking.
bool made_blocking(const ncclConfig_t* given, const CommState* parent, const char* env_blocking);

}  // namespace braid::shim
