// Every collective, 1..8 ranks, every dtype x op (PreMulSum with a different scalar on every
// rank), counts 0/1/7 and 1,000,003, unaligned buffers (byte offsets 1..7), ranges of every block
// as a split call's PCIe share moves them, in place and out of place, with ranks as threads and as forked processes; each result checked
// against the shared reference (tests/support) and, where all ranks hold the same result, for
// bitwise identity.
#include <gtest/gtest.h>

#include "common/settings.h"
#include "engine_case.h"
#include "harness.h"
#include "support/scoped_env.h"

namespace braid {
namespace {

using test::Case;
using test::Mode;

std::vector<Case> small_cases(int ranks) {
  std::vector<Case> cases;
  size_t variant = 0;
  for (Collective c : all_collectives()) {
    cases.push_back({c, DataType::Float32, RedOp::Sum, 0, false, 0, 0});
    for (DataType t : all_datatypes()) {
      std::vector<RedOp> ops{RedOp::Sum};
      if (collective_reduces(c)) ops.assign(all_redops().begin(), all_redops().end());
      // One call per (collective, dtype, op); count 1 or 7 and in place or not rotate so every
      // collective meets every combination across dtypes and ops.
      for (RedOp op : ops) {
        ++variant;
        const size_t count = (variant / 2) % 2 == 0 ? 7 : 1;
        const bool in_place = variant % 2 == 1;
        cases.push_back({c, t, op, count, in_place, static_cast<int>(variant % ranks),
                         1 + variant % 7});
      }
    }
  }
  return cases;
}

// ThreadSanitizer cannot see synchronisation done by another process (release/acquire through
// shared memory written in the peer), so process ranks only produce false reports there; the
// thread-rank runs cover the same code over the same shared segments.
#if defined(__SANITIZE_THREAD__)
constexpr bool kSkipProcesses = true;
#else
constexpr bool kSkipProcesses = false;
#endif

// Runs the cases on every rank, then checks results and cross-rank identity.
void run_cases(Mode mode, int ranks, const std::vector<Case>& cases) {
  if (mode == Mode::Processes && kSkipProcesses) GTEST_SKIP() << "process ranks under TSan";
  const auto topo = test::load_test_topology();
  auto outcomes = test::run_ranks(
      mode, ranks, topo, cases.size() * sizeof(uint64_t),
      [&](engine::Communicator& comm, int, unsigned char* out) {
        for (size_t i = 0; i < cases.size(); ++i) {
          uint64_t hash = 0;
          BRAID_TRY(test::run_case(comm, cases[i], &hash));
          std::memcpy(out + i * sizeof(uint64_t), &hash, sizeof(hash));
        }
        return Result::Success;
      });
  for (int r = 0; r < ranks; ++r)
    ASSERT_EQ(outcomes[r].result, Result::Success)
        << test::mode_name(mode) << ", " << ranks << " ranks, rank " << r << ": " << outcomes[r].error;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (!test::outputs_identical(cases[i]) || cases[i].count == 0) continue;
    uint64_t h0 = 0;
    std::memcpy(&h0, outcomes[0].output.data() + i * 8, 8);
    for (int r = 1; r < ranks; ++r) {
      uint64_t h = 0;
      std::memcpy(&h, outcomes[r].output.data() + i * 8, 8);
      EXPECT_EQ(h, h0) << cases[i].text() << ": rank " << r << " differs bitwise from rank 0";
    }
  }
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<Mode, int>>& p) {
  return std::string(test::mode_name(std::get<0>(p.param))) + "_" +
         std::to_string(std::get<1>(p.param)) + "ranks";
}

class SmallSweep : public ::testing::TestWithParam<std::tuple<Mode, int>> {};

TEST_P(SmallSweep, EveryCollectiveDtypeOp) {
  const auto [mode, ranks] = GetParam();
  run_cases(mode, ranks, small_cases(ranks));
}

INSTANTIATE_TEST_SUITE_P(Engine, SmallSweep,
                         ::testing::Combine(::testing::Values(Mode::Threads, Mode::Processes),
                                            ::testing::Range(1, 9)),
                         param_name);

// The PCIe share of a split call: every collective braid splits x dtype x op over a range of
// every block starting at an odd element, in and out of place, unaligned, 2 to 8 ranks.
std::vector<Case> ranged_cases(int ranks) {
  std::vector<Case> cases;
  size_t variant = 0;
  for (Collective c : all_collectives()) {
    if (c == Collective::AllToAll) continue;  // not split (NCCL alone)
    for (DataType t : all_datatypes()) {
      std::vector<RedOp> ops{RedOp::Sum};
      if (collective_reduces(c)) ops.assign(all_redops().begin(), all_redops().end());
      for (RedOp op : ops) {
        ++variant;
        Case k{c, t, op, 37 + variant % 5, variant % 2 == 1, static_cast<int>(variant % ranks), variant % 7};
        k.range_begin = 1 + variant % 9;
        k.range_count = k.count - k.range_begin - variant % 3;
        cases.push_back(k);
      }
    }
  }
  return cases;
}

class RangedSweep : public ::testing::TestWithParam<std::tuple<Mode, int>> {};

TEST_P(RangedSweep, EverySplitCollectiveDtypeOpOverARange) {
  const auto [mode, ranks] = GetParam();
  run_cases(mode, ranks, ranged_cases(ranks));
}

INSTANTIATE_TEST_SUITE_P(Engine, RangedSweep,
                         ::testing::Combine(::testing::Values(Mode::Threads, Mode::Processes),
                                            ::testing::Range(2, 9)),
                         param_name);

// The PCIe path's ring (BRAID_ALGORITHM=ring: reductions on the GPUs, the host only forwards),
// which the cost model prefers where host memory limits HyLink's program (four and eight H200s):
// AllReduce and AllGather, every dtype x op, whole and over a range of every block.
class RingSweep : public ::testing::TestWithParam<std::tuple<Mode, int>> {};

TEST_P(RingSweep, EveryDtypeOpOnTheRing) {
  const auto [mode, ranks] = GetParam();
  const test::ScopedEnv ring("BRAID_ALGORITHM", "ring");
  std::vector<Case> cases;
  for (const std::vector<Case>& some : {small_cases(ranks), ranged_cases(ranks)})
    for (const Case& k : some)
      if (k.collective == Collective::AllReduce || k.collective == Collective::AllGather) cases.push_back(k);
  run_cases(mode, ranks, cases);
}

INSTANTIATE_TEST_SUITE_P(Engine, RingSweep,
                         ::testing::Combine(::testing::Values(Mode::Threads, Mode::Processes),
                                            ::testing::Range(2, 6)),
                         param_name);

// 1,000,003 elements: every rank count and every collective, rotating types and in-place.
class LargeCount : public ::testing::TestWithParam<std::tuple<Mode, int>> {};

TEST_P(LargeCount, OneMillionAndThree) {
  const auto [mode, ranks] = GetParam();
  static const DataType types[] = {DataType::Float32, DataType::Bfloat16, DataType::Int8,
                                   DataType::Float16, DataType::Int64, DataType::Float64,
                                   DataType::Uint32, DataType::Float8e4m3};
  const Collective c = all_collectives()[(ranks - 1) % kNumCollectives];
  const DataType t = types[(ranks - 1) % 8];
  const bool in_place = ranks % 2 == 0;
  std::vector<Case> cases{{c, t, RedOp::Sum, 1'000'003, in_place, ranks - 1, 3}};
  if (ranks <= 2) {  // the remaining collectives at small rank counts
    for (int i = 0; i < kNumCollectives; ++i)
      if (all_collectives()[i] != c)
        cases.push_back({all_collectives()[i], DataType::Float32, RedOp::Max, 1'000'003, !in_place, 0, 5});
  }
  run_cases(mode, ranks, cases);
}

INSTANTIATE_TEST_SUITE_P(Engine, LargeCount,
                         ::testing::Combine(::testing::Values(Mode::Threads, Mode::Processes),
                                            ::testing::Range(1, 9)),
                         param_name);

}  // namespace
}  // namespace braid
