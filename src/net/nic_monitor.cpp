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

namespace braid::net {

struct NicSlot {
  std::atomic<uint64_t> worker;  // 0: free
  std::atomic<int32_t> in_flight;
  std::atomic<int64_t> last_active_ns;
};

struct NicBoard {
  NicSlot slots[kMaxNics][kMaxWorkersPerNic];
};

static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free,
              "the board's atomics are shared between processes");

namespace {
// A slot whose owner died keeps no NIC busy: checked only for slots quiet for a second.
bool owner_alive(uint64_t worker) { return !process_dead(pid_t(worker >> 24)); }
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

Result NicMonitor::open_shared(const std::string& name, int nic_count, int64_t idle_ns,
                               std::unique_ptr<NicMonitor>* out) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0) return fail(Result::SystemError, "shm_open(%s): %s", name.c_str(), strerror(errno));
  const size_t bytes = (sizeof(NicBoard) + 4095) & ~size_t(4095);
  struct stat st {};
  // ftruncate only grows a new (empty) segment; its pages read as zero: every slot free.
  if (fstat(fd, &st) != 0 || (size_t(st.st_size) < bytes && ftruncate(fd, off_t(bytes)) != 0)) {
    int e = errno;
    close(fd);
    return fail(Result::SystemError, "sizing %s: %s", name.c_str(), strerror(e));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return fail(Result::SystemError, "mmap(%s): %s", name.c_str(), strerror(errno));
  out->reset(new NicMonitor(static_cast<NicBoard*>(p), true, bytes, nic_count, idle_ns));
  (*out)->name_ = name;
  return Result::Success;
}

NicMonitor::~NicMonitor() {
  if (!shared_) {
    delete board_;
    return;
  }
  // The last process to leave removes the name, so nothing stays in /dev/shm: last means no slot
  // is held by another live process (slots of processes that died or were killed do not count).
  // One that opened the name and has claimed nothing yet keeps the removed board to itself until
  // it ends: monitoring is split for a while, never wrong data.
  const auto me = uint64_t(getpid());
  bool others = false;
  for (const auto& nic : board_->slots)
    for (const NicSlot& slot : nic) {
      const uint64_t w = slot.worker.load();
      others |= w != 0 && (w >> 24) != me && owner_alive(w);
    }
  munmap(board_, map_bytes_);
  if (!others) shm_unlink(name_.c_str());
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
