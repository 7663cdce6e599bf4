// A collective in two halves (engine::Communicator::queue / complete), as braid's drop-in runs its
// PCIe share: the calling thread queues every device operation of several calls ahead, each gated
// on the ranks' meeting, and a host-only thread (device/host_only_thread.h) completes them in order.
// Checked exactly against a reference written here for every splittable collective on ranges of
// every block, with integer Avg and float Avg (whose device-side scaling happens before the
// meeting); and the rules: a host-only thread cannot queue device work, PreMulSum cannot be queued,
// a call queued after the host half failed is told that failure.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <span>
#include <thread>
#include <vector>

#include "common/settings.h"
#include "device/host_only_thread.h"
#include "harness.h"

namespace braid {
namespace {

constexpr size_t kCount = 3000;  // elements per block
constexpr int32_t kUntouched = -7;

int32_t input(int rank, int call, size_t i) {
  return static_cast<int32_t>((rank + 1) * 1009 + call * 31 + static_cast<int>(i % 997));
}

struct Case {
  Collective collective;
  RedOp op;
  engine::BlockRange range;
  int root = 0;
};

// The calls every rank queues ahead, in this order, before any is completed.
const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {Collective::AllReduce, RedOp::Sum, {0, kCount}},
      {Collective::AllGather, RedOp::Sum, {1024, 1500}},
      {Collective::ReduceScatter, RedOp::Max, {7, 2000}},
      {Collective::Broadcast, RedOp::Sum, {512, 2488}, 1},
      {Collective::Reduce, RedOp::Sum, {0, 1000}, 1},
      {Collective::AllReduce, RedOp::Avg, {1000, 2000}},  // integer Avg: divided on the device
  };
  return all;
}

size_t send_elements(Collective c, int nranks) {
  return c == Collective::ReduceScatter ? kCount * static_cast<size_t>(nranks) : kCount;
}
size_t recv_elements(Collective c, int nranks) {
  return c == Collective::AllGather ? kCount * static_cast<size_t>(nranks) : kCount;
}

// Rank `rank`'s expected receive buffer for call `k`, from the definitions (NCCL's).
std::vector<int32_t> expected(int k, int rank, int nranks) {
  const Case& c = cases()[static_cast<size_t>(k)];
  std::vector<int32_t> out(recv_elements(c.collective, nranks), kUntouched);
  const auto combine = [&](auto value_of) {
    int64_t acc = value_of(0);
    for (int q = 1; q < nranks; ++q) {
      const int64_t v = value_of(q);
      acc = c.op == RedOp::Max ? std::max(acc, v) : acc + v;
    }
    if (c.op == RedOp::Avg) acc /= nranks;
    return static_cast<int32_t>(acc);
  };
  for (size_t i = c.range.begin; i < c.range.begin + c.range.count; ++i) {
    switch (c.collective) {
      case Collective::AllReduce:
        out[i] = combine([&](int q) { return input(q, k, i); });
        break;
      case Collective::Reduce:
        if (rank == c.root) out[i] = combine([&](int q) { return input(q, k, i); });
        break;
      case Collective::Broadcast:
        out[i] = input(c.root, k, i);
        break;
      case Collective::AllGather:
        for (int q = 0; q < nranks; ++q) out[static_cast<size_t>(q) * kCount + i] = input(q, k, i);
        break;
      case Collective::ReduceScatter:
        out[i] = combine([&](int q) { return input(q, k, static_cast<size_t>(rank) * kCount + i); });
        break;
      default:
        break;
    }
  }
  return out;
}

// The host half of `queued`, in order, on a thread marked host-only as braid's progress thread is:
// the CPU backend refuses any device work from it.
Result complete_on_host_only_thread(engine::Communicator& comm, std::span<engine::QueuedCollective> queued) {
  Result done = Result::Success;
  std::thread host([&] {
    device::mark_host_only_thread();
    for (size_t k = 0; k < queued.size() && done == Result::Success; ++k) done = comm.complete(queued[k]);
  });
  host.join();
  return done;
}

class EngineQueued : public ::testing::TestWithParam<std::tuple<test::Mode, int>> {};

TEST_P(EngineQueued, CallsQueuedAheadCompleteExactlyOnAHostOnlyThread) {
  const auto [mode, nranks] = GetParam();
  const topo::Topology topology = test::load_test_topology();
  const size_t per_call = kCount * static_cast<size_t>(nranks) * sizeof(int32_t);
  const size_t out_bytes = per_call * cases().size();
  const auto outcomes = test::run_ranks(mode, nranks, topology, out_bytes, [&](engine::Communicator& comm, int rank,
                                                                               unsigned char* out) {
    const int n = static_cast<int>(cases().size());
    std::vector<std::vector<int32_t>> send(n), recv(n);
    std::vector<engine::QueuedCollective> queued(n);
    for (int k = 0; k < n; ++k) {
      const Case& c = cases()[static_cast<size_t>(k)];
      send[k].resize(send_elements(c.collective, nranks));
      for (size_t i = 0; i < send[k].size(); ++i) send[k][i] = input(rank, k, i);
      recv[k].assign(recv_elements(c.collective, nranks), kUntouched);
      BRAID_TRY(comm.queue(c.collective, send[k].data(), recv[k].data(), kCount, DataType::Int32, c.op, c.root, c.range,
                           &queued[k]));
    }
    BRAID_TRY(complete_on_host_only_thread(comm, queued));
    for (int k = 0; k < n; ++k)
      std::memcpy(out + per_call * static_cast<size_t>(k), recv[k].data(), recv[k].size() * sizeof(int32_t));
    return Result::Success;
  });
  for (int r = 0; r < nranks; ++r) {
    ASSERT_EQ(outcomes[r].result, Result::Success) << "rank " << r << ": " << outcomes[r].error;
    for (int k = 0; k < static_cast<int>(cases().size()); ++k) {
      const std::vector<int32_t> want = expected(k, r, nranks);
      std::vector<int32_t> got(want.size());
      std::memcpy(got.data(), outcomes[r].output.data() + per_call * static_cast<size_t>(k), got.size() * sizeof(int32_t));
      size_t wrong = 0;
      for (size_t i = 0; i < want.size(); ++i) wrong += got[i] != want[i];
      EXPECT_EQ(wrong, 0u) << "rank " << r << " call " << k << " ("
                           << collective_name(cases()[static_cast<size_t>(k)].collective) << ")";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, EngineQueued,
                         ::testing::Combine(::testing::Values(test::Mode::Threads, test::Mode::Processes),
                                            ::testing::Values(2, 3, 4)),
                         [](const auto& param_info) {
                           return std::string(test::mode_name(std::get<0>(param_info.param))) + "_" +
                                  std::to_string(std::get<1>(param_info.param)) + "_ranks";
                         });

// NCCL's in-place forms (AllReduce on one buffer, AllGather's input inside its output, ReduceScatter's
// output inside its input), queued ahead before any rank knows whether the others are in place.
TEST(EngineQueuedRules, InPlaceCallsAreExact) {
  const topo::Topology topology = test::load_test_topology();
  constexpr int kRanks = 3;
  constexpr size_t kBytes = 3 * kCount * kRanks * sizeof(int32_t);
  const auto outcomes = test::run_ranks(test::Mode::Processes, kRanks, topology, kBytes,
                                        [&](engine::Communicator& comm, int rank, unsigned char* out) {
    const size_t n = kCount * kRanks;
    std::vector<int32_t> ar(kCount), ag(n, kUntouched), rs(n);
    for (size_t i = 0; i < kCount; ++i) ar[i] = input(rank, 0, i);
    for (size_t i = 0; i < kCount; ++i) ag[static_cast<size_t>(rank) * kCount + i] = input(rank, 1, i);
    for (size_t i = 0; i < n; ++i) rs[i] = input(rank, 2, i);
    engine::QueuedCollective q[3];
    BRAID_TRY(comm.queue(Collective::AllReduce, ar.data(), ar.data(), kCount, DataType::Int32, RedOp::Sum, 0,
                         engine::BlockRange{}, &q[0]));
    BRAID_TRY(comm.queue(Collective::AllGather, ag.data() + static_cast<size_t>(rank) * kCount, ag.data(), kCount,
                         DataType::Int32, RedOp::Sum, 0, engine::BlockRange{}, &q[1]));
    BRAID_TRY(comm.queue(Collective::ReduceScatter, rs.data(), rs.data() + static_cast<size_t>(rank) * kCount, kCount,
                         DataType::Int32, RedOp::Sum, 0, engine::BlockRange{}, &q[2]));
    BRAID_TRY(complete_on_host_only_thread(comm, q));
    auto* o = reinterpret_cast<int32_t*>(out);
    std::memcpy(o, ar.data(), kCount * sizeof(int32_t));
    std::memcpy(o + n, ag.data(), n * sizeof(int32_t));
    std::memcpy(o + 2 * n, rs.data() + static_cast<size_t>(rank) * kCount, kCount * sizeof(int32_t));
    return Result::Success;
  });
  const size_t n = kCount * kRanks;
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(outcomes[r].result, Result::Success) << outcomes[r].error;
    const auto* got = reinterpret_cast<const int32_t*>(outcomes[r].output.data());
    size_t wrong = 0;
    for (size_t i = 0; i < kCount; ++i) {
      int32_t sum = 0, scattered = 0;
      for (int q = 0; q < kRanks; ++q) {
        sum += input(q, 0, i);
        scattered += input(q, 2, static_cast<size_t>(r) * kCount + i);
      }
      wrong += got[i] != sum;
      wrong += got[2 * n + i] != scattered;
    }
    for (size_t i = 0; i < n; ++i) wrong += got[n + i] != input(static_cast<int>(i / kCount), 1, i % kCount);
    EXPECT_EQ(wrong, 0u) << "rank " << r;
  }
}

// Float Avg is PreMulSum(1/n) inside the engine: the same scalar on every rank, so its device-side
// scaling may be queued before the meeting.
TEST(EngineQueuedRules, FloatAvgIsExactAndPreMulSumIsRefused) {
  const topo::Topology topology = test::load_test_topology();
  constexpr int kRanks = 4;
  const auto outcomes = test::run_ranks(test::Mode::Threads, kRanks, topology, kCount * sizeof(float),
                                        [&](engine::Communicator& comm, int rank, unsigned char* out) {
    std::vector<float> x(kCount);
    for (size_t i = 0; i < kCount; ++i) x[i] = static_cast<float>(4 * ((rank + 1) * 8 + static_cast<int>(i % 64)));
    engine::QueuedCollective q;
    if (comm.queue(Collective::AllReduce, x.data(), x.data(), kCount, DataType::Float32, RedOp::PreMulSum, 0,
                   engine::BlockRange{}, &q) != Result::InvalidUsage)
      return fail(Result::InternalError, "PreMulSum was queued");
    BRAID_TRY(comm.queue(Collective::AllReduce, x.data(), x.data(), kCount, DataType::Float32, RedOp::Avg, 0,
                         engine::BlockRange{}, &q));
    BRAID_TRY(complete_on_host_only_thread(comm, std::span<engine::QueuedCollective>(&q, 1)));
    std::memcpy(out, x.data(), kCount * sizeof(float));
    return Result::Success;
  });
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(outcomes[r].result, Result::Success) << outcomes[r].error;
    const auto* got = reinterpret_cast<const float*>(outcomes[r].output.data());
    size_t wrong = 0;
    for (size_t i = 0; i < kCount; ++i) {
      // Powers of two and small integers: every order of the sum and the 1/4 scaling is exact.
      float want = 0;
      for (int q = 0; q < kRanks; ++q) want += static_cast<float>(4 * ((q + 1) * 8 + static_cast<int>(i % 64))) / kRanks;
      wrong += got[i] != want;
    }
    EXPECT_EQ(wrong, 0u) << "rank " << r;
  }
}

// The drop-in's order: planned, the host half handed to the host-only thread, and only then the
// device work queued (late here), so that the ranks' meeting never waits for the calling thread.
TEST(EngineQueuedRules, TheHostHalfMayStartBeforeTheDeviceWorkIsQueued) {
  const topo::Topology topology = test::load_test_topology();
  constexpr int kRanks = 3;
  const auto outcomes = test::run_ranks(test::Mode::Threads, kRanks, topology, kCount * sizeof(int32_t),
                                        [&](engine::Communicator& comm, int rank, unsigned char* out) {
    std::vector<int32_t> send(kCount), recv(kCount, kUntouched);
    for (size_t i = 0; i < kCount; ++i) send[i] = input(rank, 0, i);
    engine::QueuedCollective q;
    BRAID_TRY(comm.plan(Collective::AllReduce, send.data(), recv.data(), kCount, DataType::Int32, RedOp::Sum, 0,
                        engine::BlockRange{100, 2000}, &q));
    Result done = Result::InternalError;
    std::thread host([&] {
      device::mark_host_only_thread();
      done = comm.complete(q);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50 * (rank + 1)));
    const Result issued = comm.issue(q);
    host.join();
    BRAID_TRY(issued);
    BRAID_TRY(done);
    std::memcpy(out, recv.data(), kCount * sizeof(int32_t));
    return Result::Success;
  });
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(outcomes[r].result, Result::Success) << outcomes[r].error;
    std::vector<int32_t> got(kCount);
    std::memcpy(got.data(), outcomes[r].output.data(), kCount * sizeof(int32_t));
    size_t wrong = 0;
    for (size_t i = 0; i < kCount; ++i) {
      int32_t want = kUntouched;
      if (i >= 100 && i < 2100) {
        want = 0;
        for (int q = 0; q < kRanks; ++q) want += input(q, 0, i);
      }
      wrong += got[i] != want;
    }
    EXPECT_EQ(wrong, 0u) << "rank " << r;
  }
}

// Rank 1's host half fails (its meeting) and stops every rank before its device work is queued:
// the backend then refuses that work, and the caller is told the failure, not the refusal.
TEST(EngineQueuedRules, WorkQueuedAfterTheHostHalfFailedIsToldWhy) {
  setenv("BRAID_FAULT", "barrier@1", 1);
  settings_reload();
  const topo::Topology topology = test::load_test_topology();
  constexpr size_t kText = 256;
  const auto outcomes = test::run_ranks(test::Mode::Threads, 2, topology, kText, [&](engine::Communicator& comm, int rank,
                                                                                     unsigned char* out) {
    std::vector<int32_t> x(kCount, 1);
    engine::QueuedCollective q;
    BRAID_TRY(comm.plan(Collective::AllReduce, x.data(), x.data(), kCount, DataType::Int32, RedOp::Sum, 0,
                        engine::BlockRange{0, kCount}, &q));
    Result done = Result::Success;
    std::thread host([&] {
      device::mark_host_only_thread();
      done = comm.complete(q);
    });
    host.join();
    const Result issued = comm.issue(q);
    std::snprintf(reinterpret_cast<char*>(out), kText, "%s", last_error());
    if (rank == 1 && done == Result::Success) return fail(Result::InternalError, "the injected failure did not fail");
    return issued == Result::Success ? fail(Result::InternalError, "queued after the failure") : Result::Success;
  });
  unsetenv("BRAID_FAULT");
  settings_reload();
  for (const auto& o : outcomes) EXPECT_EQ(o.result, Result::Success) << o.error;
  const std::string told(reinterpret_cast<const char*>(outcomes[1].output.data()));
  EXPECT_NE(told.find("failure injected at step 'barrier'"), std::string::npos) << told;
}

TEST(EngineQueuedRules, AHostOnlyThreadCannotQueueDeviceWork) {
  const topo::Topology topology = test::load_test_topology();
  const auto outcomes = test::run_ranks(test::Mode::Threads, 2, topology, 64, [&](engine::Communicator& comm, int,
                                                                                  unsigned char* out) {
    std::vector<int32_t> x(kCount, 1);
    Result queued = Result::Success;
    std::string text;
    std::thread host([&] {
      device::mark_host_only_thread();
      queued = comm.all_reduce(x.data(), x.data(), kCount, DataType::Int32, RedOp::Sum);
      text = last_error();
    });
    host.join();
    std::snprintf(reinterpret_cast<char*>(out), 64, "%s", text.find("host-only thread") != std::string::npos ? "named" : "unnamed");
    return queued == Result::Success ? fail(Result::InternalError, "queued from a host-only thread") : Result::Success;
  });
  for (const auto& o : outcomes) {
    EXPECT_EQ(o.result, Result::Success) << o.error;
    EXPECT_STREQ(reinterpret_cast<const char*>(o.output.data()), "named");
  }
}

}  // namespace
}  // namespace braid
