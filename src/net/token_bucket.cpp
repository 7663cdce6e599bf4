#include "net/token_bucket.h"

#include <algorithm>
#include <cmath>

namespace braid::net {

TokenBucket::TokenBucket(double bytes_per_s, double burst_bytes)
    : rate_(bytes_per_s > 0 ? bytes_per_s * 1e-9 : 0),
      burst_(std::max(burst_bytes, 4096.0)),
      tokens_(burst_) {}

void TokenBucket::refill(int64_t now_ns) {
  if (last_ns_ >= 0 && now_ns > last_ns_) tokens_ = std::min(burst_, tokens_ + double(now_ns - last_ns_) * rate_);
  if (now_ns > last_ns_) last_ns_ = now_ns;
}

size_t TokenBucket::available(int64_t now_ns) {
  if (!limited()) return SIZE_MAX;
  refill(now_ns);
  return tokens_ < 1 ? 0 : size_t(tokens_);
}

void TokenBucket::consume(size_t bytes) {
  if (limited()) tokens_ -= double(bytes);
}

int64_t TokenBucket::wait_ns(int64_t now_ns, size_t bytes) {
  if (!limited()) return 0;
  refill(now_ns);
  double need = std::min(double(bytes), burst_) - tokens_;
  if (need <= 0) return 0;
  return int64_t(std::ceil(need / rate_));
}

}  // namespace braid::net
