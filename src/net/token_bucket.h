// A token bucket: the user-space rate limit of an emulated NIC (BRAID_NET_RATE_MBPS). Only the
// NIC's own progress thread touches it, so it has no lock.
#pragma once

#include <cstddef>
#include <cstdint>

namespace braid::net {

class TokenBucket {
 public:
  // bytes_per_s <= 0: unlimited. burst: the most bytes sent back to back after an idle spell.
  explicit TokenBucket(double bytes_per_s = 0, double burst_bytes = 0);

  bool limited() const { return rate_ > 0; }
  // Bytes that may go now (SIZE_MAX when unlimited).
  size_t available(int64_t now_ns);
  // Bytes that went.
  void consume(size_t bytes);
  // Nanoseconds from `now_ns` until `bytes` (capped at the burst) may go; 0 if now.
  int64_t wait_ns(int64_t now_ns, size_t bytes);

 private:
  void refill(int64_t now_ns);
  double rate_;   // bytes per ns
  double burst_;
  double tokens_;
  int64_t last_ns_ = -1;
};

}  // namespace braid::net
