#include "balance/shares.h"

#include <cmath>

namespace braid::balance {

Shares dedicated_only(int num_paths) {
  Shares s;
  s.units.assign(static_cast<size_t>(num_paths), 0);
  if (num_paths > 0) s.units[kDedicatedPath] = kShareUnits;
  return s;
}

Shares quantize_shares(std::span<const double> fractions) {
  Shares s;
  s.units.assign(fractions.size(), 0);
  uint32_t left = kShareUnits;
  for (size_t p = 1; p < fractions.size(); ++p) {
    double f = fractions[p];
    if (!(f > 0)) f = 0;  // also catches NaN
    if (f > 1) f = 1;
    uint32_t u = static_cast<uint32_t>(std::lround(f * kShareUnits));
    if (u > left) u = left;  // later paths lose first when the fractions oversubscribe
    s.units[p] = u;
    left -= u;
  }
  if (!fractions.empty()) s.units[kDedicatedPath] = left;
  return s;
}

bool shares_valid(const Shares& shares) {
  if (shares.units.empty()) return false;
  uint64_t sum = 0;
  for (uint32_t u : shares.units) sum += u;
  return sum == kShareUnits;
}

std::vector<size_t> split_elements(const Shares& shares, size_t count, size_t align_elements) {
  if (align_elements == 0) align_elements = 1;
  std::vector<size_t> counts(shares.units.size(), 0);
  size_t given = 0;
  for (size_t p = 1; p < shares.units.size(); ++p) {
    // count * units can overflow 64 bits only above 2^54 elements; split to stay exact.
    size_t whole = (count / kShareUnits) * shares.units[p];
    size_t part = (count % kShareUnits) * shares.units[p] / kShareUnits;
    size_t n = (whole + part) / align_elements * align_elements;
    if (n > count - given) n = (count - given) / align_elements * align_elements;
    counts[p] = n;
    given += n;
  }
  if (!counts.empty()) counts[kDedicatedPath] = count - given;
  return counts;
}

}  // namespace braid::balance
