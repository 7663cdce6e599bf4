#include "multipath/rank_agreement.h"

#include <algorithm>

namespace braid::multipath {

Result every_rank(bool mine, const WordExchange& exchange, bool* all) {
  *all = false;
  const uint64_t word[1] = {mine ? 1u : 0u};
  std::vector<uint64_t> words;
  BRAID_TRY(exchange(word, &words));
  *all = std::all_of(words.begin(), words.end(), [](uint64_t w) { return w == 1; });
  return Result::Success;
}

}  // namespace braid::multipath
