// The config of the NCCL communicator braid's progress thread splits from the application's
// (Orchestrator::make_lane_comm). NCCL gives a split with a config its own defaults for every field
// left unset, so that communicator would drop what the application asked of its own (CTAs, CGA
// cluster size, network, traffic class, ...): it gets the application's config instead, where
// braid knows it (shim: every init, split and shrink that passed one, and splits and shrinks of
// those), with braid's needs over it.
#pragma once

#include <nccl.h>

#include "multipath/nccl_config_copy.h"

namespace braid::multipath {

// The name the progress thread's communicator goes by in NCCL's logs (static: NCCL may keep it).
inline constexpr const char* kLaneCommName = "braid progress lane";

// `application` (null: NCCL's defaults) with: blocking, since braid's thread waits for the split;
// no resource sharing with the parent, whose calls run at the same time from another thread and
// stream; braid's name. The strings point into `application`, which must outlive the split.
ncclConfig_t lane_comm_config(const NcclConfigCopy* application);

}  // namespace braid::multipath
