// The C API's correctness matrix with one forked process per GPU (braid's own unique id handed
// to every process), as a multi-process job runs it. This process never touches CUDA itself.
#include <gtest/gtest.h>

#include "api_harness.h"

namespace braid::apitest {
namespace {

TEST(ApiProcesses, OneProcessPerGpu) {
  const int n = gpu_count_without_cuda_in_this_process();
  if (n < 1) GTEST_SKIP() << "no GPU visible";
  const auto cases = full_matrix(n, {0, 1, 7, 1000003});
  const auto outcomes = run_as_processes(n, cases, 900);
  for (int r = 0; r < n; ++r) ASSERT_EQ(outcomes[r].error, "") << "rank " << r << " of " << n;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (!outputs_identical(cases[i]) || cases[i].count == 0) continue;
    for (int r = 1; r < n; ++r)
      EXPECT_EQ(outcomes[r].hashes[i], outcomes[0].hashes[i]) << cases[i].text() << ": rank " << r
                                                              << " differs bitwise from rank 0";
  }
}

}  // namespace
}  // namespace braid::apitest
