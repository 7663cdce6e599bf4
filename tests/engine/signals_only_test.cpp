// A communicator made without the host path (CommunicatorOptions::host_path = false) serves
// meetings and exchanges, as braid's copy-engine NVLink path needs, and holds nothing else: no
// staging segments, no worker threads, no device scratch. Its collectives fail with a clear error.
#include <gtest/gtest.h>

#include <dirent.h>

#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace braid {
namespace {

// The braid segments in /dev/shm whose names contain `prefix`.
int segments_named(const std::string& prefix) {
  int found = 0;
  if (DIR* dir = opendir("/dev/shm")) {
    while (dirent* e = readdir(dir)) found += std::string(e->d_name).find(prefix) != std::string::npos;
    closedir(dir);
  }
  return found;
}

TEST(EngineSignalsOnly, ExchangesWorkAndNothingElseIsHeld) {
  const topo::Topology topology = test::load_test_topology();
  const engine::CommId id = engine::CommId::random();
  constexpr int kRanks = 3;
  std::vector<Result> results(kRanks, Result::InternalError);
  std::vector<std::vector<uint64_t>> seen(kRanks);
  std::vector<engine::Communicator::Footprint> held(kRanks);
  std::vector<Result> collective(kRanks, Result::Success);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r)
    ranks.emplace_back([&, r] {
      device::CpuBackend backend;
      std::unique_ptr<engine::Communicator> comm;
      results[r] = engine::Communicator::create(id, r, kRanks, topology, &backend, &comm,
                                                engine::CommunicatorOptions{.host_path = false});
      if (results[r] != Result::Success) return;
      const uint64_t mine[1] = {100u + static_cast<uint64_t>(r)};
      results[r] = comm->exchange(mine, &seen[r]);
      held[r] = comm->footprint();
      float x[4] = {1, 2, 3, 4};
      collective[r] = comm->all_reduce(x, x, 4, DataType::Float32, RedOp::Sum);
    });
  for (auto& t : ranks) t.join();
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(results[r], Result::Success) << "rank " << r;
    EXPECT_EQ(seen[r], (std::vector<uint64_t>{100, 101, 102})) << "rank " << r;
    EXPECT_EQ(held[r].threads, 0);
    EXPECT_EQ(held[r].device_bytes, 0u);
    EXPECT_GT(held[r].pinned_bytes, 0u);  // the control segment alone, without progress counters:
    EXPECT_LT(held[r].pinned_bytes, size_t{1} << 20);  // meetings pin kilobytes, not the programs' 8 MiB
    EXPECT_EQ(collective[r], Result::InvalidUsage);
  }
  EXPECT_EQ(segments_named("braid-" + id.hex()), 0);  // unlinked once every rank attached, none staged
}

TEST(EngineSignalsOnly, TheHostPathHoldsStagingWorkersAndScratch) {
  const topo::Topology topology = test::load_test_topology();
  const engine::CommId id = engine::CommId::random();
  std::vector<engine::Communicator::Footprint> held(2);
  std::vector<Result> results(2, Result::InternalError);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      device::CpuBackend backend;
      std::unique_ptr<engine::Communicator> comm;
      results[r] = engine::Communicator::create(id, r, 2, topology, &backend, &comm);
      if (results[r] == Result::Success) held[r] = comm->footprint();
    });
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(results[r], Result::Success);
    EXPECT_GT(held[r].threads, 0);
    EXPECT_GT(held[r].device_bytes, 0u);
    EXPECT_GT(held[r].pinned_bytes, held[r].device_bytes);  // control + staging
  }
}

}  // namespace
}  // namespace braid
