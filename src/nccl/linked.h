// The table over the NCCL a program links (the C API's users, braid-bench, tests): the bootstrap's
// and the split calls' slots. In braid_nccl_linked, which links libnccl.
#pragma once

#include "nccl/calls.h"

namespace braid::nccl {

NcclCalls linked_calls();

}  // namespace braid::nccl
