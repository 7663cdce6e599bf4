// Relay memory for FuseLink's path D1: a GPU sending through another GPU's NIC first writes its
// piece into a buffer in that relay GPU's memory (a peer copy over NVLink), from which the relay
// NIC sends. This is the pool of such buffers on one relay GPU: fixed-size slots in one region
// (device memory there; host memory in the CPU tests), capped by the caller (a setting once relays
// are wired in), and yielding to the relay GPU's own work: the owner declares what its own traffic
// needs, and relays get only what the cap leaves beyond that. Slots already lent are never taken back (a piece in
// flight finishes); the limit applies to new ones.
//
// The pool a relay GPU shares with the other processes of its host is relay_shm.h's
// SharedRelayPool, which lends by the same rule (relay_limit_bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace braid::net {

// What relays may hold of a region of `region_bytes` cut in `slot_bytes` slots: the cap, less
// nothing, or the region less the owner's demand, whichever is smaller, in whole slots.
size_t relay_limit_bytes(size_t region_bytes, size_t slot_bytes, size_t cap_bytes, size_t owner_demand);

class RelayPool {
 public:
  // `base`/`bytes`: the region; `slot_bytes`: one relayed piece; `cap_bytes`: the most the
  // pool may lend to relays, whatever the region's size.
  RelayPool(void* base, size_t bytes, size_t slot_bytes, size_t cap_bytes);

  // The relay GPU's own need, in bytes of this region: relays may use at most
  // min(cap, region - owner demand).
  void set_owner_demand(size_t bytes);
  // A slot for a relayed piece; nullptr when the limit leaves none (send on the direct NIC then).
  void* acquire();
  void release(void* slot);

  size_t slot_bytes() const { return slot_bytes_; }
  size_t lent_bytes() const;
  size_t limit_bytes() const;

 private:
  size_t limit_locked() const;
  char* base_;
  size_t bytes_, slot_bytes_, cap_bytes_;
  size_t owner_demand_ = 0;
  mutable std::mutex mu_;
  std::vector<uint32_t> free_;  // free slot indices
  size_t lent_ = 0;
};

}  // namespace braid::net
