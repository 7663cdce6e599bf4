// Shares: exact sums, quantisation and element splits every rank computes identically.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "balance/shares.h"

namespace braid::balance {
namespace {

uint64_t sum_units(const Shares& s) { return std::accumulate(s.units.begin(), s.units.end(), 0ull); }

TEST(Shares, QuantizeRoundsAuxiliaryPathsAndGivesTheRestToPath0) {
  const double f[] = {0.9, 0.1};
  Shares s = quantize_shares(f);
  EXPECT_EQ(s.units[1], 102u);  // round(0.1 * 1024) = 102
  EXPECT_EQ(s.units[0], 922u);
  EXPECT_TRUE(shares_valid(s));
  const double three[] = {0.0, 0.5, 0.25};
  s = quantize_shares(three);
  EXPECT_EQ(s.units, (std::vector<uint32_t>{256, 512, 256}));
}

TEST(Shares, QuantizeClampsOutOfRangeAndNaN) {
  const double f[] = {0.0, 1.7, 0.4, std::nan(""), -3.0};
  Shares s = quantize_shares(f);
  EXPECT_EQ(sum_units(s), kShareUnits);
  EXPECT_EQ(s.units[1], kShareUnits);  // clamped to 1, the rest get nothing
  EXPECT_EQ(s.units[2], 0u);
  EXPECT_EQ(s.units[3], 0u);
  EXPECT_EQ(s.units[4], 0u);
  EXPECT_EQ(s.units[0], 0u);
}

TEST(Shares, ValidityNeedsExactSum) {
  EXPECT_TRUE(shares_valid(dedicated_only(3)));
  EXPECT_FALSE(shares_valid(Shares{{512, 511}}));
  EXPECT_FALSE(shares_valid(Shares{}));
}

TEST(Shares, SplitElementsAlignsAuxiliaryPiecesAndCoversTheBuffer) {
  Shares s{{922, 102}};
  for (size_t count : {size_t{0}, size_t{1}, size_t{1000}, size_t{1} << 20, (size_t{1} << 28) + 77}) {
    for (size_t align : {size_t{1}, size_t{16}, size_t{256}}) {
      auto counts = split_elements(s, count, align);
      ASSERT_EQ(counts.size(), 2u);
      EXPECT_EQ(counts[0] + counts[1], count);
      EXPECT_EQ(counts[1] % align, 0u);
      // Independent expectation: floor(count*102/1024) rounded down to the alignment.
      const uint64_t exact = uint64_t{count} * 102 / 1024;  // small counts: no overflow
      EXPECT_EQ(counts[1], static_cast<size_t>(exact) / align * align) << count << " " << align;
    }
  }
}

TEST(Shares, SplitElementsNeverOverAllocatesWithManyPaths) {
  Shares s{{0, 341, 341, 342}};
  auto counts = split_elements(s, 10, 4);
  EXPECT_EQ(counts[0] + counts[1] + counts[2] + counts[3], 10u);
  for (int p = 1; p < 4; ++p) EXPECT_EQ(counts[p] % 4, 0u);
  // Huge counts stay exact (no 64-bit overflow in count * units).
  const size_t huge = size_t{1} << 60;
  auto big = split_elements(Shares{{512, 512}}, huge, 1);
  EXPECT_EQ(big[1], huge / 2);
  EXPECT_EQ(big[0], huge / 2);
}

}  // namespace
}  // namespace braid::balance
