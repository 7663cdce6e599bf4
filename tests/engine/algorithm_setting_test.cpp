// BRAID_ALGORITHM picks the PCIe path's program: every value gives every collective its exact
// result, the ring where it exists (AllReduce, AllGather) and the hierarchical program elsewhere.
#include <gtest/gtest.h>

#include <vector>

#include "common/settings.h"
#include "harness.h"
#include "support/log_capture.h"

namespace braid {
namespace {

TEST(EngineAlgorithmSetting, EveryValueGivesEveryCollectiveItsResult) {
  constexpr int kRanks = 3;
  constexpr size_t kCount = 5000;
  for (const char* algorithm : {"hierarchical", "ring", "auto"}) {
    std::vector<test::RankOutcome> outcomes;
    const std::string log = test::capture_log({{"BRAID_ALGORITHM", algorithm}, {"BRAID_DEBUG", "INFO"},
                                               {"BRAID_DEBUG_SUBSYS", "PLAN"}}, [&] {
    outcomes = test::run_ranks(
        test::Mode::Threads, kRanks, test::load_test_topology(), 0,
        [&](engine::Communicator& comm, int r, unsigned char*) -> Result {
          std::vector<float> send(kCount * kRanks), recv(kCount * kRanks);
          for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<float>((i % 7) + r);
          // AllReduce: element i is the sum over ranks of (i % 7) + rank.
          BRAID_TRY(comm.all_reduce(send.data(), recv.data(), kCount, DataType::Float32, RedOp::Sum));
          for (size_t i = 0; i < kCount; ++i)
            if (recv[i] != static_cast<float>(kRanks * (i % 7) + kRanks * (kRanks - 1) / 2))
              return fail(Result::InternalError, "all_reduce element %zu is %g", i, recv[i]);
          // AllGather: block q is rank q's first kCount elements.
          BRAID_TRY(comm.all_gather(send.data(), recv.data(), kCount, DataType::Float32));
          for (int q = 0; q < kRanks; ++q)
            for (size_t i = 0; i < kCount; ++i)
              if (recv[q * kCount + i] != static_cast<float>((i % 7) + q))
                return fail(Result::InternalError, "all_gather block %d element %zu is %g", q, i, recv[q * kCount + i]);
          // ReduceScatter has no ring: the hierarchical program, whatever the setting.
          BRAID_TRY(comm.reduce_scatter(send.data(), recv.data(), kCount, DataType::Float32, RedOp::Sum));
          for (size_t i = 0; i < kCount; ++i) {
            const size_t e = r * kCount + i;
            if (recv[i] != static_cast<float>(kRanks * (e % 7) + kRanks * (kRanks - 1) / 2))
              return fail(Result::InternalError, "reduce_scatter element %zu is %g", i, recv[i]);
          }
          return Result::Success;
        });
    });
    for (int r = 0; r < kRanks; ++r)
      EXPECT_EQ(outcomes[r].result, Result::Success) << algorithm << ", rank " << r << ": " << outcomes[r].error;
    // The programs generated say which algorithm each collective got.
    const bool ring = log.find("allreduce ranks=3") != std::string::npos &&
                      log.find("algorithm=ring") != std::string::npos;
    if (std::string(algorithm) == "ring") {
      EXPECT_TRUE(ring) << log;
    }
    if (std::string(algorithm) == "hierarchical") {
      EXPECT_EQ(log.find("algorithm=ring"), std::string::npos) << log;
    }
    EXPECT_EQ(log.find("reducescatter ranks=3 chunks=1 placement=host algorithm=ring"), std::string::npos);
  }
}

}  // namespace
}  // namespace braid
