// FuseLink's worker-aware NIC monitor. A worker is one GPU's traffic on one direct NIC (braid:
// one transport instance, i.e. one process, and one NIC). A NIC is busy for a worker while a
// higher-priority worker has work posted on it or completed some within the idle window. A
// NIC's owners (workers whose direct NIC it is) rank above every guest; among owners of the same
// NIC the older worker (smaller id) ranks first, so two GPUs sharing a NIC do not both leave it.
// Traffic a worker borrows on an indirect NIC is never recorded, so it never makes a NIC busy. Busy starts at once (when work is posted, earlier than FuseLink's
// completion-only view) and ends only after `idle_ns` of quiet: that asymmetry is the hysteresis
// that keeps choices from flapping.
//
// The state is a table of atomics that lives either in this process or in a POSIX shared
// memory segment shared by every process of a host (FuseLink's monitor is host-wide: the GPUs
// of a server are separate processes).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"
#include "net/shm_file.h"

namespace braid::net {

constexpr int kMaxNics = 16;
constexpr int kMaxWorkersPerNic = 64;

struct NicBoard;  // the table (nic_monitor.cpp)

class NicMonitor {
 public:
  // A monitor private to this process.
  NicMonitor(int nic_count, int64_t idle_ns);
  // A monitor shared by every process that opens the same `name` (a POSIX shm name, "/...").
  static Result open_shared(const std::string& name, int nic_count, int64_t idle_ns,
                            std::unique_ptr<NicMonitor>* out);
  ~NicMonitor();
  NicMonitor(const NicMonitor&) = delete;
  NicMonitor& operator=(const NicMonitor&) = delete;

  int nic_count() const { return nic_count_; }
  int64_t idle_ns() const { return idle_ns_; }

  // A worker's place on its direct NIC; -1 when the NIC's table is full (its work then goes
  // unseen, and a warning says so).
  int claim(int nic, uint64_t worker);
  void release(int nic, int slot);
  // Work posted (in flight) and completed on the worker's direct NIC.
  void begin(int nic, int slot, int64_t now);
  void end(int nic, int slot, int64_t now);
  // A completion seen without a matching begin (data arriving at a receiver).
  void touch(int nic, int slot, int64_t now);

  // Whether `nic` is busy for `worker`, whose direct NIC is `worker_direct`.
  bool busy_for(int nic, uint64_t worker, int worker_direct, int64_t now) const;
  // Bit i set: NIC i is idle for that worker.
  uint32_t idle_mask_for(uint64_t worker, int worker_direct, int64_t now) const;

 private:
  NicMonitor(NicBoard* board, bool shared, size_t map_bytes, int nic_count, int64_t idle_ns);
  NicBoard* board_;
  bool shared_;
  std::string name_;  // a shared board's shm name
  ShmFile file_;      // and which file it is (its fd closed)
  size_t map_bytes_;
  int nic_count_;
  int64_t idle_ns_;
};

// A worker id unique on the host: the process id and a counter.
uint64_t new_worker_id();

}  // namespace braid::net
