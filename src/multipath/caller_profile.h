// Where the calling thread's time goes inside split calls (BRAID_CALLER_PROFILE): per phase its
// median, mean and largest, per call the total's percentiles, and how often the kernel took the thread
// off its core against its will. Printed when the communicator ends. The issue it answers: a
// split call's host time is a few microseconds over NCCL's at 4 ranks on one GPU, not at 2.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace braid::multipath {

class CallerProfile {
 public:
  using Clock = std::chrono::steady_clock;
  // A split call's steps on the calling thread, in order.
  // kShim: braid's checks before the split (shim/braid_part.cpp). A call whose split gave braid's
  // paths nothing goes from kPrepare to kNccl (NCCL's whole call) and kHandOn (settled at once).
  // Where braid's copy engines carry the NVLink share, kNccl is split: kPublish (this rank's buffers
  // exported), kMeet (the meeting with the peers for their buffers, and the mapping of a peer's new
  // allocation), then kNccl queues the copies.
  enum Phase : int { kShim, kScope, kSettle, kPrepare, kFork, kPublish, kMeet, kNccl, kHandOn, kJoin, kPhases };

  // One call: begin, then mark each phase as it ends (a phase not reached stays out), then end:
  // `handed_on` when braid's paths had a share (the progress thread got the call).
  void begin() { begin(Clock::now()); }
  void mark(Phase phase) { mark(phase, Clock::now()); }
  void end(bool handed_on) { end(handed_on, Clock::now()); }
  // The calling thread woke braid's progress thread (a system call) in this call.
  void woke() { ++wakeups_; }

  void begin(Clock::time_point now);
  void mark(Phase phase, Clock::time_point now);
  void end(bool handed_on, Clock::time_point now);

  uint64_t calls() const { return calls_[0] + calls_[1]; }
  uint64_t calls(bool handed_on) const { return calls_[handed_on]; }
  // Microseconds: the q-quantile (0 <= q <= 1) of the totals of calls handed on or not, a phase's
  // q-quantile, mean and largest over the calls that reached it.
  double total_quantile(bool handed_on, double q) const;
  double phase_quantile(Phase phase, double q) const;
  double phase_mean(Phase phase) const;
  double phase_max(Phase phase) const;
  // One line: per kind of call (handed on, NCCL alone) its count and total p50/p90/p99/max, each
  // phase's p50/mean/max, wake-ups, and the calling thread's involuntary context switches from the
  // first call on (where /proc tells them).
  std::string summary() const;

  static const char* phase_name(Phase phase);

 private:
  // Only so many samples are kept for the percentiles (a long run keeps its first ones).
  static constexpr size_t kMaxSamples = size_t{1} << 20;
  Clock::time_point began_{}, last_{};
  std::array<double, kPhases> phase_sum_{}, phase_max_{};
  std::array<uint64_t, kPhases> phase_calls_{};
  std::array<std::vector<float>, kPhases> phase_samples_;
  std::array<std::vector<float>, 2> totals_;  // [handed_on]
  std::array<uint64_t, 2> calls_{};
  uint64_t wakeups_ = 0;
  pid_t thread_ = 0;             // the calling thread of the first call
  int64_t switches_before_ = -1;  // its involuntary switches then
};

}  // namespace braid::multipath
