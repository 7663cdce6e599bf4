// The validator: hand-written programs pass, every single-instruction mutation of them is caught,
// and each rule names the instruction that breaks it.
#include "dsl/validator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>

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

}  // namespace
}  // namespace braid::dsl
