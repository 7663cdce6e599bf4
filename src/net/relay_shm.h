// FuseLink's relay path D1 across the processes of one host: a relay GPU's pool of slots, shared
// by every process of the host through POSIX shared memory (like the NIC monitor's board), and the
// peer copy that puts a sender's piece into a slot.
//
// The relay GPU's process (the owner of a NIC: the process whose direct NIC it is) offers the
// pool; other processes of the host attach to it by name and borrow slots for pieces they send
// on that NIC. Lending follows RelayPool's rules (relay_pool.h): relays hold at most
// relay_limit_bytes(region, slot, cap, owner demand), the owner's demand being what it declared
// plus the bytes of its own sends in flight; a slot already lent is never revoked. A slot is held
// by a process id, so the slots of a process that died are taken back (reclaim_dead, also run
// whenever a borrow finds no room).
//
// CPU stand-in: the region is host memory in the shared segment, and the peer copy is a memcpy
// through the mapping. On GPUs the region is the relay GPU's memory (see PeerCopy below).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"
#include "net/shm_file.h"

namespace braid::net {

struct RelayBoard;  // the shared header (relay_shm.cpp)

class SharedRelayPool {
 public:
  // The owner's side: creates the pool `name` (a POSIX shm name, "/..."): `cap_bytes` of slots of
  // `slot_bytes`. *out stays null (Success) when a live process of the host offers that pool
  // already (two GPUs sharing a NIC: the first one's pool serves); a dead owner's is replaced.
  static Result offer(const std::string& name, size_t cap_bytes, size_t slot_bytes, std::unique_ptr<SharedRelayPool>* out);
  // A borrower's side: *out is null (Success) when no live owner offers `name`.
  static Result attach(const std::string& name, std::unique_ptr<SharedRelayPool>* out);
  ~SharedRelayPool();  // the owner removes the name; borrowers' mappings stay valid until they unmap
  SharedRelayPool(const SharedRelayPool&) = delete;
  SharedRelayPool& operator=(const SharedRelayPool&) = delete;

  // A slot for a relayed piece, or nullptr: the limit leaves none, or the owner is gone. Finding
  // no room, it first takes back the slots of dead processes (at most every 50 ms).
  void* acquire();
  void release(void* slot);
  // Frees the slots of processes that ended without releasing them; returns how many.
  int reclaim_dead();

  // The owner's declared need (bytes of the region its own work takes); the owner's own bytes in
  // flight are added to it (add_owner_inflight, signed).
  void set_owner_demand(size_t bytes);
  void add_owner_inflight(int64_t bytes);

  bool is_owner() const { return owner_; }
  bool owner_alive() const;
  size_t slot_bytes() const;
  size_t region_bytes() const;
  size_t lent_bytes() const;
  size_t limit_bytes() const;
  size_t peak_lent_bytes() const;  // the most lent at once since the pool (or reset_peak) began
  void reset_peak();
  uint64_t relayed_bytes() const;  // copied into slots by every borrower
  void count_relayed(size_t bytes);
  const std::string& name() const { return name_; }

 private:
  SharedRelayPool(RelayBoard* board, size_t map_bytes, uint64_t slots, uint64_t slot_bytes, bool owner, std::string name,
                  const ShmFile& file);
  RelayBoard* board_;
  size_t map_bytes_;
  uint64_t slots_, slot_bytes_;  // from the header, checked against the file when it was mapped
  bool owner_;
  std::string name_;
  ShmFile file_;  // the owner's: which file it made (its fd closed)
  std::atomic<int64_t> last_reclaim_ns_{0};
};

// The copy of a sender's piece into a relay slot (FuseLink's write over NVLink into the peer
// GPU's buffer). Asynchronous in shape: a piece is sent from its slot only once ready() says the
// copy is done, so a copy engine's copy fits the same place.
struct CopyTicket {
  uint64_t id = 0;  // the copy's handle (GPU: an event's index); 0: done at start
};

class PeerCopy {
 public:
  virtual ~PeerCopy() = default;
  virtual Result start(void* slot, const void* src, size_t bytes, CopyTicket* ticket) = 0;
  virtual bool ready(const CopyTicket& ticket) = 0;
};

// The CPU implementation: memcpy through the shared mapping, done when start returns.
//
// GPU (not written: it needs two GPUs per node to be tested): the owner allocates the region with
// cudaMalloc on the relay GPU and puts its cudaIpcMemHandle in the shared header instead of the
// bytes; a borrower opens it with cudaIpcOpenMemHandle, start() is a cudaMemcpyAsync (device to
// device, NVLink) on a copy-engine stream followed by cudaEventRecord, ready() a cudaEventQuery;
// the relay NIC then reads the slot by GPUDirect RDMA (a transport with GPU pointers; the TCP
// transport stages through host memory).
class MemcpyPeerCopy final : public PeerCopy {
 public:
  Result start(void* slot, const void* src, size_t bytes, CopyTicket* ticket) override;
  bool ready(const CopyTicket& ticket) override;
};

}  // namespace braid::net
