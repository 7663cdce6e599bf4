#include "multipath/split_call.h"

namespace braid::multipath {

size_t message_bytes(const SplitCall& call, int nranks) {
  const size_t bytes = call.count * datatype_size(static_cast<DataType>(call.type));
  const bool per_rank_blocks = call.collective == Collective::AllGather ||
                               call.collective == Collective::ReduceScatter ||
                               call.collective == Collective::AllToAll;
  return per_rank_blocks ? bytes * static_cast<size_t>(nranks) : bytes;
}

}  // namespace braid::multipath
