#include "repeat.h"

#include <algorithm>
#include <numeric>

namespace braid::bench {

size_t median_index(const std::vector<double>& times) {
  if (times.empty()) return 0;
  std::vector<size_t> order(times.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return times[a] < times[b]; });
  return order[(times.size() - 1) / 2];
}

}  // namespace braid::bench
