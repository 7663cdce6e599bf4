#include "peer/peer_layout.h"

#include <algorithm>

namespace braid::peer {

namespace {
size_t aligned_elements(size_t element_size) { return std::max<size_t>(1, kPartAlignBytes / element_size); }
}  // namespace

ElementRange reduce_part(int rank, int nranks, size_t elements, size_t element_size) {
  const size_t align = aligned_elements(element_size);
  const size_t per_rank = elements / static_cast<size_t>(nranks) / align * align;
  const size_t begin = static_cast<size_t>(rank) * per_rank;
  return {begin, rank == nranks - 1 ? elements - begin : per_rank};
}

size_t pull_piece_elements(int nranks, size_t element_size, int64_t scratch_bytes) {
  const size_t peers = static_cast<size_t>(std::max(nranks - 1, 1));
  const size_t align = aligned_elements(element_size);
  const size_t budget = static_cast<size_t>(std::max<int64_t>(scratch_bytes, 0));
  return std::max(align, budget / (2 * peers) / element_size / align * align);
}

size_t pull_slot_bytes(int nranks, size_t element_size, int64_t scratch_bytes) {
  return static_cast<size_t>(std::max(nranks - 1, 1)) * pull_piece_elements(nranks, element_size, scratch_bytes) *
         element_size;
}

}  // namespace braid::peer
