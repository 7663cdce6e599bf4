// How nccl-tests sizes a case: from the byte size of a row to the element counts each rank
// sends and receives, the in-place offsets, and the algorithm/bus bandwidth of a timing.
#pragma once

#include <cstddef>
#include <string>

#include "common/types.h"

namespace braid::bench {

struct Shape {
  size_t param_count = 0;   // the count argument of the call (printed as "count")
  size_t send_count = 0;    // elements in the send buffer
  size_t recv_count = 0;    // elements in the receive buffer
  size_t send_inplace_offset = 0;  // in-place: send = recv + offset * rank (elements)
  size_t recv_inplace_offset = 0;  // in-place: recv = recv + offset * rank (elements)
  size_t row_bytes = 0;     // printed "size": max(send, recv) bytes
};

// nccl-tests' GetCollByteCount for `size` bytes of `type` over `nranks`.
Shape shape_of(Collective c, size_t size, DataType type, int nranks);

// nccl-tests' GetBw: algorithm bandwidth (GB/s, 1e9); the bus bandwidth factor is common/types.h's.
double algbw_gbps(Collective c, const Shape& s, DataType type, int nranks, double seconds);
using braid::busbw_factor;

// "all_reduce", ... as nccl-tests' binaries are named; and back.
std::string bench_name(Collective c);
bool parse_bench_name(const std::string& text, Collective* out);

}  // namespace braid::bench
