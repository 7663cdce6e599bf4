#include "common/lane_gate.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "common/log.h"

namespace braid {

namespace {

std::atomic<long>& in_hand() {
  static std::atomic<long> count{0};
  return count;
}

}  // namespace

void lane_work_began() { in_hand().fetch_add(1, std::memory_order_acq_rel); }
void lane_work_ended() { in_hand().fetch_sub(1, std::memory_order_acq_rel); }
long lanes_work_in_hand() { return in_hand().load(std::memory_order_acquire); }

bool quiet_lanes(const char* what, double seconds) {
  if (lanes_work_in_hand() <= 0) return true;
  const auto began = std::chrono::steady_clock::now();
  const auto bound = std::chrono::duration<double>(seconds);
  while (lanes_work_in_hand() > 0) {
    if (std::chrono::steady_clock::now() - began > bound) {
      BRAID_INFO(Init, "%s: braid's progress threads still had %ld split calls in hand after %.1f s; going ahead",
                 what, lanes_work_in_hand(), seconds);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  BRAID_TRACE(Init, "%s: waited %.1f us for braid's progress threads", what,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count() * 1e6);
  return true;
}

}  // namespace braid
