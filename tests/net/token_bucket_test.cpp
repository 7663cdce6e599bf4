// The emulated NIC's rate limit, on a simulated clock.
#include <gtest/gtest.h>

#include "net/token_bucket.h"

namespace braid::net {
namespace {

TEST(NetTokenBucket, UnlimitedLetsEverythingGo) {
  TokenBucket b;
  EXPECT_FALSE(b.limited());
  EXPECT_EQ(b.available(0), SIZE_MAX);
  EXPECT_EQ(b.wait_ns(0, 1 << 30), 0);
}

TEST(NetTokenBucket, LongRunRateMatches) {
  const double rate = 100e6;  // 100 MB/s
  TokenBucket b(rate, 65536);
  int64_t t = 0;
  size_t sent = 0;
  // A sender that always wants 1 MB and sleeps exactly as long as the bucket says.
  while (t < 1000000000) {
    size_t n = std::min<size_t>(b.available(t), 1 << 20);
    b.consume(n);
    sent += n;
    int64_t w = b.wait_ns(t, 4096);
    t += std::max<int64_t>(w, 1000);
  }
  double got = double(sent) / 1.0;  // bytes in one simulated second
  EXPECT_NEAR(got / rate, 1.0, 0.01) << got;
}

TEST(NetTokenBucket, BurstIsCapped) {
  TokenBucket b(1e6, 8192);
  EXPECT_EQ(b.available(0), 8192u);
  b.consume(8192);
  EXPECT_EQ(b.available(0), 0u);
  EXPECT_GT(b.wait_ns(0, 4096), 0);
  // A long idle spell refills only to the burst.
  EXPECT_EQ(b.available(int64_t(10) * 1000000000), 8192u);
}

}  // namespace
}  // namespace braid::net
