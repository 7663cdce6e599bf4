// Polling with back-off: spin briefly (the common case: the data is nearly there), then yield,
// then sleep in growing steps up to a cap, so a waiter never burns a core for long.
#pragma once

#include <sched.h>
#include <time.h>

#include <chrono>
#include <cstdint>

namespace braid::device {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// How long a host meeting on the application's thread (the engine's exchange, the exchange
// board) yields before its waiter sleeps: the ranks' usual skew, within which the caller then
// leaves within a microsecond of the last arrival.
inline constexpr uint64_t kMeetingYieldNs = 1'000'000;

class Backoff {
 public:
  Backoff() = default;
  // A waiter that must leave soon after the data arrives (a host meeting on the application's
  // thread) keeps yielding, never sleeping, for `yield_window_ns` after its spin: a sleep lasts at
  // least the kernel's timer slack (50 us by default), so a sleeping waiter leaves 30-150 us late.
  explicit Backoff(uint64_t yield_window_ns) : yield_window_ns_(yield_window_ns) {}

  // Waits a little longer each call.
  void pause() {
    ++rounds_;
    if (rounds_ < kSpinRounds) {
      cpu_relax();
    } else if (rounds_ < kSpinRounds + kYieldRounds || yielding_window()) {
      sched_yield();
    } else {
      timespec ts{0, static_cast<long>(sleep_ns_)};
      nanosleep(&ts, nullptr);
      if (sleep_ns_ < kMaxSleepNs) sleep_ns_ *= 2;
    }
  }
  // True once the waiter has left the spinning phase (time to look at clocks and flags).
  bool sleeping() const { return rounds_ >= kSpinRounds; }
  void reset() {
    rounds_ = 0;
    sleep_ns_ = kMinSleepNs;
    yield_since_ = {};
  }

 private:
  bool yielding_window() {
    if (yield_window_ns_ == 0) return false;
    const auto now = std::chrono::steady_clock::now();
    if (yield_since_ == std::chrono::steady_clock::time_point{}) yield_since_ = now;
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - yield_since_).count()) <
           yield_window_ns_;
  }

  static constexpr uint32_t kSpinRounds = 200;
  static constexpr uint32_t kYieldRounds = 20;
  static constexpr uint64_t kMinSleepNs = 2'000;
  static constexpr uint64_t kMaxSleepNs = 200'000;
  uint32_t rounds_ = 0;
  uint64_t sleep_ns_ = kMinSleepNs;
  uint64_t yield_window_ns_ = 0;
  std::chrono::steady_clock::time_point yield_since_{};
};

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace braid::device
