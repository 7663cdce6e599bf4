// One collective call checked against the independent reference (reference.h), as a rank runs it.
#pragma once

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "dsl/program.h"
#include "engine/communicator.h"
#include "reduce/reduce.h"
#include "reference.h"

namespace braid::test {

struct Case {
  Collective collective = Collective::AllReduce;
  DataType type = DataType::Float32;
  RedOp op = RedOp::Sum;
  size_t count = 1;
  bool in_place = false;
  int root = 0;
  size_t offset = 0;  // bytes the buffers are shifted from malloc's alignment

  std::string text() const {
    char s[200];
    std::snprintf(s, sizeof(s), "%s %s %s count=%zu %s root=%d offset=%zu",
                  std::string(collective_name(collective)).c_str(),
                  std::string(datatype_name(type)).c_str(), std::string(redop_name(op)).c_str(),
                  count, in_place ? "in-place" : "out-of-place", root, offset);
    return s;
  }
};

inline uint64_t fnv1a(const unsigned char* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// Runs `k` on this rank and checks the output; *hash gets a hash of the output bytes (0 when
// the rank has no output). Returns InternalError with a precise text on a wrong element.
inline Result run_case(engine::Communicator& comm, const Case& k, uint64_t* hash) {
  const int rank = comm.rank(), ranks = comm.nranks();
  const size_t es = datatype_size(k.type);
  const size_t n = k.count;
  const size_t in_elems = static_cast<size_t>(dsl::input_blocks(k.collective, ranks)) * n;
  const size_t out_elems = static_cast<size_t>(dsl::output_blocks(k.collective, ranks)) * n;
  const RedOp value_op = collective_reduces(k.collective) ? k.op : RedOp::Sum;
  const bool has_output = !(k.collective == Collective::Reduce && rank != k.root);

  std::vector<unsigned char> send_store, recv_store;
  unsigned char* send = nullptr;
  unsigned char* recv = nullptr;
  const size_t slack = 64;
  if (k.in_place) {
    const size_t elems = std::max(in_elems, out_elems);
    recv_store.assign(elems * es + slack, 0x5A);
    unsigned char* base = recv_store.data() + k.offset;
    switch (k.collective) {
      case Collective::AllGather:
        recv = base;
        send = base + rank * n * es;
        break;
      case Collective::ReduceScatter:
        send = base;
        recv = base + rank * n * es;
        break;
      default:
        send = recv = base;
    }
  } else {
    send_store.assign(in_elems * es + slack, 0x33);
    recv_store.assign(out_elems * es + slack, 0x5A);
    send = send_store.data() + k.offset;
    recv = recv_store.data() + k.offset;
    // NCCL ignores these buffers: prove it by passing null.
    if (k.collective == Collective::Broadcast && rank != k.root) send = nullptr;
    if (k.collective == Collective::Reduce && rank != k.root) recv = nullptr;
  }
  if (send != nullptr)
    for (size_t j = 0; j < in_elems; ++j) input_element(k.type, value_op, rank, j, send + j * es);

  const reduce::OpScalar scalar = reduce::OpScalar::of(k.type, premul_value(k.type));
  const reduce::OpScalar* sp = k.op == RedOp::PreMulSum ? &scalar : nullptr;
  Result r = Result::Success;
  switch (k.collective) {
    case Collective::AllReduce: r = comm.all_reduce(send, recv, n, k.type, k.op, sp); break;
    case Collective::AllGather: r = comm.all_gather(send, recv, n, k.type); break;
    case Collective::ReduceScatter: r = comm.reduce_scatter(send, recv, n, k.type, k.op, sp); break;
    case Collective::Broadcast: r = comm.broadcast(send, recv, n, k.type, k.root); break;
    case Collective::Reduce: r = comm.reduce(send, recv, n, k.type, k.op, k.root, sp); break;
    case Collective::AllToAll: r = comm.all_to_all(send, recv, n, k.type); break;
  }
  if (r != Result::Success) return r;
  *hash = 0;
  if (!has_output) return Result::Success;

  std::vector<unsigned char> element(8);
  std::vector<Value> values(ranks);
  auto input_value = [&](int q, size_t j) {
    input_element(k.type, value_op, q, j, element.data());
    return load(k.type, element.data());
  };
  for (size_t o = 0; o < out_elems; ++o) {
    const unsigned char* got = recv + o * es;
    bool ok = true;
    if (collective_reduces(k.collective)) {
      const size_t j = k.collective == Collective::ReduceScatter ? rank * n + o : o;
      for (int q = 0; q < ranks; ++q) values[q] = input_value(q, j);
      const Expected e = combine(k.type, k.op, ranks, values);
      ok = matches(k.type, e, got);
      if (!ok)
        return fail(Result::InternalError,
                    "%s: rank %d element %zu: got %.9g (bits %" PRIx64 "), expected %.9g (bits %" PRIx64 ", tolerance %g)",
                    k.text().c_str(), rank, o, load(k.type, got).f, load(k.type, got).i, e.f,
                    e.bits, e.tolerance);
    } else {
      int q = 0;
      size_t j = o;
      switch (k.collective) {
        case Collective::AllGather: q = static_cast<int>(o / n); j = o % n; break;
        case Collective::Broadcast: q = k.root; break;
        case Collective::AllToAll: q = static_cast<int>(o / n); j = rank * n + o % n; break;
        default: break;
      }
      input_element(k.type, value_op, q, j, element.data());
      if (std::memcmp(element.data(), got, es) != 0)
        return fail(Result::InternalError, "%s: rank %d element %zu differs from rank %d's input %zu",
                    k.text().c_str(), rank, o, q, j);
    }
  }
  *hash = fnv1a(recv, out_elems * es);
  return Result::Success;
}

// Whether every rank's output of `k` must be bitwise the same.
inline bool outputs_identical(const Case& k) {
  return k.collective == Collective::AllReduce || k.collective == Collective::AllGather ||
         k.collective == Collective::Broadcast;
}

}  // namespace braid::test
