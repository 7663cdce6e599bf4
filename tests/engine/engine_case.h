// One collective call on the engine's Communicator, as a rank runs it, checked against the shared
// reference (tests/support).
#pragma once

#include <algorithm>
#include <vector>

#include "engine/communicator.h"
#include "reduce/reduce.h"
#include "support/case.h"
#include "support/check.h"
#include "support/reference.h"

namespace braid::test {

// Runs `k` on this rank and checks the output; *hash gets a hash of the output bytes (0 when
// the rank has no output). Returns InternalError with a precise text on a wrong element.
inline Result run_case(engine::Communicator& comm, const Case& k, uint64_t* hash) {
  const int rank = comm.rank(), ranks = comm.nranks();
  const size_t es = datatype_size(k.type);
  const size_t n = k.count;
  const size_t in_elems = k.input_elements(ranks);
  const size_t out_elems = k.output_elements(ranks);

  std::vector<unsigned char> send_store, recv_store;
  const size_t slack = 64;
  if (k.in_place) {
    recv_store.assign(std::max(in_elems, out_elems) * es + slack, 0x5A);
  } else {
    send_store.assign(in_elems * es + slack, 0x33);
    recv_store.assign(out_elems * es + slack, 0x5A);
  }
  const Buffers b = place(k, rank, k.in_place ? nullptr : send_store.data() + k.offset, recv_store.data() + k.offset);
  if (b.send != nullptr)
    for (size_t j = 0; j < in_elems; ++j) write_input(k.type, k.value_op(), rank, j, b.send + j * es);

  const reduce::OpScalar scalar = reduce::OpScalar::of(k.type, premul_scalar(k.type, rank));
  const reduce::OpScalar* sp = k.op == RedOp::PreMulSum ? &scalar : nullptr;
  // What the receive buffer held before the call: a ranged call must leave the rest as it was.
  std::vector<unsigned char> before;
  if (k.ranged() && b.recv != nullptr) before.assign(b.recv, b.recv + out_elems * es);
  Result r = Result::Success;
  if (k.ranged()) {
    r = comm.collective_range(k.collective, b.send, b.recv, n, k.type, k.op, k.root, sp,
                              engine::BlockRange{k.range_begin, k.range_count});
  } else {
    switch (k.collective) {
      case Collective::AllReduce: r = comm.all_reduce(b.send, b.recv, n, k.type, k.op, sp); break;
      case Collective::AllGather: r = comm.all_gather(b.send, b.recv, n, k.type); break;
      case Collective::ReduceScatter: r = comm.reduce_scatter(b.send, b.recv, n, k.type, k.op, sp); break;
      case Collective::Broadcast: r = comm.broadcast(b.send, b.recv, n, k.type, k.root); break;
      case Collective::Reduce: r = comm.reduce(b.send, b.recv, n, k.type, k.op, k.root, sp); break;
      case Collective::AllToAll: r = comm.all_to_all(b.send, b.recv, n, k.type); break;
    }
  }
  if (r != Result::Success) return r;
  *hash = 0;
  if (!k.has_output(rank)) return Result::Success;

  for (size_t o = 0; o < out_elems; ++o) {
    if (!k.in_range(o % n)) {
      if (std::memcmp(b.recv + o * es, before.data() + o * es, es) != 0)
        return fail(Result::InternalError, "%s: rank %d element %zu lies outside the range but changed",
                    k.text().c_str(), rank, o);
      continue;
    }
    // The engine's tests have always allowed a float Avg its rounding bound at every rank count.
    const std::string error = check_element(k, rank, ranks, o, b.recv + o * es, AvgCheck::BoundedAtEveryCount);
    if (!error.empty()) return fail(Result::InternalError, "%s", error.c_str());
  }
  if (k.ranged()) {
    // Only the range is the collective's result (outside it, each rank's buffer is its own).
    std::vector<unsigned char> moved;
    for (size_t o = 0; o < out_elems; ++o)
      if (k.in_range(o % n)) moved.insert(moved.end(), b.recv + o * es, b.recv + (o + 1) * es);
    *hash = fnv1a(moved.data(), moved.size());
  } else {
    *hash = fnv1a(b.recv, out_elems * es);
  }
  return Result::Success;
}

}  // namespace braid::test
