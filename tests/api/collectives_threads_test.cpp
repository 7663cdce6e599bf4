// The C API's correctness matrix with ranks as threads of one process, one per GPU: on one GPU,
// then on every visible GPU. Every collective x dtype x op x count {0, 1, 7, 1000003} x in/out
// of place, checked against the shared reference (tests/support) and for bitwise identity
// across ranks.
#include <gtest/gtest.h>

#include "api_harness.h"

namespace braid::apitest {
namespace {

void check_matrix(int ranks) {
  const auto cases = full_matrix(ranks, {0, 1, 7, 1000003});
  const auto outcomes = run_as_threads(ranks, cases);
  for (int r = 0; r < ranks; ++r) ASSERT_EQ(outcomes[r].error, "") << "rank " << r << " of " << ranks;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (!outputs_identical(cases[i]) || cases[i].count == 0) continue;
    for (int r = 1; r < ranks; ++r)
      EXPECT_EQ(outcomes[r].hashes[i], outcomes[0].hashes[i]) << cases[i].text() << ": rank " << r
                                                              << " differs bitwise from rank 0";
  }
}

TEST(ApiThreads, OneGpu) {
  if (visible_gpus() < 1) GTEST_SKIP() << "no GPU visible";
  check_matrix(1);
}

TEST(ApiThreads, AllGpus) {
  const int n = visible_gpus();
  if (n < 2) GTEST_SKIP() << "needs 2 or more GPUs (" << n << " visible)";
  check_matrix(n);
}

}  // namespace
}  // namespace braid::apitest
