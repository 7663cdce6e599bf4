// The one clock of the net layer: CLOCK_MONOTONIC, the same in every process of a host, so
// times written to the host-wide NIC board compare across processes.
#pragma once

#include <cstdint>
#include <ctime>

namespace braid::net {

inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace braid::net
