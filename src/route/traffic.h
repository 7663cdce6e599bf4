// A traffic matrix: bytes rank i sends to rank j (rank r is the topology's r-th GPU).
#pragma once

#include <cstddef>
#include <vector>

namespace braid::route {

struct Traffic {
  int ranks = 0;
  std::vector<double> bytes;  // row-major ranks x ranks; the diagonal is ignored

  Traffic() = default;
  explicit Traffic(int n) : ranks(n), bytes(size_t(n) * size_t(n), 0.0) {}
  double& at(int src, int dst) { return bytes[size_t(src) * size_t(ranks) + size_t(dst)]; }
  double at(int src, int dst) const { return bytes[size_t(src) * size_t(ranks) + size_t(dst)]; }
};

}  // namespace braid::route
