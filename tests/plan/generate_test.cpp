// Generated programs, checked by an independent executor: each rank runs its list strictly in
// order, an instruction waits until its dependencies' versions are reached, and contents are
// multisets of (rank, block, part) contributions. This proves the results and that in-order issue
// never deadlocks; the validator sweep (acceptance_test.cpp) proves the ordering rules.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <tuple>

#include "common/settings.h"
#include "plan/generate.h"
#include "topo/topology.h"

namespace braid::plan {
namespace {

using dsl::Buffer;
using dsl::Location;
using dsl::Opcode;
using Content = std::map<std::tuple<int, int, int>, int>;  // (rank, block, part) -> multiplicity

struct Executor {
  const dsl::Program& p;
  bool in_place;
  // Cell: (owner rank or -1 for host, buffer-or-numa, index) after in-place aliasing.
  using Cell = std::tuple<int, int, int>;
  std::map<Cell, std::optional<Content>> content;
  std::map<Cell, int> writes;

  Cell cell(int rank, const Location& l) const {
    if (l.is_host()) return {-1, l.numa, l.index};
    if (in_place && l.buffer == Buffer::Input) {
      const int C = p.chunks;
      int out = -1;
      switch (p.collective) {
        case Collective::AllReduce:
        case Collective::AllToAll: out = l.index; break;
        case Collective::AllGather: out = rank * C + l.index; break;
        case Collective::ReduceScatter:
          if (l.index / C == rank) out = l.index % C;
          break;
        case Collective::Broadcast:
        case Collective::Reduce:
          if (rank == p.root) out = l.index;
          break;
      }
      if (out >= 0) return {rank, 1, out};
    }
    return {rank, l.buffer == Buffer::Input ? 0 : 1, l.index};
  }

  std::optional<Content> initial(int rank, const Cell& c) const {
    if (std::get<0>(c) < 0) return std::nullopt;
    const int C = p.chunks;
    int in_index = -1;
    if (std::get<1>(c) == 0) in_index = std::get<2>(c);
    else if (in_place) {
      // An output cell that aliases an input starts with the input's content.
      for (int i = 0; i < dsl::input_blocks(p.collective, p.ranks) * C; ++i)
        if (cell(rank, Location{Buffer::Input, 0, i}) == c) in_index = i;
    }
    if (in_index < 0) return std::nullopt;
    if (p.collective == Collective::Broadcast && rank != p.root) return std::nullopt;
    return Content{{{rank, in_index / C, in_index % C}, 1}};
  }

  std::optional<Content>& at(int rank, const Location& l) {
    const Cell c = cell(rank, l);
    auto it = content.find(c);
    if (it == content.end()) it = content.emplace(c, initial(rank, c)).first;
    return it->second;
  }

  // Returns an error text, or "" when every list ran to its end.
  std::string run() {
    std::vector<size_t> next(static_cast<size_t>(p.ranks), 0);
    for (bool progress = true; progress;) {
      progress = false;
      for (int r = 0; r < p.ranks; ++r) {
        auto& list = p.rank_instructions[static_cast<size_t>(r)];
        size_t& i = next[static_cast<size_t>(r)];
        while (i < list.size()) {
          const auto& ins = list[i];
          bool ready = true;
          for (const auto& d : ins.deps)
            if (writes[cell(r, d.location)] < d.version) ready = false;
          if (!ready) break;
          const auto src = at(r, ins.src);
          if (!src) return "rank " + std::to_string(r) + " instruction " + std::to_string(i) + " reads undefined data";
          auto& dst = at(r, ins.dst);
          if (ins.op == Opcode::Reduce) {
            if (!dst) return "rank " + std::to_string(r) + " instruction " + std::to_string(i) + " reduces into undefined data";
            for (const auto& [k, m] : *src) (*dst)[k] += m;
          } else {
            dst = src;
          }
          writes[cell(r, ins.dst)]++;
          ++i;
          progress = true;
        }
      }
    }
    for (int r = 0; r < p.ranks; ++r)
      if (next[static_cast<size_t>(r)] != p.rank_instructions[static_cast<size_t>(r)].size())
        return "deadlock at rank " + std::to_string(r) + " instruction " + std::to_string(next[static_cast<size_t>(r)]);
    return "";
  }

  Content expected(int rank, int out_index) const {
    const int C = p.chunks;
    const int part = out_index % C;
    const int block = out_index / C;
    Content e;
    switch (p.collective) {
      case Collective::AllReduce:
      case Collective::Reduce:
        for (int q = 0; q < p.ranks; ++q) e[{q, 0, part}] = 1;
        break;
      case Collective::ReduceScatter:
        for (int q = 0; q < p.ranks; ++q) e[{q, rank, part}] = 1;
        break;
      case Collective::AllGather: e[{block, 0, part}] = 1; break;
      case Collective::Broadcast: e[{p.root, 0, part}] = 1; break;
      case Collective::AllToAll: e[{block, rank, part}] = 1; break;
    }
    return e;
  }

  std::string check_outputs() {
    for (int r = 0; r < p.ranks; ++r) {
      if (p.collective == Collective::Reduce && r != p.root) continue;
      for (int o = 0; o < dsl::output_blocks(p.collective, p.ranks) * p.chunks; ++o) {
        const auto& got = at(r, Location{Buffer::Output, 0, o});
        if (!got || *got != expected(r, o))
          return "rank " + std::to_string(r) + " out[" + std::to_string(o) + "] is wrong";
      }
    }
    return "";
  }
};

std::string execute(const dsl::Program& p, bool in_place) {
  Executor e{p, in_place, {}, {}};
  std::string err = e.run();
  if (err.empty()) err = e.check_outputs();
  return err;
}

topo::Topology load(const std::string& name) {
  topo::Topology t;
  EXPECT_EQ(topo::load_topology(name, &t), Result::Success) << name;
  return t;
}

TEST(Generate, ExecutorCatchesABrokenProgram) {
  const topo::Topology t = load("hylink-3090x4");
  for (Collective c : all_collectives()) {
    GenerateOptions o;
    o.chunks = 2;
    dsl::Program p;
    ASSERT_EQ(generate(c, 3, t, o, &p), Result::Success);
    ASSERT_EQ(execute(p, false), "");
    for (size_t r = 0; r < p.rank_instructions.size(); ++r)
      for (size_t i = 0; i < p.rank_instructions[r].size(); ++i) {
        dsl::Program broken = p;
        broken.rank_instructions[r].erase(broken.rank_instructions[r].begin() + static_cast<long>(i));
        EXPECT_NE(execute(broken, false), "") << collective_name(c) << " without rank " << r << " instruction " << i;
      }
  }
}

TEST(Generate, EveryCollectiveComputesItsResultInOrder) {
  ASSERT_GE(topo::bundled_topologies().size(), 3u);
  for (const std::string& name : topo::bundled_topologies()) {
    const topo::Topology t = load(name);
    for (Collective c : all_collectives())
      for (int ranks : {1, 2, 3, 4, 5, 8, 9, 17})
        for (ReducePlacement placement : {ReducePlacement::Host, ReducePlacement::Device})
          for (int chunks : {1, 3}) {
            GenerateOptions o;
            o.placement = placement;
            o.chunks = chunks;
            o.root = ranks - 1;
            dsl::Program p;
            ASSERT_EQ(generate(c, ranks, t, o, &p), Result::Success);
            for (bool in_place : {false, true})
              ASSERT_EQ(execute(p, in_place), "")
                  << name << " " << collective_name(c) << " ranks=" << ranks << " chunks=" << chunks
                  << " placement=" << placement_name(placement) << " in_place=" << in_place;
          }
  }
}

TEST(Generate, RingAndDeterministicVariantsComputeTheirResult) {
  for (const std::string& name : {std::string("hylink-3090x4"), std::string("fuselink-2x8")}) {
    const topo::Topology t = load(name);
    for (Collective c : {Collective::AllGather, Collective::AllReduce})
      for (int ranks : {2, 3, 4, 7})
        for (int chunks : {1, 2, 5}) {
          GenerateOptions o;
          o.algorithm = GenerateOptions::Algorithm::Ring;
          o.chunks = chunks;
          dsl::Program p;
          ASSERT_EQ(generate(c, ranks, t, o, &p), Result::Success);
          for (bool in_place : {false, true})
            ASSERT_EQ(execute(p, in_place), "") << name << " ring " << collective_name(c) << " ranks=" << ranks;
          o.algorithm = GenerateOptions::Algorithm::Hierarchical;
          o.deterministic = true;
          ASSERT_EQ(generate(c, ranks, t, o, &p), Result::Success);
          for (bool in_place : {false, true})
            ASSERT_EQ(execute(p, in_place), "") << name << " deterministic " << collective_name(c);
        }
  }
}

TEST(Generate, RejectsBadArguments) {
  const topo::Topology t = load("hylink-3090x4");
  dsl::Program p;
  GenerateOptions o;
  o.chunks = 1;
  EXPECT_EQ(generate(Collective::AllReduce, 0, t, o, &p), Result::InvalidArgument);
  o.root = 4;
  EXPECT_EQ(generate(Collective::Broadcast, 4, t, o, &p), Result::InvalidArgument);
  o.root = 0;
  o.algorithm = GenerateOptions::Algorithm::Ring;
  EXPECT_EQ(generate(Collective::AllToAll, 4, t, o, &p), Result::InvalidArgument);
  EXPECT_NE(std::string(last_error()).find("ring is implemented for allgather and allreduce only"), std::string::npos);
}

TEST(Generate, AppliesSettings) {
  setenv("BRAID_CHUNKS", "5", 1);
  setenv("BRAID_REDUCE_PLACEMENT", "device", 1);
  setenv("BRAID_DETERMINISTIC", "1", 1);
  settings_reload();
  GenerateOptions o;
  ASSERT_EQ(apply_settings(&o), Result::Success);
  EXPECT_EQ(o.chunks, 5);
  EXPECT_EQ(o.placement, ReducePlacement::Device);
  EXPECT_TRUE(o.deterministic);
  // Not one of auto, host, device: the settings layer keeps the default (and warns).
  setenv("BRAID_REDUCE_PLACEMENT", "gpu", 1);
  settings_reload();
  ASSERT_EQ(apply_settings(&o), Result::Success);
  EXPECT_EQ(o.placement, ReducePlacement::Auto);
  unsetenv("BRAID_CHUNKS");
  unsetenv("BRAID_REDUCE_PLACEMENT");
  unsetenv("BRAID_DETERMINISTIC");
  settings_reload();
  ASSERT_EQ(apply_settings(&o), Result::Success);
  EXPECT_EQ(o.chunks, 0);
  EXPECT_EQ(o.placement, ReducePlacement::Auto);
  EXPECT_FALSE(o.deterministic);
}

// HyLink Fig. 1(c) routing facts, counted straight from the program.
TEST(Generate, HierarchicalUploadsOnceAndKeepsOwnDataOnTheGpu) {
  const topo::Topology t = load("hylink-3090x4");
  for (Collective c : {Collective::AllGather, Collective::Broadcast, Collective::AllToAll}) {
    GenerateOptions o;
    o.chunks = 2;
    dsl::Program p;
    ASSERT_EQ(generate(c, 4, t, o, &p), Result::Success);
    for (int r = 0; r < 4; ++r) {
      std::map<int, int> uploads_of_input;
      for (const auto& ins : p.rank_instructions[static_cast<size_t>(r)]) {
        if (ins.op == Opcode::D2H) {
          ASSERT_EQ(ins.src.buffer, Buffer::Input);
          uploads_of_input[ins.src.index]++;
          EXPECT_EQ(ins.dst.numa, r / 2) << "uploads go to the rank's own node";
        }
        if (ins.op == Opcode::H2H) {
          EXPECT_EQ(ins.dst.numa, r / 2) << "H2H runs on the destination node";
        }
      }
      for (const auto& [index, n] : uploads_of_input) EXPECT_EQ(n, 1) << "in[" << index << "] uploaded twice";
    }
  }
}

}  // namespace
}  // namespace braid::plan
