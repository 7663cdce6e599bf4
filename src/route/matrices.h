// Traffic matrices for tests, benchmarks and the simulator: the shapes of all-to-all(v) traffic
// NIMBLE evaluates (uniform, Zipf-skewed destinations, one hot expert, permutations, a hotspot
// ratio) and random ones. Deterministic for a seed (std::mt19937).
#pragma once

#include "route/traffic.h"

namespace braid::route {

// Every pair sends `bytes`.
Traffic uniform(int n, double bytes);
// Every pair sends a uniform random amount in [0, 64 MB).
Traffic random_matrix(int n, unsigned seed);
// Each destination's popularity follows Zipf(skew) over a random order of the ranks (0:
// uniform); each source sends 64 MB x a factor in [0.5, 1.5] x popularity.
Traffic zipf(int n, unsigned seed, double skew = 1.2);
// MoE with one hot expert on rank `hot`: every rank sends 128 MB there and 8 MB elsewhere.
Traffic one_hot_expert(int n, int hot);
// Rank s sends 256 MB only to perm[s], a random permutation without fixed points.
Traffic permutation(int n, unsigned seed);
// NIMBLE's skewed all-to-allv (its Fig. 7): every rank other than `hot` sends `ratio` of its
// `bytes` to `hot` and the rest evenly to the others; `hot` sends evenly to all.
Traffic hotspot(int n, int hot, double ratio, double bytes);
// The next step of the same job: every flow of `t` scaled by a factor within +-percent.
Traffic nudged(const Traffic& t, int percent, unsigned seed = 7);

}  // namespace braid::route
