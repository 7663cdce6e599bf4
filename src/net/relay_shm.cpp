#include "net/relay_shm.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "common/process.h"
#include "net/clock.h"
#include "net/relay_pool.h"
#include "net/shm_file.h"

namespace braid::net {

namespace {
constexpr uint32_t kRelayMagic = 0x59524c42;  // "BLRY"
constexpr size_t kMaxRelaySlots = 1024;
constexpr uint64_t kMaxRelaySlotBytes = uint64_t(1) << 30;

bool process_alive(int32_t pid) { return pid > 0 && !process_dead(pid); }
}  // namespace

// Loans change under a robust process-shared mutex: a process killed while it holds it leaves
// the next one to lock it a recount to do (EOWNERDEAD), never a wrong count.
struct RelayBoard {
  std::atomic<uint32_t> ready;      // kRelayMagic once the owner has set it up; 0 after it left
  std::atomic<int32_t> owner_pid;
  uint64_t slot_bytes, slots, cap_bytes, data_offset;
  pthread_mutex_t mu;
  std::atomic<uint64_t> owner_demand;
  std::atomic<int64_t> owner_inflight;
  std::atomic<uint64_t> lent, peak;  // slots; written under mu
  std::atomic<uint64_t> relayed;     // bytes copied in
  std::atomic<int32_t> holder[kMaxRelaySlots];  // the borrowing process; 0: free; written under mu
};

static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<int32_t>::is_always_lock_free,
              "the relay board's atomics are shared between processes");

namespace {
// Locks the board; after a holder's death, recounts the loans from the slots.
class BoardLock {
 public:
  BoardLock(RelayBoard& b, uint64_t slots) : b_(b) {
    if (pthread_mutex_lock(&b_.mu) == EOWNERDEAD) {
      uint64_t held = 0;
      for (uint64_t i = 0; i < slots; ++i) held += b_.holder[i].load() != 0;
      b_.lent.store(held);
      pthread_mutex_consistent(&b_.mu);
    }
  }
  ~BoardLock() { pthread_mutex_unlock(&b_.mu); }
  BoardLock(const BoardLock&) = delete;
  BoardLock& operator=(const BoardLock&) = delete;

 private:
  RelayBoard& b_;
};

constexpr size_t kHeaderBytes = (sizeof(RelayBoard) + 4095) & ~size_t(4095);

// The mapping, or null (with the error said) on failure.
RelayBoard* map_fd(int fd, size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p != MAP_FAILED) return static_cast<RelayBoard*>(p);
  fail(Result::SystemError, "mmap of a relay pool: %s", strerror(errno));
  return nullptr;
}

// The largest pool file a header may describe.
constexpr size_t kMaxPoolBytes = kHeaderBytes + kMaxRelaySlots * kMaxRelaySlotBytes;

// Maps an existing pool and checks its header against the file (bounded counts, sizes that
// cannot overflow, the file exactly as large as they say). *out null when there is none, it is
// not set up, or its owner is gone (a dead owner's file is removed: it is stale).
Result map_existing(const std::string& name, RelayBoard** out, size_t* bytes, uint64_t* slots, uint64_t* slot_bytes) {
  *out = nullptr;
  ShmFile file;
  BRAID_TRY(open_shm_file(name, kHeaderBytes, kMaxPoolBytes, &file));
  if (file.fd < 0) return Result::Success;
  RelayBoard* b = map_fd(file.fd, file.bytes);
  close(file.fd);
  if (!b) return Result::SystemError;
  const bool ready = b->ready.load(std::memory_order_acquire) == kRelayMagic;
  const uint64_t n = b->slots, each = b->slot_bytes;
  const bool sane = n <= kMaxRelaySlots && each >= 4096 && each <= kMaxRelaySlotBytes && b->data_offset == kHeaderBytes &&
                    kHeaderBytes + n * each == file.bytes;  // no overflow: both factors are bounded
  const bool alive = process_alive(b->owner_pid.load());
  if (!ready || !sane || !alive) {
    munmap(b, file.bytes);
    if (ready && !alive) unlink_shm_file(name, file);  // its owner died without removing it
    if (ready && !sane) return fail(Result::SystemError, "relay pool %s: its header does not fit the file", name.c_str());
    return Result::Success;
  }
  *out = b;
  *bytes = file.bytes;
  *slots = n;
  *slot_bytes = each;
  return Result::Success;
}
}  // namespace

SharedRelayPool::SharedRelayPool(RelayBoard* board, size_t map_bytes, uint64_t slots, uint64_t slot_bytes, bool owner,
                                 std::string name, const ShmFile& file)
    : board_(board), map_bytes_(map_bytes), slots_(slots), slot_bytes_(slot_bytes), owner_(owner),
      name_(std::move(name)), file_(file) {
  if (owner_) {
    // An exit that skips the plugin's finalize still removes the pool it offered.
    remove_at_exit(this, [b = board_, n = name_, f = file_] {
      b->ready.store(0);
      unlink_shm_file(n, f);
    });
  }
}

Result SharedRelayPool::offer(const std::string& name, size_t cap_bytes, size_t slot_bytes,
                              std::unique_ptr<SharedRelayPool>* out) {
  out->reset();
  slot_bytes = std::clamp<size_t>(slot_bytes, 4096, kMaxRelaySlotBytes);
  const size_t slots = std::min(cap_bytes / slot_bytes, kMaxRelaySlots);
  const size_t bytes = kHeaderBytes + slots * slot_bytes;
  for (int attempt = 0; attempt < 3; ++attempt) {
    ShmFile file;
    BRAID_TRY(create_shm_file(name, bytes, &file));
    if (file.fd < 0) {
      // Someone offers it already: a live owner keeps it. A dead one's, or one not set up after
      // a moment, or one that is no pool, is removed (map_existing, open_shm_file) and replaced.
      for (int wait = 0; wait < 20; ++wait) {
        RelayBoard* b = nullptr;
        size_t have = 0;
        uint64_t n = 0, each = 0;
        if (map_existing(name, &b, &have, &n, &each) != Result::Success) break;
        if (b) {
          munmap(b, have);
          return Result::Success;
        }
        usleep(5000);
      }
      ShmFile stale;  // another user's file is refused here, never replaced
      BRAID_TRY(open_shm_file(name, 0, SIZE_MAX, &stale));
      if (stale.fd >= 0) {
        close(stale.fd);
        unlink_shm_file(name, stale);
      }
      continue;
    }
    RelayBoard* b = map_fd(file.fd, bytes);
    close(file.fd);
    if (!b) {
      unlink_shm_file(name, file);
      return Result::SystemError;
    }
    // A new segment reads as zero: every slot free, nothing lent.
    b->owner_pid.store(int32_t(getpid()));
    b->slot_bytes = slot_bytes;
    b->slots = slots;
    b->cap_bytes = cap_bytes;
    b->data_offset = kHeaderBytes;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&b->mu, &attr);
    pthread_mutexattr_destroy(&attr);
    b->ready.store(kRelayMagic, std::memory_order_release);
    out->reset(new SharedRelayPool(b, bytes, slots, slot_bytes, true, name, file));
    return Result::Success;
  }
  return fail(Result::SystemError, "relay pool %s: could not replace a stale one", name.c_str());
}

Result SharedRelayPool::attach(const std::string& name, std::unique_ptr<SharedRelayPool>* out) {
  out->reset();
  RelayBoard* b = nullptr;
  size_t bytes = 0;
  uint64_t slots = 0, slot_bytes = 0;
  BRAID_TRY(map_existing(name, &b, &bytes, &slots, &slot_bytes));
  if (b) out->reset(new SharedRelayPool(b, bytes, slots, slot_bytes, false, name, ShmFile{}));
  return Result::Success;
}

SharedRelayPool::~SharedRelayPool() {
  if (owner_) {
    forget_at_exit(this);
    board_->ready.store(0);  // borrowers stop lending from it; their pieces in flight finish
    unlink_shm_file(name_, file_);
  }
  munmap(board_, map_bytes_);
}

bool SharedRelayPool::owner_alive() const {
  return board_->ready.load(std::memory_order_acquire) == kRelayMagic && process_alive(board_->owner_pid.load());
}

// The header's counts as checked when the pool was mapped (slots_, slot_bytes_), never re-read.
size_t SharedRelayPool::slot_bytes() const { return slot_bytes_; }
size_t SharedRelayPool::region_bytes() const { return slots_ * slot_bytes_; }
size_t SharedRelayPool::lent_bytes() const { return std::min<uint64_t>(board_->lent.load(), slots_) * slot_bytes_; }
size_t SharedRelayPool::peak_lent_bytes() const { return std::min<uint64_t>(board_->peak.load(), slots_) * slot_bytes_; }
void SharedRelayPool::reset_peak() {
  BoardLock lock(*board_, slots_);
  board_->peak.store(board_->lent.load());
}
uint64_t SharedRelayPool::relayed_bytes() const { return board_->relayed.load(); }
void SharedRelayPool::count_relayed(size_t bytes) { board_->relayed.fetch_add(bytes); }
void SharedRelayPool::set_owner_demand(size_t bytes) { board_->owner_demand.store(bytes); }
void SharedRelayPool::add_owner_inflight(int64_t bytes) { board_->owner_inflight.fetch_add(bytes); }

size_t SharedRelayPool::limit_bytes() const {
  const int64_t inflight = std::max<int64_t>(board_->owner_inflight.load(), 0);
  return relay_limit_bytes(region_bytes(), slot_bytes_, board_->cap_bytes, board_->owner_demand.load() + size_t(inflight));
}

void* SharedRelayPool::acquire() {
  if (!owner_alive()) return nullptr;
  RelayBoard& b = *board_;
  for (int pass = 0; pass < 2; ++pass) {
    {
      BoardLock lock(b, slots_);
      const uint64_t limit = limit_bytes() / slot_bytes_;  // <= slots: a free one exists below it
      const uint64_t lent = b.lent.load();
      if (lent < limit)
        for (uint64_t i = 0; i < slots_; ++i) {
          if (b.holder[i].load() != 0) continue;
          b.holder[i].store(int32_t(getpid()));
          b.lent.store(lent + 1);
          if (lent + 1 > b.peak.load()) b.peak.store(lent + 1);
          return reinterpret_cast<char*>(board_) + kHeaderBytes + i * slot_bytes_;
        }
    }
    // No room: take back dead processes' slots, at most every 50 ms (it asks the kernel about
    // every holder).
    const int64_t now = now_ns();
    if (pass > 0 || now - last_reclaim_ns_ < 50000000) break;
    last_reclaim_ns_ = now;
    if (reclaim_dead() == 0) break;
  }
  return nullptr;
}

void SharedRelayPool::release(void* slot) {
  if (!slot) return;
  RelayBoard& b = *board_;
  const size_t i = size_t(static_cast<char*>(slot) - (reinterpret_cast<char*>(board_) + kHeaderBytes)) / slot_bytes_;
  if (i >= slots_) return;  // not a slot of this pool
  BoardLock lock(b, slots_);
  if (b.holder[i].exchange(0) != 0) b.lent.fetch_sub(1);
}

int SharedRelayPool::reclaim_dead() {
  RelayBoard& b = *board_;
  BoardLock lock(b, slots_);
  int n = 0;
  for (uint64_t i = 0; i < slots_; ++i) {
    int32_t h = b.holder[i].load();
    if (h != 0 && !process_alive(h)) {
      b.holder[i].store(0);
      b.lent.fetch_sub(1);
      ++n;
    }
  }
  return n;
}

Result MemcpyPeerCopy::start(void* slot, const void* src, size_t bytes, CopyTicket* ticket) {
  std::memcpy(slot, src, bytes);
  ticket->id = 0;
  return Result::Success;
}

bool MemcpyPeerCopy::ready(const CopyTicket&) { return true; }

}  // namespace braid::net
