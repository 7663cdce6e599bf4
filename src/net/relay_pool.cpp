#include "net/relay_pool.h"

#include <algorithm>

namespace braid::net {

RelayPool::RelayPool(void* base, size_t bytes, size_t slot_bytes, size_t cap_bytes)
    : base_(static_cast<char*>(base)), bytes_(bytes), slot_bytes_(std::max<size_t>(slot_bytes, 1)), cap_bytes_(cap_bytes) {
  size_t slots = bytes_ / slot_bytes_;
  for (size_t i = slots; i > 0; --i) free_.push_back(uint32_t(i - 1));  // lowest address first
}

size_t relay_limit_bytes(size_t region_bytes, size_t slot_bytes, size_t cap_bytes, size_t owner_demand) {
  size_t room = region_bytes > owner_demand ? region_bytes - owner_demand : 0;
  return slot_bytes ? std::min(cap_bytes, room) / slot_bytes * slot_bytes : 0;
}

size_t RelayPool::limit_locked() const { return relay_limit_bytes(bytes_, slot_bytes_, cap_bytes_, owner_demand_); }

void RelayPool::set_owner_demand(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  owner_demand_ = bytes;
}

void* RelayPool::acquire() {
  std::lock_guard<std::mutex> lock(mu_);
  if (free_.empty() || (lent_ + 1) * slot_bytes_ > limit_locked()) return nullptr;
  uint32_t i = free_.back();
  free_.pop_back();
  ++lent_;
  return base_ + size_t(i) * slot_bytes_;
}

void RelayPool::release(void* slot) {
  if (!slot) return;
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(uint32_t((static_cast<char*>(slot) - base_) / slot_bytes_));
  --lent_;
}

size_t RelayPool::lent_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lent_ * slot_bytes_;
}

size_t RelayPool::limit_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return limit_locked();
}

}  // namespace braid::net
