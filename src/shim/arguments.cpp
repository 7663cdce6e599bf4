#include "shim/arguments.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "shim/comm_table.h"
#include "shim/braid_part.h"
#include "nccl/real.h"

namespace braid::shim {

namespace {

[[gnu::format(printf, 2, 3)]] ArgumentError error(ncclResult_t result, const char* fmt, ...) {
  char text[256];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  return {result, text};
}

bool point_to_point(Operation operation) { return operation == Operation::Send || operation == Operation::Recv; }

// ArgsCheck, in its order, then what taskAppend refuses before it queues anything.
std::optional<ArgumentError> args_refusal(const nccl::Call& call, int nranks) {
  const char* name = operation_name(call.operation);
  // A send/recv's peer is NCCL's root, and so is the text.
  if (call.root < 0 || call.root >= nranks)
    return error(ncclInvalidArgument, "%s : invalid root %d (root should be in the 0..%d range)", name, call.root,
                 nranks);
  const int type = static_cast<int>(call.type);
  if (type < 0 || type >= ncclNumTypes) return error(ncclInvalidArgument, "%s : invalid type %d", name, type);
  const int op = static_cast<int>(call.op);
  if (op < 0) return error(ncclInvalidArgument, "%s : invalid reduction operation %d", name, op);
  if (op < ncclNumOps) return std::nullopt;
  // Values from ncclNumOps on are operators made by ncclRedOpCreatePreMulSum: live ones of this
  // communicator only (a destroyed one is refused until NCCL hands its value out again).
  const std::optional<ncclDataType_t> made_for = live_premulsum_type(call.comm, call.op);
  if (!made_for)
    return error(ncclInvalidArgument, "%s : reduction operation %d unknown to this communicator", name, op);
  // taskAppend drops an empty collective before it looks at the operator's type; a send/recv's
  // operator is always ncclSum.
  if (point_to_point(call.operation) || call.count == 0) return std::nullopt;
  // With NCCL_CHECK_POINTERS=1, NCCL checks the buffers (on the GPU's side) before this: NCCL
  // answers, and braid never splits such a call (multipath::admit).
  static const bool nccl_checks_pointers = [] {
    const char* v = std::getenv("NCCL_CHECK_POINTERS");
    return v != nullptr && std::atoi(v) == 1;
  }();
  if (*made_for != call.type && nccl_checks_pointers) return std::nullopt;
  if (*made_for != call.type)
    return error(ncclInvalidArgument,
                 "Data type supplied to user-created ncclRedOp_t does not match type given to reduction operation");
  return std::nullopt;
}

// ncclCommEnsureReady returns a blocking communicator's asynchronous error before ArgsCheck runs;
// asked only when the arguments are wrong, so valid calls pay nothing for it.
bool nccl_answers_first(ncclComm_t comm) {
  const nccl::RealNccl& real = nccl::real_nccl();
  if (!real.found || real.ncclCommGetAsyncError == nullptr) return false;
  ncclResult_t async = ncclSuccess;
  if (real.ncclCommGetAsyncError(comm, &async) != ncclSuccess) return true;
  return async != ncclSuccess;
}

}  // namespace

std::optional<ArgumentError> refusal(const nccl::Call& call, const std::optional<CommState>& state) {
  const char* name = operation_name(call.operation);
  if (call.comm == nullptr) return error(ncclInvalidArgument, "%s : comm argument is NULL", name);
  if (!state || state->nranks < 1 || !state->blocking) return std::nullopt;
  if (state->revoked) return error(ncclInvalidUsage, "%s: communicator was revoked", name);
  std::optional<ArgumentError> refused = args_refusal(call, state->nranks);
  if (refused && nccl_answers_first(call.comm)) return std::nullopt;
  return refused;
}

}  // namespace braid::shim
