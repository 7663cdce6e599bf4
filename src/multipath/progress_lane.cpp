#include "multipath/progress_lane.h"

#include <chrono>
#include <cstdio>
#include <string>

#include "common/log.h"
#include "common/settings.h"
#include "common/thread_stacks.h"
#include "device/host_only_thread.h"
#include "multipath/lane_watch.h"

namespace braid::multipath {

namespace {

// How long the lane's thread spins for the next job before it sleeps.
constexpr int kSpinMicroseconds = 200;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ProgressLane::ProgressLane(LaneSteps* steps, SplitLedger* ledger, bool async)
    : steps_(steps), ledger_(ledger), async_(async) {
  steps_->marker_ = &step_;
}

ProgressLane::~ProgressLane() { stop(); }

void ProgressLane::stop() {
  if (!thread_.joinable()) return;
  unwatch_lane(this);
  {
    std::lock_guard lock(jobs_mutex_);
    stop_ = true;
  }
  jobs_cv_.notify_all();
  thread_.join();
}

bool ProgressLane::submit(std::unique_ptr<LaneJob> job) {
  if (!async_) {
    queued_.fetch_add(1, std::memory_order_release);
    process(std::move(job));
    return false;
  }
  // The thread is made for the first job it gets: a communicator whose calls never hand one on
  // (every share on NVLink) pays for no thread.
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { loop(); });
    watch_lane(this);
  }
  bool sleeping = false;
  {
    std::lock_guard lock(jobs_mutex_);
    jobs_.push_back(std::move(job));
    sleeping = sleeping_;
  }
  queued_.fetch_add(1, std::memory_order_release);
  // A wake-up is a system call (microseconds): only when the lane's thread went to sleep.
  if (sleeping) jobs_cv_.notify_one();
  return sleeping;
}

void ProgressLane::settle_at_once(std::unique_ptr<LaneJob> job) { publish(std::move(job), {}); }

void ProgressLane::publish(std::unique_ptr<LaneJob> job, std::vector<double> seconds) {
  const uint64_t call = job->ledger.call;
  {
    std::lock_guard lock(settled_mutex_);
    settled_.emplace(call, Settled{std::move(job), std::move(seconds)});
  }
  settled_cv_.notify_all();
}

void ProgressLane::loop() {
  // The progress thread reduces on the host, meets the ranks and writes host words; the calling
  // thread queues every device operation (device/host_only_thread.h).
  device::mark_host_only_thread();
  name_this_thread("braid-lane");
  uint64_t taken = 0;
  for (;;) {
    // Between calls of a burst (a backward pass) the thread spins briefly, so that queueing a job
    // costs the caller no wake-up; idle longer, it sleeps.
    const auto idle_since = std::chrono::steady_clock::now();
    while (queued_.load(std::memory_order_acquire) == taken &&
           std::chrono::steady_clock::now() - idle_since < std::chrono::microseconds(kSpinMicroseconds))
      std::this_thread::yield();
    std::unique_ptr<LaneJob> job;
    {
      std::unique_lock lock(jobs_mutex_);
      sleeping_ = true;
      jobs_cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      sleeping_ = false;
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    ++taken;
    process(std::move(job));
  }
}

void ProgressLane::process(std::unique_ptr<LaneJob> job) {
  std::vector<double> seconds;
  Result r = static_cast<Result>(failed_.load());
  step_.store("starting", std::memory_order_relaxed);
  busy_since_ns_.store(now_ns(), std::memory_order_relaxed);
  busy_call_.store(job->ledger.call, std::memory_order_release);
  if (r == Result::Success) r = steps_->run_share(*job, &seconds);
  busy_call_.store(0, std::memory_order_release);
  if (r != Result::Success) {
    // Callers wait for this call: release them; the failure reaches the application through later
    // calls and failure() (ncclCommGetAsyncError). The call is never settled: applying it fails.
    record_failure(r);
    if (job->runs_on_lane()) steps_->release_waiters();
    BRAID_WARN(Balance, "multipath: braid's share of split call %llu failed (%s); later split calls on this "
               "communicator fail too", static_cast<unsigned long long>(job->ledger.call), last_error());
    steps_->after(*job);
    finished_.fetch_add(1, std::memory_order_release);
  } else {
    steps_->after(*job);
    // Counted before it is published: whoever sees the call settled sees it finished.
    finished_.fetch_add(1, std::memory_order_release);
    publish(std::move(job), std::move(seconds));
  }
}

Result ProgressLane::apply_through(uint64_t call, bool beyond_lag, const Applied& applied) {
  while (ledger_->applied() < call) {
    Settled s;
    {
      std::unique_lock lock(settled_mutex_);
      const uint64_t next = ledger_->applied() + 1;
      // Bounded: past BRAID_TIMEOUT a WARN says what the calling thread waits for (every thread's
      // stack too with BRAID_WATCH_STACKS), so that a wait that never ends is found, not guessed.
      const auto ready = [&] { return settled_.count(next) > 0 || failed_.load() != 0; };
      const auto began = std::chrono::steady_clock::now();
      bool warned = false;
      while (!settled_cv_.wait_for(lock, std::chrono::milliseconds(500), ready)) {
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
        if (warned || waited < settings().timeout) continue;
        warned = true;
        BRAID_WARN(Balance, "multipath: the calling thread has waited %.0f s for split call %llu to be settled; the progress "
                   "thread is %s (at '%s'), %llu calls handed to it, %llu finished",
                   waited, static_cast<unsigned long long>(next),
                   busy_call_.load() != 0 ? ("inside call " + std::to_string(busy_call_.load())).c_str() : "idle",
                   step_.load(std::memory_order_relaxed), static_cast<unsigned long long>(queued_.load()),
                   static_cast<unsigned long long>(finished_.load()));
        if (settings().watch_stacks) dump_thread_stacks(2);
      }
      auto it = settled_.find(next);
      if (it == settled_.end())
        return fail(static_cast<Result>(failed_.load()),
                    "multipath: braid's PCIe path failed earlier on this communicator: %s", failed_text_.c_str());
      s = std::move(it->second);
      settled_.erase(it);
    }
    double next_share = 0;
    BRAID_TRY(ledger_->apply(s.job->ledger, s.seconds, &next_share, beyond_lag));
    applied(*s.job, s.seconds, next_share);
  }
  return Result::Success;
}

void ProgressLane::apply_ready(const Applied& applied) {
  for (;;) {
    {
      std::lock_guard lock(settled_mutex_);
      if (settled_.count(ledger_->applied() + 1) == 0) return;
    }
    if (apply_through(ledger_->applied() + 1, true, applied) != Result::Success) return;
  }
}

bool ProgressLane::stuck_for(double seconds, uint64_t* call, std::string* text) const {
  *call = busy_call_.load(std::memory_order_acquire);
  if (*call == 0) return false;
  const double inside = static_cast<double>(now_ns() - busy_since_ns_.load(std::memory_order_relaxed)) * 1e-9;
  if (inside < seconds) return false;
  char line[256];
  std::snprintf(line, sizeof line, "multipath: braid's progress thread has been inside split call %llu for %.1f s, at '%s'",
                static_cast<unsigned long long>(*call), inside, step_.load(std::memory_order_relaxed));
  *text = line;
  return true;
}

Result ProgressLane::wait_idle() {
  // Each job ends within the bounds of its own waits (BRAID_TIMEOUT), so this does too.
  while (finished() < submitted()) std::this_thread::sleep_for(std::chrono::microseconds(20));
  std::string text;
  if (const Result f = failure(&text); f != Result::Success)
    return fail(f, "multipath: braid's share failed earlier on this communicator: %s", text.c_str());
  return Result::Success;
}

void ProgressLane::abort() {
  record_failure(fail(Result::RemoteError, "multipath: the communicator was aborted"));
  steps_->abort_transfers();
}

void ProgressLane::give_up_stuck(const std::string& text) {
  record_failure(fail(Result::InternalError, "%s; braid released its streams and aborted the communicator "
                      "(another thread of the application may wait for the device while it holds CUDA's context, "
                      "as cudaMalloc, cudaFree and lazy module loading do)", text.c_str()));
  steps_->release_stuck();
}

void ProgressLane::record_failure(Result r) {
  if (r == Result::Success) return;
  {
    std::lock_guard lock(settled_mutex_);
    if (failed_.load() != 0) return;
    failed_text_ = last_error();
    failed_.store(static_cast<int>(r));
  }
  settled_cv_.notify_all();
}

Result ProgressLane::failure(std::string* text) const {
  const auto r = static_cast<Result>(failed_.load());
  if (r != Result::Success && text != nullptr) {
    std::lock_guard lock(settled_mutex_);
    *text = failed_text_;
  }
  return r;
}

}  // namespace braid::multipath
