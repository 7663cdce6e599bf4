// --repeat: each row measured several times, braid and NCCL alternately, and reported as the
// median repetition of each path (the multipath acceptance compares medians; one mean of 20 calls wobbles by a few
// percent between rows that run the same code).
#pragma once

#include <cstddef>
#include <vector>

namespace braid::bench {

// Index of the median of `times` (the lower middle for an even count); 0 when empty.
size_t median_index(const std::vector<double>& times);

}  // namespace braid::bench
