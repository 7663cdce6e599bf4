// The communicator's host worker threads (H2H copies and host reductions). Made once per
// communicator and pinned to the cores of the GPU's NUMA node; each worker runs its own FIFO in
// order (the engine relies on that for deadlock freedom), and idle workers sleep on a condition
// variable instead of spinning.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"

namespace braid::engine {

// Parses a core list like "0-3,8,10-11"; InvalidArgument on malformed text.
Result parse_cpu_list(const std::string& text, std::vector<int>* cpus);

// A rank's workers when BRAID_THREADS does not say: `cores` (a NUMA node's, or the machine's) shared
// by `sharing` ranks, of which this is the `slot`-th. Each rank's slice leaves three cores to its
// calling thread and its progress thread, which queue every call's GPU work and must not wait
// behind host reductions, and to NCCL's proxy thread; ranks sharing a node pin to disjoint slices
// of `cpus` (all of them on the same first cores would share a few). 1 to 8 workers.
struct WorkerCores {
  int threads = 1;
  std::vector<int> cpus;  // one per worker, or empty: unpinned
};
WorkerCores workers_for(int cores, int sharing, int slot, const std::vector<int>& cpus);

class WorkerPool {
 public:
  using Task = std::function<void()>;

  // `threads` workers (at least one); `cpus` empty: no pinning. Pinning that the system refuses is
  // skipped with an INFO line. A thread the system cannot start fails with SystemError (the
  // workers started before it are stopped), never an exception.
  static Result create(int threads, std::vector<int> cpus, std::unique_ptr<WorkerPool>* out);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()); }
  // Appends a task to worker `worker`'s FIFO.
  void submit(int worker, Task task);
  // Drops every task not yet started (after a failure).
  void drop_pending();
  // Blocks until no task is queued or running.
  void wait_idle();
  // How many workers could be pinned as asked.
  int pinned() const { return pinned_.load(); }

 private:
  struct Worker {
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<Task> tasks;
    std::thread thread;
  };
  WorkerPool() = default;
  void run(Worker* w, int cpu);

  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<bool> shutdown_{false};
  std::atomic<int> pinned_{0};
  std::mutex idle_mutex_;
  std::condition_variable idle_;
  std::atomic<long> outstanding_{0};
};

}  // namespace braid::engine
