#include "multipath/split_call.h"

namespace braid::multipath {

namespace {

// The number of ranks' blocks the message holds.
size_t blocks(const nccl::Call& call, int nranks) {
  const bool per_rank_blocks = call.collective() == Collective::AllGather ||
                               call.collective() == Collective::ReduceScatter ||
                               call.collective() == Collective::AllToAll;
  return per_rank_blocks ? static_cast<size_t>(nranks) : 1;
}

}  // namespace

size_t message_bytes(const nccl::Call& call, int nranks) {
  return call.count * datatype_size(static_cast<DataType>(call.type)) * blocks(call, nranks);
}

bool message_bytes_fit(const nccl::Call& call, int nranks) {
  size_t bytes = 0;
  return !__builtin_mul_overflow(call.count, datatype_size(static_cast<DataType>(call.type)), &bytes) &&
         !__builtin_mul_overflow(bytes, blocks(call, nranks), &bytes);
}

BuffersUsed buffers_used(const nccl::Call& call, int rank) {
  const bool at_root = rank == call.root;
  return {call.collective() != Collective::Broadcast || at_root, call.collective() != Collective::Reduce || at_root};
}

BufferBytes buffer_bytes(const nccl::Call& call, int nranks, int rank) {
  const size_t block = call.count * datatype_size(static_cast<DataType>(call.type));
  const size_t whole = message_bytes(call, nranks);
  const BuffersUsed used = buffers_used(call, rank);
  switch (call.collective()) {
    case Collective::AllGather: return {block, whole};
    case Collective::ReduceScatter: return {whole, block};
    case Collective::Broadcast:
    case Collective::Reduce: return {used.send ? block : 0, used.recv ? block : 0};
    default: return {whole, whole};
  }
}

}  // namespace braid::multipath
