#include "net/nic_monitor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/process.h"
#include "net/net_log.h"
#include "net/shm_file.h"

namespace braid::net {

struct NicSlot {
  std::atomic<uint64_t> worker;  // 0: free
  std::atomic<int32_t> in_flight;
  std::atomic<int64_t> last_active_ns;
};

constexpr uint32_t kBoardMagic = 0x4e42524e;  // "NRBN"
constexpr int kMaxBoardUsers = 256;           // processes of a host with the board open

struct NicBoard {
  std::atomic<uint32_t> magic;                 // kBoardMagic once its creator set it up
  std::atomic<int32_t> users[kMaxBoardUsers];  // pids of the processes that have it open; 0: free
  NicSlot slots[kMaxNics][kMaxWorkersPerNic];
};
constexpr size_t kBoardBytes = (sizeof(NicBoard) + 4095) & ~size_t(4095);

static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free,
              "the board's atomics are shared between processes");

namespace {
// A slot whose owner died keeps no NIC busy: checked only for slots quiet for a second.
bool owner_alive(uint64_t worker) { return !process_dead(pid_t(worker >> 24)); }

// Whether a process that has the board open is still running (this one counts for each monitor
// it has open).
bool live_users(const NicBoard* b) {
  for (const auto& u : b->users) {
    const int32_t pid = u.load();
    if (pid != 0 && !process_dead(pid)) return true;
  }
  return false;
}

// Puts this process on the board's list of users (a free place, or one of a process gone).
bool add_user(NicBoard* b) {
  for (auto& u : b->users) {
    int32_t pid = u.load();
    if ((pid == 0 || process_dead(pid)) && u.compare_exchange_strong(pid, int32_t(getpid()))) return true;
  }
  return false;
}

// Takes one of this process's places off (each monitor it opened holds one).
void remove_user(NicBoard* b) {
  for (auto& u : b->users) {
    int32_t me = int32_t(getpid());
    if (u.compare_exchange_strong(me, 0)) return;
  }
}

// Maps the board `file`; its creator sets it up. Null (the error said) when it is not one.
NicBoard* map_board(const std::string& name, const ShmFile& file, bool created) {
  void* p = mmap(nullptr, kBoardBytes, PROT_READ | PROT_WRITE, MAP_SHARED, file.fd, 0);
  if (p == MAP_FAILED) {
    fail(Result::SystemError, "mmap(%s): %s", name.c_str(), strerror(errno));
    return nullptr;
  }
  auto* b = static_cast<NicBoard*>(p);
  if (created) {  // a new file reads as zero: every slot and user place free
    add_user(b);
    b->magic.store(kBoardMagic, std::memory_order_release);
    return b;
  }
  // Its creator sets the magic right after sizing it; one that never does died in between.
  for (int wait = 0; wait < 20 && b->magic.load(std::memory_order_acquire) != kBoardMagic; ++wait) usleep(5000);
  if (b->magic.load(std::memory_order_acquire) != kBoardMagic) {
    munmap(b, kBoardBytes);
    fail(Result::SystemError, "%s is not a NIC board", name.c_str());
    return nullptr;
  }
  return b;
}
}  // namespace

uint64_t new_worker_id() {
  static std::atomic<uint32_t> counter{0};
  return (uint64_t(getpid()) << 24) | ((counter.fetch_add(1) + 1) & 0xffffff);
}

NicMonitor::NicMonitor(int nic_count, int64_t idle_ns)
    : NicMonitor(new NicBoard(), false, 0, nic_count, idle_ns) {}

NicMonitor::NicMonitor(NicBoard* board, bool shared, size_t map_bytes, int nic_count, int64_t idle_ns)
    : board_(board), shared_(shared), map_bytes_(map_bytes),
      nic_count_(std::clamp(nic_count, 1, kMaxNics)), idle_ns_(idle_ns) {}

// Opens the host's board `name`, or creates it. A file found under the name is used only when it
// is this user's and nobody else may touch it (shm_file.h); a stale one (every process that had it
// open is gone, or its creator died setting it up) is removed and made anew.
Result NicMonitor::open_shared(const std::string& name, int nic_count, int64_t idle_ns,
                               std::unique_ptr<NicMonitor>* out) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    ShmFile file;
    BRAID_TRY(create_shm_file(name, kBoardBytes, &file));
    const bool created = file.fd >= 0;
    if (!created) {
      BRAID_TRY(open_shm_file(name, kBoardBytes, kBoardBytes, &file));
      if (file.fd < 0) continue;  // removed meanwhile: create it
    }
    NicBoard* b = map_board(name, file, created);
    close(file.fd);
    if (!b || (!created && (!live_users(b) || !add_user(b)))) {
      if (b) munmap(b, kBoardBytes);
      unlink_shm_file(name, file);  // stale, or not a board: make a new one
      continue;
    }
    out->reset(new NicMonitor(b, true, kBoardBytes, nic_count, idle_ns));
    (*out)->name_ = name;
    (*out)->file_ = file;
    // An exit that skips the plugin's finalize still removes the board when this is its last user.
    remove_at_exit(out->get(), [b, name, file] {
      remove_user(b);
      if (!live_users(b)) unlink_shm_file(name, file);
    });
    return Result::Success;
  }
  return fail(Result::SystemError, "NIC board %s: could not open or replace it", name.c_str());
}

NicMonitor::~NicMonitor() {
  if (!shared_) {
    delete board_;
    return;
  }
  // The last process to leave removes the name, so nothing stays in /dev/shm: last means no other
  // live process has the board open (those that died or were killed do not count).
  forget_at_exit(this);
  remove_user(board_);
  const bool others = live_users(board_);
  munmap(board_, map_bytes_);
  if (!others) unlink_shm_file(name_, file_);
}

int NicMonitor::claim(int nic, uint64_t worker) {
  if (nic < 0 || nic >= nic_count_) return -1;
  auto& slots = board_->slots[nic];
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < kMaxWorkersPerNic; ++i) {
      uint64_t expected = 0;
      if (slots[i].worker.load() == 0 && slots[i].worker.compare_exchange_strong(expected, worker)) {
        slots[i].in_flight.store(0);
        slots[i].last_active_ns.store(0);
        return i;
      }
    }
    // Full: free the slots of workers whose process is gone, then try once more.
    for (int i = 0; i < kMaxWorkersPerNic; ++i) {
      uint64_t w = slots[i].worker.load();
      if (w != 0 && !owner_alive(w)) slots[i].worker.compare_exchange_strong(w, 0);
    }
  }
  BRAID_NET_WARN("NIC %d has %d workers already; a new one's traffic is not monitored", nic, kMaxWorkersPerNic);
  return -1;
}

void NicMonitor::release(int nic, int slot) {
  if (slot < 0) return;
  auto& s = board_->slots[nic][slot];
  s.in_flight.store(0);
  s.worker.store(0);
}

void NicMonitor::begin(int nic, int slot, int64_t now) {
  if (slot < 0) return;
  auto& s = board_->slots[nic][slot];
  s.in_flight.fetch_add(1);
  s.last_active_ns.store(now, std::memory_order_relaxed);
}

void NicMonitor::end(int nic, int slot, int64_t now) {
  if (slot < 0) return;
  auto& s = board_->slots[nic][slot];
  s.last_active_ns.store(now, std::memory_order_relaxed);
  s.in_flight.fetch_sub(1);
}

void NicMonitor::touch(int nic, int slot, int64_t now) {
  if (slot < 0) return;
  board_->slots[nic][slot].last_active_ns.store(now, std::memory_order_relaxed);
}

bool NicMonitor::busy_for(int nic, uint64_t worker, int worker_direct, int64_t now) const {
  if (nic < 0 || nic >= nic_count_) return false;
  const auto& slots = board_->slots[nic];
  for (int i = 0; i < kMaxWorkersPerNic; ++i) {
    uint64_t w = slots[i].worker.load(std::memory_order_relaxed);
    if (w == 0 || w == worker) continue;
    if (nic == worker_direct && w > worker) continue;  // a younger owner of our own NIC
    int64_t last = slots[i].last_active_ns.load(std::memory_order_relaxed);
    bool recent = now - last < idle_ns_;
    bool posted = slots[i].in_flight.load(std::memory_order_relaxed) > 0;
    if (!recent && posted && now - last > 1000000000 && !owner_alive(w)) continue;
    if (recent || posted) return true;
  }
  return false;
}

uint32_t NicMonitor::idle_mask_for(uint64_t worker, int worker_direct, int64_t now) const {
  uint32_t mask = 0;
  for (int n = 0; n < nic_count_; ++n)
    if (!busy_for(n, worker, worker_direct, now)) mask |= 1u << n;
  return mask;
}

}  // namespace braid::net
