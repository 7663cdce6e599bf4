// The validator: hand-written programs pass, every single-instruction mutation of them is caught,
// and each rule names the instruction that breaks it.
#include "dsl/validator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <tuple>
#include <set>
#include <string>

#include "common/result.h"
#include "dsl/text.h"
#include "program_samples.h"

namespace braid::dsl {
namespace {

using samples::Builder;
using samples::host;
using samples::in;
using samples::out;

std::string location_text_for_test(const Location& l) {
  return (l.buffer == Buffer::Input ? "in" : l.buffer == Buffer::Output ? "out" : "host" + std::to_string(l.numa)) +
         std::string("[") + std::to_string(l.index) + "]";
}

ValidateOptions mode(bool in_place) {
  ValidateOptions o;
  o.in_place = in_place;
  return o;
}

// Every location a mutation may re-target to: all device chunks, every host slot the program
// uses, a fresh slot and a slot on a fresh NUMA node.
std::vector<Location> candidate_locations(const Program& p) {
  std::vector<Location> all;
  for (int i = 0; i < input_blocks(p.collective, p.ranks) * p.chunks; ++i) all.push_back(in(i));
  for (int i = 0; i < output_blocks(p.collective, p.ranks) * p.chunks; ++i) all.push_back(out(i));
  std::set<Location> slots;
  int max_numa = 0, max_index = 0;
  for (const auto& list : p.rank_instructions)
    for (const auto& ins : list)
      for (const Location& l : {ins.src, ins.dst})
        if (l.is_host()) {
          slots.insert(l);
          max_numa = std::max(max_numa, l.numa);
          max_index = std::max(max_index, l.index);
        }
  all.insert(all.end(), slots.begin(), slots.end());
  all.push_back(host(max_index + 1));
  all.push_back(host(0, max_numa + 1));
  return all;
}

struct Mutant {
  std::string what;
  Program program;
  int retarget_rank = -1;  // for re-targeted locations: the rank, the old and the new location
  Location retarget_from, retarget_to;
};

std::vector<Mutant> mutants_of(const Program& p) {
  std::vector<Mutant> m;
  const std::vector<Location> targets = candidate_locations(p);
  for (int r = 0; r < p.ranks; ++r)
    for (size_t i = 0; i < p.rank_instructions[r].size(); ++i) {
      const std::string at = "rank " + std::to_string(r) + " instruction " + std::to_string(i);
      Program q = p;
      q.rank_instructions[r].erase(q.rank_instructions[r].begin() + static_cast<long>(i));
      m.push_back({"delete " + at, q});
      q = p;
      q.rank_instructions[r].insert(q.rank_instructions[r].begin() + static_cast<long>(i) + 1,
                                    p.rank_instructions[r][i]);
      m.push_back({"duplicate " + at, q});
      for (const Location& l : targets) {
        if (l != p.rank_instructions[r][i].dst) {
          q = p;
          q.rank_instructions[r][i].dst = l;
          m.push_back({"dst of " + at + " -> " + location_text_for_test(l), q, r,
                       p.rank_instructions[r][i].dst, l});
        }
        if (l != p.rank_instructions[r][i].src) {
          q = p;
          q.rank_instructions[r][i].src = l;
          m.push_back({"src of " + at + " -> " + location_text_for_test(l), q, r,
                       p.rank_instructions[r][i].src, l});
        }
      }
      for (size_t d = 0; d < p.rank_instructions[r][i].deps.size(); ++d) {
        q = p;
        q.rank_instructions[r][i].deps.erase(q.rank_instructions[r][i].deps.begin() + static_cast<long>(d));
        m.push_back({"drop dependency " + std::to_string(d) + " of " + at, q});
      }
    }
  return m;
}

// Whether two device locations of `rank` are one buffer in place (written apart from the
// validator: NCCL's aliasing of the receive buffer into the send buffer).
bool same_storage_in_place(const Program& p, int rank, const Location& a, const Location& b) {
  if (a.is_host() || b.is_host() || a.buffer == b.buffer) return a == b;
  const Location& i = a.buffer == Buffer::Input ? a : b;
  const Location& o = a.buffer == Buffer::Input ? b : a;
  const int C = p.chunks;
  switch (p.collective) {
    case Collective::AllReduce:
    case Collective::AllToAll: return i.index == o.index;
    case Collective::AllGather: return o.index == rank * C + i.index;
    case Collective::ReduceScatter: return i.index == rank * C + o.index;
    case Collective::Broadcast:
    case Collective::Reduce: return rank == p.root && i.index == o.index;
  }
  return false;
}

TEST(ValidatorTest, EverySingleMutationOfTheHandWrittenProgramsIsCaught) {
  int checked = 0;
  for (const auto& s : samples::all_samples())
    for (bool in_place : {false, true}) {
      if (!(in_place ? s.in_place && s.minimal_in_place : s.out_of_place)) continue;
      for (const Mutant& m : mutants_of(s.program)) {
        // Exempt, being the same program: in place, re-targeting a location to its alias.
        if (in_place && m.retarget_rank >= 0 &&
            same_storage_in_place(s.program, m.retarget_rank, m.retarget_from, m.retarget_to))
          continue;
        ++checked;
        const ValidationReport r = validate(m.program, mode(in_place));
        EXPECT_FALSE(r.ok) << s.name << (in_place ? " in place" : " out of place") << ": " << m.what
                           << " was not caught:\n" << print_program(m.program);
        EXPECT_FALSE(r.message.empty());
      }
    }
  EXPECT_GT(checked, 10000);
}

TEST(ValidatorTest, HandWrittenProgramsPass) {
  for (const auto& s : samples::all_samples())
    for (bool in_place : {false, true}) {
      if (!(in_place ? s.in_place : s.out_of_place)) continue;
      const ValidationReport r = validate(s.program, mode(in_place));
      EXPECT_TRUE(r.ok) << s.name << (in_place ? " in place: " : " out of place: ") << r.message << "\n"
                        << print_program(s.program);
    }
}

TEST(ValidatorTest, ProgramsForTheOtherModeFail) {
  // Each sample valid in one mode only is wrong in the other: the validator must see that.
  for (const auto& s : samples::all_samples()) {
    if (s.in_place == s.out_of_place) continue;
    if (s.program.ranks == 1 && s.program.collective == Collective::AllToAll && s.in_place) continue;
    const ValidationReport r = validate(s.program, mode(!s.in_place));
    EXPECT_FALSE(r.ok) << s.name;
  }
}

size_t instruction_count(const Program& p) {
  size_t n = 0;
  for (const auto& list : p.rank_instructions) n += list.size();
  return n;
}

TEST(ValidatorTest, LargeProgramsValidateQuickly) {
  // ~100k instructions (64 ranks x 24 chunks, 63-way accumulate groups, in-place hazards) and a
  // ~32k-instruction all-to-all; the bound is loose on purpose (the real figure is ~50 ms).
  for (const auto& [p, in_place] : {std::pair{samples::allreduce_device_inplace(64, 24), true},
                                    std::pair{samples::alltoall(64, 4, true), true},
                                    std::pair{samples::allreduce_host(64, 64), false}}) {
    const auto start = std::chrono::steady_clock::now();
    const ValidationReport r = validate(p, mode(in_place));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(r.ok) << r.message;
    EXPECT_LT(seconds, 2.0) << instruction_count(p) << " instructions";
  }
}

// ---- one test per rule: the report names the right instruction and says what is wrong.

Program parse(const std::string& text) {
  Program p;
  EXPECT_EQ(parse_program(text, &p), Result::Success) << last_error();
  return p;
}

void expect_report(const ValidationReport& r, int rank, int instruction, const std::string& says) {
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.rank, rank) << r.message;
  EXPECT_EQ(r.instruction, instruction) << r.message;
  EXPECT_NE(r.message.find(says), std::string::npos) << r.message;
}

const std::string kFig3Rank1 =
    "# Rank 1\n"
    "D2H in[0] -> host0[2]\n"
    "D2H in[1] -> host0[3]\n"
    "REDUCE host0[3] -> host0[1] deps: host0[3]>=1, host0[1]>=1\n"
    "H2D host0[1] -> out[1] deps: host0[1]>=2\n"
    "H2D host0[2] -> out[0] deps: host0[2]>=2\n";

// Figure 3 with rank 0's list replaced.
Program figure3_with_rank0(const std::string& rank0) {
  return parse("program allreduce ranks=2 chunks=2 root=0\n# Rank 0\n" + rank0 + kFig3Rank1);
}

const std::string kFig3Rank0 =
    "D2H in[0] -> host0[0]\n"
    "D2H in[1] -> host0[1]\n"
    "REDUCE host0[0] -> host0[2] deps: host0[0]>=1, host0[2]>=1\n"
    "H2D host0[2] -> out[0] deps: host0[2]>=2\n"
    "H2D host0[1] -> out[1] deps: host0[1]>=2\n";

TEST(ValidatorRules, Figure3FromTextPasses) {
  EXPECT_TRUE(validate(figure3_with_rank0(kFig3Rank0)).ok);
  EXPECT_TRUE(validate(figure3_with_rank0(kFig3Rank0), mode(true)).ok);
}

TEST(ValidatorRules, HeaderMustBeConsistent) {
  Program p = samples::hylink_figure3();
  p.rank_instructions.pop_back();
  expect_report(validate(p), -1, -1, "rank_instructions has 1 lists for 2 ranks");
  p = samples::hylink_figure3();
  p.root = 2;
  expect_report(validate(p), -1, -1, "root out of range");
}

TEST(ValidatorRules, LocationsMustBeInRange) {
  const ValidationReport r = validate(figure3_with_rank0(
      "D2H in[0] -> host0[0]\nD2H in[2] -> host0[1]\n" + kFig3Rank0.substr(kFig3Rank0.find("REDUCE"))));
  expect_report(r, 0, 1, "in[2] is out of range: in[] has 2 chunks");
  EXPECT_NE(r.message.find("rank 0 instruction 1 (D2H in[2] -> host0[1])"), std::string::npos) << r.message;
  Program p = samples::hylink_figure3();
  p.rank_instructions[1][3].deps[0].location.index = -4;
  expect_report(validate(p), 1, 3, "negative index");
}

TEST(ValidatorRules, EachOpcodeJoinsItsKindsOfLocation) {
  struct Case {
    std::string line;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {"D2H host0[5] -> host0[6]", "D2H must copy a device chunk"},
           {"D2H in[0] -> out[0]", "D2H must copy a device chunk"},
           {"H2H in[0] -> host1[0]", "H2H must copy between host slots"},
           {"H2H host0[1] -> host0[6]", "H2H must cross NUMA nodes, but both slots are on node 0"},
           {"H2D host0[1] -> host1[6]", "H2D must copy a host slot to a device chunk"},
           {"COPY host0[1] -> out[1]", "COPY must copy between device chunks"},
           {"REDUCE in[1] -> out[1]", "REDUCE must take its source from a host slot"},
       }) {
    const std::string rank0 = "D2H in[0] -> host0[0]\nD2H in[1] -> host0[1]\n" + c.line + "\n" +
                              kFig3Rank0.substr(kFig3Rank0.find("REDUCE"));
    expect_report(validate(figure3_with_rank0(rank0)), 0, 2, c.says);
  }
}

TEST(ValidatorRules, SendBuffersAreReadOnlyAndNonRootReduceOutputsUntouched) {
  expect_report(validate(figure3_with_rank0(kFig3Rank0 + "H2D host0[1] -> in[1] deps: host0[1]>=2\n")), 0, 5,
                "writes the send buffer in[1]");
  // Reduce at root 1: rank 0 may not write out[].
  Program p = samples::reduce_host(2, 1, 1);
  p.rank_instructions[0].push_back({Opcode::H2D, host(1), out(0), {{host(1), 2}}});
  expect_report(validate(p), 0, 2, "not the reduce's root 1");
}

TEST(ValidatorRules, PartsMustMatch) {
  // Rank 0 reads back chunk 0's sum into out[1].
  const std::string rank0 =
      "D2H in[0] -> host0[0]\nD2H in[1] -> host0[1]\n"
      "REDUCE host0[0] -> host0[2] deps: host0[0]>=1, host0[2]>=1\n"
      "H2D host0[2] -> out[1] deps: host0[2]>=2\n"
      "H2D host0[1] -> out[0] deps: host0[1]>=2\n";
  expect_report(validate(figure3_with_rank0(rank0)), 0, 3, "part mismatch: host0[2] holds part 0");
  // A reduction of part 1 into a slot holding part 0.
  const std::string rank0_mixed =
      "D2H in[1] -> host0[0]\nD2H in[1] -> host0[1]\n"
      "REDUCE host0[0] -> host0[2] deps: host0[0]>=1, host0[2]>=1\n"
      "H2D host0[2] -> out[0] deps: host0[2]>=2\n"
      "H2D host0[1] -> out[1] deps: host0[1]>=2\n";
  expect_report(validate(figure3_with_rank0(rank0_mixed)), 0, 2, "part mismatch: adds part 1");
}

TEST(ValidatorRules, TwoAssignsWithoutOrderAreUnorderedWriters) {
  // Rank 0 also stages in[0] into host0[2], which rank 1's D2H fills: two first writes.
  const ValidationReport r = validate(figure3_with_rank0("D2H in[0] -> host0[2]\n" + kFig3Rank0));
  expect_report(r, 0, 0, "unordered writers");
  EXPECT_NE(r.message.find("rank 1 instruction 0 (D2H in[0] -> host0[2])"), std::string::npos) << r.message;
}

TEST(ValidatorRules, AccumulateNeedsItsBase) {
  // The REDUCE lost its dependency on host0[2]: it adds into a slot with no data yet.
  const std::string rank0 =
      "D2H in[0] -> host0[0]\nD2H in[1] -> host0[1]\n"
      "REDUCE host0[0] -> host0[2] deps: host0[0]>=1\n"
      "H2D host0[2] -> out[0] deps: host0[2]>=2\n"
      "H2D host0[1] -> out[1] deps: host0[1]>=2\n";
  expect_report(validate(figure3_with_rank0(rank0)), 0, 2,
                "unordered writers: accumulates into host0[2] at version 0, unordered with rank 1 "
                "instruction 0 (D2H in[0] -> host0[2]), which assigns it");
  // Accumulating into a slot that nothing fills.
  expect_report(validate(figure3_with_rank0(kFig3Rank0 + "REDUCE host0[0] -> host0[7] deps: host0[0]>=1\n")), 0, 5,
                "accumulates into host0[7] without a dependency on it, but host0[7] holds no data");
}

TEST(ValidatorRules, ReadsWithoutDependencyReadUndefinedData) {
  const std::string rank0 =
      "D2H in[0] -> host0[0]\nD2H in[1] -> host0[1]\n"
      "REDUCE host0[0] -> host0[2] deps: host0[0]>=1, host0[2]>=1\n"
      "H2D host0[2] -> out[0] deps: host0[2]>=2\n"
      "H2D host0[1] -> out[1]\n";
  expect_report(validate(figure3_with_rank0(rank0)), 0, 4, "reads undefined data: host0[1] at version 0");
  std::string unwritten = kFig3Rank0;
  unwritten.replace(unwritten.find("H2D host0[1]"), 12, "H2D host0[9]");
  expect_report(validate(figure3_with_rank0(unwritten)), 0, 4, "nothing in the program writes host0[9]");
}

TEST(ValidatorRules, DependencyInsideAnAccumulateGroupReadsIncompleteData) {
  // A 3-rank reduction into host0[0] (versions 2 and 3 come from two unordered accumulates);
  // rank 2 reads it at version 2.
  const Program p = parse(
      "program reduce ranks=3 chunks=1 root=0\n"
      "# Rank 0\nD2H in[0] -> host0[0]\nH2D host0[0] -> out[0] deps: host0[0]>=3\n"
      "# Rank 1\nD2H in[0] -> host0[1]\nREDUCE host0[1] -> host0[0] deps: host0[1]>=1, host0[0]>=1\n"
      "# Rank 2\nD2H in[0] -> host0[2]\nREDUCE host0[2] -> host0[0] deps: host0[2]>=1, host0[0]>=1\n"
      "H2H host0[0] -> host1[0] deps: host0[0]>=2\n");
  expect_report(validate(p), 2, 2, "falls inside a group of 2 unordered accumulates (versions 2..3)");
}

TEST(ValidatorRules, OverwritingBeforeAllReadersFinishedIsARace) {
  // Slot reuse: rank 0 refills host0[0] with chunk 1 once its own H2D read chunk 0 - but rank 1
  // also reads chunk 0 from it and nothing orders that read before the refill.
  const Program p = parse(
      "program broadcast ranks=2 chunks=2 root=0\n"
      "# Rank 0\n"
      "D2H in[0] -> host0[0]\n"
      "COPY in[0] -> out[0]\n"
      "COPY in[1] -> out[1]\n"
      "D2H in[1] -> host0[0] deps: host0[0]>=1\n"
      "# Rank 1\n"
      "H2D host0[0] -> out[0] deps: host0[0]>=1\n"
      "H2D host0[0] -> out[1] deps: host0[0]>=2\n");
  const ValidationReport r = validate(p);
  expect_report(r, 0, 3, "write-after-read race");
  EXPECT_NE(r.message.find("rank 1 instruction 0 (H2D host0[0] -> out[0] deps: host0[0]>=1)"), std::string::npos)
      << r.message;
  // In place, an all-to-all H2D that overwrites a block the rank has not staged yet races too.
  Program q = samples::alltoall(2, 1, true);
  q.rank_instructions[1][1].deps.pop_back();  // rank 1: H2D host0[0] -> out[0], needs its D2H of in[0]
  expect_report(validate(q, mode(true)), 1, 1, "write-after-read race: overwrites in[0] of rank 1");
}

TEST(ValidatorRules, WaitingForAVersionNeverWrittenIsADeadlock) {
  const std::string rank0 =
      "D2H in[0] -> host0[0]\nD2H in[1] -> host0[1]\n"
      "REDUCE host0[0] -> host0[2] deps: host0[0]>=1, host0[2]>=1\n"
      "H2D host0[2] -> out[0] deps: host0[2]>=3\n"
      "H2D host0[1] -> out[1] deps: host0[1]>=2\n";
  expect_report(validate(figure3_with_rank0(rank0)), 0, 3,
                "deadlock: waits for host0[2]>=3, but the program writes host0[2] only 2 time(s)");
}

TEST(ValidatorRules, DependencyCyclesAreDeadlocks) {
  // Each rank stages into a slot only after the other's slot is written.
  const Program p = parse(
      "program allgather ranks=2 chunks=1 root=0\n"
      "# Rank 0\n"
      "COPY in[0] -> out[0]\n"
      "D2H in[0] -> host0[0] deps: host0[1]>=1\n"
      "H2D host0[1] -> out[1] deps: host0[1]>=1\n"
      "# Rank 1\n"
      "COPY in[0] -> out[1]\n"
      "D2H in[0] -> host0[1] deps: host0[0]>=1\n"
      "H2D host0[0] -> out[0] deps: host0[0]>=1\n");
  const ValidationReport r = validate(p);
  expect_report(r, 0, 1, "deadlock: its dependencies form a cycle: it waits on rank 1 instruction 1");
}

TEST(ValidatorRules, DuplicatedContributionIsAWrongResult) {
  // Rank 0 reduces its chunk twice (and waits for both): chunk 0 then holds r0 twice.
  const std::string rank0 =
      "D2H in[0] -> host0[0]\nD2H in[1] -> host0[1]\n"
      "REDUCE host0[0] -> host0[2] deps: host0[0]>=1, host0[2]>=1\n"
      "REDUCE host0[0] -> host0[2] deps: host0[0]>=1, host0[2]>=1\n"
      "H2D host0[2] -> out[0] deps: host0[2]>=3\n"
      "H2D host0[1] -> out[1] deps: host0[1]>=2\n";
  Program p = figure3_with_rank0(rank0);
  p.rank_instructions[1][4].deps[0].version = 3;  // rank 1's read of host0[2] too
  const ValidationReport r = validate(p);
  expect_report(r, 0, 4, "wrong result: rank 0 out[0] ends as {r0.b0.p0 x2, r1.b0.p0}");
  EXPECT_NE(r.message.find("allreduce needs {r0.b0.p0, r1.b0.p0}"), std::string::npos) << r.message;
}

TEST(ValidatorRules, MissingOutputIsNamed) {
  const std::string rank0 = kFig3Rank0.substr(0, kFig3Rank0.find("H2D host0[1]"));
  expect_report(validate(figure3_with_rank0(rank0)), 0, -1, "rank 0 out[1] is never written");
}

TEST(ValidatorRules, BroadcastNonRootSendBuffersAreUndefined) {
  // Rank 1 is not the root, so its in[] holds nothing NCCL promises.
  const Program p = parse(
      "program broadcast ranks=2 chunks=1 root=0\n"
      "# Rank 0\nCOPY in[0] -> out[0]\n"
      "# Rank 1\nCOPY in[0] -> out[0]\n");
  expect_report(validate(p), 1, 0, "reads undefined data: in[0] at version 0");
}

TEST(ValidatorRules, TheLowestOffendingInstructionIsReported) {
  Program p = samples::hylink_figure3();
  p.rank_instructions[1][4].deps.clear();  // rank 1 reads host0[2] at version 0 (undefined)
  p.rank_instructions[0][4].deps.clear();  // rank 0 reads host0[1] at version 0 (undefined)
  expect_report(validate(p), 0, 4, "reads undefined data");
  p = samples::hylink_figure3();
  p.rank_instructions[1][1].src = in(5);                // a local error on rank 1 ...
  p.rank_instructions[0][3].deps[0].version = 7;        // ... and a deadlock on rank 0
  expect_report(validate(p), 1, 1, "out of range");     // local checks come first
}

}  // namespace
}  // namespace braid::dsl

namespace braid::dsl {
namespace {

TEST(ValidatorRules, HugeGeometryWithoutInstructionsFailsFast) {
  Program p;
  p.collective = Collective::AllGather;
  p.ranks = 65536;
  p.chunks = 65536;
  p.rank_instructions.resize(p.ranks);
  const auto start = std::chrono::steady_clock::now();
  const ValidationReport r = validate(p, mode(true));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  expect_report(r, 0, -1, "rank 0 out[65536] is never written");
}

}  // namespace
}  // namespace braid::dsl

// ---- an independent check of the validator's verdicts: run accepted programs with concrete
// numbers under many random schedules (an instruction may run once the versions it depends on
// are complete; otherwise in any order) and compare with the collective computed directly.
namespace braid::dsl {
namespace {

struct ScheduleOutcome {
  bool deadlock = false;
  bool wrong = false;
  std::string detail;
};

ScheduleOutcome run_random_schedule(const Program& p, bool in_place, std::mt19937_64& rng) {
  const int R = p.ranks, C = p.chunks;
  const int in_chunks = input_blocks(p.collective, R) * C;
  const int out_chunks = output_blocks(p.collective, R) * C;
  // A value is a wrapping sum of random 64-bit numbers, one per (rank, input chunk).
  std::vector<uint64_t> input_value(static_cast<size_t>(R) * in_chunks);
  for (auto& v : input_value) v = rng();
  using Value = std::optional<uint64_t>;
  std::map<std::tuple<int, int, int, int>, Value> memory;  // (kind, rank or numa, index, 0)
  std::map<std::tuple<int, int, int, int>, int> completed;
  auto key = [&](int rank, const Location& l) {
    if (l.is_host()) return std::tuple{2, l.numa, l.index, 0};
    int index = l.index;
    bool input = l.buffer == Buffer::Input;
    if (in_place && !input) {  // map out[] onto in[] where NCCL aliases them
      switch (p.collective) {
        case Collective::AllReduce:
        case Collective::AllToAll: input = true; break;
        case Collective::AllGather:
          if (index / C == rank) { input = true; index %= C; }
          break;
        case Collective::ReduceScatter: input = true; index += rank * C; break;
        case Collective::Broadcast:
        case Collective::Reduce: input = rank == p.root; break;
      }
    }
    return std::tuple{input ? 0 : 1, rank, index, 0};
  };
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < in_chunks; ++i)
      if (p.collective != Collective::Broadcast || r == p.root)
        memory[{0, r, i, 0}] = input_value[static_cast<size_t>(r) * in_chunks + i];
  std::vector<std::pair<int, int>> pending;
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < static_cast<int>(p.rank_instructions[r].size()); ++i) pending.push_back({r, i});
  while (!pending.empty()) {
    std::vector<size_t> ready;
    for (size_t k = 0; k < pending.size(); ++k) {
      const auto [r, i] = pending[k];
      bool ok = true;
      for (const Dependency& d : p.rank_instructions[r][i].deps) ok &= completed[key(r, d.location)] >= d.version;
      if (ok) ready.push_back(k);
    }
    if (ready.empty()) return {true, false, "deadlock"};
    const size_t pick = ready[std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng)];
    const auto [r, i] = pending[pick];
    pending.erase(pending.begin() + static_cast<long>(pick));
    const Instruction& ins = p.rank_instructions[r][i];
    const Value src = memory[key(r, ins.src)];
    Value& dst = memory[key(r, ins.dst)];
    if (ins.op == Opcode::Reduce) {
      dst = (src && dst) ? Value(*dst + *src) : std::nullopt;
    } else {
      dst = src;
    }
    ++completed[key(r, ins.dst)];
  }
  for (int r = 0; r < R; ++r) {
    if (p.collective == Collective::Reduce && r != p.root) continue;
    for (int j = 0; j < out_chunks; ++j) {
      const int block = j / C, part = j % C;
      uint64_t want = 0;
      auto input = [&](int q, int b) { return input_value[static_cast<size_t>(q) * in_chunks + b * C + part]; };
      switch (p.collective) {
        case Collective::AllReduce:
        case Collective::Reduce:
          for (int q = 0; q < R; ++q) want += input(q, 0);
          break;
        case Collective::AllGather: want = input(block, 0); break;
        case Collective::ReduceScatter:
          for (int q = 0; q < R; ++q) want += input(q, r);
          break;
        case Collective::Broadcast: want = input(p.root, 0); break;
        case Collective::AllToAll: want = input(block, r); break;
      }
      const Value got = memory[key(r, out(j))];
      if (!got || *got != want)
        return {false, true, "rank " + std::to_string(r) + " out[" + std::to_string(j) + "] wrong"};
    }
  }
  return {};
}

TEST(ValidatorCrossCheck, AcceptedProgramsComputeTheirCollectiveUnderRandomSchedules) {
  std::mt19937_64 rng(99);
  int runs = 0;
  auto check = [&](const std::string& what, const Program& p, bool in_place) {
    ASSERT_TRUE(validate(p, mode(in_place)).ok) << what;
    for (int s = 0; s < 30; ++s, ++runs) {
      const ScheduleOutcome o = run_random_schedule(p, in_place, rng);
      ASSERT_FALSE(o.deadlock || o.wrong) << what << (in_place ? " in place: " : ": ") << o.detail;
    }
  };
  for (const auto& s : samples::all_samples())
    for (bool in_place : {false, true})
      if (in_place ? s.in_place : s.out_of_place) check(s.name, s.program, in_place);
  // Other shapes: chunk counts and roots the sample list does not use.
  for (int R = 1; R <= 4; ++R)
    for (int C = 1; C <= 3; ++C)
      for (int root = 0; root < R; ++root) {
        const std::string n = " R=" + std::to_string(R) + " C=" + std::to_string(C) + " root=" + std::to_string(root);
        check("broadcast" + n, samples::broadcast(R, C, root, false), false);
        check("broadcast in place" + n, samples::broadcast(R, C, root, true), true);
        check("reduce_host" + n, samples::reduce_host(R, C, root), root % 2 == 0);
        check("reduce_device" + n, samples::reduce_device(R, C, root), false);
        if (root) continue;
        check("allreduce_device_inplace" + n, samples::allreduce_device_inplace(R, C), true);
        check("alltoall" + n, samples::alltoall(R, C, true), true);
        check("reducescatter" + n, samples::reducescatter_host(R, C), C % 2 == 0);
        check("allgather_h2h" + n, samples::allgather_h2h(R, C), false);
      }
  EXPECT_GT(runs, 5000);
}

TEST(ValidatorCrossCheck, RandomlyEditedProgramsThatValidateAreCorrectUnderRandomSchedules) {
  // Random edits (extra dependencies, dropped dependencies, re-targets, duplicates, deletions);
  // whatever the validator still accepts must compute the collective under every schedule tried.
  std::mt19937_64 rng(1234);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int accepted = 0, tried = 0;
  for (const auto& s : samples::all_samples())
    for (bool in_place : {false, true}) {
      if (!(in_place ? s.in_place : s.out_of_place)) continue;
      const std::vector<Location> targets = candidate_locations(s.program);
      for (int t = 0; t < 150; ++t) {
        Program p = s.program;
        const int edits = pick(1, 3);
        for (int e = 0; e < edits; ++e) {
          const int r = pick(0, p.ranks - 1);
          auto& list = p.rank_instructions[r];
          if (list.empty()) continue;
          const size_t i = static_cast<size_t>(pick(0, static_cast<int>(list.size()) - 1));
          const Location l = targets[static_cast<size_t>(pick(0, static_cast<int>(targets.size()) - 1))];
          switch (pick(0, 9)) {
            case 0: case 1: case 2: case 3: list[i].deps.push_back({l, pick(0, 3)}); break;
            case 4: if (!list[i].deps.empty()) list[i].deps.erase(list[i].deps.begin()); break;
            case 5: list[i].src = l; break;
            case 6: list[i].dst = l; break;
            case 7: list.insert(list.begin() + static_cast<long>(i), list[i]); break;
            case 8: list.erase(list.begin() + static_cast<long>(i)); break;
            default: std::swap(list[i], list[static_cast<size_t>(pick(0, static_cast<int>(list.size()) - 1))]); break;
          }
        }
        ++tried;
        const ValidationReport report = validate(p, mode(in_place));
        if (!report.ok) {
          EXPECT_FALSE(report.message.empty());
          continue;
        }
        ++accepted;
        for (int k = 0; k < 10; ++k) {
          const ScheduleOutcome o = run_random_schedule(p, in_place, rng);
          ASSERT_FALSE(o.deadlock || o.wrong) << s.name << (in_place ? " in place: " : ": ") << o.detail
                                              << "\n" << print_program(p);
        }
      }
    }
  EXPECT_GT(accepted, 500) << "of " << tried;
  std::printf("%d of %d randomly edited programs validated and ran correctly\n", accepted, tried);
}

TEST(ValidatorCrossCheck, ProgramsWithARaceOrAMissingDependencyFailSomeSchedule) {
  // The simulator itself must be able to fail: the mutants the validator rejects for an ordering
  // reason go wrong under some schedule.
  std::mt19937_64 rng(5);
  Program race = samples::alltoall(3, 1, true);
  for (auto& list : race.rank_instructions)
    for (auto& ins : list)
      if (ins.op == Opcode::H2D) ins.deps.pop_back();
  ASSERT_FALSE(validate(race, mode(true)).ok);
  bool failed = false;
  for (int s = 0; s < 200 && !failed; ++s) failed = run_random_schedule(race, true, rng).wrong;
  EXPECT_TRUE(failed);
}

}  // namespace
}  // namespace braid::dsl
