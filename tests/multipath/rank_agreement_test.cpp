// A yes-or-no every rank agrees on (multipath/rank_agreement.h), over a stand-in exchange; the
// engine's own exchange across threads and processes is tested through it in stream_queues_test.
#include "multipath/rank_agreement.h"

#include <gtest/gtest.h>

namespace braid::multipath {
namespace {

// Every other rank's word as given; this rank's from the call.
WordExchange others_say(std::vector<uint64_t> others) {
  return [others](std::span<const uint64_t> mine, std::vector<uint64_t>* all) {
    *all = others;
    all->insert(all->begin(), mine.begin(), mine.end());
    return Result::Success;
  };
}

TEST(RankAgreement, TrueOnlyWhenEveryRankSaysYes) {
  bool all = false;
  ASSERT_EQ(every_rank(true, others_say({1, 1, 1}), &all), Result::Success);
  EXPECT_TRUE(all);
  ASSERT_EQ(every_rank(false, others_say({1, 1, 1}), &all), Result::Success);
  EXPECT_FALSE(all);
  ASSERT_EQ(every_rank(true, others_say({1, 0, 1}), &all), Result::Success);
  EXPECT_FALSE(all);
}

TEST(RankAgreement, AFailedExchangeFailsAndSaysNo) {
  bool all = true;
  const WordExchange broken = [](std::span<const uint64_t>, std::vector<uint64_t>*) { return Result::RemoteError; };
  EXPECT_EQ(every_rank(true, broken, &all), Result::RemoteError);
  EXPECT_FALSE(all);
}

}  // namespace
}  // namespace braid::multipath
