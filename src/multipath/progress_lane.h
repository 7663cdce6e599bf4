// The progress thread of one communicator's split calls, without CUDA (docs/MULTIPATH.md,
// "The progress lane"): the calling thread hands each call's host-driven share (braid's PCIe
// share) to the lane and returns; the lane's thread runs the shares one by one in call order
// (through LaneSteps, which hold everything device-specific), collects every rank's times, and
// keeps the settled calls until the calling thread applies them to the split ledger, in call
// order, with the ledger's lag.
// A failure of any share is kept (the first, with its text), later calls fail with it, and what
// waits on the lane is released; abort stops the lane's transfers on every rank.
//
// The Orchestrator drives it with CUDA streams and a completion word the streams wait on; tests
// drive it on the CPU-emulated device backend (tests/multipath/progress_lane_test.cpp).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "multipath/split_ledger.h"

namespace braid::multipath {

// One split call as the lane carries it; callers derive their own job (streams, events, buffers).
struct LaneJob {
  virtual ~LaneJob() = default;
  LedgerCall ledger;  // the call's number, its shares, whether it is timed
  // Whether the call has a share the lane's thread runs (otherwise it is settled at once).
  bool runs_on_lane() const { return ledger.pcie_elements > 0; }
};

// The device- and path-specific steps the lane takes.
class LaneSteps {
 public:
  virtual ~LaneSteps() = default;
  // Runs the job's share to its end, on the lane's thread (on the caller's with async off), and
  // fills *seconds with every rank's per-path times, rank-major, for a timed call (the ranks meet
  // for it), or leaves it empty (the ledger then learns nothing from the call).
  virtual Result run_share(LaneJob& job, std::vector<double>* seconds) = 0;
  // After the job's share failed: releases whatever waits for this call or any later one (the
  // callers' streams waiting on the completion word: raise it to kReleasedWord).
  virtual void release_waiters() = 0;
  // After every job the lane ran, whatever its outcome (resources go back to their pools).
  virtual void after(LaneJob&) {}
  // Stops the lane's transfers on every rank (their waits end within a bounded time).
  virtual void abort_transfers() = 0;
  // From another thread, while the lane's thread is stuck in a call that does not return: ends
  // every wait on braid's shares (the callers' streams, the peers' streams) with host stores only,
  // no CUDA call. The stuck call may be a CUDA call that another application thread blocks by
  // waiting for the device while it holds CUDA's context lock (cudaMalloc, cudaFree,
  // cudaHostAlloc, a lazy module load): once the streams are free the device drains, that thread
  // goes on, and so does the lane's.
  virtual void release_stuck() { abort_transfers(); }
  // What the device's waits on braid stand at, from host loads only (for the lane watch's WARN).
  virtual std::string device_state() const { return {}; }

 protected:
  // Names the step the current job is at (a string literal), for the lane's watch.
  void step(const char* name) {
    if (marker_ != nullptr) marker_->store(name, std::memory_order_relaxed);
  }

 private:
  friend class ProgressLane;
  std::atomic<const char*>* marker_ = nullptr;
};

// A completion word raised to this after a failure is past every call number: every later wait ends.
inline constexpr uint64_t kReleasedWord = uint64_t{1} << 62;

class ProgressLane {
 public:
  // `steps` and `ledger` outlive the lane; the ledger is the calling thread's. With `async` the
  // lane's thread is made by the first submit(); with `async` false no thread is made and
  // submit() runs the share on the calling thread (BRAID_ASYNC=0).
  ProgressLane(LaneSteps* steps, SplitLedger* ledger, bool async);
  ~ProgressLane();  // stop()
  ProgressLane(const ProgressLane&) = delete;
  ProgressLane& operator=(const ProgressLane&) = delete;

  bool async() const { return async_; }
  // Whether the lane's thread exists (the first job was handed on). The calling thread's.
  bool thread_made() const { return thread_.joinable(); }

  // Hands a job with a share to the lane and returns at once (async), or runs it now.
  // True when the lane's thread slept and had to be woken (a system call on the caller's time).
  bool submit(std::unique_ptr<LaneJob> job);
  // Settles a job at once with no times: a call NCCL carried alone, or one that failed on the
  // calling thread after the ledger counted it (later calls must not wait for it).
  void settle_at_once(std::unique_ptr<LaneJob> job);

  // What the calling thread learns of each applied call: the job, every rank's times (empty: not
  // timed), and the share the next call of its kind gets.
  using Applied = std::function<void(LaneJob& job, const std::vector<double>& seconds, double next_share)>;
  // Applies settled calls to the ledger in call order through `call`, waiting for each; beyond
  // the ledger's lag only where every rank does so at the same call (drain, destroy). Fails with
  // the lane's failure once a call it waits for can no longer settle.
  Result apply_through(uint64_t call, bool beyond_lag, const Applied& applied);
  // Applies, without waiting, the calls already settled in order (at destruction: settling meets
  // the other ranks, which may be gone already).
  void apply_ready(const Applied& applied);

  // Waits until every job handed to the lane has finished (settled or failed); the lane's failure
  // if it failed. The calling thread's, between calls.
  Result wait_idle();

  // Runs what is queued, then ends the lane's thread. Safe to call twice.
  void stop();
  // Fails the lane ("aborted") and stops its transfers on every rank; any thread may call it.
  void abort();
  // Keeps the first failure (with last_error()'s text) and wakes whoever waits for a settled call.
  void record_failure(Result r);
  // The first failure, with its text (Success: none). Any thread (ncclCommGetAsyncError).
  Result failure(std::string* text) const;

  // Fails the communicator (ncclCommGetAsyncError tells, every later split call fails, the peers'
  // waits end) and releases everything that waits on its shares, without waiting for the lane's
  // thread, which is stuck in a call that does not return (`text` says where). The lane watch's,
  // once the thread has been inside one call for twice BRAID_TIMEOUT: an error instead of a hang.
  void give_up_stuck(const std::string& text);
  // Whether the lane's thread has been inside one call for `seconds` or more: *call names it and
  // *text says for how long and at which step (lane_watch.h). Any thread.
  bool stuck_for(double seconds, uint64_t* call, std::string* text) const;
  std::string device_state() const { return steps_->device_state(); }

  // Jobs handed to the lane so far, and those it finished (settled or failed).
  uint64_t submitted() const { return queued_.load(std::memory_order_acquire); }
  uint64_t finished() const { return finished_.load(std::memory_order_acquire); }

 private:
  struct Settled {
    std::unique_ptr<LaneJob> job;
    std::vector<double> seconds;
  };
  void loop();
  void process(std::unique_ptr<LaneJob> job);
  void publish(std::unique_ptr<LaneJob> job, std::vector<double> seconds);

  LaneSteps* steps_;
  SplitLedger* ledger_;
  bool async_;
  std::thread thread_;

  std::mutex jobs_mutex_;
  std::condition_variable jobs_cv_;
  std::deque<std::unique_ptr<LaneJob>> jobs_;
  bool stop_ = false;
  bool sleeping_ = false;            // under jobs_mutex_
  std::atomic<uint64_t> queued_{0};  // the lane's thread spins on it between jobs
  std::atomic<uint64_t> finished_{0};
  // Where the lane's thread is, for stuck_for(): the call it is inside (0: none), since when, at
  // which step (its steps mark them).
  std::atomic<uint64_t> busy_call_{0};
  std::atomic<int64_t> busy_since_ns_{0};
  std::atomic<const char*> step_{"starting"};

  mutable std::mutex settled_mutex_;
  std::condition_variable settled_cv_;
  std::map<uint64_t, Settled> settled_;
  std::atomic<int> failed_{0};  // the first failure (a Result)
  std::string failed_text_;     // under settled_mutex_
};

}  // namespace braid::multipath
