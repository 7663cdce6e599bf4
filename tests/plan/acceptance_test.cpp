// Acceptance of the generators against the validator: every collective x rank count x bundled
// topology x placement passes validate() out-of-place and in-place; the text form round-trips;
// and every single-instruction mutation of a handful of generated programs is caught.
#include <gtest/gtest.h>

#include <chrono>

#include "dsl/text.h"
#include "dsl/validator.h"
#include "plan/generate.h"
#include "topo/topology.h"

namespace braid::plan {
namespace {

using dsl::Buffer;
using dsl::Location;

topo::Topology load(const std::string& name) {
  topo::Topology t;
  EXPECT_EQ(topo::load_topology(name, &t), Result::Success) << name;
  return t;
}

std::string describe(Collective c, int ranks, const std::string& topo, ReducePlacement pl, int chunks) {
  return std::string(collective_name(c)) + " ranks=" + std::to_string(ranks) + " topo=" + topo +
         " placement=" + std::string(placement_name(pl)) + " chunks=" + std::to_string(chunks);
}

void expect_valid_both_ways(const dsl::Program& p, const std::string& what) {
  for (bool in_place : {false, true}) {
    dsl::ValidateOptions o;
    o.in_place = in_place;
    const auto report = dsl::validate(p, o);
    ASSERT_TRUE(report.ok) << what << (in_place ? " in-place" : " out-of-place") << ": rank " << report.rank
                           << " instruction " << report.instruction << ": " << report.message;
  }
}

// Whether `ins` (on `rank`) copies a chunk onto itself under NCCL's in-place aliasing.
bool is_self_copy_in_place(const dsl::Program& p, int rank, const dsl::Instruction& ins) {
  if (ins.op != dsl::Opcode::Copy || ins.src.buffer != dsl::Buffer::Input || ins.dst.buffer != dsl::Buffer::Output)
    return false;
  const int C = p.chunks;
  switch (p.collective) {
    case Collective::AllGather: return ins.dst.index == rank * C + ins.src.index;
    case Collective::ReduceScatter: return ins.src.index == rank * C + ins.dst.index;
    case Collective::Broadcast:
    case Collective::Reduce: return rank == p.root && ins.src.index == ins.dst.index;
    default: return ins.src.index == ins.dst.index;
  }
}

void expect_round_trip(const dsl::Program& p, const std::string& what) {
  const std::string text = dsl::print_program(p);
  dsl::Program back;
  ASSERT_EQ(dsl::parse_program(text, &back), Result::Success) << what << ": " << last_error();
  ASSERT_TRUE(back == p) << what << ": parse(print(p)) differs";
}

// The full sweep. Chunks: 2 up to 16 ranks, 1 beyond (64-rank AllToAll is 4096 items per chunk).
TEST(Acceptance, EveryGeneratedProgramValidatesAndRoundTrips) {
  const auto started = std::chrono::steady_clock::now();
  std::vector<int> rank_counts;
  for (int r = 1; r <= 16; ++r) rank_counts.push_back(r);
  rank_counts.push_back(32);
  rank_counts.push_back(64);
  const auto names = topo::bundled_topologies();
  ASSERT_GE(names.size(), 3u);
  int programs = 0;
  for (const std::string& name : names) {
    const topo::Topology t = load(name);
    for (Collective c : all_collectives())
      for (int ranks : rank_counts) {
        const int chunks = ranks <= 16 ? 2 : 1;
        dsl::Program host_program;
        for (ReducePlacement pl : {ReducePlacement::Host, ReducePlacement::Device}) {
          GenerateOptions o;
          o.placement = pl;
          o.chunks = chunks;
          o.root = (ranks * 2) / 3;  // a root that is neither first nor last where possible
          dsl::Program p;
          const std::string what = describe(c, ranks, name, pl, chunks);
          ASSERT_EQ(generate(c, ranks, t, o, &p), Result::Success) << what << ": " << last_error();
          // Placement changes nothing for collectives without reduction: validate once.
          if (pl == ReducePlacement::Device && !collective_reduces(c)) {
            EXPECT_TRUE(p == host_program) << what;
            continue;
          }
          host_program = p;
          expect_valid_both_ways(p, what);
          expect_round_trip(p, what);
          ++programs;
        }
      }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("validated %d programs (x2 aliasing modes) in %.2f s\n", programs, seconds);
}

TEST(Acceptance, RingAndDeterministicVariantsValidate) {
  for (const std::string& name : topo::bundled_topologies()) {
    const topo::Topology t = load(name);
    for (Collective c : all_collectives())
      for (int ranks : {1, 2, 3, 4, 5, 8, 13, 16})
        for (int chunks : {1, 3}) {
          GenerateOptions o;
          o.chunks = chunks;
          o.root = ranks - 1;
          o.deterministic = true;
          for (ReducePlacement pl : {ReducePlacement::Host, ReducePlacement::Device}) {
            o.placement = pl;
            dsl::Program p;
            ASSERT_EQ(generate(c, ranks, t, o, &p), Result::Success);
            expect_valid_both_ways(p, "deterministic " + describe(c, ranks, name, pl, chunks));
          }
          if (c != Collective::AllGather && c != Collective::AllReduce) continue;
          o.algorithm = GenerateOptions::Algorithm::Ring;
          dsl::Program p;
          ASSERT_EQ(generate(c, ranks, t, o, &p), Result::Success);
          expect_valid_both_ways(p, "ring " + describe(c, ranks, name, o.placement, chunks));
          expect_round_trip(p, "ring");
        }
  }
}

// Every single-instruction mutation of a generated program must be caught by validate().
struct MutationCase {
  Collective collective;
  int ranks;
  ReducePlacement placement;
  GenerateOptions::Algorithm algorithm = GenerateOptions::Algorithm::Hierarchical;
};

// Another location of the same kind for a dst: the next device chunk, or a different host slot
// (an existing one of the same node, or a fresh one).
std::vector<Location> retargets(const dsl::Program& p, const Location& dst) {
  std::vector<Location> out;
  if (dst.is_device()) {
    const int size = (dst.buffer == Buffer::Input ? dsl::input_blocks(p.collective, p.ranks)
                                                  : dsl::output_blocks(p.collective, p.ranks)) * p.chunks;
    if (size > 1) out.push_back(Location{dst.buffer, 0, (dst.index + 1) % size});
    out.push_back(Location{dst.buffer == Buffer::Input ? Buffer::Output : Buffer::Input, 0, dst.index});
  } else {
    const auto slots = dsl::host_slots_per_numa(p);
    const int n = slots[static_cast<size_t>(dst.numa)];
    if (n > 1) out.push_back(Location{Buffer::Host, dst.numa, (dst.index + 1) % n});
    out.push_back(Location{Buffer::Host, dst.numa, n});  // a slot nobody else uses
    if (slots.size() > 1) out.push_back(Location{Buffer::Host, (dst.numa + 1) % static_cast<int>(slots.size()), dst.index});
  }
  return out;
}

TEST(Acceptance, EverySingleInstructionMutationIsCaught) {
  const topo::Topology t = load("hylink-3090x4");
  const std::vector<MutationCase> cases = {
      {Collective::AllReduce, 3, ReducePlacement::Host},
      {Collective::AllReduce, 3, ReducePlacement::Device},
      {Collective::AllReduce, 4, ReducePlacement::Host},
      {Collective::AllGather, 4, ReducePlacement::Host},
      {Collective::ReduceScatter, 3, ReducePlacement::Host},
      {Collective::ReduceScatter, 3, ReducePlacement::Device},
      {Collective::AllToAll, 3, ReducePlacement::Host},
      {Collective::Broadcast, 3, ReducePlacement::Host},
      {Collective::Reduce, 3, ReducePlacement::Host},
      {Collective::Reduce, 3, ReducePlacement::Device},
      {Collective::AllGather, 4, ReducePlacement::Host, GenerateOptions::Algorithm::Ring},
      {Collective::AllReduce, 3, ReducePlacement::Host, GenerateOptions::Algorithm::Ring},
  };
  int mutations = 0;
  for (const auto& mc : cases) {
    GenerateOptions o;
    o.placement = mc.placement;
    o.algorithm = mc.algorithm;
    o.chunks = 2;
    o.root = 1;
    dsl::Program p;
    ASSERT_EQ(generate(mc.collective, mc.ranks, t, o, &p), Result::Success);
    const std::string what = describe(mc.collective, mc.ranks, "hylink-3090x4", mc.placement, 2) + " " +
                             std::string(algorithm_name(mc.algorithm));
    ASSERT_TRUE(dsl::validate(p).ok) << what;
    // `equivalent_in_place`: deleting an in-place self-copy leaves the same program (it moves no
    // data); only then may the in-place check pass.
    auto expect_caught = [&](const dsl::Program& m, const std::string& how, bool equivalent_in_place = false) {
      ++mutations;
      EXPECT_FALSE(dsl::validate(m).ok) << what << ": " << how;
      if (equivalent_in_place) return;
      dsl::ValidateOptions vo;
      vo.in_place = true;
      EXPECT_FALSE(dsl::validate(m, vo).ok) << what << ": " << how << " (in-place)";
    };
    for (size_t r = 0; r < p.rank_instructions.size(); ++r)
      for (size_t i = 0; i < p.rank_instructions[r].size(); ++i) {
        const auto at = static_cast<std::ptrdiff_t>(i);
        const std::string where = "rank " + std::to_string(r) + " instruction " + std::to_string(i) + " (" +
                                  std::string(dsl::opcode_name(p.rank_instructions[r][i].op)) + ")";
        dsl::Program deleted = p;
        deleted.rank_instructions[r].erase(deleted.rank_instructions[r].begin() + at);
        expect_caught(deleted, "deleting " + where, is_self_copy_in_place(p, static_cast<int>(r), p.rank_instructions[r][i]));
        dsl::Program duplicated = p;
        duplicated.rank_instructions[r].insert(duplicated.rank_instructions[r].begin() + at + 1, p.rank_instructions[r][i]);
        expect_caught(duplicated, "duplicating " + where);
        for (const Location& l : retargets(p, p.rank_instructions[r][i].dst)) {
          dsl::Program moved = p;
          moved.rank_instructions[r][i].dst = l;
          expect_caught(moved, "re-targeting the dst of " + where);
        }
      }
  }
  std::printf("%d mutations caught\n", mutations);
}

}  // namespace
}  // namespace braid::plan
