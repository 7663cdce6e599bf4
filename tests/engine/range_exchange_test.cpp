// The two engine calls a split collective needs: a collective over a range of every block (the
// PCIe share), which must leave the rest of the receive buffer untouched, and the host exchange
// every rank uses to agree on the next split.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "harness.h"

namespace braid {
namespace {

using Range = engine::Communicator::Range;

constexpr float kUntouched = -7.f;

float input(int rank, size_t block, size_t i) { return static_cast<float>((i * 3 + block * 5 + rank) % 17); }

// AllGather over elements [begin, begin+len) of each rank's block of `count`: the range lands in
// every block, everything else keeps its old value.
TEST(EngineRange, AllGatherRangeFillsOnlyTheRange) {
  const auto topo = test::load_test_topology();
  const int ranks = 3;
  const size_t count = 10'007, begin = 1'234, len = 5'000;
  for (test::Mode mode : {test::Mode::Threads, test::Mode::Processes}) {
    auto outcomes = test::run_ranks(mode, ranks, topo, ranks * count * sizeof(float),
                                    [&](engine::Communicator& comm, int rank, unsigned char* out) {
                                      std::vector<float> send(count), recv(ranks * count, kUntouched);
                                      for (size_t i = 0; i < count; ++i) send[i] = input(rank, 0, i);
                                      const Result r = comm.collective_range(
                                          Collective::AllGather, send.data(), recv.data(), count,
                                          DataType::Float32, RedOp::Sum, 0, nullptr, Range{begin, len});
                                      std::memcpy(out, recv.data(), recv.size() * sizeof(float));
                                      return r;
                                    });
    for (int r = 0; r < ranks; ++r) {
      ASSERT_EQ(outcomes[r].result, Result::Success) << test::mode_name(mode) << ": " << outcomes[r].error;
      const float* got = reinterpret_cast<const float*>(outcomes[r].output.data());
      for (int q = 0; q < ranks; ++q)
        for (size_t i = 0; i < count; ++i) {
          const bool inside = i >= begin && i < begin + len;
          ASSERT_EQ(got[q * count + i], inside ? input(q, 0, i) : kUntouched)
              << test::mode_name(mode) << " rank " << r << " block " << q << " element " << i;
        }
    }
  }
}

// ReduceScatter and AllReduce over a range: each rank's result holds the sums inside the range.
TEST(EngineRange, ReduceScatterAndAllReduceRanges) {
  const auto topo = test::load_test_topology();
  const int ranks = 2;
  const size_t count = 4'099, begin = 99, len = 4'000;
  auto outcomes = test::run_ranks(
      test::Mode::Threads, ranks, topo, 2 * count * sizeof(float),
      [&](engine::Communicator& comm, int rank, unsigned char* out) {
        std::vector<float> send(ranks * count), rs(count, kUntouched), ar(count, kUntouched);
        for (int b = 0; b < ranks; ++b)
          for (size_t i = 0; i < count; ++i) send[b * count + i] = input(rank, b, i);
        Result r = comm.collective_range(Collective::ReduceScatter, send.data(), rs.data(), count,
                                         DataType::Float32, RedOp::Sum, 0, nullptr, Range{begin, len});
        if (r == Result::Success)
          r = comm.collective_range(Collective::AllReduce, send.data(), ar.data(), count,
                                    DataType::Float32, RedOp::Max, 0, nullptr, Range{begin, len});
        std::memcpy(out, rs.data(), count * sizeof(float));
        std::memcpy(out + count * sizeof(float), ar.data(), count * sizeof(float));
        return r;
      });
  for (int r = 0; r < ranks; ++r) {
    ASSERT_EQ(outcomes[r].result, Result::Success) << outcomes[r].error;
    const float* rs = reinterpret_cast<const float*>(outcomes[r].output.data());
    const float* ar = rs + count;
    for (size_t i = 0; i < count; ++i) {
      const bool inside = i >= begin && i < begin + len;
      ASSERT_EQ(rs[i], inside ? input(0, r, i) + input(1, r, i) : kUntouched) << "rank " << r << " at " << i;
      ASSERT_EQ(ar[i], inside ? std::max(input(0, 0, i), input(1, 0, i)) : kUntouched) << "rank " << r << " at " << i;
    }
  }
}

// Ranks that disagree on the range get a clear mismatch error, not wrong data.
TEST(EngineRange, MismatchedRangesAreRefused) {
  const auto topo = test::load_test_topology();
  const size_t count = 1'000;
  auto outcomes = test::run_ranks(test::Mode::Threads, 2, topo, 0,
                                  [&](engine::Communicator& comm, int rank, unsigned char*) {
                                    std::vector<float> send(count), recv(count);
                                    return comm.collective_range(Collective::AllReduce, send.data(),
                                                                 recv.data(), count, DataType::Float32,
                                                                 RedOp::Sum, 0, nullptr,
                                                                 Range{rank == 0 ? 0u : 10u, 100});
                                  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(outcomes[r].result, Result::InvalidUsage);
    EXPECT_NE(outcomes[r].error.find("elements"), std::string::npos) << outcomes[r].error;
  }
}

TEST(EngineRange, RangeOutsideTheBlockIsInvalid) {
  const auto topo = test::load_test_topology();
  auto outcomes = test::run_ranks(test::Mode::Threads, 1, topo, 0,
                                  [&](engine::Communicator& comm, int, unsigned char*) {
                                    std::vector<float> buf(10);
                                    return comm.collective_range(Collective::AllReduce, buf.data(), buf.data(),
                                                                 10, DataType::Float32, RedOp::Sum, 0,
                                                                 nullptr, Range{5, 6});
                                  });
  EXPECT_EQ(outcomes[0].result, Result::InvalidArgument);
}

// The two meetings on two threads of every rank at once (braid's copy engines meet on the calling
// thread while its progress thread meets for the PCIe share): each thread gets its own meeting's
// values, in order, and never the other's. On one meeting they paired up wrong.
TEST(EngineExchange, TwoMeetingsOnTwoThreadsNeverPairUp) {
  const auto topo = test::load_test_topology();
  const int ranks = 3, rounds = 300;
  using Meeting = engine::Communicator::Meeting;
  for (test::Mode mode : {test::Mode::Threads, test::Mode::Processes}) {
    auto outcomes = test::run_ranks(mode, ranks, topo, 2 * sizeof(uint64_t),
                                    [&](engine::Communicator& comm, int rank, unsigned char* out) {
                                      uint64_t bad[2] = {0, 0};
                                      Result results[2] = {Result::Success, Result::Success};
                                      auto meet = [&](Meeting m, int which) {
                                        for (int k = 0; k < rounds && results[which] == Result::Success; ++k) {
                                          const uint64_t mine[2] = {uint64_t(which), uint64_t(rank * 10000 + k)};
                                          std::vector<uint64_t> all;
                                          results[which] = comm.exchange(m, mine, &all);
                                          if (results[which] != Result::Success) break;
                                          for (int q = 0; q < ranks; ++q)
                                            if (all[q * 2] != uint64_t(which) || all[q * 2 + 1] != uint64_t(q * 10000 + k))
                                              ++bad[which];
                                        }
                                      };
                                      std::thread path([&] { meet(Meeting::Path, 1); });
                                      meet(Meeting::Engine, 0);
                                      path.join();
                                      std::memcpy(out, bad, sizeof bad);
                                      return results[0] != Result::Success ? results[0] : results[1];
                                    });
    for (int r = 0; r < ranks; ++r) {
      ASSERT_EQ(outcomes[r].result, Result::Success) << outcomes[r].error;
      uint64_t bad[2] = {1, 1};
      std::memcpy(bad, outcomes[r].output.data(), sizeof bad);
      EXPECT_EQ(bad[0], 0u) << test::mode_name(mode) << " rank " << r << ": engine meeting";
      EXPECT_EQ(bad[1], 0u) << test::mode_name(mode) << " rank " << r << ": path meeting";
    }
  }
}

// Many exchanges in a row (parity slots reused) give every rank every rank's values, in order.
TEST(EngineExchange, EveryRankSeesEveryValue) {
  const auto topo = test::load_test_topology();
  const int ranks = 4, rounds = 200;
  for (test::Mode mode : {test::Mode::Threads, test::Mode::Processes}) {
    auto outcomes = test::run_ranks(mode, ranks, topo, sizeof(uint64_t),
                                    [&](engine::Communicator& comm, int rank, unsigned char* out) {
                                      uint64_t bad = 0;
                                      for (int k = 0; k < rounds; ++k) {
                                        const uint64_t mine[3] = {uint64_t(rank), uint64_t(k), uint64_t(rank * 1000 + k)};
                                        std::vector<uint64_t> all;
                                        const Result r = comm.exchange(mine, &all);
                                        if (r != Result::Success) return r;
                                        if (all.size() != 3u * ranks) ++bad;
                                        for (int q = 0; q < ranks && all.size() == 3u * ranks; ++q)
                                          if (all[q * 3] != uint64_t(q) || all[q * 3 + 1] != uint64_t(k) ||
                                              all[q * 3 + 2] != uint64_t(q * 1000 + k))
                                            ++bad;
                                      }
                                      std::memcpy(out, &bad, sizeof bad);
                                      return Result::Success;
                                    });
    for (int r = 0; r < ranks; ++r) {
      ASSERT_EQ(outcomes[r].result, Result::Success) << outcomes[r].error;
      uint64_t bad = 1;
      std::memcpy(&bad, outcomes[r].output.data(), sizeof bad);
      EXPECT_EQ(bad, 0u) << test::mode_name(mode) << " rank " << r;
    }
  }
}

}  // namespace
}  // namespace braid
