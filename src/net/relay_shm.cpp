#include "net/relay_shm.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/process.h"
#include "net/clock.h"
#include "net/relay_pool.h"

namespace braid::net {

namespace {
constexpr uint32_t kRelayMagic = 0x59524c42;  // "BLRY"
constexpr size_t kMaxRelaySlots = 1024;

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
  explicit BoardLock(RelayBoard& b) : b_(b) {
    if (pthread_mutex_lock(&b_.mu) == EOWNERDEAD) {
      uint64_t held = 0;
      for (uint64_t i = 0; i < b_.slots; ++i) held += b_.holder[i].load() != 0;
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

// Maps an existing pool; *out null when there is none, it is not set up, or its owner is gone.
Result map_existing(const std::string& name, RelayBoard** out, size_t* bytes) {
  *out = nullptr;
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) return errno == ENOENT ? Result::Success : fail(Result::SystemError, "shm_open(%s): %s", name.c_str(), strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || size_t(st.st_size) < kHeaderBytes) {
    close(fd);
    return Result::Success;  // being created right now, or not a pool
  }
  *bytes = size_t(st.st_size);
  RelayBoard* b = map_fd(fd, *bytes);
  close(fd);
  if (!b) return Result::SystemError;
  *out = b;
  if (b->ready.load(std::memory_order_acquire) != kRelayMagic || !process_alive(b->owner_pid.load()) ||
      b->data_offset + b->slots * b->slot_bytes > *bytes) {
    munmap(b, *bytes);
    *out = nullptr;
  }
  return Result::Success;
}
}  // namespace

SharedRelayPool::SharedRelayPool(RelayBoard* board, size_t map_bytes, bool owner, std::string name)
    : board_(board), map_bytes_(map_bytes), owner_(owner), name_(std::move(name)) {}

Result SharedRelayPool::offer(const std::string& name, size_t cap_bytes, size_t slot_bytes,
                              std::unique_ptr<SharedRelayPool>* out) {
  out->reset();
  slot_bytes = std::max<size_t>(slot_bytes, 4096);
  const size_t slots = std::min(cap_bytes / slot_bytes, kMaxRelaySlots);
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 && errno == EEXIST) {
      // Someone offers it already: a live owner keeps it; a dead one's (or a half-made one
      // after a moment) is replaced.
      for (int wait = 0; wait < 20; ++wait) {
        RelayBoard* b = nullptr;
        size_t bytes = 0;
        BRAID_TRY(map_existing(name, &b, &bytes));
        if (b) {
          munmap(b, bytes);
          return Result::Success;
        }
        usleep(5000);
      }
      shm_unlink(name.c_str());
      continue;
    }
    if (fd < 0) return fail(Result::SystemError, "shm_open(%s): %s", name.c_str(), strerror(errno));
    const size_t bytes = kHeaderBytes + slots * slot_bytes;
    if (ftruncate(fd, off_t(bytes)) != 0) {
      int e = errno;
      close(fd);
      shm_unlink(name.c_str());
      return fail(Result::SystemError, "sizing %s: %s", name.c_str(), strerror(e));
    }
    RelayBoard* b = map_fd(fd, bytes);
    close(fd);
    if (!b) {
      shm_unlink(name.c_str());
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
    out->reset(new SharedRelayPool(b, bytes, true, name));
    return Result::Success;
  }
  return fail(Result::SystemError, "relay pool %s: could not replace a stale one", name.c_str());
}

Result SharedRelayPool::attach(const std::string& name, std::unique_ptr<SharedRelayPool>* out) {
  out->reset();
  RelayBoard* b = nullptr;
  size_t bytes = 0;
  BRAID_TRY(map_existing(name, &b, &bytes));
  if (b) out->reset(new SharedRelayPool(b, bytes, false, name));
  return Result::Success;
}

SharedRelayPool::~SharedRelayPool() {
  if (owner_) {
    board_->ready.store(0);  // borrowers stop lending from it; their pieces in flight finish
    shm_unlink(name_.c_str());
  }
  munmap(board_, map_bytes_);
}

bool SharedRelayPool::owner_alive() const {
  return board_->ready.load(std::memory_order_acquire) == kRelayMagic && process_alive(board_->owner_pid.load());
}

size_t SharedRelayPool::slot_bytes() const { return board_->slot_bytes; }
size_t SharedRelayPool::region_bytes() const { return board_->slots * board_->slot_bytes; }
size_t SharedRelayPool::lent_bytes() const { return board_->lent.load() * board_->slot_bytes; }
size_t SharedRelayPool::peak_lent_bytes() const { return board_->peak.load() * board_->slot_bytes; }
void SharedRelayPool::reset_peak() {
  BoardLock lock(*board_);
  board_->peak.store(board_->lent.load());
}
uint64_t SharedRelayPool::relayed_bytes() const { return board_->relayed.load(); }
void SharedRelayPool::count_relayed(size_t bytes) { board_->relayed.fetch_add(bytes); }
void SharedRelayPool::set_owner_demand(size_t bytes) { board_->owner_demand.store(bytes); }
void SharedRelayPool::add_owner_inflight(int64_t bytes) { board_->owner_inflight.fetch_add(bytes); }

size_t SharedRelayPool::limit_bytes() const {
  const int64_t inflight = std::max<int64_t>(board_->owner_inflight.load(), 0);
  return relay_limit_bytes(region_bytes(), board_->slot_bytes, board_->cap_bytes,
                           board_->owner_demand.load() + size_t(inflight));
}

void* SharedRelayPool::acquire() {
  if (!owner_alive()) return nullptr;
  RelayBoard& b = *board_;
  for (int pass = 0; pass < 2; ++pass) {
    {
      BoardLock lock(b);
      const uint64_t limit = limit_bytes() / b.slot_bytes;  // <= slots: a free one exists below it
      const uint64_t lent = b.lent.load();
      if (lent < limit)
        for (uint64_t i = 0; i < b.slots; ++i) {
          if (b.holder[i].load() != 0) continue;
          b.holder[i].store(int32_t(getpid()));
          b.lent.store(lent + 1);
          if (lent + 1 > b.peak.load()) b.peak.store(lent + 1);
          return reinterpret_cast<char*>(board_) + b.data_offset + i * b.slot_bytes;
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
  const size_t i = size_t(static_cast<char*>(slot) - (reinterpret_cast<char*>(board_) + b.data_offset)) / b.slot_bytes;
  BoardLock lock(b);
  if (b.holder[i].exchange(0) != 0) b.lent.fetch_sub(1);
}

int SharedRelayPool::reclaim_dead() {
  RelayBoard& b = *board_;
  BoardLock lock(b);
  int n = 0;
  for (uint64_t i = 0; i < b.slots; ++i) {
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
