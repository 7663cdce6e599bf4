// NCCL's checks of a collective's or send/recv's arguments, made by braid before it splits, holds
// or forwards the call, with NCCL's return codes and NCCL's words for ncclGetLastError.
//
// Mirrors NCCL 2.28.9 (tag v2.28.9-1, the version nccl.h declares): src/enqueue.cc
// ncclEnqueueCheck (CommCheck, then the revoked communicator, ncclCommEnsureReady, ArgsCheck),
// src/misc/argcheck.cc ArgsCheck and CommCheck, and src/enqueue.cc taskAppend/hostToDevRedOp (a
// PreMulSum operator used with another data type). NCCL 2.28.9 checks no buffer pointers and no
// sizes unless NCCL_CHECK_POINTERS=1, and then through cudaPointerGetAttributes: those checks, and
// the others that need the GPU, stay NCCL's; braid only declines to split calls that would fail
// them (braid_part.h), so NCCL alone answers such calls as it does without braid.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <optional>
#include <string>

#include "nccl/call.h"
#include "shim/comm_table.h"

namespace braid::shim {

// The calls NCCL checks through ncclEnqueueCheck: every nccl::Call.
using nccl::Operation;
using nccl::operation_name;

struct ArgumentError {
  ncclResult_t result = ncclInvalidArgument;
  std::string text;  // NCCL's words
};

// NCCL's refusal of `call`, or nullopt when NCCL would accept it or when only NCCL can tell: a
// communicator braid does not know (or whose size it does not know yet), a non-blocking one (NCCL
// also records the error as the communicator's asynchronous error), or one with an asynchronous
// error already (NCCL returns that before looking at the arguments). `state`: the communicator's
// entry in the comm table, as the caller found it.
std::optional<ArgumentError> refusal(const nccl::Call& call, const std::optional<CommState>& state);

}  // namespace braid::shim
