#include "shape.h"

#include <algorithm>
#include <array>

namespace braid::bench {

namespace {
constexpr std::array<const char*, kNumCollectives> kNames = {
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall"};
}

Shape shape_of(Collective c, size_t size, DataType type, int nranks) {
  const size_t n = static_cast<size_t>(nranks);
  const size_t count = size / datatype_size(type);
  Shape s;
  switch (c) {
    case Collective::AllReduce:
    case Collective::Broadcast:
    case Collective::Reduce:
      s.param_count = s.send_count = s.recv_count = count;
      break;
    case Collective::AllGather:
      s.param_count = s.send_count = count / n;
      s.recv_count = count / n * n;
      s.send_inplace_offset = count / n;
      break;
    case Collective::ReduceScatter:
      s.param_count = s.recv_count = count / n;
      s.send_count = count / n * n;
      s.recv_inplace_offset = count / n;
      break;
    case Collective::AllToAll:
      s.param_count = count / n;
      s.send_count = s.recv_count = count / n * n;
      break;
  }
  s.row_bytes = std::max(s.send_count, s.recv_count) * datatype_size(type);
  return s;
}

double algbw_gbps(Collective c, const Shape& s, DataType type, int nranks, double seconds) {
  if (seconds <= 0) return 0;
  double bytes = static_cast<double>(s.param_count) * static_cast<double>(datatype_size(type));
  // all_gather, reduce_scatter and alltoall count the whole buffer of nranks blocks.
  if (c == Collective::AllGather || c == Collective::ReduceScatter || c == Collective::AllToAll)
    bytes *= nranks;
  return bytes / 1.0e9 / seconds;
}

std::string bench_name(Collective c) { return kNames[static_cast<size_t>(c)]; }

bool parse_bench_name(const std::string& text, Collective* out) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (text == kNames[i]) {
      *out = static_cast<Collective>(i);
      return true;
    }
  }
  // Also braid's own spelling ("allreduce").
  if (auto c = parse_collective(text)) {
    *out = *c;
    return true;
  }
  return false;
}

}  // namespace braid::bench
