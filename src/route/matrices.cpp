#include "route/matrices.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace braid::route {

Traffic uniform(int n, double bytes) {
  Traffic t(n);
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) t.at(s, d) = bytes;
  return t;
}

Traffic random_matrix(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Traffic t(n);
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) t.at(s, d) = u(rng) * 64e6;
  return t;
}

Traffic zipf(int n, unsigned seed, double skew) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  std::vector<int> rank(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) rank[size_t(i)] = i;
  std::shuffle(rank.begin(), rank.end(), rng);
  Traffic t(n);
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) t.at(s, d) = 64e6 * u(rng) / std::pow(double(rank[size_t(d)] + 1), skew);
  return t;
}

Traffic one_hot_expert(int n, int hot) {
  Traffic t(n);
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) t.at(s, d) = d == hot ? 128e6 : 8e6;
  return t;
}

Traffic permutation(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int> perm(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) perm[size_t(i)] = i;
  do std::shuffle(perm.begin(), perm.end(), rng);
  while ([&] { for (int i = 0; i < n; ++i) if (perm[size_t(i)] == i) return true; return false; }());
  Traffic t(n);
  for (int s = 0; s < n; ++s) t.at(s, perm[size_t(s)]) = 256e6;
  return t;
}

Traffic nudged(const Traffic& t, int percent, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(1 - percent / 100.0, 1 + percent / 100.0);
  Traffic out = t;
  for (double& b : out.bytes) b *= u(rng);
  return out;
}

Traffic hotspot(int n, int hot, double ratio, double bytes) {
  Traffic t(n);
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      if (s == d) continue;
      if (s == hot) t.at(s, d) = bytes / (n - 1);
      else t.at(s, d) = d == hot ? bytes * ratio : bytes * (1 - ratio) / (n - 2);
    }
  return t;
}

}  // namespace braid::route
