#include "multipath/split_call.h"

namespace braid::multipath {

namespace {

// The number of ranks' blocks the message holds.
size_t blocks(const SplitCall& call, int nranks) {
  const bool per_rank_blocks = call.collective == Collective::AllGather ||
                               call.collective == Collective::ReduceScatter ||
                               call.collective == Collective::AllToAll;
  return per_rank_blocks ? static_cast<size_t>(nranks) : 1;
}

}  // namespace

size_t message_bytes(const SplitCall& call, int nranks) {
  return call.count * datatype_size(static_cast<DataType>(call.type)) * blocks(call, nranks);
}

bool message_bytes_fit(const SplitCall& call, int nranks) {
  size_t bytes = 0;
  return !__builtin_mul_overflow(call.count, datatype_size(static_cast<DataType>(call.type)), &bytes) &&
         !__builtin_mul_overflow(bytes, blocks(call, nranks), &bytes);
}

}  // namespace braid::multipath
