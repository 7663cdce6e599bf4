// One yes-or-no agreed by every rank of a communicator: a set-up step whose answer must be every
// rank's, even where the ranks' environments or fortunes differ (so that every rank splits alike).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/result.h"

namespace braid::multipath {

// Gathers one word of every rank's, in rank order (the engine's exchange). Collective.
using WordExchange = std::function<Result(std::span<const uint64_t> mine, std::vector<uint64_t>* all)>;

// Collective: *all is true on every rank when `mine` is true on every rank.
Result every_rank(bool mine, const WordExchange& exchange, bool* all);

}  // namespace braid::multipath
