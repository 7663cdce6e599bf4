// Where one collective through the drop-in goes, and why (multipath/admission.h): a table of cases
// with their routes and reasons, and the rule that the CUDA questions are asked only of calls that
// reach them (a call too small for braid's part costs no CUDA call).
#include "multipath/admission.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

namespace braid::multipath {
namespace {

// Answers as CUDA would, and counts the questions.
class FakeProbes : public AdmissionProbes {
 public:
  FakeProbes(bool capturing, BufferFit fit) : capturing_(capturing), fit_(fit) {}
  bool capturing() override {
    ++asked_capture;
    return capturing_;
  }
  BufferFit buffers() override {
    ++asked_buffers;
    return fit_;
  }
  int asked_capture = 0;
  int asked_buffers = 0;

 private:
  bool capturing_;
  BufferFit fit_;
};

// A large AllReduce on a 2-rank blocking communicator whose part is made and takes it.
AdmissionFacts taken() {
  AdmissionFacts f;
  f.collective = Collective::AllReduce;
  f.bytes = 256u << 20;
  f.comm_known = true;
  f.nranks = 2;
  f.part_attempted = true;
  f.part_made = true;
  f.part_takes = true;
  f.group_holding = GroupHolding::Auto;
  f.group_min_bytes = 64u << 20;
  return f;
}

template <typename Change>
AdmissionFacts with(Change change) {
  AdmissionFacts f = taken();
  change(f);
  return f;
}

AdmissionFacts first_call() {
  return with([](AdmissionFacts& f) {
    f.part_attempted = false;
    f.part_made = false;
    f.part_takes = false;
    f.part_may_make = true;
  });
}

struct Case {
  std::string name;
  AdmissionFacts facts;
  bool capturing;
  BufferFit fit;
  Route route;
  AdmissionReason reason;
  bool probes_asked;  // whether the decision needed CUDA at all
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

using R = AdmissionReason;
using F = AdmissionFacts;

std::vector<Case> cases() {
  const auto usable = BufferFit::Usable;
  return {
      {"split", taken(), false, usable, Route::Split, R::Taken, true},
      {"staged", taken(), false, BufferFit::Staged, Route::Staged, R::Taken, true},
      {"captured", taken(), true, usable, Route::Captured, R::Taken, true},
      {"first_call_makes", first_call(), false, usable, Route::Make, R::Taken, true},
      {"alltoall", with([](F& f) { f.collective = Collective::AllToAll; }), false, usable, Route::Nccl,
       R::NotSplittable, false},
      {"invalid_type", with([](F& f) { f.type_valid = false; }), false, usable, Route::Nccl, R::InvalidType, false},
      {"unknown_comm", with([](F& f) { f.comm_known = false; }), false, usable, Route::Nccl, R::CommUnknown, false},
      {"one_rank", with([](F& f) { f.nranks = 1; }), false, usable, Route::Nccl, R::OneRank, false},
      {"non_blocking", with([](F& f) { f.blocking = false; }), false, usable, Route::Nccl, R::NonBlocking, false},
      {"revoked", with([](F& f) { f.revoked = true; }), false, usable, Route::Nccl, R::Revoked, false},
      {"overflow", with([](F& f) { f.bytes_fit = false; }), false, usable, Route::Nccl, R::SizeOverflow, false},
      {"small_first_call", with([](F& f) { f = first_call(), f.part_may_make = false; }), false, usable, Route::Nccl,
       R::BelowFirstSize, false},
      {"part_declined", with([](F& f) { f.part_made = false; }), false, usable, Route::Nccl, R::PartDeclined, false},
      // PreMulSum never makes braid's part either: every rank brings the same kind of operator.
      {"premulsum", with([](F& f) { f.premulsum = true; }), false, usable, Route::Nccl, R::PreMulSum, false},
      {"premulsum_first_call", with([](F& f) { f = first_call(), f.premulsum = true; }), false, usable, Route::Nccl,
       R::PreMulSum, false},
      {"below_split_size", with([](F& f) { f.part_takes = false; }), false, usable, Route::Nccl, R::BelowSplitSize,
       false},
      {"group_holds", with([](F& f) { f.in_group = true, f.group_defers = true; }), false, usable, Route::Hold,
       R::Taken, true},
      {"group_holds_first_call", with([](F& f) { f = first_call(), f.in_group = true, f.group_defers = true; }),
       false, usable, Route::Hold, R::Taken, true},
      {"group_holding_off",
       with([](F& f) { f.in_group = true, f.group_defers = true, f.group_holding = GroupHolding::Off; }), false,
       usable, Route::Nccl, R::GroupHoldingOff, false},
      {"group_four_ranks", with([](F& f) { f.in_group = true, f.group_defers = true, f.nranks = 4; }), false, usable,
       Route::Nccl, R::GroupNotWorthHolding, false},
      {"group_four_ranks_holding_on",
       with([](F& f) { f.in_group = true, f.group_defers = true, f.nranks = 4, f.group_holding = GroupHolding::On; }),
       false, usable, Route::Hold, R::Taken, true},
      {"group_small", with([](F& f) { f.in_group = true, f.group_defers = true, f.bytes = 1u << 20; }), false, usable,
       Route::Nccl, R::GroupNotWorthHolding, false},
      {"group_broadcast",
       with([](F& f) { f.in_group = true, f.group_defers = true, f.collective = Collective::Broadcast; }), false,
       usable, Route::Nccl, R::GroupNotWorthHolding, false},
      {"group_not_deferring", with([](F& f) { f.in_group = true; }), false, usable, Route::Nccl, R::GroupNotDeferring,
       false},
      {"group_captured", with([](F& f) { f.in_group = true, f.group_defers = true; }), true, usable, Route::Nccl,
       R::CapturedInGroup, true},
      {"captured_first_call", first_call(), true, usable, Route::Nccl, R::CapturedBeforeMade, true},
      {"gpu_refuses", taken(), false, BufferFit::Unusable, Route::Nccl, R::GpuRefuses, true},
      {"staged_captured", taken(), true, BufferFit::Staged, Route::Nccl, R::StagedCaptured, true},
  };
}

class AdmissionTable : public ::testing::TestWithParam<Case> {};

TEST_P(AdmissionTable, EachCaseHasItsRouteAndReason) {
  const Case& c = GetParam();
  FakeProbes probes(c.capturing, c.fit);
  const Admission a = admit(c.facts, probes);
  EXPECT_EQ(route_name(a.route), std::string(route_name(c.route))) << reason_text(a.reason);
  EXPECT_EQ(a.reason, c.reason) << reason_text(a.reason);
  // Each question at most once, and none where the answer did not need one.
  EXPECT_LE(probes.asked_capture, 1);
  EXPECT_LE(probes.asked_buffers, 1);
  EXPECT_EQ(probes.asked_capture + probes.asked_buffers > 0, c.probes_asked);
  // The decision reports what it asked.
  if (probes.asked_capture > 0) {
    EXPECT_EQ(a.capturing, c.capturing);
  }
  if (probes.asked_buffers > 0) {
    EXPECT_EQ(a.fit, c.fit);
  }
  EXPECT_STRNE(reason_text(a.reason), "?");
}

INSTANTIATE_TEST_SUITE_P(Cases, AdmissionTable, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& param) { return param.param.name; });

// A split trace records the calls braid's part takes that still went to NCCL, not the small ones.
TEST(Admission, OnlyCallsThePartTakesAreTracedWhenTheyGoToNccl) {
  FakeProbes usable(false, BufferFit::Usable);
  EXPECT_FALSE(admit(taken(), usable).traced());
  EXPECT_FALSE(admit(with([](F& f) { f.part_takes = false; }), usable).traced());
  EXPECT_FALSE(admit(with([](F& f) { f.premulsum = true; }), usable).traced());
  EXPECT_TRUE(admit(with([](F& f) { f.in_group = true; }), usable).traced());
  FakeProbes unusable(false, BufferFit::Unusable);
  EXPECT_TRUE(admit(taken(), unusable).traced());
}

// Every reason and route has words for the log.
TEST(Admission, EveryReasonHasWords) {
  for (int r = 0; r <= static_cast<int>(AdmissionReason::Taken); ++r)
    EXPECT_STRNE(reason_text(static_cast<AdmissionReason>(r)), "?") << r;
  for (int r = 0; r <= static_cast<int>(Route::Captured); ++r) EXPECT_STRNE(route_name(static_cast<Route>(r)), "?") << r;
}

}  // namespace
}  // namespace braid::multipath
