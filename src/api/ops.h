// Turning an ncclRedOp_t of the C API into the engine's operator (and PreMulSum's scalar).
#pragma once

#include "api/comm.h"

namespace braid::api {

// Built-in ops map by value; PreMulSum ops of `comm` must match `type`. A device-resident
// scalar is read after the work already on `stream`.
Result resolve_op(braidComm* comm, ncclRedOp_t op, ncclDataType_t type, cudaStream_t stream,
                  RedOp* out, reduce::OpScalar* scalar);

}  // namespace braid::api
