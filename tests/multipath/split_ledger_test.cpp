// The split ledger on its own (no GPU): every rank that issues the same calls and applies the
// same settled times, whenever it gets them, splits every call at the same element; the lag is
// enforced; the timed calls are the same on every rank and follow the rule of each kind.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "balance/balancer.h"
#include "multipath/split_ledger.h"

namespace braid::multipath {
namespace {

constexpr size_t kAlign = 4096;

std::unique_ptr<SplitLedger> make_ledger(int nranks, uint64_t lag, const char* balancer = "hylink") {
  std::unique_ptr<balance::Balancer> b;
  EXPECT_EQ(balance::make_balancer(balancer, 2, 0.25, &b), Result::Success);
  return std::make_unique<SplitLedger>(std::make_unique<balance::SplitTable>(std::move(b), size_t{1} << 20), nranks,
                                       lag, kAlign);
}

// Per-rank times of a call, rank-major (NVLink path, PCIe path): PCIe three times slower per
// element than NVLink, plus noise that differs by rank (the table takes the slowest rank's).
std::vector<double> times_of(const LedgerCall& c, int nranks, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> noise(0.9, 1.1);
  std::vector<double> t;
  for (int q = 0; q < nranks; ++q) {
    t.push_back(1e-9 * static_cast<double>(c.dedicated_elements + 1) * noise(rng));
    t.push_back(3e-9 * static_cast<double>(c.pcie_elements + 1) * noise(rng));
  }
  return t;
}

struct Issued {
  Collective collective;
  DataType type;
  size_t count;
};

std::vector<Issued> workload() {
  std::vector<Issued> calls;
  for (int step = 0; step < 60; ++step) {
    calls.push_back({Collective::AllReduce, DataType::Float32, size_t{16} << 20});
    calls.push_back({Collective::AllReduce, DataType::Bfloat16, size_t{6} << 20});
    if (step % 3 == 0) calls.push_back({Collective::AllGather, DataType::Float32, size_t{1} << 20});
    calls.push_back({Collective::AllReduce, DataType::Float32, 1000});  // below the threshold
  }
  return calls;
}

size_t bytes_of(const Issued& i, int nranks) {
  return i.count * datatype_size(i.type) * (i.collective == Collective::AllGather ? static_cast<size_t>(nranks) : 1);
}

// Runs `calls` on one rank, as the orchestrator does: before each call, the settled times of the
// calls through the lag are applied (times_of_call gives them; not-timed calls get none).
std::vector<LedgerCall> run_rank(SplitLedger& ledger, const std::vector<Issued>& calls,
                                 const std::function<std::vector<double>(const LedgerCall&)>& times_of_call) {
  std::vector<LedgerCall> issued;
  for (const Issued& i : calls) {
    while (ledger.applied() < ledger.must_apply_through()) {
      const LedgerCall& c = issued[ledger.applied()];
      EXPECT_EQ(ledger.apply(c, c.timed ? times_of_call(c) : std::vector<double>{}, nullptr), Result::Success);
    }
    LedgerCall c;
    EXPECT_EQ(ledger.next(i.collective, i.type, bytes_of(i, 2), i.count, &c), Result::Success);
    issued.push_back(c);
  }
  return issued;
}

// The agreement's premise: call k's split depends on the times of calls 1 .. k - lag and on nothing
// later, so ranks whose progress threads settle at different moments still cut alike. Changing
// call j's times leaves every split before call j + lag as it was, and changes some later one.
TEST(SplitLedger, ASplitDependsOnlyOnTimesThroughTheLag) {
  const auto calls = workload();
  for (uint64_t lag : {uint64_t{1}, uint64_t{4}, uint64_t{32}}) {
    std::mt19937_64 rng(lag);
    std::vector<std::vector<double>> agreed(calls.size());
    auto first = make_ledger(2, lag);
    const auto base = run_rank(*first, calls, [&](const LedgerCall& c) {
      if (agreed[c.call - 1].empty()) agreed[c.call - 1] = times_of(c, 2, rng);
      return agreed[c.call - 1];
    });
    size_t split = 0;
    for (const auto& c : base) split += c.pcie_elements > 0;
    EXPECT_GT(split, base.size() / 3) << "the workload must exercise split calls (lag " << lag << ")";
    // Another rank whose times for one timed call j differ (PCIe ten times slower).
    uint64_t j = 0;
    for (const auto& c : base)
      if (c.timed && c.call > 20) {
        j = c.call;
        break;
      }
    ASSERT_GT(j, 0u);
    auto second = make_ledger(2, lag);
    const auto changed = run_rank(*second, calls, [&](const LedgerCall& c) {
      std::vector<double> t = agreed[c.call - 1];
      if (c.call == j)
        for (size_t q = 1; q < t.size(); q += 2) t[q] *= 10;
      return t;
    });
    bool later_differs = false;
    for (size_t k = 0; k < base.size(); ++k) {
      if (base[k].call < j + lag) {
        ASSERT_EQ(changed[k].dedicated_elements, base[k].dedicated_elements) << "lag " << lag << " call " << k + 1;
        ASSERT_EQ(changed[k].timed, base[k].timed);
      } else {
        later_differs |= changed[k].dedicated_elements != base[k].dedicated_elements;
      }
    }
    EXPECT_TRUE(later_differs) << "call " << j << "'s times never mattered (lag " << lag << ")";
  }
}

TEST(SplitLedger, ApplyingAheadOfTheLagIsRefusedExceptForADrain) {
  auto ledger = make_ledger(2, 4);
  std::vector<LedgerCall> c(3);
  for (auto& call : c)
    ASSERT_EQ(ledger->next(Collective::AllReduce, DataType::Float32, size_t{8} << 20, size_t{2} << 20, &call),
              Result::Success);
  EXPECT_EQ(ledger->must_apply_through(), 0u);
  EXPECT_EQ(ledger->apply(c[0], {}, nullptr), Result::InternalError);
  for (auto& call : c) EXPECT_EQ(ledger->apply(call, {}, nullptr, true), Result::Success);
  EXPECT_EQ(ledger->applied(), 3u);
}

TEST(SplitLedger, TheTableMovesWithTheTimesAndCutsStayAligned) {
  auto ledger = make_ledger(2, 1);
  std::mt19937_64 rng(7);
  std::vector<size_t> pcie;
  for (int k = 0; k < 40; ++k) {
    LedgerCall c;
    ASSERT_EQ(ledger->next(Collective::AllReduce, DataType::Float32, size_t{64} << 20, size_t{16} << 20, &c),
              Result::Success);
    EXPECT_EQ(c.dedicated_elements + c.pcie_elements, size_t{16} << 20);
    EXPECT_EQ(c.dedicated_elements * 4 % kAlign, 0u);
    pcie.push_back(c.pcie_elements);
    ASSERT_EQ(ledger->apply(c, c.timed ? times_of(c, 2, rng) : std::vector<double>{}, nullptr), Result::Success);
  }
  // PCIe is three times slower per element: the balanced share is about 1/4; it moved there.
  EXPECT_NE(pcie.front(), pcie.back());
  EXPECT_NEAR(static_cast<double>(pcie.back()) / static_cast<double>(size_t{16} << 20), 0.25, 0.08);
}

TEST(SplitLedger, NextIsRefusedUntilTheLagIsMetAndApplyOnlyInOrder) {
  auto ledger = make_ledger(2, 3);
  std::vector<LedgerCall> c(4);
  for (int k = 0; k < 3; ++k)
    ASSERT_EQ(ledger->next(Collective::AllReduce, DataType::Float32, size_t{8} << 20, size_t{2} << 20, &c[k]),
              Result::Success);
  EXPECT_EQ(ledger->must_apply_through(), 1u);
  EXPECT_EQ(ledger->next(Collective::AllReduce, DataType::Float32, size_t{8} << 20, size_t{2} << 20, &c[3]),
            Result::InternalError);
  EXPECT_EQ(ledger->apply(c[1], {}, nullptr), Result::InternalError);  // call 2 before call 1
  EXPECT_EQ(ledger->apply(c[0], {}, nullptr), Result::Success);
  EXPECT_EQ(ledger->next(Collective::AllReduce, DataType::Float32, size_t{8} << 20, size_t{2} << 20, &c[3]),
            Result::Success);
  EXPECT_EQ(c[3].call, 4u);
}

TEST(SplitLedger, TheFirstCallsOfEachKindAreTimedThenOneInFour) {
  auto ledger = make_ledger(2, 1000, "static");
  std::vector<int> a_timed, b_timed;
  for (int k = 0; k < 40; ++k) {
    LedgerCall a, b;
    ASSERT_EQ(ledger->next(Collective::AllReduce, DataType::Float32, size_t{8} << 20, size_t{2} << 20, &a),
              Result::Success);
    ASSERT_EQ(ledger->next(Collective::AllGather, DataType::Float16, size_t{8} << 20, size_t{2} << 20, &b),
              Result::Success);
    ASSERT_GT(a.pcie_elements, 0u);
    a_timed.push_back(a.timed);
    b_timed.push_back(b.timed);
  }
  for (int k = 0; k < 40; ++k) {
    const bool want = k < static_cast<int>(SplitLedger::kFirstTimed) || k % SplitLedger::kTimeEvery == 0;
    EXPECT_EQ(a_timed[k], want) << k;
    EXPECT_EQ(b_timed[k], want) << k;  // kinds counted apart: interleaving changes nothing
  }
}

// Where braid's PCIe share may not run (few CUDA hardware queues): every call whole on the
// dedicated path, none timed, and the calls before the switch split as the table says.
TEST(SplitLedger, KeptToTheDedicatedPathEveryCallGoesWholeThere) {
  auto ledger = make_ledger(2, 1, "static");
  LedgerCall before, after;
  ASSERT_EQ(ledger->next(Collective::AllReduce, DataType::Float32, size_t{8} << 20, size_t{2} << 20, &before),
            Result::Success);
  EXPECT_GT(before.pcie_elements, 0u);
  ASSERT_EQ(ledger->apply(before, {}, nullptr), Result::Success);
  ledger->keep_to_dedicated_path();
  EXPECT_TRUE(ledger->dedicated_only());
  for (int k = 0; k < 8; ++k) {
    ASSERT_EQ(ledger->next(Collective::AllReduce, DataType::Float32, size_t{8} << 20, size_t{2} << 20, &after),
              Result::Success);
    EXPECT_EQ(after.dedicated_elements, size_t{2} << 20);
    EXPECT_EQ(after.pcie_elements, 0u);
    EXPECT_FALSE(after.timed);
    ASSERT_EQ(ledger->apply(after, {}, nullptr), Result::Success);
  }
}

TEST(SplitLedger, ExchangedTimesAreKeptOnlyWhereEveryRankMeasured) {
  const std::vector<double> seconds = agreed_seconds({2'000'000, 3'000'000, 1'500'000, 2'500'000});
  ASSERT_EQ(seconds.size(), 4u);
  EXPECT_DOUBLE_EQ(seconds[0], 2e-3);
  EXPECT_DOUBLE_EQ(seconds[3], 2.5e-3);
  EXPECT_TRUE(agreed_seconds({2'000'000, 3'000'000, kUnmeasured, kUnmeasured}).empty());
  // And an empty sample teaches the table nothing, on every rank alike.
  auto ledger = make_ledger(2, 1000, "static");
  LedgerCall c;
  ASSERT_EQ(ledger->next(Collective::AllReduce, DataType::Float32, size_t{8} << 20, size_t{2} << 20, &c),
            Result::Success);
  ASSERT_TRUE(c.timed);
  const double before = ledger->table().shares_for(c.collective, c.type, c.bytes).fraction(1);
  double after = -1;
  EXPECT_EQ(ledger->apply(c, agreed_seconds({1, 2, kUnmeasured, 4}), &after, /*beyond_lag=*/true), Result::Success);
  EXPECT_EQ(ledger->applied(), 1u);
  EXPECT_EQ(after, before);
}

}  // namespace
}  // namespace braid::multipath
