// Hand-written correct programs for the text and validator tests: HyLink's Figure 3 and one or
// more simple, direct algorithms per collective at any rank count. Every dependency in them is
// needed (the mutation sweep drops each one and expects the validator to object).
#pragma once

#include <string>
#include <vector>

#include "dsl/program.h"

namespace braid::dsl::samples {

inline Location in(int i) { return {Buffer::Input, 0, i}; }
inline Location out(int i) { return {Buffer::Output, 0, i}; }
inline Location host(int i, int numa = 0) { return {Buffer::Host, numa, i}; }

class Builder {
 public:
  Builder(Collective c, int ranks, int chunks, int root = 0) {
    p_.collective = c;
    p_.ranks = ranks;
    p_.chunks = chunks;
    p_.root = root;
    p_.rank_instructions.resize(ranks);
  }
  Builder& add(int rank, Opcode op, Location src, Location dst, std::vector<Dependency> deps = {}) {
    p_.rank_instructions[rank].push_back({op, src, dst, std::move(deps)});
    return *this;
  }
  const Program& program() const { return p_; }

 private:
  Program p_;
};

// Figure 3 of the HyLink paper, with the same-rank D2H -> REDUCE order written as a dependency.
inline Program hylink_figure3() {
  Builder b(Collective::AllReduce, 2, 2);
  b.add(0, Opcode::D2H, in(0), host(0))
      .add(0, Opcode::D2H, in(1), host(1))
      .add(0, Opcode::Reduce, host(0), host(2), {{host(0), 1}, {host(2), 1}})
      .add(0, Opcode::H2D, host(2), out(0), {{host(2), 2}})
      .add(0, Opcode::H2D, host(1), out(1), {{host(1), 2}});
  b.add(1, Opcode::D2H, in(0), host(2))
      .add(1, Opcode::D2H, in(1), host(3))
      .add(1, Opcode::Reduce, host(3), host(1), {{host(3), 1}, {host(1), 1}})
      .add(1, Opcode::H2D, host(1), out(1), {{host(1), 2}})
      .add(1, Opcode::H2D, host(2), out(0), {{host(2), 2}});
  return b.program();
}

// Every rank stages each chunk; the chunk's owner slot accumulates the others' (CPU reduce);
// every rank reads the sum back. Correct in and out of place.
inline Program allreduce_host(int R, int C) {
  Builder b(Collective::AllReduce, R, C);
  auto slot = [&](int q, int p) { return host(q * C + p); };
  for (int q = 0; q < R; ++q)
    for (int p = 0; p < C; ++p) b.add(q, Opcode::D2H, in(p), slot(q, p));
  for (int q = 0; q < R; ++q)
    for (int p = 0; p < C; ++p) {
      const int owner = p % R;
      if (q != owner)
        b.add(q, Opcode::Reduce, slot(q, p), slot(owner, p), {{slot(q, p), 1}, {slot(owner, p), 1}});
    }
  for (int q = 0; q < R; ++q)
    for (int p = 0; p < C; ++p) b.add(q, Opcode::H2D, slot(p % R, p), out(p), {{slot(p % R, p), R}});
  return b.program();
}

// Out of place with the GPU reducing: copy own chunk to out[], accumulate every peer's staged
// chunk into it.
inline Program allreduce_device_copy(int R, int C) {
  Builder b(Collective::AllReduce, R, C);
  auto slot = [&](int q, int p) { return host(q * C + p, q % 2); };
  for (int q = 0; q < R; ++q)
    for (int p = 0; p < C; ++p) {
      if (R > 1) b.add(q, Opcode::D2H, in(p), slot(q, p));
      b.add(q, Opcode::Copy, in(p), out(p));
    }
  for (int q = 0; q < R; ++q)
    for (int p = 0; p < C; ++p)
      for (int peer = 0; peer < R; ++peer)
        if (peer != q) b.add(q, Opcode::Reduce, slot(peer, p), out(p), {{slot(peer, p), 1}, {out(p), 1}});
  return b.program();
}

// In place with the GPU reducing straight into the user's buffer (version 0 is the input); each
// accumulate waits for the rank's own D2H so the staged copy holds the unreduced input.
inline Program allreduce_device_inplace(int R, int C) {
  Builder b(Collective::AllReduce, R, C);
  auto slot = [&](int q, int p) { return host(q * C + p); };
  for (int q = 0; q < R && R > 1; ++q)
    for (int p = 0; p < C; ++p) b.add(q, Opcode::D2H, in(p), slot(q, p));
  for (int q = 0; q < R; ++q)
    for (int p = 0; p < C; ++p)
      for (int peer = 0; peer < R; ++peer)
        if (peer != q) b.add(q, Opcode::Reduce, slot(peer, p), out(p), {{slot(peer, p), 1}, {slot(q, p), 1}});
  return b.program();
}

// Two NUMA nodes: stage on node q%2, forward with H2H to the other node, read from there.
inline Program allgather_h2h(int R, int C) {
  Builder b(Collective::AllGather, R, C);
  for (int q = 0; q < R && R > 1; ++q)
    for (int p = 0; p < C; ++p) {
      const int i = q * C + p;
      b.add(q, Opcode::D2H, in(p), host(i, q % 2));
      b.add(q, Opcode::H2H, host(i, q % 2), host(i, 1 - q % 2), {{host(i, q % 2), 1}});
    }
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < R; ++q)
      for (int p = 0; p < C; ++p) {
        const int i = q * C + p;
        if (q == r) {
          b.add(r, Opcode::Copy, in(p), out(i));
        } else {
          b.add(r, Opcode::H2D, host(i, 1 - q % 2), out(i), {{host(i, 1 - q % 2), 1}});
        }
      }
  return b.program();
}

// Every rank reads every block back from host, its own too. Correct in and out of place (in
// place the own block is rewritten with the same data after the D2H read it).
inline Program allgather_all_h2d(int R, int C) {
  Builder b(Collective::AllGather, R, C);
  for (int q = 0; q < R; ++q)
    for (int p = 0; p < C; ++p) b.add(q, Opcode::D2H, in(p), host(q * C + p));
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < R * C; ++i) b.add(r, Opcode::H2D, host(i), out(i), {{host(i), 1}});
  return b.program();
}

// In place: the own block already sits in out[]; only the peers' blocks move.
inline Program allgather_inplace(int R, int C) {
  Builder b(Collective::AllGather, R, C);
  for (int q = 0; q < R && R > 1; ++q)
    for (int p = 0; p < C; ++p) b.add(q, Opcode::D2H, in(p), host(q * C + p));
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < R * C; ++i)
      if (i / C != r) b.add(r, Opcode::H2D, host(i), out(i), {{host(i), 1}});
  return b.program();
}

// Block b of every rank accumulates in rank b's slot; rank b reads it back. In and out of place.
inline Program reducescatter_host(int R, int C) {
  Builder b(Collective::ReduceScatter, R, C);
  auto slot = [&](int q, int blk, int p) { return host((q * R + blk) * C + p); };
  for (int q = 0; q < R; ++q)
    for (int blk = 0; blk < R; ++blk)
      for (int p = 0; p < C; ++p) b.add(q, Opcode::D2H, in(blk * C + p), slot(q, blk, p));
  for (int q = 0; q < R; ++q)
    for (int blk = 0; blk < R; ++blk)
      for (int p = 0; p < C; ++p)
        if (q != blk)
          b.add(q, Opcode::Reduce, slot(q, blk, p), slot(blk, blk, p),
                {{slot(q, blk, p), 1}, {slot(blk, blk, p), 1}});
  for (int q = 0; q < R; ++q)
    for (int p = 0; p < C; ++p) b.add(q, Opcode::H2D, slot(q, q, p), out(p), {{slot(q, q, p), R}});
  return b.program();
}

// Root stages, everyone else reads; out of place the root copies its own data.
inline Program broadcast(int R, int C, int root, bool in_place) {
  Builder b(Collective::Broadcast, R, C, root);
  for (int p = 0; p < C && R > 1; ++p) b.add(root, Opcode::D2H, in(p), host(p));
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < C; ++p) {
      if (r != root) {
        b.add(r, Opcode::H2D, host(p), out(p), {{host(p), 1}});
      } else if (!in_place) {
        b.add(r, Opcode::Copy, in(p), out(p));
      }
    }
  return b.program();
}

// Like allreduce_host, but the root's slot gathers the sum and only the root reads it.
inline Program reduce_host(int R, int C, int root) {
  Builder b(Collective::Reduce, R, C, root);
  auto slot = [&](int q, int p) { return host(q * C + p); };
  for (int q = 0; q < R; ++q)
    for (int p = 0; p < C; ++p) b.add(q, Opcode::D2H, in(p), slot(q, p));
  for (int q = 0; q < R; ++q)
    for (int p = 0; p < C; ++p)
      if (q != root) b.add(q, Opcode::Reduce, slot(q, p), slot(root, p), {{slot(q, p), 1}, {slot(root, p), 1}});
  for (int p = 0; p < C; ++p) b.add(root, Opcode::H2D, slot(root, p), out(p), {{slot(root, p), R}});
  return b.program();
}

// Reduce where the root's GPU adds the staged peers into out[] (out of place: COPY first).
inline Program reduce_device(int R, int C, int root) {
  Builder b(Collective::Reduce, R, C, root);
  for (int q = 0; q < R; ++q)
    if (q != root)
      for (int p = 0; p < C; ++p) b.add(q, Opcode::D2H, in(p), host(q * C + p));
  for (int p = 0; p < C; ++p) {
    b.add(root, Opcode::Copy, in(p), out(p));
    for (int q = 0; q < R; ++q)
      if (q != root) b.add(root, Opcode::Reduce, host(q * C + p), out(p), {{host(q * C + p), 1}, {out(p), 1}});
  }
  return b.program();
}

// Block d of rank q travels through slot (q, d); the own block is copied (out of place) or stays
// (in place). In place, writing out[q*C+p] of rank r overwrites in[q*C+p], which r itself must
// have staged first: the H2D also waits for that D2H.
inline Program alltoall(int R, int C, bool in_place) {
  Builder b(Collective::AllToAll, R, C);
  auto slot = [&](int q, int d, int p) { return host((q * R + d) * C + p); };
  for (int q = 0; q < R; ++q)
    for (int d = 0; d < R; ++d)
      for (int p = 0; p < C; ++p)
        if (d != q) b.add(q, Opcode::D2H, in(d * C + p), slot(q, d, p));
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < R; ++q)
      for (int p = 0; p < C; ++p) {
        if (q == r) {
          if (!in_place) b.add(r, Opcode::Copy, in(q * C + p), out(q * C + p));
          continue;
        }
        std::vector<Dependency> deps = {{slot(q, r, p), 1}};
        if (in_place) deps.push_back({slot(r, q, p), 1});
        b.add(r, Opcode::H2D, slot(q, r, p), out(q * C + p), deps);
      }
  return b.program();
}

struct Sample {
  std::string name;
  Program program;
  bool out_of_place = true;  // valid (and minimal) without aliasing
  bool in_place = true;      // valid with in-place aliasing
  // Minimal in place too (every instruction and dependency needed). Programs that copy a rank's
  // own data into its aliased buffer (a self-copy in place) are valid but not minimal in place:
  // deleting the self-copy leaves an equivalent program.
  bool minimal_in_place = true;
};

inline std::vector<Sample> all_samples() {
  std::vector<Sample> s;
  s.push_back({"hylink_figure3", hylink_figure3(), true, true});
  for (int R = 1; R <= 3; ++R) {
    const std::string n = "_r" + std::to_string(R);
    const int root = R - 1;
    s.push_back({"allreduce_host" + n, allreduce_host(R, 2), true, true, R > 1});
    s.push_back({"allreduce_device_copy" + n, allreduce_device_copy(R, 2), true, R == 1, false});
    s.push_back({"allreduce_device_inplace" + n, allreduce_device_inplace(R, 2), false, true});
    s.push_back({"allgather_h2h" + n, allgather_h2h(R, 2), true, true, false});
    s.push_back({"allgather_all_h2d" + n, allgather_all_h2d(R, 2), true, true, false});
    s.push_back({"allgather_inplace" + n, allgather_inplace(R, 2), false, true});
    s.push_back({"reducescatter_host" + n, reducescatter_host(R, 2), true, true, R > 1});
    s.push_back({"broadcast_copy" + n, broadcast(R, 2, root, false), true, true, false});
    s.push_back({"broadcast_inplace" + n, broadcast(R, 3, root, true), false, true});
    s.push_back({"reduce_host" + n, reduce_host(R, 2, root), true, true, R > 1});
    s.push_back({"reduce_device" + n, reduce_device(R, 2, 0), true, true, false});
    s.push_back({"alltoall_copy" + n, alltoall(R, 2, false), true, R == 1, false});
    s.push_back({"alltoall_inplace" + n, alltoall(R, 2, true), false, true});
  }
  return s;
}

}  // namespace braid::dsl::samples
