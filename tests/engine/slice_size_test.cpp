// A measurement, not a check (disabled by default): AllReduce time over slice sizes, used to pick
// the default of BRAID_SLICE_BYTES. Run with --gtest_also_run_disabled_tests.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "common/settings.h"
#include "harness.h"

namespace braid {
namespace {

TEST(EngineMeasure, DISABLED_SliceSizeSweep) {
  const auto topo = test::load_test_topology();
  const size_t count = size_t{16} << 20;  // 64 MiB of floats
  for (const char* slice : {"65536", "262144", "524288", "1048576", "4194304"}) {
    setenv("BRAID_SLICE_BYTES", slice, 1);
    settings_reload();
    for (int ranks : {2, 4}) {
      auto outcomes = test::run_ranks(
          test::Mode::Threads, ranks, topo, sizeof(double),
          [&](engine::Communicator& comm, int, unsigned char* out) {
            std::vector<float> send(count, 1.f), recv(count);
            BRAID_TRY(comm.all_reduce(send.data(), recv.data(), count, DataType::Float32, RedOp::Sum));
            double best = 1e9;
            for (int i = 0; i < 3; ++i) {
              const auto t0 = std::chrono::steady_clock::now();
              BRAID_TRY(comm.all_reduce(send.data(), recv.data(), count, DataType::Float32, RedOp::Sum));
              best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            }
            std::memcpy(out, &best, sizeof(best));
            return Result::Success;
          });
      double best = 0;
      std::memcpy(&best, outcomes[0].output.data(), sizeof(best));
      std::printf("slice %8s bytes, %d ranks: %.1f ms (%.2f GB/s algbw)\n", slice, ranks,
                  best * 1e3, count * 4 / best / 1e9);
    }
  }
  unsetenv("BRAID_SLICE_BYTES");
  settings_reload();
}

}  // namespace
}  // namespace braid
