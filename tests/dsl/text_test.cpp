// The text form: round trips, exact error positions, and robustness against mangled input.
#include "dsl/text.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>

#include "common/result.h"
#include "program_samples.h"

namespace braid::dsl {
namespace {

TEST(TextTest, Figure3PrintsCanonicallyAndRoundTrips) {
  const Program p = samples::hylink_figure3();
  const std::string text = print_program(p);
  EXPECT_EQ(text,
            "program allreduce ranks=2 chunks=2 root=0\n"
            "# Rank 0\n"
            "D2H in[0] -> host0[0]\n"
            "D2H in[1] -> host0[1]\n"
            "REDUCE host0[0] -> host0[2] deps: host0[0]>=1, host0[2]>=1\n"
            "H2D host0[2] -> out[0] deps: host0[2]>=2\n"
            "H2D host0[1] -> out[1] deps: host0[1]>=2\n"
            "# Rank 1\n"
            "D2H in[0] -> host0[2]\n"
            "D2H in[1] -> host0[3]\n"
            "REDUCE host0[3] -> host0[1] deps: host0[3]>=1, host0[1]>=1\n"
            "H2D host0[1] -> out[1] deps: host0[1]>=2\n"
            "H2D host0[2] -> out[0] deps: host0[2]>=2\n");
  Program back;
  ASSERT_EQ(parse_program(text, &back), Result::Success) << last_error();
  EXPECT_EQ(back, p);
}

TEST(TextTest, PaperSpellingAndLooseWhitespaceParse) {
  // The paper's host[i], tabs, blank lines, comments, CRLF line ends, spaces inside brackets.
  const std::string text =
      "# a comment before the header\r\n"
      "  program   all_reduce ranks = 2   chunks=2 root=0  \r\n"
      "\n"
      "#Rank 1\n"
      "\tD2H in[ 0 ]->host[2]\n"
      "D2H in[1] -> host[3]\n"
      "REDUCE host[3] -> host[1]   deps:host[3]>=1 ,host[1] >= 1\n"
      "H2D host[1] -> out[1] deps: host[1]>=2\n"
      "H2D host[2] -> out[0] deps: host[2]>=2\n"
      "#   Rank   0   \n"
      "# just a remark about rank 0\n"
      "D2H in[0] -> host0[0]\n"
      "D2H in[1] -> host0[1]\n"
      "REDUCE host0[0] -> host0[2] deps: host0[0]>=1, host0[2]>=1\n"
      "H2D host0[2] -> out[0] deps: host0[2]>=2\n"
      "H2D host0[1] -> out[1] deps: host0[1]>=2";
  Program p;
  ASSERT_EQ(parse_program(text, &p), Result::Success) << last_error();
  EXPECT_EQ(p, samples::hylink_figure3());
}

TEST(TextTest, MissingSectionsPrintEmptyAndOtherNodesKeepTheirNumber) {
  Program p;
  ASSERT_EQ(parse_program("program broadcast ranks=3 chunks=1 root=2\n# Rank 1\n"
                          "H2D host7[12] -> out[0] deps: host7[12]>=1\n",
                          &p),
            Result::Success)
      << last_error();
  EXPECT_EQ(p.collective, Collective::Broadcast);
  EXPECT_EQ(p.root, 2);
  ASSERT_EQ(p.rank_instructions.size(), 3u);
  ASSERT_EQ(p.rank_instructions[1].size(), 1u);
  EXPECT_EQ(p.rank_instructions[1][0].src, (Location{Buffer::Host, 7, 12}));
  EXPECT_EQ(print_program(p),
            "program broadcast ranks=3 chunks=1 root=2\n# Rank 0\n# Rank 1\n"
            "H2D host7[12] -> out[0] deps: host7[12]>=1\n# Rank 2\n");
}

TEST(TextTest, EveryHandWrittenSampleRoundTrips) {
  for (const auto& s : samples::all_samples()) {
    const std::string text = print_program(s.program);
    Program back;
    ASSERT_EQ(parse_program(text, &back), Result::Success) << s.name << ": " << last_error();
    EXPECT_EQ(back, s.program) << s.name;
    EXPECT_EQ(print_program(back), text) << s.name;
  }
}

struct Malformed {
  std::string text;
  int line;
  int column;
  const char* message_part;
};

TEST(TextTest, MalformedInputsReportLineAndColumn) {
  const std::string h = "program allreduce ranks=2 chunks=2 root=0\n";  // line 1
  const std::string s = h + "# Rank 0\n";                                // line 2
  const std::vector<Malformed> cases = {
      {"", 1, 1, "missing the header"},
      {"D2H in[0] -> host0[0]\n", 1, 1, "expected the header"},
      {"program allreduce ranks=2\n", 1, 26, "lacks chunks"},
      {"program allgreduce ranks=2 chunks=1\n", 1, 9, "unknown collective"},
      {"program allreduce ranks=0 chunks=1\n", 1, 25, "at least 1"},
      {"program allreduce ranks=65537 chunks=1\n", 1, 25, "too large"},
      {"program allreduce ranks=-2 chunks=1\n", 1, 25, "non-negative"},
      {"program allreduce ranks=2 chunks=99999999999999999999\n", 1, 34, "too large"},
      {"program allreduce ranks=2 chunks=1 root=2\n", 1, 41, "root 2 out of range"},
      {"program allreduce ranks=2 ranks=2 chunks=1\n", 1, 27, "given twice"},
      {"program allreduce ranks=2 chunks=1 colour=3\n", 1, 36, "unknown header field"},
      {"program allreduce ranks 2 chunks=1\n", 1, 25, "expected '='"},
      {"# Rank 0\nprogram allreduce ranks=2 chunks=1\n", 1, 1, "before the 'program' header"},
      {(h + "program allreduce ranks=2 chunks=1\n"), 2, 1, "second 'program' header"},
      {(h + "D2H in[0] -> host0[0]\n"), 2, 1, "before any '# Rank N' section"},
      {(h + "# Rank 2\n"), 2, 8, "rank 2 out of range"},
      {(h + "# Rank -1\n"), 2, 8, "non-negative"},
      {(h + "# Rank\n"), 2, 7, "expected rank"},
      {(h + "# Rank 1x\n"), 2, 9, "unexpected 'x'"},
      {(h + "# Rank 1 is the root\n"), 2, 10, "unexpected 'is'"},
      {(h + "# Rank 0\n# Rank 1\n  # Rank 0\n"), 4, 10, "appears twice"},
      {(s + "D2X in[0] -> host0[0]\n"), 3, 1, "unknown opcode 'D2X'"},
      {(s + "d2h in[0] -> host0[0]\n"), 3, 1, "unknown opcode 'd2h'"},
      {(s + "D2H gpu[0] -> host0[0]\n"), 3, 5, "unknown buffer 'gpu'"},
      {(s + "D2H in[0] host0[0]\n"), 3, 11, "expected '->'"},
      {(s + "D2H in[0] - > host0[0]\n"), 3, 11, "expected '->'"},
      {(s + "D2H in[0] ->\n"), 3, 13, "expected a location"},
      {(s + "D2H in 0] -> host0[0]\n"), 3, 8, "expected '['"},
      {(s + "D2H in[0 -> host0[0]\n"), 3, 10, "expected ']'"},
      {(s + "D2H in[-1] -> host0[0]\n"), 3, 8, "non-negative"},
      {(s + "D2H in[2147483648] -> host0[0]\n"), 3, 8, "too large"},
      {(s + "D2H in[2147483647] -> host4294967296[0]\n"), 3, 27, "too large"},
      {(s + "D2H in[0x1] -> host0[0]\n"), 3, 9, "unexpected 'x1'"},
      {(s + "D2H in[0] -> host0[0] extra\n"), 3, 23, "unexpected 'extra'"},
      {(s + "D2H in[0] -> host0[0];\n"), 3, 22, "unexpected ';'"},
      {(s + "D2H in[0] -> host0[0] deps\n"), 3, 27, "expected ':'"},
      {(s + "D2H in[0] -> host0[0] deps:\n"), 3, 28, "expected a location"},
      {(s + "D2H in[0] -> host0[0] deps: in[0]\n"), 3, 34, "expected '>='"},
      {(s + "D2H in[0] -> host0[0] deps: in[0]>=\n"), 3, 36, "expected version"},
      {(s + "D2H in[0] -> host0[0] deps: in[0]>=1 in[1]>=1\n"), 3, 38, "expected ','"},
      {(s + "D2H in[0] -> host0[0] deps: in[0]>=1,\n"), 3, 38, "expected a location"},
      {(s + "D2H in[0] -> host0[0] deps: in[0]>=-1\n"), 3, 36, "non-negative"},
      {(s + "D2H in[0] -> host0[0] deps: in[0]>=1 # why\n"), 3, 38, "expected ','"},
      {(s + "\n\n   H2D host0[0] -> out[0]\nH2D host0[0] -> ouch[0]\n"), 6, 17,
       "unknown buffer 'ouch'"},
  };
  for (const Malformed& c : cases) {
    Program p;
    ParseError e;
    clear_last_error();
    EXPECT_EQ(parse_program(c.text, &p, &e), Result::InvalidArgument) << c.text;
    EXPECT_EQ(e.line, c.line) << c.text << " -> " << e.message;
    EXPECT_EQ(e.column, c.column) << c.text << " -> " << e.message;
    EXPECT_NE(e.message.find(c.message_part), std::string::npos) << c.text << " -> " << e.message;
    const std::string expected_error =
        "line " + std::to_string(c.line) + ", column " + std::to_string(c.column) + ": ";
    EXPECT_EQ(std::string(last_error()).rfind(expected_error, 0), 0u) << last_error();
  }
}

TEST(TextTest, FailedParseLeavesTheOutputUntouched) {
  Program p = samples::hylink_figure3();
  const Program before = p;
  EXPECT_EQ(parse_program("program allreduce ranks=2 chunks=2\n# Rank 0\nNOP\n", &p),
            Result::InvalidArgument);
  EXPECT_EQ(p, before);
}

// A seeded generator of arbitrary (not necessarily valid) programs.
Program random_program(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Program p;
  p.collective = all_collectives()[pick(0, kNumCollectives - 1)];
  p.ranks = pick(1, 5);
  p.chunks = pick(1, 4);
  p.root = pick(0, p.ranks - 1);
  p.rank_instructions.resize(p.ranks);
  auto location = [&] {
    Location l;
    l.buffer = static_cast<Buffer>(pick(0, 2));
    l.numa = l.is_host() ? (pick(0, 9) == 0 ? 2147483647 : pick(0, 3)) : 0;
    l.index = pick(0, 19) == 0 ? 2147483647 : pick(0, 40);
    return l;
  };
  for (auto& list : p.rank_instructions) {
    const int n = pick(0, 12);
    for (int i = 0; i < n; ++i) {
      Instruction ins;
      ins.op = static_cast<Opcode>(pick(0, 4));
      ins.src = location();
      ins.dst = location();
      const int deps = pick(0, 3);
      for (int d = 0; d < deps; ++d) ins.deps.push_back({location(), pick(0, 5)});
      list.push_back(ins);
    }
  }
  return p;
}

TEST(TextTest, RandomProgramsRoundTrip) {
  std::mt19937 rng(20240611);
  for (int i = 0; i < 2000; ++i) {
    const Program p = random_program(rng);
    const std::string text = print_program(p);
    Program back;
    ASSERT_EQ(parse_program(text, &back), Result::Success) << text << last_error();
    ASSERT_EQ(back, p) << text;
  }
}

TEST(TextTest, MutatedTextsParseOrFailCleanly) {
  std::mt19937 rng(7);
  auto pick = [&](size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng); };
  std::vector<std::string> seeds = {print_program(samples::hylink_figure3())};
  for (int i = 0; i < 20; ++i) seeds.push_back(print_program(random_program(rng)));
  const std::string alphabet = "0123456789[]->=:,# \n\thostinoutdepsRankD2HREDUCE-+x\r\x7f\xff";
  const auto start = std::chrono::steady_clock::now();
  int parsed = 0, failed = 0;
  for (int i = 0; i < 30000; ++i) {
    std::string t = seeds[pick(0, seeds.size() - 1)];
    const int edits = static_cast<int>(pick(1, 4));
    for (int e = 0; e < edits && !t.empty(); ++e) {
      const size_t at = pick(0, t.size() - 1);
      switch (pick(0, 5)) {
        case 0: t[at] = static_cast<char>(pick(0, 255)); break;                  // byte flip
        case 1: t.insert(at, 1, alphabet[pick(0, alphabet.size() - 1)]); break;  // insertion
        case 2: t.erase(at, pick(1, 8)); break;                                  // deletion
        case 3: t.resize(at); break;                                             // truncation
        case 4: t.insert(at, std::string(pick(1, 30), '9')); break;              // huge number
        default: t.insert(at, t.substr(pick(0, t.size() - 1), pick(1, 40))); break;  // splice
      }
    }
    Program p;
    ParseError err;
    if (parse_program(t, &p, &err) == Result::Success) {
      ++parsed;
      // Whatever parses must print canonically and read back identically.
      const std::string canonical = print_program(p);
      Program again;
      ASSERT_EQ(parse_program(canonical, &again), Result::Success) << t;
      ASSERT_EQ(again, p) << t;
      ASSERT_EQ(print_program(again), canonical);
      ASSERT_EQ(static_cast<int>(p.rank_instructions.size()), p.ranks);
    } else {
      ++failed;
      ASSERT_GE(err.line, 1);
      ASSERT_GE(err.column, 1);
      ASSERT_FALSE(err.message.empty());
    }
  }
  EXPECT_GT(parsed, 100);
  EXPECT_GT(failed, 1000);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
}

}  // namespace
}  // namespace braid::dsl
