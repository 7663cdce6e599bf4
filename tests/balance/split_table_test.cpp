// The split table: per-key state, the S_min rule, agreement across rank replicas, and the
// JSON tuning cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "balance/path_simulator.h"
#include "balance/split_table.h"
#include "balance/tuning_cache.h"

namespace braid::balance {
namespace {

std::unique_ptr<Balancer> make(std::string_view kind, int paths = 2) {
  std::unique_ptr<Balancer> b;
  EXPECT_EQ(make_balancer(kind, paths, 0.1, &b), Result::Success);
  return b;
}

TEST(SplitTable, SizeBucketsArePowersOfTwo) {
  EXPECT_EQ(size_bucket(0), 0);
  EXPECT_EQ(size_bucket(1), 0);
  EXPECT_EQ(size_bucket(2), 1);
  EXPECT_EQ(size_bucket(3), 1);
  EXPECT_EQ(size_bucket(size_t{256} << 20), 28);
  EXPECT_EQ(size_bucket((size_t{512} << 20) - 1), 28);
}

TEST(SplitTable, ReducePathMaxTakesTheSlowestRankPerPath) {
  const double m[] = {1.0, 5.0, 3.0, 2.0, 4.0, 0.5};  // 3 ranks x 2 paths
  std::vector<double> out;
  ASSERT_EQ(reduce_path_max(m, 3, 2, &out), Result::Success);
  EXPECT_EQ(out, (std::vector<double>{4.0, 5.0}));
  EXPECT_EQ(reduce_path_max(m, 2, 2, &out), Result::InvalidArgument);
  const double bad[] = {1.0, -1.0};
  EXPECT_EQ(reduce_path_max(bad, 1, 2, &out), Result::InvalidArgument);
}

TEST(SplitTable, SmallMessagesStayOnTheDedicatedPathAndKeysAreIndependent) {
  SplitTable table(make("hylink"), 1 << 20);
  const double t[] = {1.0, 0.0};  // as if the dedicated path did it all
  ASSERT_EQ(table.update(Collective::AllReduce, DataType::Float32, 4096, t, 1), Result::Success);
  EXPECT_TRUE(table.entries().empty());
  EXPECT_EQ(table.shares_for(Collective::AllReduce, DataType::Float32, 4096), dedicated_only(2));
  ASSERT_EQ(table.update(Collective::AllReduce, DataType::Float32, 64 << 20, t, 1),
            Result::Success);
  EXPECT_EQ(table.shares_for(Collective::AllReduce, DataType::Float32, 64 << 20).units[1], 16u);
  // Same bucket, other size: same state. Other dtype or collective: untouched start.
  EXPECT_EQ(table.shares_for(Collective::AllReduce, DataType::Float32, (64 << 20) + 100).units[1],
            16u);
  EXPECT_EQ(table.shares_for(Collective::AllReduce, DataType::Bfloat16, 64 << 20), dedicated_only(2));
  EXPECT_EQ(table.shares_for(Collective::AllGather, DataType::Float32, 64 << 20), dedicated_only(2));
}

// The orchestrator chooses call k's split before it learns call k-1's times: feeds a table that
// way (update_used with the shares each call used) for `calls` all_reduces of `bytes`.
struct LaggedRun {
  std::vector<Shares> used;                // per call
  std::vector<std::vector<double>> times;  // per call, per path
};
LaggedRun run_lagged(SplitTable& table, const PathSimulator& sim, size_t bytes, int calls) {
  LaggedRun run;
  for (int call = 0; call < calls; ++call) {
    run.used.push_back(table.issue(Collective::AllReduce, DataType::Float32, bytes));
    run.times.push_back(sim.path_seconds(call, bytes, run.used.back()));
    if (call > 0) {
      EXPECT_EQ(table.update_used(Collective::AllReduce, DataType::Float32, bytes,
                                  run.used[call - 1], run.times[call - 1], 1),
                Result::Success);
    }
  }
  return run;
}

// Fed with that lag, HyLink still settles where both paths take the same time, and FlexLink,
// which learns only from its current shares, skips stale calls.
TEST(SplitTable, LaggedUpdatesWithTheSharesUsedConverge) {
  const PathSimulator sim({SimPath{10e-6, 320e9}, SimPath{230e-6, 33e9}});
  for (const char* kind : {"hylink", "flexlink"}) {
    SplitTable table(make(kind), 1);
    const LaggedRun run = run_lagged(table, sim, size_t{1} << 30, 60);
    const std::vector<double>& t = run.times.back();
    const double last_imbalance = t[1] > 0 ? std::abs(t[0] - t[1]) / std::max(t[0], t[1]) : 1;
    std::printf("[sim] %s with lagged updates: last PCIe share %.4f, imbalance %.3f\n", kind,
                run.used.back().fraction(1), last_imbalance);
    if (std::string(kind) == "hylink") {
      EXPECT_LT(last_imbalance, 0.10);
    }
    EXPECT_GT(run.used.back().fraction(1), 0.02) << kind;
  }
}

// The same lagged feeding through PCIe interference like braid-bench --phases saw on the H200
// (bursts made PCIe ~50x slower from call 30): HyLink leaves PCIe within 3 calls of the start
// and is back at 80% of its quiet share within 5 calls of the end, whichever call the
// interference ends on (the end's phase against the probe backoff is the worst case).
TEST(SplitTable, LaggedHyLinkLeavesAndReturnsAroundInterference) {
  int worst_left = 0, worst_back = 0;
  for (int end = 50; end < 60; ++end) {
    const PathSimulator sim({SimPath{10e-6, 320e9}, SimPath{230e-6, 33e9}},
                            {SimInterference{1, 30, end, 0.02}});
    SplitTable table(make("hylink"), 1);
    const LaggedRun run = run_lagged(table, sim, size_t{256} << 20, end + 30);
    auto share = [&](int call) { return run.used[call].fraction(1); };
    const double quiet = share(29);
    ASSERT_GT(quiet, 0.02);
    int left = 30;
    while (left < end && share(left) > 0) ++left;
    int back = end;
    while (back < end + 30 && share(back) < 0.8 * quiet) ++back;
    worst_left = std::max(worst_left, left - 30);
    worst_back = std::max(worst_back, back - end);
  }
  std::printf("[sim] lagged hylink, interference ending at calls 50-59: PCIe left at most %d calls "
              "after the start, back at most %d calls after the end\n",
              worst_left, worst_back);
  EXPECT_LE(worst_left, 3);
  EXPECT_LE(worst_back, 5);
}

// Each rank sees its own times; after the all-gather every replica gets the same matrix, but
// here each replica also gets its rows in a different order. All must stay bitwise equal.
TEST(SplitTable, ReplicasFedTheSameTimesAgreeBitwise) {
  for (std::string_view kind : {"hylink", "flexlink"}) {
    constexpr int kRanks = 4;
    std::vector<SplitTable> replicas;
    for (int r = 0; r < kRanks; ++r) replicas.emplace_back(make(kind), 1 << 20);
    PathSimulator sim({{10e-6, 320e9}, {30e-6, 38e9}}, {SimInterference{1, 40, 80, 0.3}});
    const size_t sizes[] = {size_t{8} << 20, size_t{256} << 20, size_t{1} << 30};
    const Collective colls[] = {Collective::AllReduce, Collective::AllGather};
    uint64_t seed = 7;
    auto jitter = [&] {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      return 1.0 + double(seed >> 40) / double(1ull << 24) * 0.2;  // up to +20% per rank
    };
    for (int call = 0; call < 120; ++call) {
      const Collective c = colls[call % 2];
      const size_t bytes = sizes[call % 3];
      Shares s = replicas[0].shares_for(c, DataType::Bfloat16, bytes);
      for (int r = 1; r < kRanks; ++r)
        ASSERT_EQ(replicas[r].shares_for(c, DataType::Bfloat16, bytes), s) << kind << " " << call;
      std::vector<double> base = sim.path_seconds(call, bytes, s);
      std::vector<double> matrix;  // rank rows, each with its own jitter
      for (int r = 0; r < kRanks; ++r)
        for (double t : base) matrix.push_back(t * jitter());
      for (int r = 0; r < kRanks; ++r) {
        std::vector<double> rotated(matrix.size());
        for (int row = 0; row < kRanks; ++row)  // replica r sees the rows rotated by r
          std::copy_n(matrix.begin() + ((row + r) % kRanks) * 2, 2, rotated.begin() + row * 2);
        ASSERT_EQ(replicas[r].update(c, DataType::Bfloat16, bytes, rotated, kRanks),
                  Result::Success);
      }
    }
    // Bitwise: the learned shares, and for HyLink the double alpha behind them, are equal.
    EXPECT_GT(replicas[0].entries().size(), 3u);
    for (int r = 1; r < kRanks; ++r) {
      ASSERT_EQ(replicas[r].entries().size(), replicas[0].entries().size());
      auto a = replicas[0].entries().begin();
      for (const auto& [key, b] : replicas[r].entries()) {
        EXPECT_TRUE(key == a->first);
        EXPECT_EQ(b->shares(), a->second->shares());
        // Clones fed further identical input must also stay equal (state, not only output).
        auto x = b->clone();
        auto y = a->second->clone();
        const double t[] = {2e-3, 1e-3};
        for (int i = 0; i < 20; ++i) x->observe(t), y->observe(t);
        EXPECT_EQ(x->shares(), y->shares());
        ++a;
      }
    }
  }
}

class TuningCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("braid_balance_cache_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string file(const char* name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(TuningCache, RoundTripRestoresLearnedShares) {
  SplitTable learned(make("hylink"), 1 << 20);
  PathSimulator sim({{10e-6, 320e9}, {30e-6, 38e9}});
  for (int call = 0; call < 10; ++call) {
    for (size_t bytes : {size_t{4} << 20, size_t{256} << 20}) {
      auto t = sim.path_seconds(call, bytes, learned.shares_for(Collective::AllReduce,
                                                                DataType::Float32, bytes));
      ASSERT_EQ(learned.update(Collective::AllReduce, DataType::Float32, bytes, t, 1),
                Result::Success);
    }
  }
  const Shares big = learned.shares_for(Collective::AllReduce, DataType::Float32, 256 << 20);
  EXPECT_GT(big.units[1], 50u);
  ASSERT_EQ(save_tuning_cache(learned, file("cache.json")), Result::Success);

  SplitTable fresh(make("hylink"), 1 << 20);
  EXPECT_EQ(load_tuning_cache(fresh, file("cache.json")), 2u);
  EXPECT_EQ(fresh.shares_for(Collective::AllReduce, DataType::Float32, 256 << 20), big);
  EXPECT_EQ(fresh.shares_for(Collective::AllReduce, DataType::Float32, 4 << 20),
            learned.shares_for(Collective::AllReduce, DataType::Float32, 4 << 20));

  // A cache learned by another balancer is not applied.
  SplitTable flex(make("flexlink"), 1 << 20);
  EXPECT_EQ(load_tuning_cache(flex, file("cache.json")), 0u);  // made by hylink: refused
}

TEST_F(TuningCache, CorruptOrForeignFilesAreIgnored) {
  SplitTable table(make("hylink"), 1 << 20);
  EXPECT_EQ(load_tuning_cache(table, file("missing.json")), 0u);
  const char* bad[] = {
      "",
      "{not json",
      "[1,2,3]",
      R"({"version": 2, "balancer": "hylink", "share_units": 1024, "num_paths": 2, "entries": []})",
      R"({"version": 1, "balancer": "hylink", "share_units": 1024, "num_paths": 3, "entries": []})",
      R"({"version": 1, "balancer": "hylink", "share_units": 1024, "num_paths": 2,
          "entries": [{"collective": "allreduce", "dtype": "float", "bucket": 28, "units": [1000, 100]}]})",
      R"({"version": 1, "balancer": "hylink", "share_units": 1024, "num_paths": 2,
          "entries": [{"collective": "nope", "dtype": "float", "bucket": 28, "units": [924, 100]}]})",
      R"({"version": 1, "balancer": "hylink", "share_units": 1024, "num_paths": 2,
          "entries": [{"collective": "allreduce", "dtype": "float", "bucket": "x", "units": [924, 100]}]})",
      // One good entry before a bad one: nothing at all is applied.
      R"({"version": 1, "balancer": "hylink", "share_units": 1024, "num_paths": 2,
          "entries": [{"collective": "allreduce", "dtype": "float", "bucket": 28, "units": [924, 100]},
                      {"collective": "allreduce", "dtype": "float", "bucket": 29, "units": [-1, 100]}]})",
  };
  for (const char* text : bad) {
    std::ofstream(file("bad.json"), std::ios::trunc) << text;
    EXPECT_EQ(load_tuning_cache(table, file("bad.json")), 0u) << text;
    EXPECT_TRUE(table.entries().empty()) << text;
  }
  std::ofstream(file("good.json"), std::ios::trunc)
      << R"({"version": 1, "balancer": "hylink", "share_units": 1024, "num_paths": 2,
          "entries": [{"collective": "allreduce", "dtype": "float", "bucket": 28, "units": [924, 100]}]})";
  EXPECT_EQ(load_tuning_cache(table, file("good.json")), 1u);
  EXPECT_EQ(table.shares_for(Collective::AllReduce, DataType::Float32, 256 << 20),
            (Shares{{924, 100}}));
}

TEST_F(TuningCache, SaveToAnUnwritablePlaceFails) {
  SplitTable table(make("static"), 1 << 20);
  EXPECT_EQ(save_tuning_cache(table, file("no/such/dir/cache.json")), Result::SystemError);
}

}  // namespace
}  // namespace braid::balance
