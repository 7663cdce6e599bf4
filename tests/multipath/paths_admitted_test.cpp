// Which of braid's paths a communicator may use, decided before braid makes anything for it
// (multipath/paths_admitted.h): a table of cases with their reasons, and the ranks' agreement.
#include "multipath/paths_admitted.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

namespace braid::multipath {
namespace {

struct Case {
  std::string name;
  PathFacts facts;
  PathRefusal copy_engines;
  PathRefusal pcie_share;
};

// Test names and ctest lines show the case's name, not its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> cases() {
  return {
      {"one_rank", {.nranks = 1, .nvlink = true}, PathRefusal::OneRank, PathRefusal::OneRank},
      {"two_nvlink", {.nranks = 2, .nvlink = true}, PathRefusal::None, PathRefusal::None},
      // Four ranks on NVLink: nothing of braid's was measured to pay, so braid makes nothing.
      {"four_nvlink", {.nranks = 4, .nvlink = true}, PathRefusal::NotTwoRanks, PathRefusal::NoGainMeasured},
      {"four_nvlink_split_size_chosen", {.nranks = 4, .nvlink = true, .split_size_chosen = true},
       PathRefusal::NotTwoRanks, PathRefusal::None},
      {"four_copy_forced", {.nranks = 4, .nvlink = true, .nvlink_path = "copy"}, PathRefusal::None,
       PathRefusal::NoGainMeasured},
      {"two_nccl_chosen", {.nranks = 2, .nvlink = true, .nvlink_path = "nccl"}, PathRefusal::NcclChosen,
       PathRefusal::None},
      {"two_pcie_only", {.nranks = 2, .nvlink = false}, PathRefusal::NoNvlink, PathRefusal::None},
      // HyLink's machines: GPUs on PCIe alone, at any rank count.
      {"eight_pcie_only", {.nranks = 8, .nvlink = false}, PathRefusal::NotTwoRanks, PathRefusal::None},
  };
}

class PathsAdmittedTable : public ::testing::TestWithParam<Case> {};

TEST_P(PathsAdmittedTable, EachCaseHasItsPathsAndReasons) {
  const Case& c = GetParam();
  const PathsAdmitted admitted = admit_paths(c.facts);
  EXPECT_EQ(admitted.copy_engines, c.copy_engines) << describe(admitted);
  EXPECT_EQ(admitted.pcie_share, c.pcie_share) << describe(admitted);
  EXPECT_EQ(admitted.any(), c.copy_engines == PathRefusal::None || c.pcie_share == PathRefusal::None);
  // The reason is in the text a log line prints.
  if (c.pcie_share != PathRefusal::None) {
    EXPECT_NE(describe(admitted).find(std::string(refusal_text(c.pcie_share))), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, PathsAdmittedTable, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& param) { return param.param.name; });

TEST(PathsAdmitted, ARankThatRefusesAPathTurnsItOffForEveryRankWithItsReason) {
  const PathsAdmitted mine = admit_paths({.nranks = 4, .nvlink = true, .split_size_chosen = true});
  const PathsAdmitted theirs = admit_paths({.nranks = 4, .nvlink = true});
  const PathsAdmitted agreed = combined(mine, theirs);
  EXPECT_FALSE(agreed.copy_engines_admitted());
  EXPECT_EQ(agreed.pcie_share, PathRefusal::NoGainMeasured);
  EXPECT_EQ(combined(theirs, mine).pcie_share, agreed.pcie_share);  // the same on every rank
}

TEST(PathsAdmitted, TheEncodedWordsCombineByTheirMaximumAsNcclsMaxAllReduceDoes) {
  const PathsAdmitted a = admit_paths({.nranks = 4, .nvlink = true, .split_size_chosen = true});
  const PathsAdmitted b = admit_paths({.nranks = 4, .nvlink = true});
  const auto wa = encode(a), wb = encode(b);
  const PathsAdmitted by_words = decode({std::max(wa[0], wb[0]), std::max(wa[1], wb[1])});
  const PathsAdmitted by_value = combined(a, b);
  EXPECT_EQ(by_words.copy_engines, by_value.copy_engines);
  EXPECT_EQ(by_words.pcie_share, by_value.pcie_share);
  EXPECT_EQ(by_words.pcie_share, PathRefusal::NoGainMeasured);
  // A word no rank could have written admits nothing.
  EXPECT_FALSE(decode({-1, 99}).any());
}

TEST(PathsAdmitted, ThePcieShareIsMadeOnlyWhereTheCallThatMakesBraidsPartUsesIt) {
  const PathThresholds thresholds{.pcie_share = 128u << 20, .copy_engines_gather = 16u << 20,
                                  .copy_engines_reduce = 128u << 20};
  const PathsAdmitted both = admit_paths({.nranks = 2, .nvlink = true});
  constexpr size_t MiB = size_t{1} << 20;
  // FSDP's first all_gather of 16 MB: the copy engines alone, nothing pinned.
  const PathsAdmitted small = made_at(both, thresholds, 16 * MiB);
  EXPECT_TRUE(small.copy_engines_admitted());
  EXPECT_EQ(small.pcie_share, PathRefusal::FirstCallSmall);
  EXPECT_NE(describe(small).find("first call braid took"), std::string::npos);
  // DDP's first 256 MB bucket: both.
  const PathsAdmitted large = made_at(both, thresholds, 256 * MiB);
  EXPECT_TRUE(large.copy_engines_admitted() && large.pcie_share_admitted());
  // A refusal already there stays (its reason is the one said).
  const PathsAdmitted four = admit_paths({.nranks = 4, .nvlink = true});
  EXPECT_EQ(made_at(four, thresholds, 16 * MiB).pcie_share, PathRefusal::NoGainMeasured);
  // The new code survives the agreement's words.
  EXPECT_EQ(decode(encode(small)).pcie_share, PathRefusal::FirstCallSmall);
}

TEST(PathsAdmitted, BraidMakesItsPartAtTheFirstCallAnAdmittedPathWouldTake) {
  const PathThresholds thresholds{.pcie_share = 128u << 20, .copy_engines_gather = 16u << 20,
                                  .copy_engines_reduce = 128u << 20};
  const PathsAdmitted both = admit_paths({.nranks = 2, .nvlink = true});
  const PathsAdmitted copy_only = admit_paths({.nranks = 4, .nvlink = true, .nvlink_path = "copy"});
  const PathsAdmitted pcie_only = admit_paths({.nranks = 4, .nvlink = true, .split_size_chosen = true});
  const PathsAdmitted none = admit_paths({.nranks = 4, .nvlink = true});
  constexpr size_t MiB = size_t{1} << 20;
  // A 64 MB DDP bucket where only the copy engines run: nothing takes it, so nothing is made yet.
  EXPECT_FALSE(takes(copy_only, thresholds, Collective::AllReduce, 64 * MiB));
  EXPECT_TRUE(takes(copy_only, thresholds, Collective::AllReduce, 128 * MiB));
  EXPECT_TRUE(takes(copy_only, thresholds, Collective::AllGather, 16 * MiB));
  EXPECT_FALSE(takes(copy_only, thresholds, Collective::ReduceScatter, 1024 * MiB));  // NCCL's alone
  EXPECT_TRUE(takes(both, thresholds, Collective::ReduceScatter, 128 * MiB));         // the PCIe share's
  EXPECT_FALSE(takes(pcie_only, thresholds, Collective::AllGather, 64 * MiB));
  EXPECT_TRUE(takes(pcie_only, thresholds, Collective::Broadcast, 128 * MiB));
  EXPECT_FALSE(takes(none, thresholds, Collective::AllReduce, 1024 * MiB));
  // What braid doctor prints (braid-plan --show-split-policy): the copy engines' size per collective.
  EXPECT_EQ(copy_engines_from(thresholds, Collective::AllGather), 16 * MiB);
  EXPECT_EQ(copy_engines_from(thresholds, Collective::AllReduce), 128 * MiB);
  EXPECT_EQ(copy_engines_from(thresholds, Collective::ReduceScatter), 0u);
}

}  // namespace
}  // namespace braid::multipath
