#include "multipath/first_uses.h"

#include <bit>

namespace braid::multipath {

bool FirstUses::first(Collective collective, size_t bytes) {
  return seen_.emplace(static_cast<int>(collective), static_cast<int>(std::bit_width(bytes))).second;
}

}  // namespace braid::multipath
