// How one collective is split across paths (path 0 = NCCL/NVLink, 1 = PCIe, more allowed).
// Shares are integers out of kShareUnits so they sum to exactly 1 and every rank, given the
// same shares, cuts the buffer at the same offsets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace braid::balance {

inline constexpr uint32_t kShareUnits = 1024;  // granularity: multiples of 1/1024
inline constexpr int kDedicatedPath = 0;       // NCCL over NVLink; absorbs all rounding

struct Shares {
  std::vector<uint32_t> units;  // one per path, summing to kShareUnits

  int num_paths() const { return static_cast<int>(units.size()); }
  double fraction(int path) const { return units[path] / double(kShareUnits); }
  bool operator==(const Shares&) const = default;
};

// Everything on the dedicated path.
Shares dedicated_only(int num_paths);

// Rounds each non-dedicated fraction to the nearest unit (clamped to [0,1]); the dedicated
// path gets what is left, so the result always sums to kShareUnits. NaN counts as 0.
Shares quantize_shares(std::span<const double> fractions);

// True when there is at least one path and the units sum to kShareUnits.
bool shares_valid(const Shares& shares);

// Element counts per path for `count` elements: every non-dedicated path gets
// floor(count * share / align) * align elements (so its piece starts and ends on an aligned
// element), the dedicated path the rest. Pure integer arithmetic: identical on every rank.
std::vector<size_t> split_elements(const Shares& shares, size_t count, size_t align_elements);

}  // namespace braid::balance
