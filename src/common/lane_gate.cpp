#include "common/lane_gate.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "common/log.h"
#include "common/settings.h"

namespace braid {

namespace {

std::atomic<long>& in_hand() {
  static std::atomic<long> count{0};
  return count;
}

std::atomic<long>& device_wide() {
  static std::atomic<long> count{0};
  return count;
}

// A child made by fork() has none of the parent's progress threads nor its calls in flight: a
// count copied from the parent would hold the child's CUDA calls back for BRAID_TIMEOUT.
[[maybe_unused]] const int g_reset_in_child = pthread_atfork(nullptr, nullptr, [] {
  in_hand().store(0);
  device_wide().store(0);
});

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Waits until no job is in hand, for at most `seconds`; whether none is.
bool lanes_idle_within(double seconds) {
  const auto began = std::chrono::steady_clock::now();
  while (in_hand().load(std::memory_order_seq_cst) > 0) {
    if (seconds_since(began) > seconds) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return true;
}

}  // namespace

// Both sides announce themselves first and look at the other second, each in sequential
// consistency: of a job handed in and a device-wide call entering at the same time, at least one
// sees the other (the job backs off, or the call waits for it).
void lane_work_began() {
  const auto began = std::chrono::steady_clock::now();
  for (;;) {
    in_hand().fetch_add(1, std::memory_order_seq_cst);
    if (device_wide().load(std::memory_order_seq_cst) == 0) return;
    if (seconds_since(began) > kHoldBackSeconds) return;
    in_hand().fetch_sub(1, std::memory_order_seq_cst);
    while (device_wide().load(std::memory_order_seq_cst) != 0 && seconds_since(began) <= kHoldBackSeconds)
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void device_wide_call_began(const char* what) {
  device_wide().fetch_add(1, std::memory_order_seq_cst);
  if (in_hand().load(std::memory_order_seq_cst) <= 0) return;
  // Only once braid has split calls in hand: braid's settings and log are read at its first NCCL
  // call, and an application may set them until then.
  static std::atomic<bool> said{false};
  if (!said.exchange(true, std::memory_order_relaxed))
    BRAID_INFO(Init, "braid's CUDA gate holds back the application's device-wide CUDA calls (the first: %s)", what);
  // A job ends within milliseconds unless a peer is late. In a process that drives several ranks
  // that peer may be this process's own thread, held at this gate: a bound under BRAID_TIMEOUT lets
  // it go on before the job's own wait for it fails the communicator.
  const double bound = std::min(settings().timeout / 2, kDeviceWideWaitSeconds);
  const auto began = std::chrono::steady_clock::now();
  if (!lanes_idle_within(bound)) {
    BRAID_WARN(Init, "the application's %s: braid's progress threads still had %ld split calls in hand after %.1f s; "
               "going ahead", what, lanes_work_in_hand(), bound);
    return;
  }
  BRAID_TRACE(Init, "the application's %s waited %.1f us for braid's progress threads", what, seconds_since(began) * 1e6);
}

void device_wide_call_ended() { device_wide().fetch_sub(1, std::memory_order_seq_cst); }
long device_wide_calls() { return device_wide().load(std::memory_order_seq_cst); }

void lane_work_ended() { in_hand().fetch_sub(1, std::memory_order_acq_rel); }
long lanes_work_in_hand() { return in_hand().load(std::memory_order_acquire); }

bool quiet_lanes(const char* what, double seconds) {
  if (lanes_work_in_hand() <= 0) return true;
  const auto began = std::chrono::steady_clock::now();
  if (!lanes_idle_within(seconds)) {
    BRAID_INFO(Init, "%s: braid's progress threads still had %ld split calls in hand after %.1f s; going ahead",
               what, lanes_work_in_hand(), seconds);
    return false;
  }
  BRAID_TRACE(Init, "%s: waited %.1f us for braid's progress threads", what, seconds_since(began) * 1e6);
  return true;
}

}  // namespace braid
