// braid-bench --repeat reports each path's median repetition.
#include <gtest/gtest.h>

#include "repeat.h"

namespace braid::bench {
namespace {

TEST(BenchRepeat, MedianIndexPicksTheMiddleTime) {
  EXPECT_EQ(median_index({}), 0u);
  EXPECT_EQ(median_index({5.0}), 0u);
  EXPECT_EQ(median_index({30.0, 10.0, 20.0}), 2u);
  // Even counts take the lower middle: a slow outlier never becomes the reported time.
  EXPECT_EQ(median_index({40.0, 10.0, 30.0, 20.0}), 3u);
  const std::vector<double> noisy{11.0, 11.0, 500.0, 11.0, 12.0};
  EXPECT_EQ(noisy[median_index(noisy)], 11.0);
}

}  // namespace
}  // namespace braid::bench
