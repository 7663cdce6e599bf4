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

class Backoff {
 public:
  // Waits a little longer each call.
  void pause() {
    ++rounds_;
    if (rounds_ < kSpinRounds) {
      cpu_relax();
    } else if (rounds_ < kSpinRounds + kYieldRounds) {
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
  }

 private:
  static constexpr uint32_t kSpinRounds = 200;
  static constexpr uint32_t kYieldRounds = 20;
  static constexpr uint64_t kMinSleepNs = 2'000;
  static constexpr uint64_t kMaxSleepNs = 200'000;
  uint32_t rounds_ = 0;
  uint64_t sleep_ns_ = kMinSleepNs;
};

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace braid::device
