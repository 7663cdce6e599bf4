// One collective call as the collective tests of every layer describe it (the engine's, the C
// API's, the drop-in's): what is called, on which element type and operator, how many elements,
// in place or not, the root, and how far the buffers are shifted from their allocation's
// alignment. Also the shapes that follow from it and the matrix of cases the GPU tests run.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "common/types.h"

namespace braid::test {

// Blocks of `count` elements in a rank's send and receive buffers (as NCCL counts them).
inline int input_blocks(Collective c, int ranks) {
  return c == Collective::ReduceScatter || c == Collective::AllToAll ? ranks : 1;
}
inline int output_blocks(Collective c, int ranks) {
  return c == Collective::AllGather || c == Collective::AllToAll ? ranks : 1;
}

struct Case {
  Collective collective = Collective::AllReduce;
  DataType type = DataType::Float32;
  RedOp op = RedOp::Sum;  // of the reducing collectives
  // Elements per block: a rank's buffers hold input_blocks and output_blocks of them.
  size_t count = 1;
  bool in_place = false;
  int root = 0;       // of Broadcast and Reduce
  size_t offset = 0;  // bytes the buffers are shifted from the allocation's alignment
  // The engine's tests: only elements [range_begin, range_begin + range_count) of every block move,
  // as in the PCIe share of a split call (range_count 0: the whole block).
  size_t range_begin = 0;
  size_t range_count = 0;
  bool ranged() const { return range_count != 0; }
  bool in_range(size_t element_of_block) const {
    return !ranged() || (element_of_block >= range_begin && element_of_block - range_begin < range_count);
  }

  std::string text() const {
    char s[200];
    const int n = std::snprintf(s, sizeof s, "%s %s %s count=%zu %s root=%d", std::string(collective_name(collective)).c_str(),
                                std::string(datatype_name(type)).c_str(), std::string(redop_name(op)).c_str(), count,
                                in_place ? "in-place" : "out-of-place", root);
    int m = n;
    if (offset != 0 && m > 0 && static_cast<size_t>(m) < sizeof s)
      m += std::snprintf(s + m, sizeof s - static_cast<size_t>(m), " offset=%zu", offset);
    if (ranged() && m > 0 && static_cast<size_t>(m) < sizeof s)
      std::snprintf(s + m, sizeof s - static_cast<size_t>(m), " elements %zu+%zu", range_begin, range_count);
    return s;
  }

  size_t input_elements(int ranks) const { return static_cast<size_t>(input_blocks(collective, ranks)) * count; }
  size_t output_elements(int ranks) const { return static_cast<size_t>(output_blocks(collective, ranks)) * count; }
  // The operator the inputs are chosen for: a copying collective's inputs are those of Sum.
  RedOp value_op() const { return collective_reduces(collective) ? op : RedOp::Sum; }
  // Only the root of a Reduce has a result.
  bool has_output(int rank) const { return !(collective == Collective::Reduce && rank != root); }
};

// Where `rank`'s send and receive buffers of `k` lie, given its two buffers (already shifted by
// k.offset). In place there is one buffer, `recv`: AllGather's input is the rank's block of it,
// ReduceScatter's output the rank's block of it. Out of place, the buffers NCCL ignores (a
// Broadcast's send off the root, a Reduce's receive off the root) are null, to prove they are.
struct Buffers {
  unsigned char* send = nullptr;
  unsigned char* recv = nullptr;
};
inline Buffers place(const Case& k, int rank, unsigned char* send, unsigned char* recv) {
  const size_t block = static_cast<size_t>(rank) * k.count * datatype_size(k.type);
  if (k.in_place) {
    if (k.collective == Collective::AllGather) return {recv + block, recv};
    if (k.collective == Collective::ReduceScatter) return {recv, recv + block};
    return {recv, recv};
  }
  if (k.collective == Collective::Broadcast && rank != k.root) send = nullptr;
  if (k.collective == Collective::Reduce && rank != k.root) recv = nullptr;
  return {send, recv};
}

// Results every rank must hold bit for bit.
inline bool outputs_identical(const Case& k) {
  return k.collective == Collective::AllReduce || k.collective == Collective::AllGather ||
         k.collective == Collective::Broadcast;
}

// Every collective x dtype x op (reducing ones) x count x in/out of place, the root rotating.
inline std::vector<Case> full_matrix(int ranks, const std::vector<size_t>& counts) {
  std::vector<Case> cases;
  int variant = 0;
  for (Collective c : all_collectives())
    for (DataType t : all_datatypes()) {
      std::vector<RedOp> ops{RedOp::Sum};
      if (collective_reduces(c)) ops.assign(all_redops().begin(), all_redops().end());
      for (RedOp op : ops)
        for (size_t count : counts)
          for (bool in_place : {false, true}) cases.push_back({c, t, op, count, in_place, variant++ % ranks});
    }
  return cases;
}

}  // namespace braid::test
